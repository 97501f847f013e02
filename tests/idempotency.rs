//! `idempotency_key` on every writing tool (SPEC section 9): a retry with the same key and
//! arguments answers with the first result and applies nothing again; the same key with other
//! arguments is stale_precondition. `safe_write`, `safe_replace`, `chunk_append`,
//! `chunk_compose` and `scratch_put` are covered next to their other behaviours; this file
//! covers the rest, whose first results are kept in `.resilient_write/idempotency.jsonl`
//! (`chunk_write` in its journal row).

mod common;

use common::{Server, Workspace, journal_rows, sha256, wal_entries};
use serde_json::{Value, json};

/// `tool` called with `args` under `key`, then retried: the first result, after checking the
/// retry answered with it (`idempotent_replay: true`, every other field equal).
fn call_and_retry(s: &mut Server, tool: &str, args: Value, key: &str) -> Value {
    let mut keyed = args;
    keyed["idempotency_key"] = json!(key);
    let first = s.ok(tool, keyed.clone());
    assert!(
        first.get("idempotent_replay").is_none_or(|r| r == false),
        "{first}"
    );
    let again = s.ok(tool, keyed);
    assert_eq!(again["idempotent_replay"], true, "{tool}: {again}");
    assert_eq!(without_replay(&again), without_replay(&first), "{tool}");
    // The replay is a result like any other: it matches the published output schema.
    let tools = s.list_every_tool();
    let listed = tools.iter().find(|t| t["name"] == tool);
    let schema = jsonschema::validator_for(&listed.unwrap()["outputSchema"]).unwrap();
    for v in [&first, &again] {
        let errors: Vec<String> = schema.iter_errors(v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{tool}: {errors:?} for {v}");
    }
    first
}

fn without_replay(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("idempotent_replay");
    v
}

/// The key used with other arguments is refused, naming the key.
fn refused(s: &mut Server, tool: &str, mut args: Value, key: &str) {
    args["idempotency_key"] = json!(key);
    let env = s.err(tool, args);
    assert_eq!(env["error"], "stale_precondition", "{tool}: {env}");
    assert_eq!(env["context"]["reason"], "idempotency_key_reused", "{env}");
    assert_eq!(env["context"]["idempotency_key"], key, "{env}");
}

/// Journal rows of `tool` with one of `modes`.
fn rows_of(ws: &Workspace, tool: &str, modes: &[&str]) -> usize {
    journal_rows(&ws.root)
        .iter()
        .filter(|r| r["tool"] == tool && modes.iter().any(|m| r["mode"] == *m))
        .count()
}

fn read(ws: &Workspace, rel: &str) -> String {
    std::fs::read_to_string(ws.path(rel)).unwrap()
}

#[test]
fn chunk_write_retried_writes_once_even_after_the_chunk_changed() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args = json!({"session": "s", "index": 1, "content": "one"});
    let first = call_and_retry(&mut s, "rw_chunk_write", args.clone(), "cw");
    assert_eq!(first["index"], 1);
    // Rewritten since: the retry still answers without writing its content again.
    s.ok(
        "rw_chunk_write",
        json!({"session": "s", "index": 1, "content": "ONE"}),
    );
    let again = s.ok(
        "rw_chunk_write",
        json!({"session": "s", "index": 1, "content": "one", "idempotency_key": "cw"}),
    );
    assert_eq!(again["journal_id"], first["journal_id"]);
    assert_eq!(read(&ws, ".resilient_write/chunks/s/part-001.txt"), "ONE");
    // The first write and the rewrite (besides the manifest's rows).
    assert_eq!(rows_of(&ws, "chunk_write", &["create", "overwrite"]), 2);
    refused(
        &mut s,
        "rw_chunk_write",
        json!({"session": "s", "index": 2, "content": "one"}),
        "cw",
    );
}

#[test]
fn chunk_reset_retried_reports_the_first_reset_and_leaves_the_new_session() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for i in 1..=2 {
        s.ok(
            "rw_chunk_write",
            json!({"session": "r", "index": i, "content": "x"}),
        );
    }
    let first = call_and_retry(&mut s, "rw_chunk_reset", json!({"session": "r"}), "cr");
    assert_eq!(first["existed"], true);
    assert!(first["removed"].as_u64().unwrap() >= 2, "{first}");
    // A new attempt under the same name is not wiped by a late retry of the reset.
    s.ok(
        "rw_chunk_write",
        json!({"session": "r", "index": 1, "content": "new"}),
    );
    let again = s.ok(
        "rw_chunk_reset",
        json!({"session": "r", "idempotency_key": "cr"}),
    );
    assert_eq!(without_replay(&again), first);
    assert_eq!(read(&ws, ".resilient_write/chunks/r/part-001.txt"), "new");
    refused(&mut s, "rw_chunk_reset", json!({"session": "other"}), "cr");
}

