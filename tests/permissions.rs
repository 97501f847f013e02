//! Read-only files, directories and filesystems, and the injected faults of the pipeline:
//! every refusal is a typed envelope, the old content is intact, no temp file is left.
//!
//! Root bypasses permission bits, so when the tests run as root the server is started as the
//! unprivileged user `nobody` (65534) for the chmod cases; the root-only cases use a read-only
//! remount of a tmpfs (EROFS) and `chattr +i` (EPERM), each skipped with a printed reason when
//! it cannot be set up, except under CI, where that fails the test.

mod common;

use common::tmpfs::Tmpfs;
use common::{Server, Workspace, faults_compiled_in, journal_rows, temp_files};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const NOBODY: (u32, u32) = (65534, 65534);

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn chown_tree(root: &Path, (uid, gid): (u32, u32)) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid)).expect("chown");
        if p.is_dir() && !p.is_symlink() {
            for e in std::fs::read_dir(&p).unwrap().flatten() {
                stack.push(e.path());
            }
        }
    }
}

/// A server to which permission bits apply: as root, run as `nobody` over a workspace it owns.
fn unprivileged_server(ws: &Workspace) -> Server {
    if is_root() {
        chown_tree(&ws.root, NOBODY);
        Server::start_as(&ws.root, &[], &[], Some(NOBODY))
    } else {
        ws.server()
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn assert_permission_envelope(env: &Value, errno: i32) {
    assert_eq!(env["error"], json!("policy_violation"), "{env}");
    assert_eq!(env["reason_hint"], json!("permission"), "{env}");
    assert_eq!(
        env["context"]["errno"],
        json!(errno),
        "errno context: {env}"
    );
}

const EPERM: i32 = 1;
const EACCES: i32 = 13;
const EROFS: i32 = 30;

#[test]
fn read_only_file_is_refused_and_kept() {
    let ws = Workspace::new();
    std::fs::write(ws.path("ro.txt"), "keep me\n").unwrap();
    let mut s = unprivileged_server(&ws);
    chmod(&ws.path("ro.txt"), 0o444);
    for mode in ["overwrite", "append"] {
        let env = s.err(
            "rw_safe_write",
            json!({"path": "ro.txt", "content": "clobbered\n", "mode": mode}),
        );
        assert_permission_envelope(&env, EACCES);
    }
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "ro.txt", "old_string": "keep", "new_string": "lose"}),
    );
    assert_permission_envelope(&env, EACCES);
    assert_eq!(
        std::fs::read_to_string(ws.path("ro.txt")).unwrap(),
        "keep me\n"
    );
    let meta = std::fs::metadata(ws.path("ro.txt")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o444);
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
    // The server keeps serving.
    s.ok(
        "rw_safe_write",
        json!({"path": "other.txt", "content": "fine\n"}),
    );
}

