//! The HTTP transports over a real spawned server (`serve --transport http|sse --port 0`),
//! spoken to with raw HTTP/1.1 (the harness is `common/http.rs`). Also graceful shutdown on
//! SIGTERM, over HTTP and stdio.

mod common;

use common::http::{
    ACCEPT, EventStream, HttpServer, JSON, Reply, assert_session_gone, closed, command,
    generated_token, initialize_message, list_status,
};
use common::{Workspace, journal_rows, sha256, temp_files};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn initialize_list_write_and_journal_over_http() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let mut s = srv.session();
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"rw_safe_write"), "{names:?}");
    let w = s.ok(
        "rw_safe_write",
        json!({"path": "hello.txt", "content": "over http\n"}),
    );
    assert_eq!(w["sha256"], sha256(b"over http\n"));
    assert_eq!(
        std::fs::read_to_string(ws.path("hello.txt")).unwrap(),
        "over http\n"
    );
    let tail = s.ok("rw_journal_tail", json!({"n": 5}));
    let rows = tail["entries"].as_array().expect("entries");
    assert!(rows.iter().any(|r| r["path"] == "hello.txt"), "{tail}");
    // Served at /mcp itself (above), and nothing redirects between /mcp and /mcp/.
    let r = srv.send("POST", "/mcp/", &[ACCEPT, JSON], b"{}");
    assert!(!(300..400).contains(&r.status), "{} {}", r.status, r.text());
    assert!(r.header("location").is_none());
}

#[test]
fn two_sessions_appending_to_one_file_lose_nothing() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    const N: usize = 15;
    std::thread::scope(|scope| {
        for who in ["a", "b"] {
            let srv = &srv;
            scope.spawn(move || {
                let mut s = srv.session();
                for i in 0..N {
                    s.ok(
                        "rw_safe_write",
                        json!({"path": "log.txt", "content": format!("{who}{i}\n"), "mode": "append"}),
                    );
                }
            });
        }
    });
    let text = std::fs::read_to_string(ws.path("log.txt")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * N, "{text}");
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), 2 * N, "every append landed once: {text}");
    assert_eq!(journal_rows(&ws.root).len(), 2 * N);
}

#[test]
fn forged_host_and_foreign_origin_are_refused_with_403() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--allowed-origin", "https://app.example.org"], &[]);
    let write = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evil", "version": "0"}}});
    let forged_host = format!("evil.example:{}", srv.addr.port());
    let r = srv.post(None, &write, &[("Host", &forged_host)]);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["reason"], "host_not_allowed");
    let r = srv.post(None, &write, &[("Origin", "http://evil.example")]);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["reason"], "origin_not_allowed");
    assert!(r.header("mcp-session-id").is_none());
    // The localhost Origin of the bound port and the operator's extra one pass.
    let local = format!("http://localhost:{}", srv.addr.port());
    for origin in [local.as_str(), "https://app.example.org"] {
        let r = srv.post(None, &write, &[("Origin", origin)]);
        assert_eq!(r.status, 200, "{origin}: {}", r.text());
    }
    let localhost = format!("localhost:{}", srv.addr.port());
    assert_eq!(srv.post(None, &write, &[("Host", &localhost)]).status, 200);
}

