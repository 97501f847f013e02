//! The default listing (issue 46, SPEC section 9 "Context budget"): a session is shown the
//! original's 21 tools and `rw_toolsets`; one call of that enables a toolset, sends
//! `notifications/tools/list_changed`, and the next `tools/list` has its tools. Per session:
//! over HTTP two sessions are independent. Listing is not permission: a tool not listed still
//! answers by name, while a fixed `--tools` list refuses every other tool.

mod common;

use common::http::{EventStream, HttpServer};
use common::{Server, Workspace, sha256};
use serde_json::{Value, json};
use std::io::Read;

/// The original's 21 tools (resilient-write 0.3.0), as we list them.
const ORIGINAL: [&str; 21] = [
    "rw_risk_score",
    "rw_safe_write",
    "rw_safe_replace",
    "rw_chunk_write",
    "rw_chunk_append",
    "rw_chunk_compose",
    "rw_chunk_reset",
    "rw_chunk_status",
    "rw_chunk_preview",
    "rw_scratch_put",
    "rw_scratch_ref",
    "rw_scratch_get",
    "rw_handoff_write",
    "rw_handoff_read",
    "rw_journal_tail",
    "rw_validate",
    "rw_analytics",
    "rw_checkpoint",
    "rw_checkpoint_read",
    "rw_checkpoint_list",
    "rw_checkpoint_cleanup",
];

const TX: [&str; 6] = [
    "rw_tx_begin",
    "rw_tx_write",
    "rw_tx_replace",
    "rw_tx_status",
    "rw_tx_commit",
    "rw_tx_rollback",
];

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn is_list_changed(n: &Value) -> bool {
    n["method"] == "notifications/tools/list_changed"
}

/// `tools/call` of `rw_toolsets`; the response and the notifications sent before it.
fn toolsets(s: &mut Server, args: Value) -> (Value, Vec<Value>) {
    s.request_with_notifications(
        "tools/call",
        json!({"name": "rw_toolsets", "arguments": args}),
    )
}

#[test]
fn the_default_listing_is_the_originals_21_tools_and_rw_toolsets() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let listed = names(&s.request("tools/list", json!({})));
    let mut want: Vec<String> = ORIGINAL.iter().map(|n| n.to_string()).collect();
    want.push("rw_toolsets".into());
    assert_eq!(sorted(listed), sorted(want));
    // The listing can change, and the server says so (MCP: tools.listChanged).
    assert_eq!(
        s.init["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    // The instructions name every toolset and how to enable it.
    let text = s.init["result"]["instructions"].as_str().unwrap();
    for needle in [
        "rw_toolsets",
        "files (rw_read, rw_stat)",
        "transactions",
        "undo",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    // Dotted names list the same tools.
    let mut d = Server::start(&ws.root, &["--tool-names", "dotted"], &[]);
    let dotted = names(&d.request("tools/list", json!({})));
    assert!(dotted.contains(&"rw.toolsets".to_string()), "{dotted:?}");
    assert_eq!(dotted.len(), ORIGINAL.len() + 1);
}

#[test]
fn enabling_a_toolset_sends_list_changed_and_the_next_listing_has_its_tools() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let listing = s.request("tools/list", json!({}));
    let schema = listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rw_toolsets")
        .expect("rw_toolsets is listed")["outputSchema"]
        .clone();
    let validator = jsonschema::validator_for(&schema).unwrap();

    // Without enable: the toolsets, none enabled, nothing changes.
    let (r, notes) = toolsets(&mut s, json!({}));
    let listed = &r["result"]["structuredContent"];
    assert!(validator.is_valid(listed), "{listed}");
    let sets: Vec<&str> = listed["toolsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(sets, ["files", "redaction", "transactions", "undo"]);
    assert!(listed["toolsets"][2]["tools"] == json!(TX), "{listed}");
    assert!(!notes.iter().any(is_list_changed), "{notes:?}");

    // Enabling transactions: list_changed before the answer, then the tools are listed.
    let (r, notes) = toolsets(&mut s, json!({"enable": ["transactions"]}));
    let answer = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(validator.is_valid(answer), "{answer}");
    assert_eq!(answer["enabled_now"], json!(["transactions"]));
    assert!(notes.iter().any(is_list_changed), "{notes:?}");
    let after = names(&s.request("tools/list", json!({})));
    for tool in TX {
        assert!(after.contains(&tool.to_string()), "{tool}: {after:?}");
    }
    assert!(!after.contains(&"rw_read".to_string()), "{after:?}");
    assert_eq!(after.len(), ORIGINAL.len() + 1 + TX.len());
    // The listed tools work as listed.
    let tx = s.ok("rw_tx_begin", json!({}));
    assert!(tx["tx_id"].is_string(), "{tx}");

    // Again: nothing new, no notification. Then all the rest.
    let (r, notes) = toolsets(&mut s, json!({"enable": ["transactions"]}));
    assert!(
        r["result"]["structuredContent"]
            .get("enabled_now")
            .is_none()
    );
    assert!(!notes.iter().any(is_list_changed), "{notes:?}");
    let (_, notes) = toolsets(&mut s, json!({"enable": ["all"]}));
    assert!(notes.iter().any(is_list_changed), "{notes:?}");
    let every = names(&s.request("tools/list", json!({})));
    let mut all = Server::start(&ws.root, &["serve", "--tools", "all"], &[]);
    let mut want = names(&all.request("tools/list", json!({})));
    want.push("rw_toolsets".into());
    assert_eq!(sorted(every), sorted(want));
}

#[test]
fn an_unknown_toolset_is_an_envelope_and_enables_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let (r, notes) = toolsets(&mut s, json!({"enable": ["files", "everything"]}));
    let e = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["context"]["reason"], "invalid_arguments");
    let message = e["context"]["message"].as_str().unwrap();
    assert!(
        message.contains("everything") && message.contains("undo"),
        "{e}"
    );
    assert!(!notes.iter().any(is_list_changed), "{notes:?}");
    let listed = names(&s.request("tools/list", json!({})));
    assert_eq!(listed.len(), ORIGINAL.len() + 1, "{listed:?}");
    // A wrong type is named like any tool's argument problem.
    let e = s.err("rw_toolsets", json!({"enable": "files"}));
    assert_eq!(e["context"]["argument"], "enable", "{e}");
}

