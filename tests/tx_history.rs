//! Transactions, history and restore over MCP: commit all or nothing, conflicts, rollback,
//! timeouts, recovery after a crash at the commit point, the object store of pre-images,
//! history, restore of a file and of a transaction, retention and gc.

mod common;

use common::{Server, Workspace, journal_rows, sha256, wal_entries};
use serde_json::{Value, json};
use std::path::Path;

fn begin(s: &mut Server) -> String {
    s.ok("rw_tx_begin", json!({"label": "test"}))["tx_id"]
        .as_str()
        .expect("tx_id")
        .to_string()
}

/// A transaction staging "new a" over an existing `a.txt` ("old a") and creating `b_path`.
fn stage_a_and(s: &mut Server, b_path: &str) -> String {
    write(s, "a.txt", "old a\n");
    let tx = begin(s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "new a\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": b_path, "content": "b\n"}),
    );
    tx
}

fn objects(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let dir = root.join(".resilient_write/objects");
    for fan in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for e in std::fs::read_dir(fan.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let n = e.file_name().to_string_lossy().to_string();
            if n.len() == 64 {
                out.push(n);
            }
        }
    }
    out.sort();
    out
}

fn write(s: &mut Server, path: &str, content: &str) -> Value {
    s.ok(
        "rw_safe_write",
        json!({"path": path, "content": content, "mode": "overwrite"}),
    )
}

#[test]
fn tx_commit_applies_every_file_and_journals_one_row_per_file_with_the_tx_id() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = stage_a_and(&mut s, "new/dir/b.txt");
    let r = s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(r["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"new a\n");
    assert_eq!(std::fs::read(ws.path("new/dir/b.txt")).unwrap(), b"b\n");
    let rows: Vec<Value> = journal_rows(&ws.root)
        .into_iter()
        .filter(|r| r["tx_id"] == json!(tx))
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["mode"], "overwrite");
    assert_eq!(rows[1]["mode"], "create");
    assert_eq!(wal_entries(&ws.root), 0, "the WAL is retired after commit");
}

#[test]
fn a_retried_tx_commit_answers_as_the_first_and_writes_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = stage_a_and(&mut s, "b.txt");
    let first = s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(first["idempotent_replay"], false);
    // The response was lost; the agent retries. Someone changes a.txt in between: the retry
    // must not write it back.
    write(&mut s, "a.txt", "later a\n");
    let rows_before = journal_rows(&ws.root).len();
    let again = s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["tx_id"], json!(tx));
    for (f, g) in first["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["files"].as_array().unwrap())
    {
        for k in [
            "path",
            "abs_path",
            "sha256",
            "bytes",
            "mode_applied",
            "prev_sha256",
            "journal_id",
        ] {
            assert_eq!(f[k], g[k], "{k}");
        }
    }
    assert_eq!(again["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"later a\n");
    assert_eq!(
        journal_rows(&ws.root).len(),
        rows_before,
        "nothing journaled"
    );
    // A transaction rolled back, or never begun, is still refused.
    let tx2 = begin(&mut s);
    s.ok("rw_tx_rollback", json!({"tx_id": tx2}));
    let env = s.err("rw_tx_commit", json!({"tx_id": tx2}));
    assert_eq!(env["error"], "stale_precondition");
    let unknown = format!("tx-{}", "0".repeat(32));
    let env = s.err("rw_tx_commit", json!({"tx_id": unknown}));
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn tx_staging_touches_no_file_until_commit() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "old\n");
    let tx = begin(&mut s);
    let st = s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(st["base_sha256"], json!(sha256(b"old\n")));
    assert_eq!(st["sha256"], json!(sha256(b"new\n")));
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "c.txt", "content": "c\n"}),
    );
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"old\n");
    assert!(!ws.path("c.txt").exists());
    let status = s.ok("rw_tx_status", json!({"tx_id": tx}));
    assert_eq!(status["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(status["files"][0]["conflict"], json!(false));
}

#[test]
fn tx_commit_fails_whole_when_a_file_changed_and_names_each_conflict() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a0\n");
    write(&mut s, "b.txt", "b0\n");
    write(&mut s, "c.txt", "c0\n");
    let tx = begin(&mut s);
    for f in ["a.txt", "b.txt", "c.txt"] {
        s.ok(
            "rw_tx_write",
            json!({"tx_id": tx, "path": f, "content": "tx\n", "mode": "overwrite"}),
        );
    }
    write(&mut s, "a.txt", "someone else\n");
    write(&mut s, "c.txt", "someone else\n");
    let env = s.err("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(env["error"], "stale_precondition");
    let conflicts = env["context"]["conflicts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let paths: Vec<&str> = conflicts
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(paths, vec!["a.txt", "c.txt"]);
    assert_eq!(conflicts[0]["expected_prev_sha256"], json!(sha256(b"a0\n")));
    assert_eq!(
        std::fs::read(ws.path("b.txt")).unwrap(),
        b"b0\n",
        "nothing written"
    );
    assert!(journal_rows(&ws.root).iter().all(|r| r["tx_id"].is_null()));
}

#[test]
fn tx_rollback_discards_the_staged_files_and_touches_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = begin(&mut s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "x.txt", "content": "x\n"}),
    );
    let r = s.ok("rw_tx_rollback", json!({"tx_id": tx}));
    assert_eq!(r["discarded"], 1);
    assert!(!ws.path("x.txt").exists());
    assert_eq!(wal_entries(&ws.root), 0);
    let env = s.err("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["context"]["tx_id"], json!(tx));
}

