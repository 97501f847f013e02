//! L2 over MCP: chunk_write / chunk_append / chunk_compose / chunk_preview / chunk_status /
//! chunk_reset, every error of the issue, the on-disk layout shared with the original, and two
//! processes appending to one session at once.

mod common;

use common::{Server, Workspace, journal_rows, sha256};
use serde_json::{Value, json};
use std::collections::HashSet;

fn session_dir(ws: &Workspace, s: &str) -> std::path::PathBuf {
    ws.path(&format!(".resilient_write/chunks/{s}"))
}

fn write(s: &mut Server, session: &str, index: u64, content: &str) -> Value {
    s.ok(
        "rw_chunk_write",
        json!({"session": session, "index": index, "content": content}),
    )
}

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
fn hand_edited_chunk_is_reported_by_status_and_refused_by_compose_and_preview() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "e", 1, "original one");
    write(&mut s, "e", 2, "original two");
    std::fs::write(
        session_dir(&ws, "e").join("part-002.txt"),
        b"edited by hand",
    )
    .unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "e"}));
    assert_eq!(st["modified_chunks"][0]["index"], 2);
    assert_eq!(
        st["modified_chunks"][0]["recorded_sha256"],
        json!(sha256(b"original two"))
    );
    assert_eq!(
        st["modified_chunks"][0]["actual_sha256"],
        json!(sha256(b"edited by hand"))
    );
    assert_eq!(st["ready"], false);
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "e", "output_path": "e.txt"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "chunk_modified");
    assert_eq!(e["context"]["modified"][0]["index"], 2);
    assert!(!ws.path("e.txt").exists());
    let e = s.err("rw_chunk_preview", json!({"session": "e"}));
    assert_eq!(e["context"]["reason"], "chunk_modified");
    // Rewriting the chunk through the tool accepts it again.
    write(&mut s, "e", 2, "edited by hand");
    s.ok(
        "rw_chunk_compose",
        json!({"session": "e", "output_path": "e.txt"}),
    );
}

#[test]
fn a_chunk_put_back_by_hand_to_an_earlier_version_is_still_an_edit() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "back", 1, "first draft");
    write(&mut s, "back", 1, "second draft");
    // The journal holds a write of "first draft" to this chunk, but not as its latest write.
    std::fs::write(
        session_dir(&ws, "back").join("part-001.txt"),
        b"first draft",
    )
    .unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "back"}));
    assert_eq!(st["modified_chunks"][0]["index"], 1);
    assert_eq!(
        st["modified_chunks"][0]["recorded_sha256"],
        json!(sha256(b"second draft"))
    );
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "back", "output_path": "back.txt"}),
    );
    assert_eq!(e["context"]["reason"], "chunk_modified");
    assert!(!ws.path("back.txt").exists());
}

#[test]
fn a_rewrite_whose_record_was_lost_to_a_crash_is_vouched_for_by_the_journal() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "lost", 1, "one");
    write(&mut s, "lost", 2, "two");
    write(&mut s, "lost", 2, "TWO");
    // A crash between the chunk's rename and its record: the records log loses its lines.
    let log = session_dir(&ws, "lost").join(".records.jsonl");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains(&sha256(b"TWO"))
    );
    std::fs::write(&log, b"").unwrap();
    let st = s.ok(
        "rw_chunk_status",
        json!({"session": "lost", "verify": true}),
    );
    assert_eq!(st["modified_chunks"], json!([]));
    assert_eq!(st["ready"], true);
    s.ok(
        "rw_chunk_compose",
        json!({"session": "lost", "output_path": "lost.txt"}),
    );
    assert_eq!(std::fs::read(ws.path("lost.txt")).unwrap(), b"oneTWO");
}

#[test]
fn a_chunk_rewritten_by_the_original_is_vouched_for_by_its_relative_journal_row() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "orig", 1, "ours");
    // The original rewrites the chunk (it keeps no records) and journals the path relative
    // to the workspace, with Python's separators.
    std::fs::write(session_dir(&ws, "orig").join("part-001.txt"), b"theirs").unwrap();
    let row = format!(
        "{{\"journal_id\": \"py-1\", \"ts\": \"2026-12-03T00:00:00Z\", \"path\": \
         \".resilient_write/chunks/orig/part-001.txt\", \"sha256\": \"{}\", \"bytes\": 6, \
         \"mode\": \"overwrite\", \"caller\": null}}\n",
        sha256(b"theirs")
    );
    let journal = ws.path(".resilient_write/journal.jsonl");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str(&row);
    std::fs::write(&journal, text).unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "orig"}));
    assert_eq!(st["modified_chunks"], json!([]));
    s.ok(
        "rw_chunk_compose",
        json!({"session": "orig", "output_path": "orig.txt"}),
    );
    assert_eq!(std::fs::read(ws.path("orig.txt")).unwrap(), b"theirs");
}