#[test]
fn a_tool_not_listed_answers_when_called_by_name() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "one\n").unwrap();
    let mut s = ws.server();
    let listed = names(&s.request("tools/list", json!({})));
    assert!(!listed.contains(&"rw_read".to_string()));
    let r = s.ok("rw_read", json!({"path": "a.txt"}));
    assert_eq!(r["sha256"], sha256(b"one\n"));
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "two\n", "mode": "overwrite"}),
    );
    let h = s.ok("rw.history", json!({"path": "a.txt"}));
    assert_eq!(h["versions"][0]["mode"], "overwrite", "{h}");
    s.ok(
        "rw_restore",
        json!({"path": "a.txt", "to_sha256": r["sha256"]}),
    );
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"one\n");
    // Still not listed: calling by name enables nothing.
    assert_eq!(names(&s.request("tools/list", json!({}))), listed);
}

/// A client that keeps the tool list it first received (Codex CLI 0.171 does) reaches every
/// tool through `rw_toolsets`: enabling a toolset returns its tools' definitions, and `call`
/// runs one with its arguments, as a call by name would; a bad `call` is an envelope.
#[test]
fn a_client_that_keeps_its_first_list_calls_through_rw_toolsets() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "one\n").unwrap();
    let mut s = ws.server();
    let (r, _) = toolsets(&mut s, json!({"enable": ["undo"]}));
    let defs = &r["result"]["structuredContent"]["definitions"];
    let restore = defs
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == "rw_restore"))
        .unwrap_or_else(|| panic!("rw_restore defined: {r}"));
    assert!(
        restore["inputSchema"]["properties"]
            .get("to_sha256")
            .is_some(),
        "{restore}"
    );
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "two\n", "mode": "overwrite"}),
    );
    let h = s.ok(
        "rw_toolsets",
        json!({"call": "rw_history", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(h["versions"][0]["mode"], "overwrite", "{h}");
    assert_eq!(h["current_sha256"], sha256(b"two\n"), "{h}");
    s.ok(
        "rw_toolsets",
        json!({"call": "rw_restore", "arguments": {"path": "a.txt", "to_sha256": sha256(b"one\n")}}),
    );
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"one\n");
    // The called tool's own failures are its envelopes.
    let e = s.err(
        "rw_toolsets",
        json!({"call": "rw_read", "arguments": {"path": "missing.txt"}}),
    );
    assert_eq!(e["context"]["tool"], "rw_read", "{e}");
    for bad in [
        json!({"call": "rw_nope"}),
        json!({"call": "rw_history", "arguments": "a.txt"}),
        json!({"call": "rw_history", "enable": ["undo"]}),
    ] {
        let e = s.err("rw_toolsets", bad.clone());
        assert_eq!(e["error"], "policy_violation", "{bad}: {e}");
        assert_eq!(e["context"]["tool"], "rw_toolsets", "{bad}: {e}");
    }
}

#[test]
fn a_fixed_list_refuses_other_tools_and_has_no_toolsets_tool() {
    let ws = Workspace::new();
    let mut s = Server::start(
        &ws.root,
        &["serve", "--tools", "safe_write,transactions"],
        &[],
    );
    let mut want: Vec<String> = TX.iter().map(|n| n.to_string()).collect();
    want.push("rw_safe_write".into());
    assert_eq!(
        sorted(names(&s.request("tools/list", json!({})))),
        sorted(want)
    );
    // A fixed list never changes: no listChanged, and rw_toolsets is refused like any tool
    // outside the list.
    assert!(
        s.init["result"]["capabilities"]["tools"]
            .get("listChanged")
            .is_none(),
        "{}",
        s.init
    );
    let e = s.err("rw_toolsets", json!({"enable": ["files"]}));
    assert_eq!(e["context"]["reason"], "tool_not_enabled", "{e}");
    let e = s.err(
        "rw_toolsets",
        json!({"call": "rw_read", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(e["context"]["reason"], "tool_not_enabled", "{e}");
    let e = s.err("rw_read", json!({"path": "a.txt"}));
    assert_eq!(e["context"]["reason"], "tool_not_enabled", "{e}");
    // --tools all lists every tool of the catalogue and no rw_toolsets.
    let mut all = Server::start(&ws.root, &["serve", "--tools", "all"], &[]);
    let every = names(&all.request("tools/list", json!({})));
    assert!(every.len() >= 32 && !every.contains(&"rw_toolsets".to_string()));
    assert!(
        all.init["result"]["capabilities"]["tools"]
            .get("listChanged")
            .is_none()
    );
    let text = all.init["result"]["instructions"].as_str().unwrap();
    assert!(!text.contains("rw_toolsets"), "{text}");
    // `default` names the toolsets listing, alone; `toolsets` is no member of a fixed list.
    let mut d = Server::start(&ws.root, &["serve"], &[("RW_TOOLS", "default")]);
    assert_eq!(names(&d.request("tools/list", json!({}))).len(), 22);
    for bad in ["default,stat", "toolsets"] {
        let out = common::run_cli(&ws.root, &["serve", "--tools", bad], &[]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------
// HTTP: the enabled toolsets belong to one session

/// The session's standalone event stream (`GET /mcp`), where the server sends notifications
/// that answer no request, once open (its priming event read, so nothing later is missed).
fn event_stream(srv: &HttpServer, session: &str) -> EventStream {
    let mut events = EventStream::get(srv, "/mcp", &format!("Mcp-Session-Id: {session}\r\n"));
    assert_eq!(events.status(), 200, "{}", events.head);
    assert_eq!(events.next().1, "", "the priming event comes first");
    events
}

#[test]
fn over_http_each_session_enables_its_own_toolsets() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let (mut a, mut b) = (srv.session(), srv.session());
    let (mut events_a, mut events_b) = (event_stream(&srv, &a.id), event_stream(&srv, &b.id));
    let r = a.ok("rw_toolsets", json!({"enable": ["undo"]}));
    assert_eq!(r["enabled_now"], json!(["undo"]));
    // The notification answers no request: it comes on A's event stream, and not on B's.
    let (_, note) = events_a.next();
    assert!(note.contains("notifications/tools/list_changed"), "{note}");
    let quiet = std::time::Duration::from_millis(300);
    events_b
        .reader
        .get_ref()
        .set_read_timeout(Some(quiet))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        events_b.buffer.is_empty() && events_b.reader.read(&mut byte).is_err(),
        "B was told of A's change"
    );
    let listed = |s: &mut common::http::Session| names(&s.request("tools/list", json!({})));
    let (in_a, in_b) = (listed(&mut a), listed(&mut b));
    assert!(in_a.contains(&"rw_history".to_string()), "{in_a:?}");
    assert!(!in_b.contains(&"rw_history".to_string()), "{in_b:?}");
    assert_eq!(in_b.len(), ORIGINAL.len() + 1);
    // A new session starts from the default again.
    assert_eq!(listed(&mut srv.session()).len(), ORIGINAL.len() + 1);
}
