//! L2 over MCP: chunk_write / chunk_append / chunk_compose / chunk_preview / chunk_status /
//! chunk_reset and every error of the issue. What a session on disk vouches for (hand edits,
//! lost records, the original's layout, stamps) and two processes at once:
//! `tests/chunk_integrity.rs`.

mod common;

use common::chunks::{session_dir, write};
use common::{Workspace, journal_rows, sha256};
use serde_json::{Value, json};

#[test]
fn chunk_write_stores_part_file_and_reports_the_originals_fields() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = write(&mut s, "doc", 1, "hello ");
    assert_eq!(r["session"], "doc");
    assert_eq!(r["index"], 1);
    assert_eq!(r["chunk_path"], ".resilient_write/chunks/doc/part-001.txt");
    assert_eq!(r["sha256"], json!(sha256(b"hello ")));
    assert_eq!(r["bytes"], 6);
    assert!(r["journal_id"].is_string());
    assert_eq!(
        std::fs::read(session_dir(&ws, "doc").join("part-001.txt")).unwrap(),
        b"hello "
    );
}

#[test]
fn manifest_records_created_updated_total_expected_and_chunk_hashes() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_chunk_write",
        json!({"session": "m", "index": 1, "content": "a", "total_expected": 2}),
    );
    let m: Value = serde_json::from_slice(
        &std::fs::read(session_dir(&ws, "m").join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(m["total_expected"], 2);
    assert!(m["created_at"].is_string());
    assert!(m["updated_at"].is_string());
    assert_eq!(m["chunks"]["1"]["sha256"], json!(sha256(b"a")));
    // Later writes go to the records log, not the manifest; status still reports when the
    // session was last written.
    let created = m["created_at"].as_str().unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_millis(5));
    s.ok(
        "rw_chunk_write",
        json!({"session": "m", "index": 2, "content": "b"}),
    );
    let st = s.ok("rw_chunk_status", json!({"session": "m"}));
    assert_eq!(st["created_at"], json!(created));
    let updated = st["updated_at"].as_str().unwrap();
    assert!(updated > created.as_str(), "{updated} after {created}");
}

#[test]
fn journal_rows_of_chunk_writes_carry_the_session() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = write(&mut s, "j", 1, "x");
    let rows = journal_rows(&ws.root);
    let row = rows
        .iter()
        .find(|row| row["journal_id"] == r["journal_id"])
        .expect("row of the chunk write");
    assert_eq!(row["session"], "j");
    assert_eq!(row["tool"], "chunk_write");
}

#[test]
fn chunk_append_takes_the_next_index() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "a", 1, "one");
    write(&mut s, "a", 2, "two");
    let r = s.ok(
        "rw_chunk_append",
        json!({"session": "a", "content": "three"}),
    );
    assert_eq!(r["index"], 3);
    let r = s.ok(
        "rw_chunk_append",
        json!({"session": "fresh", "content": "x"}),
    );
    assert_eq!(r["index"], 1);
}

#[test]
fn compose_concatenates_in_order_with_separator_and_reports_hashes() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for (i, c) in ["alpha", "beta", "gamma"].iter().enumerate() {
        write(&mut s, "c", i as u64 + 1, c);
    }
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "c", "output_path": "out/doc.txt", "separator": "\n"}),
    );
    let want = b"alpha\nbeta\ngamma";
    assert_eq!(std::fs::read(ws.path("out/doc.txt")).unwrap(), want);
    assert_eq!(r["sha256"], json!(sha256(want)));
    assert_eq!(r["bytes"], want.len());
    assert_eq!(r["chunk_count"], 3);
    assert_eq!(r["output_path"], "out/doc.txt");
    assert_eq!(
        r["chunk_hashes"],
        json!([sha256(b"alpha"), sha256(b"beta"), sha256(b"gamma")])
    );
    assert_eq!(r["mode_applied"], "create");
    let rows = journal_rows(&ws.root);
    let row = rows
        .iter()
        .find(|x| x["journal_id"] == r["journal_id"])
        .unwrap();
    assert_eq!(row["mode"], "compose");
    assert_eq!(row["session"], "c");
}

