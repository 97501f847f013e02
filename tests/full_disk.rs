//! A full disk (ENOSPC) on a real filesystem: a small tmpfs mounted by the test. Needs root to
//! mount; without it (or when the mount fails) each test prints why it is skipped and returns,
//! except under CI, where the missing prerequisite fails the test. CI runs as root. The injected `enospc_journal` fault complements the real journal case.

mod common;

use common::tmpfs::fill;
use common::{Server, Workspace, journal_rows, sha256, temp_files};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn assert_enospc_envelope(env: &Value) {
    assert_eq!(env["error"], json!("quota_exceeded"), "{env}");
    assert_eq!(env["reason_hint"], json!("size_limit"), "{env}");
    assert_eq!(env["context"]["errno"], json!(28), "errno context: {env}");
    assert!(
        env["context"]["strerror"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "strerror context: {env}"
    );
}

#[test]
fn overwrite_that_does_not_fit_is_quota_exceeded_old_file_intact_no_temp_left() {
    let fs = tmpfs_or_skip!("2m");
    let mut s = Server::start(&fs.dir, &[], &[]);
    let old = "the old content\n".repeat(1000);
    s.ok("rw_safe_write", json!({"path": "keep.txt", "content": old}));
    let rows_before = journal_rows(&fs.dir).len();

    let huge = "x".repeat(3 * 1024 * 1024);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "keep.txt", "content": huge, "mode": "overwrite"}),
    );
    assert_enospc_envelope(&env);
    assert_eq!(
        std::fs::read_to_string(fs.dir.join("keep.txt")).unwrap(),
        old
    );
    assert_eq!(temp_files(&fs.dir), Vec::<PathBuf>::new());
    assert_eq!(
        journal_rows(&fs.dir).len(),
        rows_before,
        "no row for a failed write"
    );

    // The server keeps serving once there is room.
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "keep.txt", "content": "small\n", "mode": "overwrite"}),
    );
    assert_eq!(out["sha256"], json!(sha256(b"small\n")));
}

#[test]
fn create_that_does_not_fit_leaves_no_file_and_no_temp() {
    let fs = tmpfs_or_skip!("2m");
    let mut s = Server::start(&fs.dir, &[], &[]);
    let huge = "y".repeat(3 * 1024 * 1024);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "new/dir/big.txt", "content": huge}),
    );
    assert_enospc_envelope(&env);
    assert!(!fs.dir.join("new/dir/big.txt").exists());
    assert_eq!(temp_files(&fs.dir), Vec::<PathBuf>::new());
    assert!(journal_rows(&fs.dir).is_empty());
}

#[test]
fn append_that_does_not_fit_keeps_the_file_as_it_was() {
    let fs = tmpfs_or_skip!("2m");
    let mut s = Server::start(&fs.dir, &[], &[]);
    let first = "line one\n".repeat(50_000); // 450 KB: fits once, not twice plus the temp
    s.ok(
        "rw_safe_write",
        json!({"path": "log.txt", "content": first}),
    );
    let more = "z".repeat(1_200_000);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "log.txt", "content": more, "mode": "append"}),
    );
    assert_enospc_envelope(&env);
    assert_eq!(
        std::fs::read_to_string(fs.dir.join("log.txt")).unwrap(),
        first
    );
    assert_eq!(temp_files(&fs.dir), Vec::<PathBuf>::new());
}

/// The real case where only the journal's append fails: the state directory is on a full
/// tmpfs, the workspace on another filesystem, so the temp file and its read-back succeed and
/// the row does not. Writes are repeated until the journal's last page has no slack left.
#[test]
fn journal_append_failing_on_a_full_disk_is_typed_and_the_target_unchanged() {
    let fs = tmpfs_or_skip!("1m");
    let ws = Workspace::new();
    let state = fs.dir.to_str().expect("utf-8 path");
    let mut s = Server::start(&ws.root, &[], &[("RW_STATE_DIR", state)]);
    s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "version 0\n"}),
    );
    assert_eq!(
        journal_rows(&fs.dir).len(),
        1,
        "the journal lives on the tmpfs"
    );
    let filler = fill(&fs.dir);

    let mut current = "version 0\n".to_string();
    let mut failure = None;
    for i in 1..=200 {
        let next = format!("version {i}\n");
        let r = s.call_raw(
            "rw_safe_write",
            json!({"path": "t.txt", "content": next, "mode": "overwrite"}),
        );
        if r["isError"] == json!(true) {
            failure = Some(r["structuredContent"].clone());
            break;
        }
        current = next;
    }
    let env = failure.expect("the journal append never hit ENOSPC on a full tmpfs");
    assert_enospc_envelope(&env);
    // The state directory's writes fail: the journal row, or (with history on) the
    // pre-image that is stored just before it. Either way nothing was applied. The
    // journal-only case is also pinned down exactly by the fault-injection test below.
    let op = env["context"]["operation"].as_str().unwrap_or_default();
    assert!(
        op == "append journal row" || op == "store the previous version",
        "a state-directory write failed: {env}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("t.txt")).unwrap(),
        current,
        "the target is unchanged when its row could not be written"
    );
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    // Every row parses (no partial row left behind) and the last one is the last success.
    let rows = journal_rows(&fs.dir);
    assert_eq!(
        rows.last().unwrap()["sha256"],
        json!(sha256(current.as_bytes()))
    );

    // Room again: the same write goes through.
    std::fs::remove_file(filler).unwrap();
    let next = "after the disk was freed\n";
    s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": next, "mode": "overwrite"}),
    );
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), next);
    assert_eq!(journal_rows(&fs.dir).len(), rows.len() + 1);
}

