//! `.resilient_write/idempotency.jsonl` is compacted (issue 40): once a keyed call's record
//! takes it past its trigger (1 MiB at first), first results older than the policy's
//! `idempotency.max_age` (7 days) are dropped and the others kept, so a retry of a kept key
//! still replays and a retry of a dropped one runs as a new call. A crash at each step of the
//! compaction (debug builds' fault points) loses no kept key.

mod common;

use common::{Killable, Server, Workspace};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn results_file(root: &Path) -> PathBuf {
    root.join(".resilient_write/idempotency.jsonl")
}

fn checkpoint(key: &str, n: u64) -> Value {
    json!({"name": key, "data": {"n": n}, "idempotency_key": key})
}

/// Append `bytes` worth of first results dated 40 days ago (and make `backdate` keys that
/// old too), as a new file put in place by rename, like a compaction's.
fn add_expired_rows(root: &Path, bytes: usize, backdate: &[&str]) {
    let path = results_file(root);
    let old = (chrono::Utc::now() - chrono::Duration::days(40)).to_rfc3339();
    let mut text = String::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let mut row: Value = serde_json::from_str(line).unwrap();
        if backdate.iter().any(|k| row["idempotency_key"] == *k) {
            row["ts"] = json!(old);
        }
        text.push_str(&format!("{row}\n"));
    }
    let pad = "p".repeat(4000);
    let mut i = 0;
    while text.len() < bytes {
        let row = json!({"idempotency_key": format!("expired{i}"), "request_sha256": "x",
                         "tool": "checkpoint", "ts": old, "result": {"pad": pad}});
        text.push_str(&format!("{row}\n"));
        i += 1;
    }
    let temp = path.with_extension("test");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, &path).unwrap();
}

fn keys_in(root: &Path) -> Vec<String> {
    std::fs::read_to_string(results_file(root))
        .unwrap()
        .lines()
        .map(|l| {
            let row: Value = serde_json::from_str(l).expect("every line whole");
            row["idempotency_key"].as_str().unwrap().to_string()
        })
        .collect()
}

fn assert_replays(s: &mut Server, key: &str, n: u64, first: &Value) {
    let again = s.ok("rw_checkpoint", checkpoint(key, n));
    assert_eq!(again["idempotent_replay"], true, "{key}: {again}");
    let mut again = again;
    again.as_object_mut().unwrap().remove("idempotent_replay");
    assert_eq!(&again, first, "{key}");
}

#[test]
fn past_the_trigger_expired_results_are_dropped_and_kept_keys_still_replay() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let live = s.ok("rw_checkpoint", checkpoint("live", 1));
    s.ok("rw_checkpoint", checkpoint("expiring", 1));
    add_expired_rows(&ws.root, 1_200_000, &["expiring"]);
    let before = std::fs::metadata(results_file(&ws.root)).unwrap().len();
    assert!(before > 1 << 20, "{before}");
    // A retry before the compaction still replays a backdated key: keys live at least
    // max_age, and are dropped only when the file is compacted.
    assert_eq!(
        s.ok("rw_checkpoint", checkpoint("expiring", 1))["idempotent_replay"],
        true
    );
    // The record that crosses the trigger compacts.
    let trigger = s.ok("rw_checkpoint", checkpoint("trigger", 1));
    let after = std::fs::metadata(results_file(&ws.root)).unwrap().len();
    assert!(after < 10_000, "{before} -> {after} bytes");
    assert_eq!(keys_in(&ws.root), ["live", "trigger"]);
    assert_replays(&mut s, "live", 1, &live);
    assert_replays(&mut s, "trigger", 1, &trigger);
    // The dropped key: a retry runs as a new call (documented), here writing the checkpoint
    // again over a later version.
    s.ok(
        "rw_checkpoint",
        json!({"name": "expiring", "data": {"n": 2}}),
    );
    let rerun = s.ok("rw_checkpoint", checkpoint("expiring", 1));
    assert!(rerun.get("idempotent_replay").is_none(), "{rerun}");
    let read = s.ok("rw_checkpoint_read", json!({"name": "expiring"}));
    assert_eq!(read["data"]["n"], 1, "{read}");
    // A new process reads the compacted file: the kept keys replay there too.
    drop(s);
    let mut s = ws.server();
    assert_replays(&mut s, "live", 1, &live);
    assert_replays(&mut s, "trigger", 1, &trigger);
    assert_eq!(
        s.ok("rw_checkpoint", checkpoint("expiring", 1))["idempotent_replay"],
        true,
        "recorded again by the re-run"
    );
}

