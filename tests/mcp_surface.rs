//! MCP beyond tools, over stdio: resources (handoff, journal tail, checkpoints), client roots
//! as per-session workspaces, the `logging` capability, `ping`; and the stdio transport itself:
//! a message over its cap, input ending before a client spoke, a terminal, non-blocking pipes.

mod common;

use common::{Server, Workspace, wal_entries};
use serde_json::{Value, json};
use std::path::Path;

fn roots_client(ws: &Workspace) -> Server {
    Server::start_client(
        &ws.root,
        &[],
        &[],
        None,
        json!({"roots": {"listChanged": true}}),
    )
}

fn file_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// Answer the server's next `roots/list` with `roots`.
fn answer_roots(s: &mut Server, roots: &[String]) {
    let req = s.expect_request("roots/list");
    let list: Vec<Value> = roots.iter().map(|u| json!({"uri": u})).collect();
    s.respond(&req, json!({"roots": list}));
}

/// Notifications that arrive before the answer to a tool call (which waits for the roots).
fn notifications_before_a_call(s: &mut Server) -> Vec<Value> {
    let (r, notes) = s.request_with_notifications(
        "tools/call",
        json!({"name": "rw_journal_tail", "arguments": {"n": 1}}),
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    notes
}

/// The envelope of a path outside every root this client may write beneath.
fn assert_outside(env: &Value) {
    assert_eq!(env["error"], "policy_violation", "{env}");
    assert_eq!(env["reason_hint"], "permission", "{env}");
    assert!(
        env["context"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("outside every workspace root")),
        "{env}"
    );
}

fn is_log_containing(n: &Value, needle: &str) -> bool {
    n["method"] == "notifications/message"
        && n["params"]["data"]
            .as_str()
            .is_some_and(|d| d.contains(needle))
}

// ---- resources ----

#[test]
fn resources_list_names_handoff_journal_tail_and_each_checkpoint() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_checkpoint",
        json!({"name": "plan", "data": {"step": 2}}),
    );
    let list = s.request("resources/list", json!({}));
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"resilient-write://handoff"), "{uris:?}");
    assert!(uris.contains(&"resilient-write://journal/tail"), "{uris:?}");
    assert!(
        uris.contains(&"resilient-write://checkpoint/plan"),
        "{uris:?}"
    );
    let templates = s.request("resources/templates/list", json!({}));
    let t: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|r| r["uriTemplate"].as_str())
        .collect();
    assert!(
        t.contains(&"resilient-write://journal/tail{?n,path,mode}"),
        "{t:?}"
    );
    assert!(t.contains(&"resilient-write://checkpoint/{name}"), "{t:?}");
}

#[test]
fn journal_tail_resource_returns_the_newest_rows_and_filters_by_path() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for name in ["a.txt", "b.txt", "c.txt"] {
        s.ok("rw_safe_write", json!({"path": name, "content": name}));
    }
    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://journal/tail?n=2"}),
    );
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "application/json");
    let tail: Value = serde_json::from_str(c["text"].as_str().expect("text")).expect("JSON");
    let paths: Vec<String> = tail["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(paths.len(), 2);
    assert!(
        paths[0].ends_with("b.txt") && paths[1].ends_with("c.txt"),
        "{paths:?}"
    );

    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://journal/tail?path=a.txt"}),
    );
    let tail: Value =
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().expect("text"))
            .expect("JSON");
    assert_eq!(tail["count"], 1, "{tail}");
    assert!(
        tail["entries"][0]["path"]
            .as_str()
            .unwrap_or_default()
            .ends_with("a.txt")
    );
}

#[test]
fn checkpoint_resource_is_the_stored_file() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_checkpoint",
        json!({"name": "notes", "data": "# Notes\nhalf done\n", "format": "markdown"}),
    );
    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://checkpoint/notes"}),
    );
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "text/markdown");
    let on_disk =
        std::fs::read_to_string(ws.path(".resilient_write/checkpoints/notes.md")).expect("file");
    assert_eq!(c["text"].as_str(), Some(on_disk.as_str()));
    assert!(on_disk.contains("half done"));
}