#[test]
fn compose_refuses_a_gap_and_names_the_missing_indices() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "g", 1, "1");
    write(&mut s, "g", 3, "3");
    write(&mut s, "g", 5, "5");
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "g", "output_path": "g.txt"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "non_contiguous_chunks");
    assert_eq!(e["context"]["missing"], json!([2, 4]));
    assert_eq!(e["context"]["have"], json!([1, 3, 5]));
    assert_eq!(e["context"]["session"], "g");
    assert!(!ws.path("g.txt").exists());
}

#[test]
fn compose_refuses_fewer_chunks_than_total_expected_and_names_the_missing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_chunk_write",
        json!({"session": "t", "index": 1, "content": "a", "total_expected": 3}),
    );
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "t", "output_path": "t.txt"}),
    );
    assert_eq!(e["context"]["reason"], "chunk_count_mismatch");
    assert_eq!(e["context"]["missing"], json!([2, 3]));
    assert_eq!(e["context"]["total_expected"], 3);
}

#[test]
fn total_expected_below_existing_chunks_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for i in 1..=3 {
        write(&mut s, "b", i, "x");
    }
    let e = s.err(
        "rw_chunk_write",
        json!({"session": "b", "index": 1, "content": "y", "total_expected": 2}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "total_expected_below_existing");
    assert_eq!(
        std::fs::read(session_dir(&ws, "b").join("part-001.txt")).unwrap(),
        b"x",
        "the refused write changed nothing"
    );
}

#[test]
fn index_beyond_recorded_total_expected_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_chunk_write",
        json!({"session": "r", "index": 1, "content": "a", "total_expected": 1}),
    );
    let e = s.err("rw_chunk_append", json!({"session": "r", "content": "b"}));
    assert_eq!(e["context"]["reason"], "index_exceeds_total_expected");
}

#[test]
fn invalid_session_names_are_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for bad in ["", "../x", "a/b", "has space", &"x".repeat(65), "dot.name"] {
        let e = s.err(
            "rw_chunk_write",
            json!({"session": bad, "index": 1, "content": "a"}),
        );
        assert_eq!(e["error"], "policy_violation", "{bad:?}");
        assert_eq!(e["context"]["reason"], "invalid_session_name", "{bad:?}");
    }
    let e = s.err("rw_chunk_status", json!({"session": "../../etc"}));
    assert_eq!(e["context"]["reason"], "invalid_session_name");
    assert!(
        !ws.path(".resilient_write/chunks").exists() || {
            std::fs::read_dir(ws.path(".resilient_write/chunks"))
                .unwrap()
                .count()
                == 0
        }
    );
}

#[test]
fn index_zero_or_negative_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for bad in [0, -1, -100] {
        let e = s.err(
            "rw_chunk_write",
            json!({"session": "z", "index": bad, "content": "a"}),
        );
        assert_eq!(e["error"], "policy_violation");
        assert_eq!(e["context"]["reason"], "index_out_of_range");
    }
    let e = s.err(
        "rw_chunk_write",
        json!({"session": "z", "index": 1, "content": "a", "total_expected": 0}),
    );
    assert_eq!(e["context"]["reason"], "index_out_of_range");
}

#[test]
fn indices_above_999_use_four_digits_and_sort_numerically() {
    let ws = Workspace::new();
    let dir = session_dir(&ws, "big");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=998u64 {
        std::fs::write(dir.join(format!("part-{i:03}.txt")), format!("{i},")).unwrap();
    }
    let mut s = ws.server();
    write(&mut s, "big", 999, "999,");
    let r = s.ok(
        "rw_chunk_append",
        json!({"session": "big", "content": "1000,"}),
    );
    assert_eq!(r["index"], 1000);
    assert_eq!(r["chunk_path"], ".resilient_write/chunks/big/part-1000.txt");
    s.ok(
        "rw_chunk_append",
        json!({"session": "big", "content": "1001"}),
    );
    s.ok(
        "rw_chunk_compose",
        json!({"session": "big", "output_path": "big.txt"}),
    );
    let want: String = (1..=1000).map(|i| format!("{i},")).collect::<String>() + "1001";
    assert_eq!(std::fs::read_to_string(ws.path("big.txt")).unwrap(), want);
}