#[test]
fn tx_past_its_timeout_is_discarded() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = s.ok("rw_tx_begin", json!({"timeout": 1}))["tx_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "late.txt", "content": "x\n"}),
    );
    std::thread::sleep(std::time::Duration::from_millis(1300));
    let env = s.err("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(env["error"], "stale_precondition");
    assert!(
        env["context"]["reason"]
            .as_str()
            .unwrap()
            .contains("expired")
    );
    assert!(!ws.path("late.txt").exists());
    assert_eq!(wal_entries(&ws.root), 0);
}

#[test]
fn concurrent_transactions_on_one_path_first_commit_wins() {
    let ws = Workspace::new();
    let mut s1 = ws.server();
    let mut s2 = ws.server();
    write(&mut s1, "shared.txt", "base\n");
    let t1 = begin(&mut s1);
    let t2 = begin(&mut s2);
    s1.ok(
        "rw_tx_write",
        json!({"tx_id": t1, "path": "shared.txt", "content": "one\n", "mode": "overwrite"}),
    );
    s2.ok(
        "rw_tx_write",
        json!({"tx_id": t2, "path": "shared.txt", "content": "two\n", "mode": "overwrite"}),
    );
    s1.ok("rw_tx_commit", json!({"tx_id": t1}));
    let env = s2.err("rw_tx_commit", json!({"tx_id": t2}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(
        env["context"]["conflicts"][0]["actual_prev_sha256"],
        json!(sha256(b"one\n"))
    );
    assert_eq!(std::fs::read(ws.path("shared.txt")).unwrap(), b"one\n");
}

#[test]
fn tx_replace_edits_the_content_staged_earlier_in_the_transaction() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = begin(&mut s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "f.txt", "content": "alpha beta\n"}),
    );
    let r = s.ok(
        "rw_tx_replace",
        json!({"tx_id": tx, "path": "f.txt", "old_string": "beta", "new_string": "gamma"}),
    );
    assert_eq!(r["replacements"], 1);
    assert_eq!(r["mode"], "create");
    let env = s.err(
        "rw_tx_replace",
        json!({"tx_id": tx, "path": "f.txt", "old_string": "nope", "new_string": "x"}),
    );
    assert_eq!(env["error"], "stale_precondition");
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(std::fs::read(ws.path("f.txt")).unwrap(), b"alpha gamma\n");
}

