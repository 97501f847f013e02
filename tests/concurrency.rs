//! Several server processes on one workspace at once: read-modify-write with
//! `expected_prev_sha256` never loses an update, journal rows never interleave, and appends
//! retried under one idempotency key from two processes apply once.

mod common;

use common::{Server, Workspace, journal_rows, sha256, temp_files};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

const PROCESSES: usize = 3;
const INCREMENTS_EACH: usize = 30;

fn parse_count(bytes: &[u8]) -> u64 {
    let text = std::str::from_utf8(bytes).expect("counter is text");
    let n = text
        .strip_prefix("count=")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("counter file torn or foreign: {text:?}"));
    n.parse().expect("count is a number")
}

/// What one writer saw: journal_ids of its successful writes and how many were stale.
struct WriterLog {
    acked: Vec<(String, String, String)>, // (journal_id, sha256, prev_sha256)
    stale: usize,
}

fn increment_loop(ws: &Workspace, writer: usize) -> WriterLog {
    let mut s = ws.server();
    let mut log = WriterLog {
        acked: Vec::new(),
        stale: 0,
    };
    while log.acked.len() < INCREMENTS_EACH {
        let current = std::fs::read(ws.path("counter.txt")).expect("read counter");
        let n = parse_count(&current);
        let prev = sha256(&current);
        let next = format!("count={} writer={writer}\n", n + 1);
        let r = s.call_raw(
            "rw_safe_write",
            json!({
                "path": "counter.txt",
                "content": next,
                "mode": "overwrite",
                "expected_prev_sha256": prev,
            }),
        );
        let sc = &r["structuredContent"];
        if r["isError"] == json!(false) {
            assert_eq!(sc["prev_sha256"], json!(prev));
            assert_eq!(sc["sha256"], json!(sha256(next.as_bytes())));
            log.acked.push((
                sc["journal_id"].as_str().unwrap().to_string(),
                sc["sha256"].as_str().unwrap().to_string(),
                prev,
            ));
        } else {
            assert_eq!(
                sc["error"],
                json!("stale_precondition"),
                "only a stale hash may fail here: {sc}"
            );
            assert_eq!(sc["context"]["expected_prev_sha256"], json!(prev));
            log.stale += 1;
        }
    }
    log
}