#[test]
fn ten_thousand_chunk_session_composes() {
    let ws = Workspace::new();
    let dir = session_dir(&ws, "tenk");
    std::fs::create_dir_all(&dir).unwrap();
    let mut want = Vec::new();
    for i in 1..=10_000u64 {
        let c = format!("line {i}\n");
        std::fs::write(dir.join(format!("part-{i:03}.txt")), &c).unwrap();
        want.extend_from_slice(c.as_bytes());
    }
    let mut s = ws.server();
    let st = s.ok("rw_chunk_status", json!({"session": "tenk"}));
    assert_eq!(st["chunk_count"], 10_000);
    assert_eq!(st["missing_indices"], json!([]));
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "tenk", "output_path": "tenk.txt"}),
    );
    assert_eq!(r["chunk_count"], 10_000);
    assert_eq!(r["chunk_hashes"].as_array().unwrap().len(), 10_000);
    assert_eq!(std::fs::read(ws.path("tenk.txt")).unwrap(), want);
}

/// Compose copies chunks through a few fixed buffers: a session far larger than those
/// leaves the server's peak RSS (VmHWM) where it was. The benchmark does this at 1 GB.
#[cfg(target_os = "linux")]
#[test]
fn compose_streams_a_large_session_in_bounded_memory() {
    const CHUNKS: usize = 96;
    const MIB: usize = 1 << 20;
    let ws = Workspace::new();
    let dir = session_dir(&ws, "big");
    std::fs::create_dir_all(&dir).unwrap();
    // Plain files, as another tool leaves them: compose hashes every one as it copies.
    let mut whole = Vec::with_capacity(CHUNKS * MIB);
    for i in 1..=CHUNKS {
        let chunk: Vec<u8> = (0..MIB).map(|k| ((k * 31 + i * 7) % 251) as u8).collect();
        std::fs::write(dir.join(format!("part-{i:03}.txt")), &chunk).unwrap();
        whole.extend_from_slice(&chunk);
    }
    let mut s = ws.server();
    let status = format!("/proc/{}/status", s.child.id());
    let peak_kib = || -> u64 {
        let text = std::fs::read_to_string(&status).unwrap();
        let line = text.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let before = peak_kib();
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "big", "output_path": "big.bin"}),
    );
    let after = peak_kib();
    assert_eq!(r["bytes"], json!(CHUNKS * MIB));
    assert_eq!(r["sha256"], json!(sha256(&whole)));
    let grew_mib = after.saturating_sub(before) / 1024;
    assert!(
        grew_mib < 32,
        "peak RSS grew by {grew_mib} MiB composing {CHUNKS} MiB ({before} -> {after} KiB)"
    );
}

#[test]
fn status_reports_present_missing_and_total_expected() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_chunk_write",
        json!({"session": "s", "index": 2, "content": "b", "total_expected": 4}),
    );
    let st = s.ok("rw_chunk_status", json!({"session": "s"}));
    assert_eq!(st["exists"], true);
    assert_eq!(st["present_indices"], json!([2]));
    assert_eq!(st["missing_indices"], json!([1, 3, 4]));
    assert_eq!(st["total_expected"], 4);
    assert_eq!(st["chunk_dir"], ".resilient_write/chunks/s");
    assert_eq!(st["ready"], false);
    let none = s.ok("rw_chunk_status", json!({"session": "nope"}));
    assert_eq!(none["exists"], false);
}

