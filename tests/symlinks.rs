//! Symlink escapes through the real server: every way out of the workspace is refused with
//! `policy_violation`/`permission` and nothing is written outside; symlinks inside the
//! workspace are written through to their target and kept.

mod common;

use common::{Server, Workspace, journal_rows, temp_files};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A workspace with a server, plus a directory outside it holding one file.
struct Setup {
    ws: Workspace,
    outside: tempfile::TempDir,
    out: PathBuf,
    server: Server,
}

fn setup() -> Setup {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    std::fs::write(out.join("secret.txt"), "outside content\n").unwrap();
    let server = ws.server();
    Setup {
        ws,
        outside,
        out,
        server,
    }
}

impl Setup {
    /// `out` as seen from the workspace root, relatively (`../<name>`).
    fn out_relative(&self) -> PathBuf {
        assert_eq!(self.ws.root.parent(), self.out.parent(), "same temp dir");
        Path::new("..").join(self.out.file_name().unwrap())
    }

    /// Everything outside: paths and contents.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let _ = &self.outside;
        let mut m = BTreeMap::new();
        let mut stack = vec![self.out.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    stack.push(p.clone());
                    m.insert(p, b"<dir>".to_vec());
                } else {
                    m.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
                }
            }
        }
        m
    }

    /// Try `args` with `tool`: refused as an escape, nothing outside changed, no row, no temp.
    fn refused(&mut self, tool: &str, args: Value) -> Value {
        let before = self.outside_snapshot();
        let rows = journal_rows(&self.ws.root).len();
        let env = self.server.err(tool, args.clone());
        assert_eq!(env["error"], json!("policy_violation"), "{args}: {env}");
        assert_eq!(env["reason_hint"], json!("permission"), "{args}: {env}");
        assert_eq!(self.outside_snapshot(), before, "{args} wrote outside");
        assert_eq!(journal_rows(&self.ws.root).len(), rows, "{args} journaled");
        assert_eq!(temp_files(&self.ws.root), Vec::<PathBuf>::new());
        assert_eq!(temp_files(&self.out), Vec::<PathBuf>::new());
        env
    }

    fn refused_write(&mut self, path: &str) {
        for mode in ["create", "overwrite", "append"] {
            self.refused(
                "rw_safe_write",
                json!({"path": path, "content": "escaped\n", "mode": mode}),
            );
        }
    }
}

#[test]
fn parent_directory_symlink_pointing_out_is_refused() {
    let mut s = setup();
    symlink(s.out_relative(), s.ws.path("link")).unwrap();
    s.refused_write("link/secret.txt");
    s.refused_write("link/new.txt");
    s.refused_write("link/deeper/new.txt");
    s.refused(
        "rw_safe_replace",
        json!({"path": "link/secret.txt", "old_string": "outside", "new_string": "x"}),
    );
}

#[test]
fn parent_directory_absolute_symlink_pointing_out_is_refused() {
    let mut s = setup();
    symlink(&s.out, s.ws.path("abs")).unwrap();
    s.refused_write("abs/secret.txt");
    s.refused_write("abs/new.txt");
    let through_abs = s.ws.path("abs/new.txt").display().to_string();
    s.refused_write(&through_abs);
}

#[test]
fn final_component_symlink_pointing_out_is_refused() {
    let mut s = setup();
    symlink(s.out_relative().join("secret.txt"), s.ws.path("f.txt")).unwrap();
    s.refused_write("f.txt");
    s.refused(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "outside", "new_string": "x"}),
    );
    assert!(s.ws.path("f.txt").is_symlink(), "the link is left alone");
}

#[test]
fn final_component_absolute_symlink_pointing_out_is_refused() {
    let mut s = setup();
    symlink(s.out.join("secret.txt"), s.ws.path("f.txt")).unwrap();
    s.refused_write("f.txt");
    symlink("/etc/passwd", s.ws.path("passwd")).unwrap();
    s.refused_write("passwd");
}

#[test]
fn dotdot_paths_climbing_out_are_refused() {
    let mut s = setup();
    let name = s.out.file_name().unwrap().to_str().unwrap().to_string();
    s.refused_write(&format!("../{name}/secret.txt"));
    s.refused_write(&format!("../{name}/new.txt"));
    s.refused_write(&format!("sub/../../{name}/new.txt"));
    let stray = format!("rw-escape-{}.txt", std::process::id());
    s.refused_write(&format!("../{stray}"));
    assert!(!s.ws.root.parent().unwrap().join(&stray).exists());
}

#[test]
fn absolute_path_outside_every_root_is_refused() {
    let mut s = setup();
    let secret = s.out.join("secret.txt").display().to_string();
    let new = s.out.join("new.txt").display().to_string();
    s.refused_write(&secret);
    s.refused_write(&new);
}

