//! L4 over MCP: scratch_put / scratch_ref / scratch_get, dedup and label aliases, binary
//! round trips, owner-only permissions, re-hash on read, the write-only switch, and an index
//! with torn or corrupt lines.

mod common;

use base64::Engine;
use common::{Server, Workspace, journal_rows, sha256};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn scratch(ws: &Workspace, rel: &str) -> std::path::PathBuf {
    ws.path(&format!(".resilient_write/scratch/{rel}"))
}

#[test]
fn put_stores_the_blob_under_its_sha256_and_reports_the_originals_fields() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_scratch_put",
        json!({"content": "raw material", "label": "capture", "content_type": "text/plain"}),
    );
    let h = sha256(b"raw material");
    assert_eq!(r["sha256"], json!(h));
    assert_eq!(
        r["scratch_path"],
        format!(".resilient_write/scratch/{h}.bin")
    );
    assert_eq!(r["bytes"], 12);
    assert_eq!(r["dedup"], false);
    assert_eq!(
        std::fs::read(scratch(&ws, &format!("{h}.bin"))).unwrap(),
        b"raw material"
    );
    let row = journal_rows(&ws.root)
        .into_iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(&format!("{h}.bin")))
        .expect("blob write is journaled");
    assert_eq!(row["sha256"], json!(h));
    let journal = std::fs::read_to_string(ws.path(".resilient_write/journal.jsonl")).unwrap();
    assert!(
        !journal.contains("raw material"),
        "content never reaches the journal"
    );
}

