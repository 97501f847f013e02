//! A full disk (ENOSPC) on a real filesystem: a small tmpfs mounted by the test. Needs root to
//! mount; without it (or when the mount fails) each test prints why it is skipped and returns,
//! except under CI, where the missing prerequisite fails the test. CI runs as root. The injected `enospc_journal` fault complements the real journal case.

mod common;

use common::tmpfs::Tmpfs;
use common::{Server, Workspace, journal_rows, sha256, temp_files};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

macro_rules! tmpfs_or_skip {
    ($size:expr) => {
        match Tmpfs::mount($size) {
            Ok(t) => t,
            Err(why) => {
                common::missing_prerequisite(&why);
                return;
            }
        }
    };
}

/// Fill the filesystem holding `dir` with a filler file until ENOSPC.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler.bin");
    let mut f = std::fs::File::create(&filler).expect("create filler");
    let chunk = vec![0x5au8; 4096];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    filler
}

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