#[test]
fn more_chunks_than_total_expected_is_refused_as_a_stale_session() {
    // The original can leave this: its manifest says 2, three chunks exist.
    let ws = Workspace::new();
    let dir = session_dir(&ws, "over");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=3 {
        std::fs::write(dir.join(format!("part-{i:03}.txt")), format!("{i}")).unwrap();
    }
    std::fs::write(
        dir.join("manifest.json"),
        "{\"session\": \"over\", \"total_expected\": 2}\n",
    )
    .unwrap();
    let mut s = ws.server();
    let st = s.ok("rw_chunk_status", json!({"session": "over"}));
    assert_eq!(st["ready"], false);
    for (tool, args) in [
        (
            "rw_chunk_compose",
            json!({"session": "over", "output_path": "over.txt"}),
        ),
        ("rw_chunk_preview", json!({"session": "over"})),
    ] {
        let e = s.err(tool, args);
        assert_eq!(e["context"]["reason"], "chunk_count_mismatch", "{tool}");
        assert_eq!(e["context"]["chunk_count"], 3, "{tool}");
        assert_eq!(e["context"]["total_expected"], 2, "{tool}");
        assert!(
            e["context"]["message"]
                .as_str()
                .unwrap()
                .contains("stale session"),
            "{tool}: {e}"
        );
    }
    assert!(!ws.path("over.txt").exists());
}

#[test]
fn invalid_base64_and_an_index_above_the_maximum_write_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for (tool, args) in [
        ("rw_chunk_write", json!({"session": "b64", "index": 1})),
        ("rw_chunk_append", json!({"session": "b64"})),
    ] {
        let mut args = args;
        args["content"] = json!("not base64!");
        args["encoding"] = json!("base64");
        let e = s.err(tool, args);
        assert_eq!(e["error"], "policy_violation", "{tool}");
        assert_eq!(e["reason_hint"], "encoding", "{tool}");
    }
    let e = s.err(
        "rw_chunk_write",
        json!({"session": "b64", "index": 100_001, "content": "x"}),
    );
    assert_eq!(e["context"]["reason"], "index_out_of_range");
    assert!(
        e["context"]["message"].as_str().unwrap().contains("100000"),
        "{e}"
    );
    let e = s.err(
        "rw_chunk_write",
        json!({"session": "b64", "index": 1, "content": "x", "total_expected": 100_001}),
    );
    assert_eq!(e["context"]["reason"], "index_out_of_range");
    let st = s.ok("rw_chunk_status", json!({"session": "b64"}));
    assert_eq!(st["present_indices"], json!([]));
}

#[test]
fn compose_create_mode_refuses_an_existing_output() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "cm", 1, "new");
    std::fs::write(ws.path("exists.txt"), b"old").unwrap();
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "cm", "output_path": "exists.txt", "mode": "create"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["existing_sha256"], json!(sha256(b"old")));
    assert_eq!(std::fs::read(ws.path("exists.txt")).unwrap(), b"old");
}

#[test]
fn compose_without_mode_overwrites_like_the_original() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "ow", 1, "new");
    std::fs::write(ws.path("o.txt"), b"old").unwrap();
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "ow", "output_path": "o.txt"}),
    );
    assert_eq!(r["mode_applied"], "overwrite");
    assert_eq!(r["prev_sha256"], json!(sha256(b"old")));
    assert_eq!(std::fs::read(ws.path("o.txt")).unwrap(), b"new");
}

#[test]
fn compose_append_mode_adds_after_the_existing_content() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "ap", 1, " world");
    std::fs::write(ws.path("ap.txt"), b"hello").unwrap();
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "ap", "output_path": "ap.txt", "mode": "append"}),
    );
    assert_eq!(r["mode_applied"], "append");
    assert_eq!(std::fs::read(ws.path("ap.txt")).unwrap(), b"hello world");
    assert_eq!(r["sha256"], json!(sha256(b"hello world")));
}