/// Complement of the real case above, also where mounting is impossible: the injected
/// `enospc_journal` fault (debug builds only).
#[test]
fn injected_journal_enospc_is_typed_and_the_target_unchanged() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(ws.path("t.txt"), "old\n").unwrap();
    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "enospc_journal")]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_enospc_envelope(&env);
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), "old\n");
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
}

#[test]
fn ci_is_recognised_in_the_forms_ci_services_set() {
    assert!(common::ci_value(Some("true")));
    assert!(common::ci_value(Some("1")));
    assert!(common::ci_value(Some("TRUE")));
    assert!(!common::ci_value(None));
    assert!(!common::ci_value(Some("")));
    assert!(!common::ci_value(Some("false")));
    assert!(!common::ci_value(Some("0")));
}

/// Temp files of interrupted object puts (`.<sha>.tmp-<pid>-<n>`) under the state directory.
fn object_temps(state: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(fans) = std::fs::read_dir(state.join(".resilient_write/objects")) else {
        return out;
    };
    for fan in fans.flatten() {
        for e in std::fs::read_dir(fan.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if e.file_name().to_string_lossy().contains(".tmp-") {
                out.push(e.path());
            }
        }
    }
    out
}

fn stored_flags(s: &mut Server, path: &str) -> Vec<(String, bool)> {
    let h = s.ok("rw_history", json!({"path": path}));
    h["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["sha256"].as_str().unwrap().to_string(),
                v["stored"] == json!(true),
            )
        })
        .collect()
}

/// The state directory (and so the object store) on a full tmpfs, the workspace elsewhere:
/// the pre-image can be neither linked nor cloned, and its copy does not fit. History yields
/// (the oldest version goes, the write says so in its result and its row) and the newer
/// pre-image is kept; one larger than all history could give up is not kept, and the
/// overwrite still lands and says why; once there is room again the next overwrite keeps
/// its pre-image.
#[test]
fn disk_full_during_the_pre_image_the_overwrite_lands_and_says_why() {
    let fs = tmpfs_or_skip!("1m");
    let ws = Workspace::new();
    let state = fs.dir.to_str().expect("utf-8 path");
    let mut s = Server::start(&ws.root, &[], &[("RW_STATE_DIR", state)]);
    let v = |i: u8, kib: usize| -> String { format!("{i}").repeat(kib * 1024) };
    s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": v(0, 64)}),
    );
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": v(1, 64), "mode": "overwrite"}),
    );
    assert!(
        out.get("warnings").is_none(),
        "room for the first pre-image: {out}"
    );
    let filler = fill(&fs.dir);

    // v1's copy does not fit: v0's goes to make room for it.
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": v(2, 128), "mode": "overwrite"}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("f.txt")).unwrap(),
        v(2, 128)
    );
    let warning = out["warnings"].to_string();
    assert!(warning.contains("history_pruned: "), "{out}");
    assert!(!warning.contains("history_not_kept"), "{out}");
    let last = journal_rows(&fs.dir).pop().unwrap();
    assert_eq!(
        last["history_pruned"]["sha256"],
        json!([sha256(v(0, 64).as_bytes())]),
        "the row names the dropped version: {last}"
    );
    assert!(last.get("history_not_kept").is_none(), "{last}");
    assert_eq!(
        stored_flags(&mut s, "f.txt"),
        vec![
            (sha256(v(2, 128).as_bytes()), true),
            (sha256(v(1, 64).as_bytes()), true),
            (sha256(v(0, 64).as_bytes()), false),
        ],
        "the newest pre-image is kept, the oldest dropped"
    );

    // v2 (128 KiB) is more than history holds (v1, 64 KiB) plus what is free: not kept.
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": v(3, 64), "mode": "overwrite"}),
    );
    assert_eq!(std::fs::read_to_string(ws.path("f.txt")).unwrap(), v(3, 64));
    let warning = out["warnings"]
        .as_array()
        .and_then(|w| {
            w.iter()
                .find_map(|w| w.as_str().filter(|w| w.starts_with("history_not_kept")))
        })
        .unwrap_or_default()
        .to_string();
    assert!(
        warning.contains("No space left on device") || warning.contains("os error 28"),
        "the warning says why: {out}"
    );
    let rows = journal_rows(&fs.dir);
    let last = rows.last().unwrap();
    assert_eq!(last["sha256"], json!(sha256(v(3, 64).as_bytes())));
    assert_eq!(last["prev_sha256"], json!(sha256(v(2, 128).as_bytes())));
    assert!(
        last["history_not_kept"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "the row records that no pre-image exists: {last}"
    );
    let flags = stored_flags(&mut s, "f.txt");
    assert_eq!(
        flags[..2],
        [
            (sha256(v(3, 64).as_bytes()), true),
            (sha256(v(2, 128).as_bytes()), false),
        ],
        "history shows the version whose pre-image was lost as not stored"
    );
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert_eq!(object_temps(&fs.dir), Vec::<PathBuf>::new());

    // Space freed: the next overwrite keeps its pre-image again.
    std::fs::remove_file(filler).unwrap();
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": v(4, 64), "mode": "overwrite"}),
    );
    assert!(out.get("warnings").is_none(), "{out}");
    assert_eq!(std::fs::read_to_string(ws.path("f.txt")).unwrap(), v(4, 64));
    assert_eq!(
        stored_flags(&mut s, "f.txt")[1],
        (sha256(v(3, 64).as_bytes()), true)
    );
    let last = journal_rows(&fs.dir).pop().unwrap();
    assert!(last.get("history_not_kept").is_none(), "{last}");
}