#[test]
fn identical_content_is_stored_once_and_labels_alias_it() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let a = s.ok(
        "rw_scratch_put",
        json!({"content": "same", "label": "first"}),
    );
    let b = s.ok(
        "rw_scratch_put",
        json!({"content": "same", "label": "second"}),
    );
    assert_eq!(a["sha256"], b["sha256"]);
    assert_eq!(b["dedup"], true);
    let blobs = std::fs::read_dir(ws.path(".resilient_write/scratch"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "bin")
        })
        .count();
    assert_eq!(blobs, 1);
    let r = s.ok("rw_scratch_ref", json!({"label": "first"}));
    assert_eq!(r["sha256"], a["sha256"]);
    assert_eq!(r["labels"], json!(["first", "second"]));
    // As the original counts: the rows matching the query; `deposits` counts the blob's rows.
    assert_eq!(r["alias_count"], 1);
    assert_eq!(r["deposits"], 2);
    let r = s.ok("rw_scratch_ref", json!({"sha256": a["sha256"]}));
    assert_eq!(r["alias_count"], 2);
    assert_eq!(r["deposits"], 2);
    let index = std::fs::read_to_string(scratch(&ws, "index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 2, "one index row per deposit");
}

#[test]
fn state_rewrites_keep_no_history_objects() {
    // The index is appended to at every deposit (and rewritten only by doctor --fix); no
    // tool can list or restore it, nor chunk rewrites and manifests, so no pre-images are kept.
    let ws = Workspace::new();
    let mut s = ws.server();
    for k in 0..20 {
        s.ok(
            "rw_scratch_put",
            json!({"content": format!("deposit {k}"), "label": format!("l{k}")}),
        );
    }
    for content in ["one", "two"] {
        s.ok(
            "rw_chunk_write",
            json!({"session": "h", "index": 1, "content": content}),
        );
    }
    let objects = |ws: &Workspace| common::files_under(&ws.path(".resilient_write/objects")).len();
    assert_eq!(objects(&ws), 0);
    // A workspace file's overwrite still keeps its pre-image.
    s.ok("rw_safe_write", json!({"path": "w.txt", "content": "v1"}));
    s.ok(
        "rw_safe_write",
        json!({"path": "w.txt", "content": "v2", "mode": "overwrite"}),
    );
    assert_eq!(objects(&ws), 1);
}

#[test]
fn put_retried_with_an_idempotency_key_deposits_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args = json!({"content": "kept once", "label": "k", "idempotency_key": "put-1"});
    let first = s.ok("rw_scratch_put", args.clone());
    assert_eq!(first["idempotent_replay"], false);
    let again = s.ok("rw_scratch_put", args.clone());
    assert_eq!(again["idempotent_replay"], true);
    for field in ["sha256", "scratch_path", "bytes", "dedup", "journal_id"] {
        assert_eq!(again[field], first[field], "{field}");
    }
    let rows = |ws: &Workspace| {
        std::fs::read_to_string(scratch(ws, "index.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(rows(&ws), 1, "a replay adds no index row");
    let e = s.err(
        "rw_scratch_put",
        json!({"content": "other", "idempotency_key": "put-1"}),
    );
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(rows(&ws), 1);
    // Across a restart too; and without a key, a second deposit adds its alias row.
    drop(s);
    let mut s = ws.server();
    assert_eq!(s.ok("rw_scratch_put", args)["idempotent_replay"], true);
    s.ok(
        "rw_scratch_put",
        json!({"content": "kept once", "label": "k"}),
    );
    assert_eq!(rows(&ws), 2);
}

#[test]
fn ref_returns_the_index_entry_without_content() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let p = s.ok(
        "rw_scratch_put",
        json!({"content": "secret-ish", "label": "L", "content_type": "text/x", "notes": "n"}),
    );
    let r = s.ok("rw_scratch_ref", json!({"sha256": p["sha256"]}));
    assert_eq!(r["label"], "L");
    assert_eq!(r["content_type"], "text/x");
    assert_eq!(r["notes"], "n");
    assert_eq!(r["bytes"], 10);
    assert!(r["created_at"].is_string());
    assert_eq!(r["bin_exists"], true);
    assert!(r.get("content").is_none());
}

#[test]
fn binary_content_round_trips_through_base64() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let bin: Vec<u8> = (0..=255u8).rev().collect();
    let p = s.ok(
        "rw_scratch_put",
        json!({"content": b64(&bin), "encoding": "base64"}),
    );
    assert_eq!(p["sha256"], json!(sha256(&bin)));
    let h = p["sha256"].as_str().unwrap();
    assert_eq!(
        std::fs::read(scratch(&ws, &format!("{h}.bin"))).unwrap(),
        bin
    );
    let g = s.ok("rw_scratch_get", json!({"sha256": h, "encoding": "base64"}));
    assert_eq!(g["content"], json!(b64(&bin)));
    let e = s.err("rw_scratch_get", json!({"sha256": h}));
    assert_eq!(
        e["reason_hint"], "encoding",
        "binary as utf-8 is refused, not mangled"
    );
}

#[test]
fn get_returns_utf8_content() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let p = s.ok(
        "rw_scratch_put",
        json!({"content": "héllo ✓", "label": "greet"}),
    );
    let g = s.ok("rw_scratch_get", json!({"sha256": p["sha256"]}));
    assert_eq!(g["content"], "héllo ✓");
    assert_eq!(g["label"], "greet");
}

#[test]
fn invalid_base64_is_refused_and_stores_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let e = s.err(
        "rw_scratch_put",
        json!({"content": "not base64!!", "encoding": "base64"}),
    );
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["reason_hint"], "encoding");
    assert!(!scratch(&ws, "index.jsonl").exists());
}

#[test]
fn files_are_owner_only_and_the_directory_0700() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let p = s.ok("rw_scratch_put", json!({"content": "private"}));
    let h = p["sha256"].as_str().unwrap();
    let mode = |p: std::path::PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(ws.path(".resilient_write/scratch")), 0o700);
    assert_eq!(mode(scratch(&ws, &format!("{h}.bin"))), 0o600);
    assert_eq!(mode(scratch(&ws, "index.jsonl")), 0o600);
}

#[test]
fn files_the_original_left_world_readable_are_made_owner_only() {
    let ws = Workspace::new();
    let dir = ws.path(".resilient_write/scratch");
    std::fs::create_dir_all(&dir).unwrap();
    // The original creates its files 0644.
    let index = dir.join("index.jsonl");
    std::fs::write(&index, b"").unwrap();
    std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o644)).unwrap();
    // ...and so is a blob it deposited, when the same content is deposited again.
    let blob = dir.join(format!("{}.bin", sha256(b"private")));
    std::fs::write(&blob, b"private").unwrap();
    std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut s = ws.server();
    let r = s.ok("rw_scratch_put", json!({"content": "private"}));
    assert_eq!(r["dedup"], true);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&index), 0o600);
    assert_eq!(mode(&blob), 0o600);
}

