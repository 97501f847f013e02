//! L2's chunk sessions on disk, over MCP: a chunk edited by hand is found (by status, compose
//! and preview) and a record lost to a crash is vouched for by the journal; the layout shared
//! with the original (its journal rows, part files, manifests and temp files); the manifest's
//! stamps that let status and compose trust an unchanged chunk; and two processes appending to
//! (or resetting) one session at once.

mod common;

use common::chunks::{session_dir, write};
use common::{Server, Workspace, journal_rows, sha256};
use serde_json::{Value, json};
use std::collections::HashSet;

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