#[test]
fn a_token_is_required_when_set_and_never_logged() {
    let ws = Workspace::new();
    let token = generated_token();
    let mut srv = HttpServer::start(
        &ws,
        &["--log-level", "debug"],
        &[("RW_AUTH_TOKEN", token.as_str())],
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let no_token = srv.send("POST", "/mcp", &[ACCEPT, JSON], ping.to_string().as_bytes());
    assert_eq!(no_token.status, 401, "{}", no_token.text());
    assert!(
        no_token
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")),
        "{:?}",
        no_token.headers
    );
    let wrong = format!("Bearer {token}x");
    let r = srv.send(
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Authorization", &wrong)],
        ping.to_string().as_bytes(),
    );
    assert_eq!(r.status, 401);
    // With the right token everything works (srv.post sends it).
    let mut s = srv.session();
    s.ok("rw_safe_write", json!({"path": "t.txt", "content": "x"}));
    srv.terminate();
    assert_eq!(srv.wait_exit(Duration::from_secs(20)), Some(0));
    let log = srv.log();
    assert!(log.contains("401"), "refusals are logged: {log}");
    assert!(!log.contains(&token), "the token must never be logged");

    // The same from a token file.
    let file = ws.path("token.txt");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let file_arg = file.to_string_lossy().into_owned();
    let mut srv = HttpServer::start(&ws, &["--auth-token-file", &file_arg], &[]);
    let r = srv.send("POST", "/mcp", &[ACCEPT, JSON], ping.to_string().as_bytes());
    assert_eq!(r.status, 401);
    srv.token = Some(token);
    srv.session();
}

#[test]
fn a_non_loopback_bind_without_a_token_refuses_to_start() {
    let ws = Workspace::new();
    let out = command(
        &ws.root,
        &["--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        &[],
    )
    .output()
    .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("RW_AUTH_TOKEN"),
        "{err}"
    );
    // A token makes it start.
    let token = generated_token();
    let srv = HttpServer::spawn(
        &ws,
        &["--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        &[("RW_AUTH_TOKEN", token.as_str())],
        "/mcp",
    );
    assert!(srv.addr.ip().is_unspecified());
}

#[test]
fn an_oversize_body_gets_413_and_writes_nothing() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--max-body-bytes", "4096"], &[]);
    let mut s = srv.session();
    let big = "x".repeat(10_000);
    let msg = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "rw_safe_write", "arguments": {"path": "big.txt", "content": big}}});
    let r = srv.post(Some(&s.id), &msg, &[]);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["limit_bytes"], 4096);
    // Chunked, without a Content-Length, is cut off the same way.
    let body = msg.to_string();
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let r = srv.send(
        "POST",
        "/mcp",
        &[
            ACCEPT,
            JSON,
            ("Mcp-Session-Id", &s.id),
            ("Transfer-Encoding", "chunked"),
        ],
        chunked.as_bytes(),
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(!ws.path("big.txt").exists());
    assert!(journal_rows(&ws.root).is_empty());
    // The session still works.
    s.ok(
        "rw_safe_write",
        json!({"path": "small.txt", "content": "ok"}),
    );
}

#[test]
fn a_tool_payload_over_the_write_cap_is_a_typed_quota_exceeded_envelope() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--max-write-bytes", "1000"], &[]);
    let mut s = srv.session();
    let r = s.call(
        "rw_safe_write",
        json!({"path": "big.txt", "content": "y".repeat(5000)}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error"], "quota_exceeded");
    assert!(!ws.path("big.txt").exists());
}

#[test]
fn malformed_json_invalid_requests_and_unknown_methods_get_jsonrpc_errors() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let mut s = srv.session();
    let id = s.id.clone();
    let sid = ("Mcp-Session-Id", id.as_str());
    let r = srv.send(
        "POST",
        "/mcp",
        &[ACCEPT, JSON, sid],
        b"{\"jsonrpc\": \"2.0\", ",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32700);
    let r = srv.send(
        "POST",
        "/mcp",
        &[ACCEPT, JSON, sid],
        br#"{"jsonrpc":"2.0","id":7}"#,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(r.json()["id"], 7);
    let unknown = s.request("no/such_method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let tool = s.request(
        "tools/call",
        json!({"name": "rw_no_such_tool", "arguments": {}}),
    );
    assert_eq!(tool["error"]["code"], -32602, "{tool}");
    // Wrong content type: 415 before the body is looked at.
    let r = srv.send(
        "POST",
        "/mcp",
        &[ACCEPT, ("Content-Type", "text/plain"), sid],
        br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
    );
    assert_eq!(r.status, 415, "{}", r.text());
    s.ok(
        "rw_safe_write",
        json!({"path": "still.txt", "content": "serving"}),
    );
}

#[test]
fn a_missing_session_id_is_400_and_an_unknown_one_404() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    assert_eq!(srv.post(None, &list, &[]).status, 400);
    assert_eq!(srv.post(Some("not-a-session"), &list, &[]).status, 404);
}