#[test]
fn an_open_scratch_directory_is_tightened_to_0700() {
    let ws = Workspace::new();
    let dir = ws.path(".resilient_write/scratch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut s = ws.server();
    s.ok("rw_scratch_put", json!({"content": "x"}));
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn a_tampered_blob_is_write_corruption_on_read() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let p = s.ok("rw_scratch_put", json!({"content": "pristine"}));
    let h = p["sha256"].as_str().unwrap().to_string();
    std::fs::write(scratch(&ws, &format!("{h}.bin")), b"tampered").unwrap();
    let e = s.err("rw_scratch_get", json!({"sha256": h}));
    assert_eq!(e["error"], "write_corruption");
    assert_eq!(e["context"]["actual_sha256"], json!(sha256(b"tampered")));
    // Depositing the true content again repairs the blob.
    let again = s.ok("rw_scratch_put", json!({"content": "pristine"}));
    assert_eq!(again["dedup"], false);
    assert_eq!(
        s.ok("rw_scratch_get", json!({"sha256": h}))["content"],
        "pristine"
    );
}

#[test]
fn disable_get_makes_the_scratchpad_write_only() {
    let ws = Workspace::new();
    let mut s = Server::start(&ws.root, &[], &[("RW_SCRATCH_DISABLE_GET", "1")]);
    let p = s.ok("rw_scratch_put", json!({"content": "deposit box"}));
    let e = s.err("rw_scratch_get", json!({"sha256": p["sha256"]}));
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["reason_hint"], "permission");
    assert_eq!(e["context"]["reason"], "scratch_get_disabled");
    s.ok("rw_scratch_ref", json!({"sha256": p["sha256"]}));
}

#[test]
fn unknown_hashes_and_labels_are_not_found() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let h = sha256(b"never stored");
    let e = s.err("rw_scratch_get", json!({"sha256": h}));
    assert_eq!(e["error"], "stale_precondition");
    assert_eq!(e["context"]["reason"], "not_found");
    let e = s.err("rw_scratch_ref", json!({"sha256": h}));
    assert_eq!(e["context"]["reason"], "not_found");
    let e = s.err("rw_scratch_ref", json!({"label": "nobody"}));
    assert_eq!(e["context"]["label"], "nobody");
}

#[test]
fn malformed_hashes_are_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for bad in ["abc", "../../etc/passwd", &"g".repeat(64)] {
        let e = s.err("rw_scratch_get", json!({"sha256": bad}));
        assert_eq!(e["error"], "policy_violation", "{bad}");
        assert_eq!(e["context"]["field"], "sha256");
        let e = s.err("rw_scratch_ref", json!({"sha256": bad}));
        assert_eq!(e["error"], "policy_violation");
    }
    let e = s.err("rw_scratch_ref", json!({}));
    assert_eq!(e["error"], "policy_violation");
}

#[test]
fn torn_or_corrupt_index_lines_are_skipped_and_reported() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let p = s.ok(
        "rw_scratch_put",
        json!({"content": "kept", "label": "good"}),
    );
    let index = scratch(&ws, "index.jsonl");
    let mut text = std::fs::read_to_string(&index).unwrap();
    text.insert_str(0, "garbage line\n");
    text.push_str("{\"sha256\": \"torn");
    std::fs::write(&index, text).unwrap();
    let r = s.ok("rw_scratch_ref", json!({"label": "good"}));
    assert_eq!(r["sha256"], p["sha256"]);
    let skipped = r["skipped_lines"].as_array().unwrap();
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[0]["line"], 1);
    assert!(skipped[1]["reason"].as_str().unwrap().contains("torn"));
    // The next deposit terminates the torn line instead of gluing onto it.
    s.ok(
        "rw_scratch_put",
        json!({"content": "after", "label": "after"}),
    );
    let r = s.ok("rw_scratch_ref", json!({"label": "after"}));
    assert_eq!(r["sha256"], json!(sha256(b"after")));
    // Valid JSON that is not a row (no sha256, or not an object) is skipped as well, and
    // scratch_get reports what it skipped while finding the label.
    let mut text = std::fs::read_to_string(&index).unwrap();
    text.push_str("{\"label\": \"no hash\"}\n[1, 2]\n");
    std::fs::write(&index, text).unwrap();
    let r = s.ok("rw_scratch_ref", json!({"label": "after"}));
    let reasons: Vec<&str> = r["skipped_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[2].contains("not an index row"), "{reasons:?}");
    assert!(reasons[3].contains("not an index row"), "{reasons:?}");
    let g = s.ok("rw_scratch_get", json!({"sha256": sha256(b"after")}));
    assert_eq!(g["content"], "after");
    assert_eq!(g["label"], "after");
    assert_eq!(g["skipped_lines"].as_array().unwrap().len(), 4);
}