#[test]
fn directory_swapped_for_a_symlink_between_calls_is_refused() {
    let mut s = setup();
    s.server.ok(
        "rw_safe_write",
        json!({"path": "sub/f.txt", "content": "inside\n"}),
    );
    // Between two calls the directory becomes a symlink to the outside.
    std::fs::rename(s.ws.path("sub"), s.ws.path("sub-was")).unwrap();
    symlink(&s.out, s.ws.path("sub")).unwrap();
    std::fs::write(s.out.join("f.txt"), "outside f\n").unwrap();
    s.refused_write("sub/f.txt");
    s.refused_write("sub/g.txt");
    s.refused(
        "rw_safe_replace",
        json!({"path": "sub/f.txt", "old_string": "outside", "new_string": "x"}),
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path("sub-was/f.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn file_swapped_for_a_symlink_between_calls_is_refused() {
    let mut s = setup();
    s.server.ok(
        "rw_safe_write",
        json!({"path": "f.txt", "content": "inside\n"}),
    );
    std::fs::remove_file(s.ws.path("f.txt")).unwrap();
    symlink(s.out.join("secret.txt"), s.ws.path("f.txt")).unwrap();
    s.refused_write("f.txt");
}

#[test]
fn symlink_inside_the_workspace_is_written_through_and_kept() {
    let mut s = setup();
    std::fs::create_dir(s.ws.path("real")).unwrap();
    std::fs::write(s.ws.path("real/target.txt"), "old\n").unwrap();
    symlink("real/target.txt", s.ws.path("alias.txt")).unwrap();
    symlink("real", s.ws.path("dirlink")).unwrap();
    let out = s.server.ok(
        "rw_safe_write",
        json!({"path": "alias.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(
        out["abs_path"],
        json!(s.ws.path("real/target.txt").display().to_string())
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path("real/target.txt")).unwrap(),
        "new\n"
    );
    assert!(s.ws.path("alias.txt").is_symlink(), "the link is kept");
    assert_eq!(
        std::fs::read_link(s.ws.path("alias.txt")).unwrap(),
        Path::new("real/target.txt")
    );
    // Through a directory symlink inside the workspace too.
    s.server.ok(
        "rw_safe_write",
        json!({"path": "dirlink/target.txt", "content": "newer\n", "mode": "overwrite"}),
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path("real/target.txt")).unwrap(),
        "newer\n"
    );
    assert!(s.ws.path("dirlink").is_symlink());
    s.server.ok(
        "rw_safe_replace",
        json!({"path": "alias.txt", "old_string": "newer", "new_string": "newest"}),
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path("real/target.txt")).unwrap(),
        "newest\n"
    );
    assert!(s.ws.path("alias.txt").is_symlink());
}

#[test]
fn dangling_symlink_inside_the_workspace_creates_its_target_and_is_kept() {
    let mut s = setup();
    symlink("missing.txt", s.ws.path("dangling")).unwrap();
    let out = s.server.ok(
        "rw_safe_write",
        json!({"path": "dangling", "content": "made\n"}),
    );
    assert_eq!(
        out["abs_path"],
        json!(s.ws.path("missing.txt").display().to_string())
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path("missing.txt")).unwrap(),
        "made\n"
    );
    assert!(s.ws.path("dangling").is_symlink());
}

#[test]
fn dangling_symlink_pointing_out_is_refused_and_creates_nothing() {
    let mut s = setup();
    symlink(s.out.join("not-there.txt"), s.ws.path("dangling")).unwrap();
    s.refused_write("dangling");
    assert!(!s.out.join("not-there.txt").exists());
}

#[test]
fn symlink_loop_is_refused_without_writing() {
    let mut s = setup();
    symlink("b", s.ws.path("a")).unwrap();
    symlink("a", s.ws.path("b")).unwrap();
    let env = s.server.err(
        "rw_safe_write",
        json!({"path": "a", "content": "x\n", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], json!("policy_violation"), "{env}");
    assert!(s.ws.path("a").is_symlink() && s.ws.path("b").is_symlink());
    assert!(journal_rows(&s.ws.root).is_empty());
}

#[test]
fn symlink_into_the_state_directory_is_refused() {
    let mut s = setup();
    s.server
        .ok("rw_safe_write", json!({"path": "a.txt", "content": "x\n"}));
    let journal = std::fs::read(s.ws.path(".resilient_write/journal.jsonl")).unwrap();
    symlink(".resilient_write/journal.jsonl", s.ws.path("j")).unwrap();
    let env = s.server.err(
        "rw_safe_write",
        json!({"path": "j", "content": "forged\n", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], json!("policy_violation"), "{env}");
    assert_eq!(
        std::fs::read(s.ws.path(".resilient_write/journal.jsonl")).unwrap(),
        journal
    );
}