#[test]
fn a_client_disconnecting_mid_call_leaves_the_server_serving_others() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let a = srv.session();
    let content = "z".repeat(8 << 20);
    let msg = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "rw_safe_write", "arguments": {"path": "gone.txt", "content": content}}});
    let body = msg.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {}\r\nContent-Length: {}\r\n\r\n",
        srv.host(),
        a.id,
        body.len()
    );
    let mut conn = TcpStream::connect(srv.addr).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(body.as_bytes()).unwrap();
    drop(conn);
    let mut b = srv.session();
    b.ok(
        "rw_safe_write",
        json!({"path": "other.txt", "content": "fine"}),
    );
    // The abandoned write ends whole or not at all, and leaves no temp file.
    let start = Instant::now();
    while !temp_files(&ws.root).is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(temp_files(&ws.root).is_empty());
    if let Ok(got) = std::fs::read(ws.path("gone.txt")) {
        assert_eq!(sha256(&got), sha256(content.as_bytes()));
    }
    b.ok("rw_journal_tail", json!({}));
}

#[test]
fn sigterm_during_a_large_write_exits_0_with_the_target_whole() {
    let ws = Workspace::new();
    std::fs::write(ws.path("big.txt"), "old\n").unwrap();
    let mut srv = HttpServer::start(&ws, &[], &[]);
    let s = srv.session();
    let new = "n".repeat(32 << 20);
    let msg = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "rw_safe_write",
        "arguments": {"path": "big.txt", "content": new, "mode": "overwrite"}}});
    let (answer, mid_write) = std::thread::scope(|scope| {
        let caller = scope.spawn(|| srv.post(Some(&s.id), &msg, &[]));
        // Signal once the write is under way (its temp file exists), or after 5 s regardless.
        let start = Instant::now();
        while temp_files(&ws.root).is_empty() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mid_write = !temp_files(&ws.root).is_empty();
        srv.terminate();
        (caller.join().unwrap(), mid_write)
    });
    assert_eq!(
        srv.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        srv.log()
    );
    let got = std::fs::read(ws.path("big.txt")).unwrap();
    let digest = sha256(&got);
    assert!(
        digest == sha256(new.as_bytes()) || got == b"old\n",
        "the target is whole-old or whole-new"
    );
    assert!(
        temp_files(&ws.root).is_empty(),
        "{:?}",
        temp_files(&ws.root)
    );
    for row in journal_rows(&ws.root) {
        assert!(row["sha256"].is_string(), "{row}");
    }
    eprintln!("signalled mid-write: {mid_write}");
    // A call in flight at the signal finishes within the grace period and is answered.
    if mid_write {
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(digest, sha256(new.as_bytes()));
    }
    if answer.status == 200 {
        let r = answer.rpc(5);
        assert_eq!(r["result"]["structuredContent"]["sha256"], digest, "{r}");
    }
}