#[test]
fn concurrent_read_modify_write_with_expected_hash_never_loses_an_update() {
    let ws = Workspace::new();
    {
        let mut s = ws.server();
        s.ok(
            "rw_safe_write",
            json!({"path": "counter.txt", "content": "count=0 writer=init\n"}),
        );
    }
    let logs: Vec<WriterLog> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..PROCESSES)
            .map(|w| {
                let ws = &ws;
                scope.spawn(move || increment_loop(ws, w))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let successes: usize = logs.iter().map(|l| l.acked.len()).sum();
    let stale: usize = logs.iter().map(|l| l.stale).sum();
    println!(
        "concurrency: {PROCESSES} processes, {successes} successful increments, {stale} stale retries"
    );

    // No lost update: the count equals the number of successful writes.
    let final_bytes = std::fs::read(ws.path("counter.txt")).unwrap();
    assert_eq!(parse_count(&final_bytes), successes as u64);

    // One well-formed row per successful write (plus the create), in one chain: each row's
    // prev_sha256 is the previous row's sha256.
    let raw = std::fs::read_to_string(ws.path(".resilient_write/journal.jsonl")).unwrap();
    assert!(raw.ends_with('\n'));
    let rows = journal_rows(&ws.root);
    assert_eq!(raw.lines().count(), rows.len(), "one row per line");
    assert_eq!(rows.len(), successes + 1);
    for w in rows.windows(2) {
        assert_eq!(w[1]["prev_sha256"], w[0]["sha256"], "the chain is broken");
    }
    assert_eq!(
        rows.last().unwrap()["sha256"],
        json!(sha256(&final_bytes)),
        "the last row is the file's content"
    );
    let mut ids: HashMap<String, usize> = HashMap::new();
    for r in &rows {
        for k in [
            "journal_id",
            "ts",
            "path",
            "sha256",
            "bytes",
            "mode",
            "tool",
        ] {
            assert!(r.get(k).is_some(), "row without {k}: {r}");
        }
        *ids.entry(r["journal_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    for l in &logs {
        for (id, sha, prev) in &l.acked {
            assert_eq!(ids.get(id), Some(&1), "acknowledged write {id} has one row");
            let row = rows.iter().find(|r| r["journal_id"] == json!(id)).unwrap();
            assert_eq!(row["sha256"], json!(sha));
            assert_eq!(row["prev_sha256"], json!(prev));
        }
    }
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
}

const KEYS: usize = 40;

fn append_all(ws: &Workspace) -> Vec<Value> {
    let mut s: Server = ws.server();
    (0..KEYS)
        .map(|i| {
            s.ok(
                "rw_safe_write",
                json!({
                    "path": "log.txt",
                    "content": format!("entry {i}\n"),
                    "mode": "append",
                    "idempotency_key": format!("append-{i}"),
                }),
            )
        })
        .collect()
}

#[test]
fn concurrent_appends_with_idempotency_keys_apply_each_key_once() {
    let ws = Workspace::new();
    let (a, b) = std::thread::scope(|scope| {
        let ha = scope.spawn(|| append_all(&ws));
        let hb = scope.spawn(|| append_all(&ws));
        (ha.join().unwrap(), hb.join().unwrap())
    });

    let text = std::fs::read_to_string(ws.path("log.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), KEYS, "each key applied once: {text}");
    let distinct: HashSet<&str> = lines.iter().copied().collect();
    assert_eq!(distinct.len(), KEYS);
    for i in 0..KEYS {
        assert!(distinct.contains(format!("entry {i}").as_str()));
    }

    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), KEYS, "one row per key");
    let keys: HashSet<&str> = rows
        .iter()
        .map(|r| r["idempotency_key"].as_str().expect("row carries its key"))
        .collect();
    assert_eq!(keys.len(), KEYS);

    for (ra, rb) in a.iter().zip(&b) {
        assert_eq!(ra["journal_id"], rb["journal_id"], "one write per key");
        let ta = ra.get("idempotent_replay") == Some(&json!(true));
        let tb = rb.get("idempotent_replay") == Some(&json!(true));
        assert!(
            ta ^ tb,
            "exactly one of the two calls is the replay: {ra} {rb}"
        );
    }
    let first_by_a = a
        .iter()
        .filter(|r| r.get("idempotent_replay").is_none())
        .count();
    println!(
        "concurrency: {KEYS} keys from 2 processes, each applied once ({first_by_a} first by A)"
    );
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
}

#[test]
fn concurrent_plain_appends_from_several_processes_never_lose_one() {
    let ws = Workspace::new();
    std::thread::scope(|scope| {
        for w in 0..PROCESSES {
            let ws = &ws;
            scope.spawn(move || {
                let mut s = ws.server();
                for i in 0..INCREMENTS_EACH {
                    s.ok(
                        "rw_safe_write",
                        json!({
                            "path": "shared.log",
                            "content": format!("writer {w} line {i}\n"),
                            "mode": "append",
                        }),
                    );
                }
            });
        }
    });
    let text = std::fs::read_to_string(ws.path("shared.log")).unwrap();
    let lines: HashSet<&str> = text.lines().collect();
    assert_eq!(text.lines().count(), PROCESSES * INCREMENTS_EACH, "{text}");
    assert_eq!(lines.len(), PROCESSES * INCREMENTS_EACH);
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), PROCESSES * INCREMENTS_EACH);
    for w in rows.windows(2) {
        assert_eq!(w[1]["prev_sha256"], w[0]["sha256"], "the chain is broken");
    }
}