#[test]
fn foreign_part_files_make_a_mixed_session_that_compose_refuses() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "x", 1, "a");
    std::fs::write(session_dir(&ws, "x").join("part-0001.txt"), b"stale").unwrap();
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "x", "output_path": "x.txt"}),
    );
    assert_eq!(e["context"]["reason"], "mixed_session");
    assert_eq!(e["context"]["unrecognised_files"], json!(["part-0001.txt"]));
}

#[test]
fn missing_or_corrupt_manifest_is_rebuilt_from_the_chunk_files() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "mf", 1, "a");
    write(&mut s, "mf", 2, "b");
    let manifest = session_dir(&ws, "mf").join("manifest.json");
    std::fs::write(&manifest, b"{not json").unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "mf"}));
    assert_eq!(st["manifest"], "corrupt");
    assert_eq!(st["present_indices"], json!([1, 2]));
    s.ok(
        "rw_chunk_compose",
        json!({"session": "mf", "output_path": "mf.txt"}),
    );
    let r = s.ok("rw_chunk_append", json!({"session": "mf", "content": "c"}));
    assert_eq!(r["index"], 3);
    assert!(r["warnings"][0].as_str().unwrap().contains("rebuilt"));
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(m["chunks"]["1"]["sha256"], json!(sha256(b"a")));
    assert_eq!(m["chunks"]["3"]["sha256"], json!(sha256(b"c")));
    std::fs::remove_file(&manifest).unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "mf"}));
    assert_eq!(st["manifest"], "missing");
    assert_eq!(st["ready"], true);
    // The next write rebuilds a missing manifest too, with every chunk's record.
    let r = s.ok("rw_chunk_append", json!({"session": "mf", "content": "d"}));
    assert_eq!(r["index"], 4);
    assert!(r["warnings"][0].as_str().unwrap().contains("missing"));
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    for (i, c) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        assert_eq!(
            m["chunks"][i.to_string()]["sha256"],
            json!(sha256(c.as_bytes()))
        );
    }
    let st = s.ok("rw_chunk_status", json!({"session": "mf"}));
    assert_eq!(st["manifest"], "ok");
}

#[test]
fn session_written_by_the_original_without_hashes_composes() {
    let ws = Workspace::new();
    let dir = session_dir(&ws, "py");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("part-001.txt"), "from ").unwrap();
    std::fs::write(dir.join("part-002.txt"), "python").unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        "{\n  \"created_at\": \"2026-04-01T00:00:00Z\",\n  \"session\": \"py\",\n  \
         \"total_expected\": 2,\n  \"updated_at\": \"2026-04-01T00:00:00Z\"\n}\n",
    )
    .unwrap();
    let mut s = ws.server();
    s.ok(
        "rw_chunk_compose",
        json!({"session": "py", "output_path": "py.txt"}),
    );
    assert_eq!(std::fs::read(ws.path("py.txt")).unwrap(), b"from python");
}