#[test]
fn stdio_exits_0_on_sigterm_while_stdin_stays_open() {
    let ws = Workspace::new();
    let mut s = common::Server::start(&ws.root, &[], &[]);
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "a"}));
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let start = Instant::now();
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_legacy_sse_pair_serves_a_session() {
    let ws = Workspace::new();
    let srv = HttpServer::spawn(&ws, &["--transport", "sse", "--port", "0"], &[], "/sse");
    let mut events = EventStream::open(&srv);
    let (name, endpoint) = events.next();
    assert_eq!(name, "endpoint");
    assert!(endpoint.starts_with("/messages/?session_id="), "{endpoint}");
    let post = |msg: Value| srv.send("POST", &endpoint, &[JSON], msg.to_string().as_bytes());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "sse-test", "version": "0"}}});
    assert_eq!(post(init).status, 202);
    let (_, data) = events.next();
    let v: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["result"]["serverInfo"]["name"], "resilient-write");
    assert_eq!(
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).status,
        202
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "rw_safe_write", "arguments": {"path": "sse.txt", "content": "legacy"}}});
    assert_eq!(post(call).status, 202);
    let (_, data) = events.next();
    let v: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["id"], 2);
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(
        std::fs::read_to_string(ws.path("sse.txt")).unwrap(),
        "legacy"
    );
    // Unknown session, missing session, bad body.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
    let r = srv.send(
        "POST",
        "/messages/?session_id=nope",
        &[JSON],
        ping.as_bytes(),
    );
    assert_eq!(r.status, 404);
    assert_eq!(
        srv.send("POST", "/messages/", &[JSON], ping.as_bytes())
            .status,
        400
    );
    assert_eq!(
        srv.send("POST", &endpoint, &[JSON], b"{oops").json()["error"]["code"],
        -32700
    );
    // Forged Host is refused here too.
    let forged = format!("evil.example:{}", srv.addr.port());
    assert_eq!(
        srv.send("GET", "/sse", &[("Host", &forged)], b"").status,
        403
    );
    // An open event stream does not keep the server from exiting on SIGTERM.
    let mut srv = srv;
    srv.terminate();
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0));
    drop(events);
}

#[test]
fn an_open_standalone_stream_does_not_hold_off_sigterm() {
    let ws = Workspace::new();
    let mut srv = HttpServer::start(&ws, &[], &[]);
    let s = srv.session();
    let _stream = EventStream::get(&srv, "/mcp", &format!("Mcp-Session-Id: {}\r\n", s.id));
    srv.terminate();
    assert_eq!(
        srv.wait_exit(Duration::from_secs(15)),
        Some(0),
        "{}",
        srv.log()
    );
}

#[test]
fn logs_go_to_the_log_file_when_given_and_a_bad_level_is_refused() {
    let ws = Workspace::new();
    let log = ws.path("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    let srv = HttpServer::start(&ws, &["--log-level", "info", "--log-file", &log_arg], &[]);
    srv.session();
    let start = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("HTTP server started")) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no log line in the file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!srv.log().contains("HTTP server started"), "{}", srv.log());
    let out = command(&ws.root, &["--log-level", "info,[", "--port", "0"], &[])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn delete_answers_200_for_a_live_session_and_404_for_an_unknown_one() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let s = srv.session();
    let sid = ("Mcp-Session-Id", s.id.as_str());
    let r = srv.send("DELETE", "/mcp", &[sid], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_session_gone(&list_status(&srv, &s.id));
    // Deleted already, or never existed: 404, the spec's answer for an unknown session.
    assert_session_gone(&srv.send("DELETE", "/mcp", &[sid], b""));
    assert_session_gone(&srv.send("DELETE", "/mcp", &[("Mcp-Session-Id", "nope")], b""));
    assert_eq!(srv.send("DELETE", "/mcp", &[], b"").status, 400);
}

#[test]
fn the_endpoint_with_a_trailing_slash_serves_like_mcp() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let r = srv.post_to("/mcp/", None, &initialize_message(), &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("mcp-session-id").expect("session").to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(srv.post_to("/mcp/", Some(&id), &note, &[]).status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "rw_safe_write", "arguments": {"path": "slash.txt", "content": "/"}}});
    let r = srv.post_to("/mcp/", Some(&id), &call, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.rpc(1)["result"]["isError"], false);
    // The same session at /mcp: one endpoint, two spellings.
    assert_eq!(list_status(&srv, &id).status, 200);
    assert_eq!(
        srv.send("DELETE", "/mcp/", &[("Mcp-Session-Id", &id)], b"")
            .status,
        200
    );
    assert_eq!(
        srv.send("POST", "/other", &[ACCEPT, JSON], b"{}").status,
        404
    );
}