#[test]
fn index_rows_use_the_originals_format() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_scratch_put", json!({"content": "x", "label": "l"}));
    let line = std::fs::read_to_string(scratch(&ws, "index.jsonl")).unwrap();
    let row: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    for k in [
        "sha256",
        "label",
        "content_type",
        "bytes",
        "encoding",
        "notes",
        "created_at",
    ] {
        assert!(row.get(k).is_some(), "{k} missing from {line}");
    }
    assert!(
        !line.contains(": "),
        "compact separators like json.dumps(separators=(',', ':'))"
    );
}

#[test]
fn put_warns_when_the_state_directory_is_not_git_ignored() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".git")).unwrap();
    let mut s = ws.server();
    let r = s.ok("rw_scratch_put", json!({"content": "x"}));
    assert_eq!(r["warnings"][0]["reason"], "state_dir_not_gitignored");
    // Fixed mid-session: the next deposit no longer warns.
    std::fs::write(ws.path(".gitignore"), ".resilient_write/\n").unwrap();
    let r = s.ok("rw_scratch_put", json!({"content": "y"}));
    assert_eq!(r["warnings"], json!([]));
    // The original's `**/` form, in the repository's info/exclude, counts too.
    std::fs::remove_file(ws.path(".gitignore")).unwrap();
    std::fs::create_dir_all(ws.path(".git/info")).unwrap();
    std::fs::write(ws.path(".git/info/exclude"), "**/.resilient_write/\n").unwrap();
    let r = s.ok("rw_scratch_put", json!({"content": "z"}));
    assert_eq!(r["warnings"], json!([]));
}

#[test]
fn doctor_suggests_compaction_and_fix_leaves_every_lookup_answering_the_same() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for k in 0..105 {
        s.ok(
            "rw_scratch_put",
            json!({"content": "again", "label": format!("l{}", k % 2), "notes": format!("n{k}")}),
        );
    }
    s.ok("rw_scratch_put", json!({"content": "once", "label": "l0"}));
    let queries = [
        json!({"label": "l0"}),
        json!({"label": "l1"}),
        json!({"sha256": sha256(b"again")}),
        json!({"sha256": sha256(b"again"), "label": "l0"}),
    ];
    let before: Vec<_> = queries
        .iter()
        .map(|q| s.ok("rw_scratch_ref", q.clone()))
        .collect();
    assert_eq!(before[2]["deposits"], 105);
    assert_eq!(before[2]["alias_count"], 105);
    assert_eq!(before[3]["alias_count"], 53);
    assert_eq!(before[2]["labels"], json!(["l1", "l0"]));

    let o = common::run_cli(&ws.root, &["doctor"], &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "a warning, not a problem: {text}");
    assert!(
        text.contains("103 of its 106 rows are superseded"),
        "{text}"
    );
    let o = common::run_cli(&ws.root, &["doctor", "--fix"], &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(text.contains("fixed: compact it"), "{text}");
    let index = std::fs::read_to_string(scratch(&ws, "index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 3, "{index}");
    let after: Vec<_> = queries
        .iter()
        .map(|q| s.ok("rw_scratch_ref", q.clone()))
        .collect();
    assert_eq!(after, before);
    // Nothing left to suggest.
    let o = common::run_cli(&ws.root, &["doctor"], &[]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("superseded"));
}