#[test]
fn compose_with_a_stale_expected_prev_sha256_writes_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "ex", 1, "new");
    std::fs::write(ws.path("ex.txt"), b"old").unwrap();
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "ex", "output_path": "ex.txt",
               "expected_prev_sha256": sha256(b"something else")}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["actual_prev_sha256"], json!(sha256(b"old")));
    assert_eq!(std::fs::read(ws.path("ex.txt")).unwrap(), b"old");
    s.ok(
        "rw_chunk_compose",
        json!({"session": "ex", "output_path": "ex.txt", "expected_prev_sha256": sha256(b"old")}),
    );
}

#[test]
fn compose_retried_with_an_idempotency_key_applies_once_even_after_cleanup() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "ik", 1, "x");
    let args = json!({"session": "ik", "output_path": "ik.txt", "mode": "append",
                      "cleanup": true, "idempotency_key": "compose-1"});
    let first = s.ok("rw_chunk_compose", args.clone());
    assert_eq!(first["cleaned_up"], true);
    let again = s.ok("rw_chunk_compose", args);
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["journal_id"], first["journal_id"]);
    assert_eq!(std::fs::read(ws.path("ik.txt")).unwrap(), b"x");
}

#[test]
fn append_retried_with_an_idempotency_key_appends_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args = json!({"session": "ia", "content": "one", "total_expected": 3,
                      "idempotency_key": "append-1"});
    let first = s.ok("rw_chunk_append", args.clone());
    assert_eq!(first["index"], 1);
    assert_eq!(first["idempotent_replay"], false);
    // The response was lost; the agent retries the same call.
    let again = s.ok("rw_chunk_append", args.clone());
    assert_eq!(again["idempotent_replay"], true);
    for field in [
        "index",
        "chunk_path",
        "sha256",
        "bytes",
        "journal_id",
        "total_expected",
    ] {
        assert_eq!(again[field], first[field], "{field}");
    }
    let st = s.ok("rw_chunk_status", json!({"session": "ia"}));
    assert_eq!(st["present_indices"], json!([1]));
    // The same key with other content is refused and appends nothing.
    let e = s.err(
        "rw_chunk_append",
        json!({"session": "ia", "content": "two", "idempotency_key": "append-1"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    let st = s.ok("rw_chunk_status", json!({"session": "ia"}));
    assert_eq!(st["present_indices"], json!([1]));
    // A new key appends.
    let next = s.ok(
        "rw_chunk_append",
        json!({"session": "ia", "content": "two", "idempotency_key": "append-2"}),
    );
    assert_eq!(next["index"], 2);
    // The replay holds after a restart (the journal is its memory).
    drop(s);
    let mut s = ws.server();
    let again = s.ok("rw_chunk_append", args);
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["index"], 1);
    let st = s.ok("rw_chunk_status", json!({"session": "ia"}));
    assert_eq!(st["present_indices"], json!([1, 2]));
}

#[test]
fn compose_cleanup_removes_the_session() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "cl", 1, "x");
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "cl", "output_path": "cl.txt", "cleanup": true}),
    );
    assert_eq!(r["cleaned_up"], true);
    assert!(!session_dir(&ws, "cl").exists());
}

#[test]
fn compose_of_a_missing_session_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "ghost", "output_path": "g.txt"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "session_not_found");
}

#[test]
fn compose_output_outside_the_workspace_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "out", 1, "x");
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "out", "output_path": "../escape.txt"}),
    );
    assert_eq!(e["error"], "policy_violation");
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "out", "output_path": ".resilient_write/journal.jsonl"}),
    );
    assert_eq!(e["error"], "policy_violation");
}

#[test]
fn preview_returns_the_composed_content_without_writing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "p", 1, "a");
    write(&mut s, "p", 2, "b");
    let r = s.ok(
        "rw_chunk_preview",
        json!({"session": "p", "separator": "--"}),
    );
    assert_eq!(r["content"], "a--b");
    assert_eq!(r["preview"], true);
    assert_eq!(r["chunk_count"], 2);
    assert_eq!(r["total_bytes"], 4);
    assert_eq!(r["chunk_hashes"], json!([sha256(b"a"), sha256(b"b")]));
    let e = s.err("rw_chunk_preview", json!({"session": "nope"}));
    assert_eq!(e["context"]["reason"], "session_not_found");
}