#[test]
fn two_host_or_two_origin_headers_are_refused_with_400() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let host = srv.host();
    let init = initialize_message();
    // Each value alone is allowed; together they are refused before anything else.
    let r = srv.post(None, &init, &[("Host", &host), ("Host", &host)]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["reason"], "duplicate_header");
    assert_eq!(r.json()["error"]["data"]["header"], "Host");
    let evil = format!("evil.example:{}", srv.addr.port());
    assert_eq!(
        srv.post(None, &init, &[("Host", &host), ("Host", &evil)])
            .status,
        400
    );
    let origin = format!("http://localhost:{}", srv.addr.port());
    let r = srv.post(None, &init, &[("Origin", &origin), ("Origin", &origin)]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["header"], "Origin");
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(srv.post(None, &init, &[("Origin", &origin)]).status, 200);
}

#[test]
fn slow_headers_are_cut_off_while_a_normal_client_is_served() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--header-timeout-secs", "1"], &[]);
    const SLOW: usize = 150;
    let start = Instant::now();
    let mut slow: Vec<Option<TcpStream>> = (0..SLOW)
        .map(|_| {
            let mut c = TcpStream::connect(srv.addr).unwrap();
            c.write_all(b"POST /mcp HTTP/1.1\r\n").unwrap();
            Some(c)
        })
        .collect();
    let served = std::thread::scope(|scope| {
        let normal = scope.spawn(|| {
            let begun = Instant::now();
            let mut s = srv.session();
            s.ok(
                "rw_safe_write",
                json!({"path": "n.txt", "content": "served"}),
            );
            begun.elapsed()
        });
        // One more header byte per connection every 100 ms, until the server hangs up.
        let mut open = SLOW;
        let mut first_closed = None;
        while open > 0 && start.elapsed() < Duration::from_secs(10) {
            for conn in slow.iter_mut() {
                let Some(c) = conn else { continue };
                if closed(c) || c.write_all(b"X").is_err() {
                    *conn = None;
                    open -= 1;
                    first_closed.get_or_insert(start.elapsed());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let first_closed = first_closed.unwrap_or_default();
        assert!(
            first_closed >= Duration::from_millis(800),
            "open and sending until the timeout: the first was closed after {first_closed:?}"
        );
        normal.join().unwrap()
    });
    let elapsed = start.elapsed();
    assert!(
        slow.iter().all(Option::is_none),
        "every trickling connection was closed"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "closed within the 1 s header timeout (and scheduling slack): {elapsed:?}"
    );
    assert!(
        served < Duration::from_secs(3),
        "the normal client was served while they trickled: {served:?}"
    );
    assert_eq!(std::fs::read_to_string(ws.path("n.txt")).unwrap(), "served");
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--header-timeout-secs", "1"], &[]);
    let mut conn = TcpStream::connect(srv.addr).unwrap();
    let head = format!("GET /nothing HTTP/1.1\r\nHost: {}\r\n\r\n", srv.host());
    conn.write_all(head.as_bytes()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "closed before answering");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 404"), "{text}");
    assert!(text.contains("content-length: 0") && !text.contains("connection: close"));
    // Kept alive after the answer, then closed once idle for the timeout.
    let answered = Instant::now();
    assert!(!closed(&mut conn), "kept alive");
    while !closed(&mut conn) {
        assert!(
            answered.elapsed() < Duration::from_secs(5),
            "the idle connection stayed open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(answered.elapsed() >= Duration::from_millis(500));
}

#[test]
fn idle_sessions_expire_and_get_404_but_one_listening_on_a_stream_lives() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--session-idle-secs", "1"], &[]);
    let idle = srv.session();
    let listening = srv.session();
    let stream = EventStream::get(
        &srv,
        "/mcp",
        &format!("Mcp-Session-Id: {}\r\n", listening.id),
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert_session_gone(&list_status(&srv, &idle.id));
    assert_eq!(list_status(&srv, &listening.id).status, 200);
    // Once its stream is closed, it expires too (each look would count as use: look once).
    drop(stream);
    std::thread::sleep(Duration::from_millis(2500));
    assert_session_gone(&list_status(&srv, &listening.id));
    // The client initializes again and is served.
    let mut again = srv.session();
    again.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "again"}),
    );
}

#[test]
fn at_the_session_cap_the_longest_idle_session_makes_room_and_busy_ones_get_503() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--max-sessions", "2"], &[]);
    let first = srv.session();
    let second = srv.session();
    assert_eq!(list_status(&srv, &first.id).status, 200); // second is now the longest idle
    let third = srv.session();
    assert_session_gone(&list_status(&srv, &second.id));
    assert_eq!(list_status(&srv, &first.id).status, 200);
    assert_eq!(list_status(&srv, &third.id).status, 200);
    // Both live sessions listening on a stream: nothing to close, so a new one is refused.
    let a = EventStream::get(&srv, "/mcp", &format!("Mcp-Session-Id: {}\r\n", first.id));
    let _b = EventStream::get(&srv, "/mcp", &format!("Mcp-Session-Id: {}\r\n", third.id));
    let r = srv.initialize();
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["reason"], "too_many_sessions");
    assert_eq!(r.json()["error"]["data"]["max_sessions"], 2);
    assert!(r.header("mcp-session-id").is_none());
    // One stream closes: its session becomes the one to go.
    drop(a);
    let start = Instant::now();
    let r = loop {
        let r = srv.initialize();
        if r.status != 503 || start.elapsed() > Duration::from_secs(10) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r.status, 200, "{}", r.text());
    assert_session_gone(&list_status(&srv, &first.id));
    assert_eq!(list_status(&srv, &third.id).status, 200);
}