#[test]
fn tx_write_checks_expected_prev_sha256_when_staging() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a\n");
    let tx = begin(&mut s);
    let env = s.err("rw_tx_write", json!({"tx_id": tx, "path": "a.txt", "content": "b\n", "mode": "overwrite", "expected_prev_sha256": sha256(b"other")}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["context"]["actual_prev_sha256"], json!(sha256(b"a\n")));
}

#[test]
fn committed_transaction_is_rolled_forward_after_a_crash_at_the_commit_point() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a0\n");
    drop(s);
    let mut s = Server::start(
        &ws.root,
        &[],
        &[("RW_FAULT_INJECT", "tx_crash_after_commit_record")],
    );
    let tx = begin(&mut s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "a1\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "b.txt", "content": "b1\n"}),
    );
    s.send_raw(&json!({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": {"name": "rw_tx_commit", "arguments": {"tx_id": tx}}}).to_string());
    let status = s.child.wait().expect("wait");
    assert!(
        !status.success(),
        "the server aborted at the injected point"
    );
    assert_eq!(
        std::fs::read(ws.path("a.txt")).unwrap(),
        b"a0\n",
        "not applied before restart"
    );
    let mut s = ws.server();
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"a1\n");
    assert_eq!(std::fs::read(ws.path("b.txt")).unwrap(), b"b1\n");
    assert_eq!(wal_entries(&ws.root), 0);
    let rows = journal_rows(&ws.root)
        .into_iter()
        .filter(|r| r["tx_id"] == json!(tx))
        .count();
    assert_eq!(rows, 2, "one row per file, written once");
    s.ok("rw_journal_tail", json!({}));
    // The agent never saw the commit's answer: its retry learns that it committed.
    let r = s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(r["idempotent_replay"], true);
    let paths: Vec<&str> = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a.txt", "b.txt"]);
}

#[test]
fn uncommitted_transaction_of_a_dead_server_is_rolled_back_on_start() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = begin(&mut s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "a\n"}),
    );
    drop(s); // kills the server
    let mut s = ws.server();
    assert_eq!(wal_entries(&ws.root), 0);
    assert!(!ws.path("a.txt").exists());
    let env = s.err("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn every_overwrite_keeps_the_previous_content_in_the_object_store() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "v1\n"}));
    assert!(objects(&ws.root).is_empty(), "a create has no pre-image");
    write(&mut s, "a.txt", "v2\n");
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "more\n", "mode": "append"}),
    );
    s.ok(
        "rw_safe_replace",
        json!({"path": "a.txt", "old_string": "more", "new_string": "less"}),
    );
    let mut want = vec![sha256(b"v1\n"), sha256(b"v2\n"), sha256(b"v2\nmore\n")];
    want.sort();
    assert_eq!(objects(&ws.root), want);
    let obj = ws
        .root
        .join(".resilient_write/objects")
        .join(&want[0][..2])
        .join(&want[0]);
    assert_eq!(sha256(&std::fs::read(obj).unwrap()), want[0]);
}

#[test]
fn a_failed_write_stores_no_object() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "v1\n"}));
    s.err("rw_safe_write", json!({"path": "a.txt", "content": "v2\n", "mode": "overwrite", "expected_prev_sha256": sha256(b"nope")}));
    s.err(
        "rw_safe_replace",
        json!({"path": "a.txt", "old_string": "absent", "new_string": "x"}),
    );
    s.err("rw_safe_write", json!({"path": "a.txt", "content": "v2\n"}));
    assert!(objects(&ws.root).is_empty(), "{:?}", objects(&ws.root));
}