#[test]
fn read_only_directory_is_refused_and_nothing_lost() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path("ro")).unwrap();
    std::fs::write(ws.path("ro/a.txt"), "keep me\n").unwrap();
    let mut s = unprivileged_server(&ws);
    chmod(&ws.path("ro"), 0o555);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "ro/a.txt", "content": "clobbered\n", "mode": "overwrite"}),
    );
    assert_permission_envelope(&env, EACCES);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "ro/new.txt", "content": "new\n"}),
    );
    assert_permission_envelope(&env, EACCES);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "ro/sub/new.txt", "content": "new\n"}),
    );
    assert_permission_envelope(&env, EACCES);
    chmod(&ws.path("ro"), 0o755);
    assert_eq!(
        std::fs::read_to_string(ws.path("ro/a.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!ws.path("ro/new.txt").exists());
    assert!(!ws.path("ro/sub").exists());
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
    s.ok(
        "rw_safe_write",
        json!({"path": "other.txt", "content": "fine\n"}),
    );
}

#[test]
fn read_only_filesystem_is_refused_with_erofs() {
    let fs = match Tmpfs::mount("4m") {
        Ok(t) => t,
        Err(why) => {
            common::missing_prerequisite(&why);
            return;
        }
    };
    let mut s = Server::start(&fs.dir, &[], &[]);
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "keep me\n"}),
    );
    if let Err(why) = fs.remount_ro() {
        common::missing_prerequisite(&why);
        return;
    }
    let env = s.err(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "clobbered\n", "mode": "overwrite"}),
    );
    assert_permission_envelope(&env, EROFS);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "b.txt", "content": "new\n"}),
    );
    assert_permission_envelope(&env, EROFS);
    assert_eq!(
        std::fs::read_to_string(fs.dir.join("a.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!fs.dir.join("b.txt").exists());
    assert_eq!(temp_files(&fs.dir), Vec::<PathBuf>::new());
    assert_eq!(journal_rows(&fs.dir).len(), 1);
}

/// Clears the immutable flag again, also when the test fails (else the tempdir stays).
struct Immutable(PathBuf);

impl Immutable {
    fn set(p: &Path) -> Result<Immutable, String> {
        if !is_root() {
            return Err("not running as root, cannot chattr +i".into());
        }
        let out = Command::new("chattr")
            .arg("+i")
            .arg(p)
            .output()
            .map_err(|e| format!("cannot run chattr: {e}"))?;
        if out.status.success() {
            Ok(Immutable(p.to_path_buf()))
        } else {
            Err(format!(
                "chattr +i failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn immutable_file_is_refused_and_kept() {
    let ws = Workspace::new();
    std::fs::write(ws.path("frozen.txt"), "keep me\n").unwrap();
    let _flag = match Immutable::set(&ws.path("frozen.txt")) {
        Ok(f) => f,
        Err(why) => {
            common::missing_prerequisite(&why);
            return;
        }
    };
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_write",
        json!({"path": "frozen.txt", "content": "clobbered\n", "mode": "overwrite"}),
    );
    assert_permission_envelope(&env, EPERM);
    assert_eq!(
        std::fs::read_to_string(ws.path("frozen.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(
        journal_rows(&ws.root).is_empty(),
        "no row survives for a write that was refused"
    );
}

#[test]
fn immutable_directory_is_refused_and_nothing_lost() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path("frozen")).unwrap();
    std::fs::write(ws.path("frozen/a.txt"), "keep me\n").unwrap();
    let _flag = match Immutable::set(&ws.path("frozen")) {
        Ok(f) => f,
        Err(why) => {
            common::missing_prerequisite(&why);
            return;
        }
    };
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_write",
        json!({"path": "frozen/a.txt", "content": "clobbered\n", "mode": "overwrite"}),
    );
    assert_permission_envelope(&env, EPERM);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "frozen/b.txt", "content": "new\n"}),
    );
    assert_permission_envelope(&env, EPERM);
    assert_eq!(
        std::fs::read_to_string(ws.path("frozen/a.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!ws.path("frozen/b.txt").exists());
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
}

#[test]
fn readback_mismatch_is_write_corruption_target_untouched_no_temp() {
    if !faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(ws.path("t.txt"), "old\n").unwrap();
    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "readback_mismatch")]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], json!("write_corruption"), "{env}");
    assert_eq!(
        env["context"]["expected_sha256"],
        json!(common::sha256(b"new\n"))
    );
    let env = s.err(
        "rw_safe_write",
        json!({"path": "fresh.txt", "content": "new\n"}),
    );
    assert_eq!(env["error"], json!("write_corruption"), "{env}");
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), "old\n");
    assert!(!ws.path("fresh.txt").exists());
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
}

/// The read-back compares the file's bytes with the body it was given: a temp file whose
/// first byte changed on the way (the `corrupt_temp` fault flips it on disk) fails with
/// `write_corruption` naming the digest of what the file really held.
#[test]
fn a_temp_file_holding_other_bytes_is_write_corruption_with_its_digest() {
    if !faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(ws.path("t.txt"), "old\n").unwrap();
    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "corrupt_temp")]);
    // A large body (its writeback started before the read-back) as well as small ones.
    let large = format!("new content\n{}", "x".repeat(300 * 1024));
    for (path, mode, content) in [
        ("t.txt", "overwrite", "new content\n".to_string()),
        ("fresh.txt", "create", "new content\n".to_string()),
        ("large.txt", "create", large),
    ] {
        let env = s.err(
            "rw_safe_write",
            json!({"path": path, "content": content, "mode": mode}),
        );
        assert_eq!(env["error"], json!("write_corruption"), "{env}");
        assert_eq!(
            env["context"]["expected_sha256"],
            json!(common::sha256(content.as_bytes()))
        );
        let held = content.replacen('n', "N", 1);
        assert_eq!(
            env["context"]["actual_sha256"],
            json!(common::sha256(held.as_bytes())),
            "{env}"
        );
    }
    assert!(!ws.path("large.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), "old\n");
    assert!(!ws.path("fresh.txt").exists());
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
}

#[test]
fn enospc_on_the_temp_file_is_quota_exceeded_target_untouched_no_temp() {
    if !faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(ws.path("t.txt"), "old\n").unwrap();
    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "enospc_write")]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], json!("quota_exceeded"), "{env}");
    assert_eq!(env["reason_hint"], json!("size_limit"), "{env}");
    assert_eq!(env["context"]["errno"], json!(28), "{env}");
    assert_eq!(std::fs::read_to_string(ws.path("t.txt")).unwrap(), "old\n");
    assert_eq!(temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(journal_rows(&ws.root).is_empty());
}