fn handoff(summary: &str) -> Value {
    json!({"envelope": {
        "task_id": "t1", "status": "partial", "agent": "test", "summary": summary,
        "next_steps": ["go on"], "last_good_state": []
    }, "archive": true})
}

#[test]
fn handoff_write_retried_writes_and_archives_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_handoff_write", handoff("before"));
    let first = call_and_retry(&mut s, "rw_handoff_write", handoff("after"), "hw");
    assert!(first["archived_path"].is_string(), "{first}");
    assert_eq!(rows_of(&ws, "handoff_write", &["create", "overwrite"]), 2);
    assert_eq!(rows_of(&ws, "handoff_write", &["archive"]), 1);
    let archived = std::fs::read_dir(ws.path(".resilient_write/handoffs"))
        .unwrap()
        .count();
    assert_eq!(archived, 1);
    refused(&mut s, "rw_handoff_write", handoff("other"), "hw");
}

#[test]
fn checkpoint_retried_saves_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args = json!({"name": "cp", "data": {"step": 1}});
    let first = call_and_retry(&mut s, "rw_checkpoint", args, "ck");
    assert_eq!(rows_of(&ws, "checkpoint", &["create"]), 1);
    assert_eq!(rows_of(&ws, "checkpoint", &["overwrite"]), 0);
    let read = s.ok("rw_checkpoint_read", json!({"name": "cp"}));
    assert_eq!(read["updated_at"], first["updated_at"]);
    refused(
        &mut s,
        "rw_checkpoint",
        json!({"name": "cp", "data": {"step": 2}}),
        "ck",
    );
}

#[test]
fn checkpoint_cleanup_retried_removes_nothing_more() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", json!({"name": "old", "data": 1}));
    let first = call_and_retry(&mut s, "rw_checkpoint_cleanup", json!({}), "cc");
    assert_eq!(first["removed"][0]["name"], "old", "{first}");
    // Saved after the cleanup: a retry of it keeps this one.
    s.ok("rw_checkpoint", json!({"name": "new", "data": 2}));
    let again = s.ok("rw_checkpoint_cleanup", json!({"idempotency_key": "cc"}));
    assert_eq!(without_replay(&again), first);
    s.ok("rw_checkpoint_read", json!({"name": "new"}));
    refused(
        &mut s,
        "rw_checkpoint_cleanup",
        json!({"include_session": false}),
        "cc",
    );
}

#[test]
fn tx_begin_retried_opens_one_transaction() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let first = call_and_retry(&mut s, "rw_tx_begin", json!({"label": "one"}), "tb");
    assert!(first["tx_id"].is_string());
    assert_eq!(wal_entries(&ws.root), 1);
    refused(&mut s, "rw_tx_begin", json!({"label": "two"}), "tb");
}

#[test]
fn tx_write_and_tx_replace_retried_stage_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    std::fs::write(ws.path("e.txt"), "a b\n").unwrap();
    let tx = s.ok("rw_tx_begin", json!({}))["tx_id"].clone();
    // Staged twice, an append would add its content twice and a replacement apply twice.
    let w = json!({"tx_id": tx, "path": "n.txt", "content": "x", "mode": "append"});
    call_and_retry(&mut s, "rw_tx_write", w, "tw");
    let r = json!({"tx_id": tx, "path": "e.txt", "old_string": "a", "new_string": "aa"});
    call_and_retry(&mut s, "rw_tx_replace", r, "tr");
    let status = s.ok("rw_tx_status", json!({"tx_id": tx}));
    assert_eq!(status["files"].as_array().unwrap().len(), 2);
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(read(&ws, "n.txt"), "x");
    assert_eq!(read(&ws, "e.txt"), "aa b\n");
    refused(
        &mut s,
        "rw_tx_write",
        json!({"tx_id": tx, "path": "n.txt", "content": "y"}),
        "tw",
    );
    refused(
        &mut s,
        "rw_tx_replace",
        json!({"tx_id": tx, "path": "e.txt", "old_string": "b", "new_string": "c"}),
        "tr",
    );
}

#[test]
fn tx_commit_retried_answers_with_the_commit_and_journals_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = s.ok("rw_tx_begin", json!({}))["tx_id"].clone();
    for p in ["a.txt", "b.txt"] {
        s.ok("rw_tx_write", json!({"tx_id": tx, "path": p, "content": p}));
    }
    let first = call_and_retry(&mut s, "rw_tx_commit", json!({"tx_id": tx}), "tc");
    assert_eq!(first["files"].as_array().unwrap().len(), 2);
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.iter().filter(|r| r["tx_id"] == tx).count(), 2);
    let other = s.ok("rw_tx_begin", json!({}))["tx_id"].clone();
    refused(&mut s, "rw_tx_commit", json!({"tx_id": other}), "tc");
}