#[test]
fn history_lists_versions_newest_first_with_stored_flags() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "h.txt", "content": "1\n"}));
    write(&mut s, "h.txt", "2\n");
    write(&mut s, "other.txt", "x\n");
    write(&mut s, "h.txt", "3\n");
    let h = s.ok("rw_history", json!({"path": "h.txt"}));
    let shas: Vec<&str> = h["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["sha256"].as_str().unwrap())
        .collect();
    assert_eq!(shas, vec![sha256(b"3\n"), sha256(b"2\n"), sha256(b"1\n")]);
    assert!(
        h["versions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["stored"] == json!(true))
    );
    assert_eq!(h["versions"][2]["mode"], "create");
    assert_eq!(h["current_sha256"], json!(sha256(b"3\n")));
    let h = s.ok("rw_history", json!({"path": "h.txt", "limit": 2}));
    assert_eq!(h["truncated"], json!(true));
}

#[test]
fn restore_by_sha_puts_the_file_back_and_is_itself_undoable() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "r.txt", "content": "good\n"}),
    );
    write(&mut s, "r.txt", "bad\n");
    let r = s.ok("rw_restore", json!({"path": "r.txt", "to_sha256": sha256(b"good\n"), "expected_prev_sha256": sha256(b"bad\n")}));
    assert_eq!(r["files"][0]["sha256"], json!(sha256(b"good\n")));
    assert_eq!(std::fs::read(ws.path("r.txt")).unwrap(), b"good\n");
    let last = journal_rows(&ws.root).pop().unwrap();
    assert_eq!(last["mode"], "restore");
    s.ok(
        "rw_restore",
        json!({"path": "r.txt", "to_sha256": sha256(b"bad\n")}),
    );
    assert_eq!(
        std::fs::read(ws.path("r.txt")).unwrap(),
        b"bad\n",
        "the restore was undone"
    );
}

#[test]
fn restore_by_journal_id_and_dry_run_diff() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let first = s.ok(
        "rw_safe_write",
        json!({"path": "j.txt", "content": "one\n"}),
    );
    write(&mut s, "j.txt", "two\n");
    let d = s.ok(
        "rw_restore",
        json!({"path": "j.txt", "journal_id": first["journal_id"], "dry_run": true}),
    );
    assert!(d["diff"].as_str().unwrap().contains("-two"), "{d}");
    assert_eq!(
        std::fs::read(ws.path("j.txt")).unwrap(),
        b"two\n",
        "dry run writes nothing"
    );
    s.ok(
        "rw_restore",
        json!({"path": "j.txt", "journal_id": first["journal_id"]}),
    );
    assert_eq!(std::fs::read(ws.path("j.txt")).unwrap(), b"one\n");
}

#[test]
fn restore_refuses_a_sha_that_is_not_a_version_of_the_path() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "a\n"}));
    s.ok("rw_safe_write", json!({"path": "b.txt", "content": "b\n"}));
    write(&mut s, "b.txt", "b2\n");
    let env = s.err(
        "rw_restore",
        json!({"path": "a.txt", "to_sha256": sha256(b"b\n")}),
    );
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"a\n");
}

#[test]
fn restore_of_a_transaction_puts_every_file_back_as_one_transaction() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a0\n");
    write(&mut s, "b.txt", "b0\n");
    let tx = begin(&mut s);
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "a1\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_tx_replace",
        json!({"tx_id": tx, "path": "b.txt", "old_string": "b0", "new_string": "b1"}),
    );
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "c.txt", "content": "c1\n"}),
    );
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    let r = s.ok("rw_restore", json!({"tx_id": tx}));
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"a0\n");
    assert_eq!(std::fs::read(ws.path("b.txt")).unwrap(), b"b0\n");
    assert_eq!(
        r["skipped"][0]["path"]
            .as_str()
            .map(|p| p.ends_with("c.txt")),
        Some(true)
    );
    let undo = r["restore_tx_id"].as_str().unwrap().to_string();
    let rows: Vec<Value> = journal_rows(&ws.root)
        .into_iter()
        .filter(|r| r["tx_id"] == json!(undo))
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["mode"] == "restore"));
}