#[test]
fn the_policy_sets_max_age_and_gc_compacts_on_request() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", checkpoint("day_old", 1));
    s.ok("rw_checkpoint", checkpoint("fresh", 1));
    drop(s);
    // Backdate one key by two days: past a max_age of one day, within the default.
    let path = results_file(&ws.root);
    let two_days = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
    let text: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: Value = serde_json::from_str(l).unwrap();
            if row["idempotency_key"] == "day_old" {
                row["ts"] = json!(two_days);
            }
            format!("{row}\n")
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let gc = common::run_cli(&ws.root, &["gc"], &[]);
    assert!(gc.status.success(), "{gc:?}");
    assert_eq!(keys_in(&ws.root), ["day_old", "fresh"], "default: 7 days");
    std::fs::write(
        ws.root.join(".resilient_write/policy.yaml"),
        "idempotency:\n  max_age: 1d\n",
    )
    .unwrap();
    let dry = common::run_cli(&ws.root, &["gc", "--dry-run"], &[]);
    let out = String::from_utf8_lossy(&dry.stdout);
    assert!(out.contains("would drop 1 idempotency result"), "{out}");
    assert_eq!(keys_in(&ws.root).len(), 2);
    let gc = common::run_cli(&ws.root, &["gc"], &[]);
    let out = String::from_utf8_lossy(&gc.stdout);
    assert!(out.contains("dropped 1 idempotency result"), "{out}");
    assert_eq!(keys_in(&ws.root), ["fresh"]);
    // A bad section is refused by gc and reported by doctor, naming it.
    std::fs::write(
        ws.root.join(".resilient_write/policy.yaml"),
        "idempotency:\n  max_age: soon\n",
    )
    .unwrap();
    let gc = common::run_cli(&ws.root, &["gc"], &[]);
    assert!(!gc.status.success());
    assert!(String::from_utf8_lossy(&gc.stderr).contains("max_age"));
    let doctor = common::run_cli(&ws.root, &["doctor"], &[]);
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(out.contains("idempotency section"), "{out}");
    assert_eq!(keys_in(&ws.root), ["fresh"], "nothing dropped meanwhile");
}

#[test]
fn a_crash_at_each_step_of_a_compaction_loses_no_kept_key() {
    if !common::faults_compiled_in() {
        return;
    }
    for fault in [
        "idempotency_compact_crash_mid_temp",
        "idempotency_compact_crash_before_rename",
        "idempotency_compact_crash_after_rename",
    ] {
        let ws = Workspace::new();
        let mut s = ws.server();
        let first: Vec<Value> = ["a", "b"]
            .iter()
            .map(|k| s.ok("rw_checkpoint", checkpoint(k, 1)))
            .collect();
        drop(s);
        add_expired_rows(&ws.root, 1_200_000, &[]);
        // The record of `c` is durable before its compaction starts, and the server dies in it.
        let mut dying = Killable::start(&ws.root, Some(fault)).expect("started");
        assert!(
            dying.call("rw_checkpoint", checkpoint("c", 1)).is_none(),
            "{fault}: the server survived"
        );
        dying.wait();
        let temp = ws.root.join(".resilient_write/idempotency.jsonl.compact");
        assert_eq!(temp.exists(), !fault.ends_with("after_rename"), "{fault}");
        let mut s = ws.server();
        for (key, first) in ["a", "b"].iter().zip(&first) {
            assert_replays(&mut s, key, 1, first);
        }
        let c = s.ok("rw_checkpoint", checkpoint("c", 1));
        assert_eq!(c["idempotent_replay"], true, "{fault}: {c}");
        // Every line is whole; the next record past the trigger finishes the job.
        let keys = keys_in(&ws.root);
        assert!(
            keys.len() == 3 || keys.len() > 100,
            "{fault}: {}",
            keys.len()
        );
        s.ok("rw_checkpoint", checkpoint("d", 1));
        assert_eq!(keys_in(&ws.root), ["a", "b", "c", "d"], "{fault}");
        assert!(!temp.exists(), "{fault}: the temp file is gone");
    }
}