#[test]
fn tx_rollback_retried_answers_instead_of_calling_the_transaction_unknown() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tx = s.ok("rw_tx_begin", json!({}))["tx_id"].clone();
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "a"}),
    );
    let first = call_and_retry(&mut s, "rw_tx_rollback", json!({"tx_id": tx}), "rb");
    assert_eq!(first["discarded"], 1);
    assert_eq!(wal_entries(&ws.root), 0);
    // Without the key, a second rollback finds no open transaction.
    s.err("rw_tx_rollback", json!({"tx_id": tx}));
    let other = s.ok("rw_tx_begin", json!({}))["tx_id"].clone();
    refused(&mut s, "rw_tx_rollback", json!({"tx_id": other}), "rb");
}

#[test]
fn restore_retried_journals_once_and_a_dry_run_keeps_nothing_under_its_key() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "f.txt", "content": "v1\n"}));
    s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": "v2\n", "mode": "overwrite"}),
    );
    let to_v1 = json!({"path": "f.txt", "to_sha256": sha256(b"v1\n")});
    // A dry run under a key writes nothing and keeps nothing: each is a fresh dry run.
    let mut dry = to_v1.clone();
    dry["dry_run"] = json!(true);
    dry["idempotency_key"] = json!("dry");
    for _ in 0..2 {
        let d = s.ok("rw_restore", dry.clone());
        assert!(d.get("idempotent_replay").is_none(), "{d}");
        assert!(d["diff"].is_string());
    }
    let first = call_and_retry(&mut s, "rw_restore", to_v1.clone(), "rs");
    assert_eq!(read(&ws, "f.txt"), "v1\n");
    assert_eq!(
        journal_rows(&ws.root)
            .iter()
            .filter(|r| r["mode"] == "restore")
            .count(),
        1
    );
    // Written since: a late retry does not put v1 back over it.
    s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": "v3\n", "mode": "overwrite"}),
    );
    let mut keyed = to_v1;
    keyed["idempotency_key"] = json!("rs");
    let again = s.ok("rw_restore", keyed);
    assert_eq!(again["files"], first["files"]);
    assert_eq!(read(&ws, "f.txt"), "v3\n");
    refused(
        &mut s,
        "rw_restore",
        json!({"path": "f.txt", "to_sha256": sha256(b"v2\n")}),
        "rs",
    );
}

fn index_rows(ws: &Workspace) -> usize {
    std::fs::read_to_string(ws.path(".resilient_write/scratch/index.jsonl"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn redact_with_deposit_retried_deposits_once_and_keeps_no_draft() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = common::github_token(7);
    let draft = format!("token = \"{token}\"\n");
    let args = json!({"content": draft, "deposit": true});
    let first = call_and_retry(&mut s, "rw_redact", args, "rd");
    assert_eq!(first["deposited"], true, "{first}");
    assert!(first["content"].as_str().unwrap().contains("{REDACTED:"));
    assert!(first["replacements"][0]["sha256"].is_string(), "{first}");
    assert_eq!(index_rows(&ws), 1);
    // Neither the secret nor the redacted draft is kept under the key.
    let kept = read(&ws, ".resilient_write/idempotency.jsonl");
    assert!(
        !kept.contains(&token) && !kept.contains("token = "),
        "{kept}"
    );
    refused(
        &mut s,
        "rw_redact",
        json!({"content": "nothing secret", "deposit": true}),
        "rd",
    );
}

#[test]
fn a_key_is_one_key_across_tools_and_survives_a_restart() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "a", "idempotency_key": "shared"}),
    );
    refused(&mut s, "rw_tx_begin", json!({}), "shared");
    let tx = s.ok("rw_tx_begin", json!({"idempotency_key": "begun"}));
    refused(
        &mut s,
        "rw_safe_write",
        json!({"path": "b.txt", "content": "b"}),
        "begun",
    );
    assert!(!ws.path("b.txt").exists());
    drop(s);
    let mut s = ws.server();
    // (The restart rolled the abandoned transaction back; the retry opens no other.)
    let again = s.ok("rw_tx_begin", json!({"idempotency_key": "begun"}));
    assert_eq!(again["tx_id"], tx["tx_id"]);
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(wal_entries(&ws.root), 0);
}

#[test]
fn an_idempotency_key_of_more_than_256_bytes_is_refused_and_applies_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err("rw_tx_begin", json!({"idempotency_key": "k".repeat(257)}));
    assert_eq!(env["error"], "policy_violation", "{env}");
    assert_eq!(wal_entries(&ws.root), 0);
}