#[test]
fn unknown_resources_are_resource_not_found_and_bad_parameters_invalid_params() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for uri in [
        "resilient-write://nothing",
        "resilient-write://checkpoint/absent",
        "resilient-write://checkpoint/..%2F..%2Fetc%2Fpasswd",
        "resilient-write://journal/tailx",
        "file:///etc/passwd",
    ] {
        let r = s.request("resources/read", json!({"uri": uri}));
        assert_eq!(r["error"]["code"], -32002, "{uri}: {r}");
    }
    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://journal/tail?n=lots"}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://journal/tail?n=10001"}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(
        r["error"]["data"]["context"]["reason"], "invalid_arguments",
        "{r}"
    );
    // The server keeps serving.
    s.ok(
        "rw_safe_write",
        json!({"path": "still.txt", "content": "ok"}),
    );
}

#[test]
fn checkpoint_names_complete_for_the_template_and_other_refs_get_no_suggestions() {
    let ws = Workspace::new();
    let mut s = ws.server();
    assert!(s.init["result"]["capabilities"]["completions"].is_object());
    for name in ["plan", "plot", "notes"] {
        s.ok("rw_checkpoint", json!({"name": name, "data": 1}));
    }
    let r = s.request(
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": "resilient-write://checkpoint/{name}"},
            "argument": {"name": "name", "value": "pl"}
        }),
    );
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["plan", "plot"]),
        "{r}"
    );
    assert_eq!(r["result"]["completion"]["total"], 2, "{r}");
    let r = s.request(
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "no_such_prompt"},
            "argument": {"name": "x", "value": "y"}
        }),
    );
    assert_eq!(r["result"]["completion"]["values"], json!([]), "{r}");
}

// ---- client roots ----

#[test]
fn a_client_root_outside_the_static_workspace_becomes_writable_for_that_client() {
    let ws = Workspace::new();
    let extra = Workspace::new();
    let target = extra.path("from-root.txt");
    let target_s = target.display().to_string();

    // Without roots, the other directory is outside the workspace.
    let mut plain = ws.server();
    let env = plain.err("rw_safe_write", json!({"path": target_s, "content": "x"}));
    assert_outside(&env);
    drop(plain);

    let mut s = roots_client(&ws);
    answer_roots(&mut s, &[file_uri(&extra.root)]);
    let r = s.ok(
        "rw_safe_write",
        json!({"path": target_s, "content": "landed"}),
    );
    assert_eq!(r["bytes"], 6);
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "landed");
    // The boundary still applies beneath the new root.
    let escape = format!("{}/../escape.txt", extra.root.display());
    let env = s.err("rw_safe_write", json!({"path": escape, "content": "x"}));
    assert_outside(&env);
    // The static workspace still works.
    s.ok("rw_safe_write", json!({"path": "home.txt", "content": "h"}));
    // The journal names the client.
    let rows = common::journal_rows(&ws.root);
    assert!(
        rows.iter().all(|r| r["caller"] == "integration-test"),
        "{rows:?}"
    );
}

#[test]
fn denied_roots_are_ignored_and_logged_and_the_session_keeps_working() {
    let ws = Workspace::new();
    let home = Workspace::new();
    let home_s = home.root.display().to_string();
    let mut s = Server::start_client(
        &ws.root,
        &[],
        &[("HOME", home_s.as_str())],
        None,
        json!({"roots": {}}),
    );
    answer_roots(
        &mut s,
        &[
            "file:///".to_string(),
            "file:///etc".to_string(),
            file_uri(&home.root),
            "https://example.com/repo".to_string(),
        ],
    );
    // The refusals arrive as warnings (the default level) before the next call's answer.
    let notes = notifications_before_a_call(&mut s);
    let home_refused = format!("client root {home_s} refused");
    for needle in [
        "client root / refused",
        "client root /etc refused",
        home_refused.as_str(),
        "https://example.com/repo",
    ] {
        assert!(
            notes
                .iter()
                .any(|n| is_log_containing(n, needle) && n["params"]["level"] == "warning"),
            "no warning naming {needle}: {notes:?}"
        );
    }
    let env = s.err(
        "rw_safe_write",
        json!({"path": "/etc/rw-denied-root-test", "content": "x"}),
    );
    assert_outside(&env);
    assert!(!Path::new("/etc/rw-denied-root-test").exists());
    let in_home = home.path("not-here.txt").display().to_string();
    let env = s.err("rw_safe_write", json!({"path": in_home, "content": "x"}));
    assert_outside(&env);
    s.ok(
        "rw_safe_write",
        json!({"path": "fine.txt", "content": "ok"}),
    );
}

