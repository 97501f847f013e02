//! The real binary's journal analytics: `rw_analytics` over stdio (writes, bytes, modes,
//! callers, hot paths, chunks, corrupt lines, `since` and session filters) and the `analytics`
//! CLI's table and JSON.

mod common;

use common::Workspace;
use serde_json::{Value, json};
use std::io::Write;

fn journal_with(ws: &Workspace, lines: &[String]) {
    std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
    let mut f = std::fs::File::create(ws.path(".resilient_write/journal.jsonl")).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn row(ts: &str, path: &str, mode: &str, bytes: u64, caller: &str) -> String {
    json!({"bytes": bytes, "caller": caller, "journal_id": "x", "mode": mode, "path": path,
        "prev_sha256": null, "sha256": "00", "tool": "safe_write", "ts": ts})
    .to_string()
}

#[test]
fn analytics_counts_writes_bytes_modes_callers_and_hot_paths() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "12345"}),
    );
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "1234567", "mode": "overwrite"}),
    );
    s.ok("rw_safe_write", json!({"path": "b.txt", "content": "1"}));
    let r = s.ok("rw_analytics", json!({}));
    assert_eq!(r["total_writes"], 3);
    assert_eq!(r["unique_paths"], 2);
    assert_eq!(r["total_bytes_written"], 13);
    assert_eq!(r["by_mode"], json!({"create": 2, "overwrite": 1}));
    assert_eq!(r["by_caller"], json!({"integration-test": 3}));
    assert_eq!(r["hot_paths"][0]["path"], "a.txt");
    assert_eq!(r["hot_paths"][0]["write_count"], 2);
    assert_eq!(r["timeline"].as_array().unwrap().len(), 3);
    assert_eq!(r["corrupt_lines"], 0);
    for k in ["sessions", "write_velocity", "period"] {
        assert!(r[k].is_object(), "{k}");
    }
}

#[test]
fn analytics_counts_the_chunks_written_not_the_manifest_updates() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for i in 1..=3 {
        s.ok(
            "rw_chunk_write",
            json!({"session": "s", "index": i, "content": format!("{i}")}),
        );
    }
    s.ok(
        "rw_chunk_compose",
        json!({"session": "s", "output_path": "out.txt"}),
    );
    let r = s.ok("rw_analytics", json!({}));
    assert_eq!(r["sessions"]["s"]["chunk_writes"], 3, "{r}");
    assert_eq!(r["sessions"]["s"]["composes"], 1, "{r}");
}

#[test]
fn analytics_skips_and_counts_corrupt_journal_lines() {
    let ws = Workspace::new();
    journal_with(
        &ws,
        &[
            row("2026-04-12T10:00:00Z", "/w/a", "create", 5, "c"),
            "not json at all".into(),
            "[1,2]".into(),
            row("2026-04-12T10:02:00Z", "/w/a", "overwrite", 7, "c"),
        ],
    );
    let mut s = ws.server();
    let r = s.ok("rw_analytics", json!({}));
    assert_eq!(r["total_writes"], 2);
    assert_eq!(r["corrupt_lines"], 2);
    assert_eq!(r["period"]["duration_seconds"], 120.0);
    assert_eq!(r["write_velocity"]["writes_per_minute"], 1.0);
    assert_eq!(r["write_velocity"]["peak_minute"], "2026-04-12T10:00Z");
}

#[test]
fn analytics_since_and_session_filter_narrow_the_rows() {
    let ws = Workspace::new();
    journal_with(
        &ws,
        &[
            row("2026-04-12T09:00:00Z", "/w/old", "create", 1, "c"),
            row(
                "2026-04-12T10:00:00Z",
                "/w/.resilient_write/chunks/s1/part-001.txt",
                "create",
                2,
                "c",
            ),
            row(
                "2026-04-12T10:00:01Z",
                "/w/.resilient_write/chunks/s2/part-001.txt",
                "create",
                3,
                "c",
            ),
        ],
    );
    let mut s = ws.server();
    let r = s.ok(
        "rw_analytics",
        json!({"since": "2026-04-12T10:00:00Z", "session_filter": "s1"}),
    );
    assert_eq!(r["total_writes"], 2);
    assert_eq!(r["sessions"], json!({"s1": r["sessions"]["s1"]}));
    assert_eq!(r["sessions"]["s1"]["chunk_writes"], 1);
}

#[test]
fn analytics_refuses_an_unparsable_since() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err("rw_analytics", json!({"since": "yesterday"}));
    assert_eq!(env["error"], "policy_violation");
}

#[test]
fn cli_analytics_prints_a_table_and_json() {
    let ws = Workspace::new();
    journal_with(
        &ws,
        &[
            row("2026-04-12T10:00:00Z", "/w/a", "create", 5, "c"),
            "bad".into(),
        ],
    );
    let run = |args: &[&str]| {
        let out = std::process::Command::new(common::bin())
            .args(args)
            .current_dir(&ws.root)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let table = run(&["analytics"]);
    assert!(table.contains("writes 1"), "{table}");
    assert!(table.contains("corrupt lines 1"), "{table}");
    assert!(table.contains("/w/a"), "{table}");
    let v: Value = serde_json::from_str(&run(&["analytics", "--json"])).unwrap();
    assert_eq!(v["total_writes"], 1);
    assert_eq!(v["corrupt_lines"], 1);
}