#[test]
fn restore_of_a_transaction_fails_whole_when_a_file_changed_since() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a0\n");
    write(&mut s, "b.txt", "b0\n");
    let tx = begin(&mut s);
    for f in ["a.txt", "b.txt"] {
        s.ok(
            "rw_tx_write",
            json!({"tx_id": tx, "path": f, "content": "tx\n", "mode": "overwrite"}),
        );
    }
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    write(&mut s, "b.txt", "later work\n");
    let env = s.err("rw_restore", json!({"tx_id": tx}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"tx\n");
    assert_eq!(std::fs::read(ws.path("b.txt")).unwrap(), b"later work\n");
    assert_eq!(wal_entries(&ws.root), 0);
}

fn cli(root: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bin())
        .args(args)
        .current_dir(root)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_POLICY_FILE")
        .output()
        .expect("run cli")
}

#[test]
fn gc_keeps_the_last_n_per_path_and_removes_older_pre_images() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "g.txt", "content": "0\n"}));
    for i in 1..=4 {
        write(&mut s, "g.txt", &format!("{i}\n"));
    }
    drop(s);
    assert_eq!(objects(&ws.root).len(), 4);
    std::fs::write(
        ws.root.join(".resilient_write/policy.yaml"),
        "history:\n  max_age: 0\n  keep_last: 2\n",
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = cli(&ws.root, &["gc", "--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(objects(&ws.root).len(), 4, "a dry run removes nothing");
    let out = cli(&ws.root, &["gc"]);
    assert!(out.status.success(), "{out:?}");
    let mut want = vec![sha256(b"2\n"), sha256(b"3\n")];
    want.sort();
    assert_eq!(objects(&ws.root), want);
    let mut s = ws.server();
    let h = s.ok("rw_history", json!({"path": "g.txt"}));
    let stored: Vec<bool> = h["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["stored"] == json!(true))
        .collect();
    assert_eq!(stored, vec![true, true, true, false, false]);
    let env = s.err(
        "rw_restore",
        json!({"path": "g.txt", "to_sha256": sha256(b"0\n")}),
    );
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn gc_refuses_an_unknown_history_key() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join(".resilient_write")).unwrap();
    std::fs::write(
        ws.root.join(".resilient_write/policy.yaml"),
        "history:\n  keep_versions: 2\n",
    )
    .unwrap();
    let out = cli(&ws.root, &["gc"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("keep_versions"));
}

#[test]
fn cli_history_and_restore_with_diff_preview() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "p.txt", "content": "before\n"}),
    );
    write(&mut s, "p.txt", "after\n");
    drop(s);
    let out = cli(&ws.root, &["history", "p.txt"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    let sha = sha256(b"before\n");
    let out = cli(&ws.root, &["restore", "p.txt", "--to", &sha, "--diff"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("+before"));
    assert_eq!(std::fs::read(ws.path("p.txt")).unwrap(), b"after\n");
    let out = cli(&ws.root, &["restore", "p.txt", "--to", &sha]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(ws.path("p.txt")).unwrap(), b"before\n");
}

#[test]
fn tx_commit_sends_progress_notifications_when_the_client_asks() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = begin(&mut s);
    for i in 0..30 {
        s.ok(
            "rw_tx_write",
            json!({"tx_id": tx, "path": format!("f{i}.txt"), "content": format!("{i}\n")}),
        );
    }
    let (resp, notes) = s.request_with_notifications(
        "tools/call",
        json!({"name": "rw_tx_commit", "arguments": {"tx_id": tx},
               "_meta": {"progressToken": 7}}),
    );
    assert_eq!(resp["result"]["isError"], false, "{resp}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(
        progress.len() >= 2,
        "too few progress notifications: {notes:?}"
    );
    assert!(
        progress.len() <= 25,
        "one notification per step is noise: {}",
        progress.len()
    );
    assert!(progress.iter().all(|n| n["params"]["progressToken"] == 7));
    let done: Vec<f64> = progress
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        done.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {done:?}"
    );
    let last = &progress.last().unwrap()["params"];
    assert_eq!(last["progress"], 60.0);
    assert_eq!(last["total"], 60.0);
}