#[test]
fn a_100_mb_body_is_refused_by_default_with_413() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let s = srv.session();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {}\r\nContent-Length: 100000000\r\n\
         Connection: close\r\n\r\n{{\"jsonrpc\":",
        srv.host(),
        s.id
    );
    let mut conn = TcpStream::connect(srv.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = conn.read_to_end(&mut raw);
    let r = Reply::parse(&raw);
    assert_eq!(r.status, 413, "{}", r.text());
    // The default: the 64 MiB write limit in base64 plus 1 MiB for the rest of the message.
    let limit = (64u64 << 20).div_ceil(3) * 4 + (1 << 20);
    assert_eq!(r.json()["error"]["data"]["limit_bytes"], limit);
    assert!(limit < 100_000_000);
}

/// The server's resident memory in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[test]
#[cfg(target_os = "linux")]
fn quiet_sessions_cost_little_and_expired_ones_give_their_memory_back() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--session-idle-secs", "1"], &[]);
    const N: u64 = 250;
    let round = || {
        let ids: Vec<String> = (0..N).map(|_| srv.session().id).collect();
        let rss = rss_kib(srv.child.id());
        // Every one of them expires, and then answers 404.
        std::thread::sleep(Duration::from_millis(2500));
        assert_session_gone(&list_status(&srv, &ids[0]));
        assert_session_gone(&list_status(&srv, &ids[ids.len() - 1]));
        rss
    };
    let base = rss_kib(srv.child.id());
    let first = round();
    let second = round();
    let third = round();
    eprintln!("RSS KiB: base {base}, after rounds {first} {second} {third}");
    let per_session = (first.saturating_sub(base)) / N;
    // Each session used to build its own tool list (~720 KB); now ~60 KB.
    assert!(per_session < 250, "{per_session} KiB per idle session");
    // Expired sessions' memory is reused: later rounds add far less than the first.
    let first_growth = first.saturating_sub(base);
    assert!(
        third.saturating_sub(first) < first_growth,
        "base {base} KiB, rounds {first} {second} {third} KiB"
    );
}

#[test]
fn the_tool_profile_holds_over_http() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--tools", "core", "--read-only"], &[]);
    let mut s = srv.session();
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["rw_read", "rw_risk_score", "rw_history"]);
    // A hidden tool is refused with an envelope and writes nothing.
    let r = s.call("rw_safe_write", json!({"path": "no.txt", "content": "x"}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["context"]["reason"],
        "tool_not_enabled"
    );
    assert!(!ws.path("no.txt").exists());
    std::fs::write(ws.path("yes.txt"), "y\n").unwrap();
    let read = s.ok("rw_read", json!({"path": "yes.txt"}));
    assert_eq!(read["sha256"], sha256(b"y\n"));
}