#[test]
fn roots_list_changed_removing_a_root_removes_access() {
    let ws = Workspace::new();
    let extra = Workspace::new();
    let first = extra.path("first.txt").display().to_string();
    let second = extra.path("second.txt").display().to_string();
    let mut s = roots_client(&ws);
    answer_roots(&mut s, &[file_uri(&extra.root)]);
    s.ok("rw_safe_write", json!({"path": first, "content": "1"}));

    s.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut s, &[]);
    let env = s.err("rw_safe_write", json!({"path": second, "content": "2"}));
    assert_outside(&env);
    assert!(!extra.path("second.txt").exists());
    assert_eq!(
        std::fs::read_to_string(extra.path("first.txt")).expect("kept"),
        "1"
    );

    // Announcing it again restores access.
    s.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut s, &[file_uri(&extra.root)]);
    s.ok("rw_safe_write", json!({"path": second, "content": "2"}));
}

#[test]
fn roots_of_one_client_are_not_seen_by_another() {
    let ws = Workspace::new();
    let extra = Workspace::new();
    let mut with_roots = roots_client(&ws);
    answer_roots(&mut with_roots, &[file_uri(&extra.root)]);
    with_roots.ok(
        "rw_safe_write",
        json!({"path": extra.path("a.txt").display().to_string(), "content": "a"}),
    );
    let mut other = ws.server();
    let env = other.err(
        "rw_safe_write",
        json!({"path": extra.path("b.txt").display().to_string(), "content": "b"}),
    );
    assert_outside(&env);
}

// ---- logging, ping, server info ----