#[test]
fn restore_takes_the_short_hash_history_prints_and_refuses_a_shorter_one() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "s.txt", "content": "old\n"}),
    );
    write(&mut s, "s.txt", "new\n");
    let old = sha256(b"old\n");
    let r = s.ok(
        "rw_restore",
        json!({"path": "s.txt", "to_sha256": old[..12].to_uppercase()}),
    );
    assert_eq!(r["files"][0]["sha256"], json!(old));
    assert_eq!(std::fs::read(ws.path("s.txt")).unwrap(), b"old\n");
    for bad in [&old[..7], "not-hex-at-all"] {
        let env = s.err("rw_restore", json!({"path": "s.txt", "to_sha256": bad}));
        assert_eq!(env["error"], "policy_violation", "{env}");
        assert_eq!(env["context"]["reason"], "invalid_arguments", "{env}");
    }
    assert_eq!(std::fs::read(ws.path("s.txt")).unwrap(), b"old\n");
    drop(s);
    // The CLI table prints 16 characters of each hash; `restore --to` takes them back.
    let out = cli(&ws.root, &["history", "s.txt"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let new16 = &sha256(b"new\n")[..16];
    assert!(text.contains(new16), "{text}");
    let out = cli(&ws.root, &["restore", "s.txt", "--to", new16]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(ws.path("s.txt")).unwrap(), b"new\n");
}

#[test]
fn cli_restore_tx_puts_every_file_of_a_transaction_back_as_a_new_one() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a.txt", "a0\n");
    write(&mut s, "b.txt", "b0\n");
    let tx = begin(&mut s);
    for (p, c) in [("a.txt", "a1\n"), ("b.txt", "b1\n")] {
        s.ok(
            "rw_tx_write",
            json!({"tx_id": tx, "path": p, "content": c, "mode": "overwrite"}),
        );
    }
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    drop(s);
    // --tx takes no path, --to or --diff; without --tx, PATH and --to are required.
    for bad in [
        &["restore", "a.txt", "--tx", tx.as_str()][..],
        &["restore", "--tx", tx.as_str(), "--diff"],
        &["restore", "a.txt"],
        &["restore"],
    ] {
        let out = cli(&ws.root, bad);
        assert!(!out.status.success(), "{bad:?} accepted");
    }
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"a1\n");
    let out = cli(&ws.root, &["restore", "--tx", &tx]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("a.txt: restored to"), "{text}");
    assert!(text.contains("as transaction"), "{text}");
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"a0\n");
    assert_eq!(std::fs::read(ws.path("b.txt")).unwrap(), b"b0\n");
    let rows = journal_rows(&ws.root);
    let restore_tx = rows.last().unwrap()["tx_id"].as_str().unwrap().to_string();
    assert_ne!(restore_tx, tx);
    assert!(text.contains(&restore_tx), "{text}");
    // An unknown transaction is refused with the tool's message.
    let out = cli(&ws.root, &["restore", "--tx", "nope"]);
    assert!(!out.status.success());
}

#[test]
fn cli_restore_to_takes_a_journal_id_and_a_32_digit_hash_prefix() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "j.txt", "content": "one\n"}),
    );
    write(&mut s, "j.txt", "two\n");
    drop(s);
    let first = journal_rows(&ws.root)[0]["journal_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = cli(&ws.root, &["restore", "j.txt", "--to", &first]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(ws.path("j.txt")).unwrap(), b"one\n");
    // 32 hex digits that are no journal_id are read as a hash prefix.
    let two = sha256(b"two\n");
    let out = cli(&ws.root, &["restore", "j.txt", "--to", &two[..32]]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(ws.path("j.txt")).unwrap(), b"two\n");
    // Neither a journal_id nor a hash of this file: refused, nothing written.
    let out = cli(&ws.root, &["restore", "j.txt", "--to", &"0".repeat(32)]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(ws.path("j.txt")).unwrap(), b"two\n");
}