#[test]
fn preview_refuses_a_gap() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "pg", 2, "b");
    let e = s.err("rw_chunk_preview", json!({"session": "pg"}));
    assert_eq!(e["context"]["reason"], "non_contiguous_chunks");
    assert_eq!(e["context"]["missing"], json!([1]));
}

#[test]
fn binary_chunks_compose_byte_for_byte() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let bin: Vec<u8> = (0..=255u8).collect();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bin);
    s.ok(
        "rw_chunk_write",
        json!({"session": "bin", "index": 1, "content": b64, "encoding": "base64"}),
    );
    s.ok(
        "rw_chunk_compose",
        json!({"session": "bin", "output_path": "bin.dat"}),
    );
    assert_eq!(std::fs::read(ws.path("bin.dat")).unwrap(), bin);
    let e = s.err("rw_chunk_preview", json!({"session": "bin"}));
    assert_eq!(e["reason_hint"], "encoding");
}

#[test]
fn rewriting_an_index_below_others_warns_about_a_stale_session() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "w", 1, "a");
    write(&mut s, "w", 2, "b");
    let r = write(&mut s, "w", 1, "A");
    assert!(r["warnings"][0].as_str().unwrap().contains("chunk_reset"));
}

#[test]
fn reset_removes_the_session_and_reports_what_it_removed() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "rs", 1, "a");
    write(&mut s, "rs", 2, "b");
    let r = s.ok("rw_chunk_reset", json!({"session": "rs"}));
    assert_eq!(r["existed"], true);
    assert_eq!(r["removed"], 3, "two chunks and the manifest");
    assert!(!session_dir(&ws, "rs").exists());
    let r = s.ok("rw_chunk_reset", json!({"session": "rs"}));
    assert_eq!(r["existed"], false);
    assert_eq!(r["removed"], 0);
    let r = s.ok(
        "rw_chunk_append",
        json!({"session": "rs", "content": "fresh"}),
    );
    assert_eq!(r["index"], 1);
}

#[test]
fn chunk_tools_publish_truthful_annotations() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    let find = |n: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("{n}"))
            .clone()
    };
    assert_eq!(find("rw_chunk_status")["annotations"]["readOnlyHint"], true);
    assert_eq!(
        find("rw_chunk_preview")["annotations"]["readOnlyHint"],
        true
    );
    assert_eq!(
        find("rw_chunk_reset")["annotations"]["destructiveHint"],
        true
    );
    assert_eq!(
        find("rw_chunk_compose")["annotations"]["readOnlyHint"],
        false
    );
}

#[test]
fn compose_sends_progress_notifications_when_the_client_asks() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "pr", 1, "abc");
    write(&mut s, "pr", 2, "defg");
    let (resp, notes) = s.request_with_notifications(
        "tools/call",
        json!({"name": "rw_chunk_compose",
               "arguments": {"session": "pr", "output_path": "pr.txt"},
               "_meta": {"progressToken": "tok-1"}}),
    );
    assert_eq!(resp["result"]["isError"], false, "{resp}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress notification: {notes:?}");
    assert!(
        progress
            .iter()
            .all(|n| n["params"]["progressToken"] == "tok-1")
    );
    let last = &progress.last().unwrap()["params"];
    assert_eq!(last["progress"], 7.0);
    assert_eq!(last["total"], 7.0);
    // Without a token, none.
    let (_, notes) = s.request_with_notifications(
        "tools/call",
        json!({"name": "rw_chunk_compose", "arguments": {"session": "pr", "output_path": "pr2.txt"}}),
    );
    assert!(
        notes
            .iter()
            .all(|n| n["method"] != "notifications/progress")
    );
}
