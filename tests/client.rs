//! `resilient_write::client`: the blocking MCP stdio client the demo drives the server with.

mod common;

use resilient_write::client::{ClientError, Launch};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn client_calls_tools_and_turns_failures_into_typed_envelopes() {
    let ws = common::Workspace::new();
    let mut c = Launch::new(common::bin())
        .cwd(&ws.root)
        .timeout(Duration::from_secs(30))
        .spawn()
        .expect("handshake");
    assert_eq!(c.init_result()["serverInfo"]["name"], "resilient-write");
    let r = c
        .call("rw_safe_write", json!({"path": "a.txt", "content": "x\n"}))
        .expect("write");
    assert_eq!(r["bytes"], 2);
    match c.call("rw_safe_write", json!({"path": "a.txt", "content": "y\n"})) {
        Err(ClientError::Tool { tool, envelope }) => {
            assert_eq!(tool, "rw_safe_write");
            assert_eq!(envelope["error"], "stale_precondition");
        }
        other => panic!("expected a tool failure, got {other:?}"),
    }
    match c.request("no/such/method", json!({})) {
        Err(ClientError::Rpc { code, .. }) => assert_eq!(code, -32601),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    assert!(c.close().expect("exit").success());
}

#[test]
fn a_server_that_never_answers_is_a_timeout_not_a_hang() {
    let started = Instant::now();
    let err = Launch::new("sleep")
        .arg("30")
        .timeout(Duration::from_millis(300))
        .spawn()
        .err()
        .expect("sleep never answers initialize");
    assert!(matches!(err, ClientError::Timeout { id: 1, .. }), "{err:?}");
    // Dropping the client killed the child: we did not wait for it.
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_server_that_exits_is_reported_as_gone() {
    let err = Launch::new("true")
        .spawn()
        .err()
        .expect("true exits at once");
    assert!(err.server_gone(), "{err:?}");
}

#[test]
fn a_missing_binary_is_a_spawn_error_naming_it() {
    let err = Launch::new("/nonexistent/rw")
        .spawn()
        .err()
        .expect("no binary");
    assert!(matches!(err, ClientError::Spawn { .. }));
    assert!(err.to_string().contains("/nonexistent/rw"), "{err}");
}