/// The object store and the workspace share a full filesystem, and the store holds the room
/// the write needs: history yields (older pre-images go, the newest of each file stays) and
/// the write lands. A write that cannot fit even so fails as before, with the old content
/// intact, and the next one that fits succeeds.
#[test]
fn history_never_holds_the_room_a_write_needs() {
    let fs = tmpfs_or_skip!("2m");
    let mut s = Server::start(&fs.dir, &[], &[]);
    let v = |i: u8| -> String { format!("{}", i % 10).repeat(300 * 1024) };
    s.ok("rw_safe_write", json!({"path": "f.txt", "content": v(0)}));
    // Each overwrite keeps the 300 KB it replaces: the store soon holds most of the disk.
    let mut pruned = false;
    for i in 1..12u8 {
        let out = s.ok(
            "rw_safe_write",
            json!({"path": "f.txt", "content": v(i), "mode": "overwrite"}),
        );
        assert_eq!(std::fs::read_to_string(fs.dir.join("f.txt")).unwrap(), v(i));
        let w = out["warnings"].to_string();
        pruned |= w.contains("history_pruned");
        assert!(!w.contains("history_not_kept"), "round {i}: {out}");
        let flags = stored_flags(&mut s, "f.txt");
        assert!(
            flags[1].1,
            "round {i}: the newest pre-image is kept: {flags:?}"
        );
    }
    assert!(pruned, "the store had to yield room on a 2 MB disk");

    // Too big whatever history gives up: refused, the file intact, no temp left.
    let huge = "h".repeat(3 * 1024 * 1024);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "f.txt", "content": huge, "mode": "overwrite"}),
    );
    assert_enospc_envelope(&env);
    assert_eq!(
        std::fs::read_to_string(fs.dir.join("f.txt")).unwrap(),
        v(11)
    );
    assert_eq!(temp_files(&fs.dir), Vec::<PathBuf>::new());
    assert_eq!(object_temps(&fs.dir), Vec::<PathBuf>::new());
    s.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": "fits\n", "mode": "overwrite"}),
    );
    assert_eq!(
        std::fs::read_to_string(fs.dir.join("f.txt")).unwrap(),
        "fits\n"
    );
}

/// Without a small filesystem (and as a non-root user): the injected `enospc_object` fault
/// fails every pre-image; every write still lands and says so.
#[test]
fn injected_pre_image_failure_never_blocks_the_write() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "enospc_object")]);
    s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "one\n"}),
    );
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "two\n", "mode": "overwrite"}),
    );
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), "two\n");
    assert!(
        out["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("history_not_kept: ") && w.contains("os error 28")),
        "{out}"
    );
    let rows = journal_rows(&ws.root);
    assert!(rows.last().unwrap()["history_not_kept"].is_string());
    assert_eq!(
        stored_flags(&mut s, "t.txt"),
        vec![(sha256(b"two\n"), true), (sha256(b"one\n"), false)]
    );
}