#[test]
fn a_temp_file_left_by_the_originals_crashed_write_is_not_a_chunk() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "tmp", 1, "a");
    write(&mut s, "tmp", 2, "b");
    // The original writes part-NNN.txt.tmp.<12 hex> and renames it; a crash leaves it.
    let leftover = session_dir(&ws, "tmp").join("part-003.txt.tmp.0a1b2c3d4e5f");
    std::fs::write(&leftover, b"half a chunk").unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "tmp"}));
    assert_eq!(st["present_indices"], json!([1, 2]));
    assert_eq!(st["unrecognised_files"], json!([]));
    assert_eq!(st["ready"], true);
    let r = s.ok("rw_chunk_append", json!({"session": "tmp", "content": "c"}));
    assert_eq!(r["index"], 3);
    s.ok(
        "rw_chunk_compose",
        json!({"session": "tmp", "output_path": "tmp.txt"}),
    );
    assert_eq!(std::fs::read(ws.path("tmp.txt")).unwrap(), b"abc");
    // Left alone: the original may still be about to rename it.
    assert!(leftover.exists());
    // A name that only looks like one is still foreign.
    std::fs::write(session_dir(&ws, "tmp").join("part-004.txt.tmp.zz"), b"?").unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "tmp"}));
    assert_eq!(st["unrecognised_files"], json!(["part-004.txt.tmp.zz"]));
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
fn two_processes_appending_to_one_session_never_share_an_index_nor_lose_a_chunk() {
    const EACH: usize = 40;
    let ws = Workspace::new();
    let handles: Vec<_> = (0..2)
        .map(|p| {
            let root = ws.root.clone();
            std::thread::spawn(move || {
                let mut s = Server::start(&root, &[], &[]);
                let mut got = Vec::new();
                for k in 0..EACH {
                    let r = s.ok(
                        "rw_chunk_append",
                        json!({"session": "shared", "content": format!("p{p}-k{k}\n")}),
                    );
                    got.push(r["index"].as_u64().unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().unwrap());
    }
    let unique: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(unique.len(), 2 * EACH, "an index was handed out twice");
    assert_eq!(unique, (1..=2 * EACH as u64).collect());
    let mut s = ws.server();
    let st = s.ok("rw_chunk_status", json!({"session": "shared"}));
    assert_eq!(st["chunk_count"], 2 * EACH);
    assert_eq!(st["modified_chunks"], json!([]));
    s.ok(
        "rw_chunk_compose",
        json!({"session": "shared", "output_path": "shared.txt"}),
    );
    let text = std::fs::read_to_string(ws.path("shared.txt")).unwrap();
    for p in 0..2 {
        for k in 0..EACH {
            assert_eq!(text.matches(&format!("p{p}-k{k}\n")).count(), 1);
        }
    }
}

#[test]
fn a_process_resetting_a_session_while_another_appends_never_leaves_a_gap() {
    const APPENDS: usize = 60;
    let ws = Workspace::new();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let root = ws.root.clone();
    let finished = done.clone();
    let appender = std::thread::spawn(move || {
        let mut s = Server::start(&root, &[], &[]);
        let acked = (0..APPENDS)
            .map(|k| {
                let r = s.ok(
                    "rw_chunk_append",
                    json!({"session": "raced", "content": format!("k{k}")}),
                );
                (r["index"].as_u64().unwrap(), format!("k{k}"))
            })
            .collect::<Vec<_>>();
        finished.store(true, std::sync::atomic::Ordering::SeqCst);
        acked
    });
    let root = ws.root.clone();
    let resetter = std::thread::spawn(move || {
        let mut s = Server::start(&root, &[], &[]);
        let mut resets = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            s.ok("rw_chunk_reset", json!({"session": "raced"}));
            resets += 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        resets
    });
    let acked = appender.join().unwrap();
    let resets = resetter.join().unwrap();
    let restarts = acked.iter().skip(1).filter(|(i, _)| *i == 1).count();
    eprintln!("{resets} resets; the appender started over {restarts} times");
    assert!(restarts > 0, "no reset landed between two appends");
    // A reset holds the session's lock from its first removal to its last: an append sees the
    // whole session or none of it, so each index is the previous one + 1, or 1 after a reset.
    let mut prev = 0;
    for (index, content) in &acked {
        assert!(
            *index == prev + 1 || *index == 1,
            "{content} got index {index} after {prev}"
        );
        prev = *index;
    }
    let mut s = ws.server();
    let st = s.ok(
        "rw_chunk_status",
        json!({"session": "raced", "verify": true}),
    );
    assert_eq!(st["missing_indices"], json!([]), "{st}");
    assert_eq!(st["modified_chunks"], json!([]), "{st}");
    assert_eq!(st["unrecognised_files"], json!([]), "{st}");
    // What is left is the last run of appends, each chunk where its append said it went.
    let count = st["chunk_count"].as_u64().unwrap() as usize;
    let last_run = &acked[acked.len() - count..];
    for (index, content) in last_run {
        let part = session_dir(&ws, "raced").join(format!("part-{index:03}.txt"));
        assert_eq!(std::fs::read_to_string(part).unwrap(), *content);
    }
    assert!(common::temp_files(&ws.root).is_empty());
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

#[test]
fn appends_do_not_rewrite_the_manifest_per_chunk() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for i in 1..=200u64 {
        let r = s.ok(
            "rw_chunk_append",
            json!({"session": "many", "content": format!("chunk {i}\n")}),
        );
        assert_eq!(r["index"], i);
    }
    let manifest_rows = journal_rows(&ws.root)
        .into_iter()
        .filter(|r| r["mode"] == "manifest")
        .count();
    // Folded when the records log outgrows the manifest: a handful of rewrites, not 200.
    assert!(
        (1..=12).contains(&manifest_rows),
        "{manifest_rows} manifest rewrites for 200 appends"
    );
    // Every chunk is still recorded (manifest or log) and checked.
    let st = s.ok(
        "rw_chunk_status",
        json!({"session": "many", "verify": true}),
    );
    assert_eq!(st["chunk_count"], 200);
    assert_eq!(st["modified_chunks"], json!([]));
    assert_eq!(st["ready"], true);
    std::fs::write(session_dir(&ws, "many").join("part-150.txt"), b"by hand").unwrap();
    let st = s.ok("rw_chunk_status", json!({"session": "many"}));
    assert_eq!(st["modified_chunks"][0]["index"], 150);
}

#[test]
fn status_trusts_an_unchanged_chunk_unless_asked_to_verify() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "v", 1, "one");
    write(&mut s, "v", 2, "two");
    // only verify=true reads the file again and notices a record that lies
    edit_behind_a_lying_record(&ws, "v", 2, b"TWO", b"two");
    let st = s.ok("rw_chunk_status", json!({"session": "v"}));
    assert_eq!(st["modified_chunks"], json!([]));
    let st = s.ok("rw_chunk_status", json!({"session": "v", "verify": true}));
    assert_eq!(st["modified_chunks"][0]["index"], 2);
    assert_eq!(
        st["modified_chunks"][0]["recorded_sha256"],
        json!(sha256(b"two"))
    );
    assert_eq!(
        st["modified_chunks"][0]["actual_sha256"],
        json!(sha256(b"TWO"))
    );
    let e = s.err("rw_chunk_status", json!({"session": "v", "verify": "yes"}));
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["context"]["reason"], "invalid_arguments");
}

/// Edits chunk `index` of `session` (recorded with content `was`) to `now` by hand, then gives
/// its record the file's new stamp (`dev:ino:ctime`, as the server computes it): a record
/// that no longer tells the truth, which only a full re-read can notice.
fn edit_behind_a_lying_record(ws: &Workspace, session: &str, index: u64, now: &[u8], was: &[u8]) {
    use std::os::unix::fs::MetadataExt;
    let part = session_dir(ws, session).join(format!("part-{index:03}.txt"));
    std::fs::write(&part, now).unwrap();
    let meta = std::fs::metadata(&part).unwrap();
    let stamp = format!(
        "{}:{}:{}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    );
    let log = session_dir(ws, session).join(".records.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(&sha256(was)), "chunk {index} is in the log");
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut rec: Value = serde_json::from_str(l).unwrap();
            if rec["index"] == index {
                rec["stamp"] = json!(stamp);
            }
            rec.to_string()
        })
        .collect();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
}

#[test]
fn compose_trusts_a_recorded_chunk_whose_stamp_is_unchanged() {
    let ws = Workspace::new();
    let mut s = ws.server();
    write(&mut s, "t", 1, "one");
    write(&mut s, "t", 2, "two");
    // Compose does not hash a chunk again while its stamp and size are those of its record.
    // Shown with a record that lies: the reported chunk hash is the record's, while the
    // output's own hash is always the read-back's.
    edit_behind_a_lying_record(&ws, "t", 2, b"TWO", b"two");
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "t", "output_path": "t.txt"}),
    );
    assert_eq!(r["chunk_hashes"], json!([sha256(b"one"), sha256(b"two")]));
    assert_eq!(r["sha256"], json!(sha256(b"oneTWO")));
    assert_eq!(std::fs::read(ws.path("t.txt")).unwrap(), b"oneTWO");
    // A chunk whose stamp or size moved is hashed again and its change refused.
    std::fs::write(session_dir(&ws, "t").join("part-002.txt"), b"TWO!").unwrap();
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "t", "output_path": "t2.txt"}),
    );
    assert_eq!(e["context"]["reason"], "chunk_modified");
    assert_eq!(e["context"]["modified"][0]["index"], 2);
    assert!(!ws.path("t2.txt").exists());
}

#[test]
fn a_chunk_changing_while_compose_reads_it_fails_the_compose_and_writes_nothing() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    let mut s = Server::start(
        &ws.root,
        &[],
        &[("RW_FAULT_INJECT", "compose_chunk_changed")],
    );
    write(&mut s, "c", 1, "one");
    write(&mut s, "c", 2, "two");
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "c", "output_path": "c.txt"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "chunk_modified");
    assert_eq!(e["context"]["changed_while_composing"], 1);
    assert!(!ws.path("c.txt").exists());
    let leftovers = common::temp_files(&ws.root);
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    // the session is kept, whole
    let st = s.ok("rw_chunk_status", json!({"session": "c", "verify": true}));
    assert_eq!(st["modified_chunks"], json!([]));
    assert_eq!(st["ready"], true);
}