#[test]
fn initialize_declares_logging_and_ping_answers() {
    let ws = Workspace::new();
    let mut s = ws.server();
    assert!(
        s.init["result"]["capabilities"]["logging"].is_object(),
        "{}",
        s.init
    );
    assert!(s.init["result"]["capabilities"]["resources"].is_object());
    assert_eq!(s.init["result"]["serverInfo"]["name"], "resilient-write");
    assert_eq!(
        s.init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        s.init["result"]["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("rw_safe_write"))
    );
    let pong = s.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    let r = s.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(r["result"], json!({}), "{r}");
    // A known method with bad params is invalid params (-32602), naming what is wrong; an
    // unknown method stays method-not-found (-32601).
    let bad = s.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let message = bad["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("loud") && message.contains("warning"),
        "{bad}"
    );
    let missing = s.request("logging/setLevel", json!({}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let read = s.request("resources/read", json!({"uri": 5}));
    assert_eq!(read["error"]["code"], -32602, "{read}");
    let unknown = s.request("logging/setLevels", json!({"level": "debug"}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let pong = s.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[test]
fn the_gitignore_warning_is_sent_as_a_log_message() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".git")).expect("fake git dir");
    let mut s = ws.server();
    let n = s
        .wait_for_notification(80, |n| is_log_containing(n, "not git-ignored"))
        .expect("a notifications/message about .gitignore");
    assert_eq!(n["params"]["level"], "warning");
    assert_eq!(n["params"]["logger"], "resilient-write");
}

#[test]
fn the_temp_file_sweep_is_logged_at_info_once_the_client_asks_for_info() {
    let ws = Workspace::new();
    // A temp file of a writer pid that cannot exist (above any pid_max).
    let stale = ws.path(".a.txt.rw-tmp-2147483000-0-deadbeef");
    std::fs::write(&stale, "debris").expect("stale temp file");
    let mut s = ws.server();
    // At the default level (warning) the info-level sweep notice is held back ...
    let early = s.wait_for_notification(20, |n| is_log_containing(n, "stale temp file"));
    assert!(early.is_none(), "info sent at warning level: {early:?}");
    assert!(!stale.exists(), "the sweep did not run");
    // ... and sent once the client lowers the level.
    let sweep = |n: &Value| is_log_containing(n, "stale temp file");
    let (_, notes) = s.request_with_notifications("logging/setLevel", json!({"level": "info"}));
    let n = notes
        .into_iter()
        .find(sweep)
        .or_else(|| s.wait_for_notification(80, sweep))
        .expect("the sweep notice after setLevel info");
    assert_eq!(n["params"]["level"], "info");
    // Sent once, not again on the next level change.
    let (_, notes) = s.request_with_notifications("logging/setLevel", json!({"level": "debug"}));
    let again = notes
        .into_iter()
        .find(sweep)
        .or_else(|| s.wait_for_notification(10, sweep));
    assert!(again.is_none(), "sent twice: {again:?}");
}

#[test]
fn messages_below_the_set_level_are_not_sent() {
    let ws = Workspace::new();
    let mut s = roots_client(&ws);
    answer_roots(&mut s, &[]);
    s.request("logging/setLevel", json!({"level": "error"}));
    s.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut s, &["file:///etc".to_string()]);
    let notes = notifications_before_a_call(&mut s);
    assert!(
        !notes.iter().any(|n| is_log_containing(n, "/etc")),
        "warning sent at level error: {notes:?}"
    );
    s.request("logging/setLevel", json!({"level": "warning"}));
    s.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut s, &["file:///etc".to_string()]);
    let notes = notifications_before_a_call(&mut s);
    assert!(
        notes.iter().any(|n| is_log_containing(n, "/etc")),
        "no warning at level warning: {notes:?}"
    );
}

#[test]
fn a_transaction_committed_in_a_client_root_is_finished_once_the_roots_are_known() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    let extra = Workspace::new();
    let a = extra.path("a.txt").display().to_string();
    let b = extra.path("b.txt").display().to_string();
    std::fs::write(extra.path("a.txt"), "a0\n").unwrap();
    // A server that dies between the commit record and the renames.
    let mut s = Server::start_client(
        &ws.root,
        &[],
        &[("RW_FAULT_INJECT", "tx_crash_after_commit_record")],
        None,
        json!({"roots": {"listChanged": true}}),
    );
    answer_roots(&mut s, &[file_uri(&extra.root)]);
    let tx = s.ok("rw_tx_begin", json!({"label": "in a client root"}))["tx_id"]
        .as_str()
        .expect("tx_id")
        .to_string();
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": a, "content": "a1\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": b, "content": "b1\n"}),
    );
    s.send_raw(
        &json!({"jsonrpc": "2.0", "id": 999, "method": "tools/call",
                "params": {"name": "rw_tx_commit", "arguments": {"tx_id": tx}}})
        .to_string(),
    );
    let status = s.child.wait().expect("wait");
    assert!(
        !status.success(),
        "the server aborted at the injected point"
    );
    assert_eq!(std::fs::read(extra.path("a.txt")).unwrap(), b"a0\n");

    // A server without the client's roots cannot reach the files: the transaction waits.
    let mut plain = ws.server();
    plain.ok("rw_journal_tail", json!({}));
    assert_eq!(
        wal_entries(&ws.root),
        1,
        "kept for a session that knows the root"
    );
    assert_eq!(std::fs::read(extra.path("a.txt")).unwrap(), b"a0\n");
    drop(plain);

    // A client announcing the root: finished before its first call runs, and said so.
    let mut s = roots_client(&ws);
    answer_roots(&mut s, &[file_uri(&extra.root)]);
    let notes = notifications_before_a_call(&mut s);
    assert_eq!(std::fs::read(extra.path("a.txt")).unwrap(), b"a1\n");
    assert_eq!(std::fs::read(extra.path("b.txt")).unwrap(), b"b1\n");
    assert_eq!(wal_entries(&ws.root), 0);
    assert!(
        notes.iter().any(|n| is_log_containing(n, "rolled forward")),
        "{notes:?}"
    );
}

// ---- the stdio transport ----

#[test]
fn a_message_over_the_transport_cap_is_answered_not_dropped() {
    let ws = Workspace::new();
    // With a 1000-byte write cap the message cap is 6000 bytes + 1 MiB.
    let mut s = Server::start(&ws.root, &["--max-write-bytes", "1000"], &[]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "huge.txt", "content": "y".repeat(2 * 1024 * 1024)}),
    );
    assert_eq!(env["error"], "quota_exceeded");
    assert_eq!(env["reason_hint"], "size_limit");
    assert!(
        env["context"]["message"]
            .as_str()
            .unwrap()
            .contains("request message")
    );
    assert!(!ws.path("huge.txt").exists());
    s.ok(
        "rw_safe_write",
        json!({"path": "small.txt", "content": "ok"}),
    );
}

#[test]
fn stdin_ending_before_any_client_spoke_exits_cleanly_without_an_error() {
    let ws = Workspace::new();
    let o = std::process::Command::new(common::bin())
        .current_dir(&ws.root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("ERROR"), "{err}");
    // Not a terminal: no hint, and stdout stays for the protocol.
    assert!(!err.contains("Try `resilient-write demo`"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn run_bare_in_a_terminal_it_says_what_it_is_in_one_line_and_exits_on_eof() {
    // util-linux `script` gives the server a pseudo-terminal; its stdin's EOF becomes Ctrl-D.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        common::missing_prerequisite("`script` (util-linux) for a pseudo-terminal");
        return;
    }
    let ws = Workspace::new();
    let o = std::process::Command::new("script")
        .args(["-qec", &common::bin().display().to_string(), "/dev/null"])
        .current_dir(&ws.root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let hints: Vec<&str> = text.lines().filter(|l| l.contains("MCP server")).collect();
    assert_eq!(hints.len(), 1, "{text}");
    for part in [
        "stdin/stdout",
        "resilient-write demo",
        "resilient-write init",
    ] {
        assert!(hints[0].contains(part), "{part}: {text}");
    }
    assert!(!text.contains("ERROR"), "{text}");
}

/// Whether the file description behind `fd` is non-blocking.
fn nonblocking(fd: &impl std::os::fd::AsFd) -> bool {
    rustix::fs::fcntl_getfl(fd)
        .expect("fcntl")
        .contains(rustix::fs::OFlags::NONBLOCK)
}

/// Pipes on stdin and stdout are served through the runtime's reactor (non-blocking, no
/// thread hand-off per message) while the server runs, and handed back blocking when it
/// exits, since a pipe's description outlives the process (one the client made
/// non-blocking stays so). stderr sharing stdout's pipe (`2>&1`) keeps stdout blocking, for
/// the log's sake.
#[test]
fn stdio_pipes_are_served_nonblocking_and_handed_back_blocking() {
    use std::io::{BufRead, Write};
    let ws = Workspace::new();
    for (stderr_on_stdout, preset) in [(false, false), (true, false), (false, true)] {
        let (in_r, mut in_w) = std::io::pipe().expect("pipe");
        let (out_r, out_w) = std::io::pipe().expect("pipe");
        // Our own descriptors of the server's ends: the same descriptions, to look at.
        let (in_seen, out_seen) = (in_r.try_clone().unwrap(), out_w.try_clone().unwrap());
        if preset {
            let flags = rustix::fs::fcntl_getfl(&in_seen).unwrap();
            rustix::fs::fcntl_setfl(&in_seen, flags | rustix::fs::OFlags::NONBLOCK).unwrap();
        }
        let stderr = if stderr_on_stdout {
            std::process::Stdio::from(out_w.try_clone().unwrap())
        } else {
            std::process::Stdio::null()
        };
        let mut child = std::process::Command::new(common::bin())
            .args(["serve", "--workspace", "."])
            .current_dir(&ws.root)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .stdin(in_r)
            .stdout(out_w)
            .stderr(stderr)
            .spawn()
            .expect("spawn");
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pipes", "version": "0"}}});
        writeln!(in_w, "{init}").unwrap();
        let mut reply = String::new();
        std::io::BufReader::new(out_r)
            .read_line(&mut reply)
            .unwrap();
        assert!(reply.contains("\"serverInfo\""), "{reply}");
        assert!(nonblocking(&in_seen), "stdin pipe read through the reactor");
        assert_eq!(
            nonblocking(&out_seen),
            !stderr_on_stdout,
            "stdout pipe written through the reactor unless stderr shares it"
        );
        // The pipes widened to 1 MiB (or what the system allows), so a large message
        // crosses in a read or two; not a stdout that stderr shares (left as it is).
        let wanted = resilient_write::transport::stdio::PIPE_SIZE;
        let allowed: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .map_or(wanted, |s| s.trim().parse().unwrap());
        for (end, name) in [
            (&in_seen as &dyn std::os::fd::AsFd, "stdin"),
            (&out_seen, "stdout"),
        ] {
            let size = rustix::pipe::fcntl_getpipe_size(end.as_fd()).unwrap();
            let widened = size >= allowed.min(wanted);
            assert_eq!(
                widened,
                name == "stdin" || !stderr_on_stdout,
                "{name}: {size}"
            );
        }
        drop(in_w);
        assert!(child.wait().unwrap().success());
        assert_eq!(
            nonblocking(&in_seen),
            preset,
            "stdin handed back as the client left it"
        );
        assert!(!nonblocking(&out_seen), "stdout handed back blocking");
    }
}
