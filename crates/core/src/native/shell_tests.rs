//! Shell commands journaled through the two snapshot engines (real git in a temporary
//! repository; a plain directory outside git).

use super::*;
use crate::hash::sha256_hex;
use std::fs;
use std::process::Command;

/// Whether git can be run. Without it the git test is a printed skip here; the same
/// behaviour is proven through the binary by tests/shell_hooks.rs, which fails under CI when
/// git is missing (the core reads no environment, not even `CI`).
pub(super) fn git_available() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: git is not installed");
    }
    ok
}

pub(super) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn call<'a>(id: &'a str, command: &'a str) -> ShellCall<'a> {
    ShellCall {
        agent: "claude-code",
        tool: "Bash",
        session: Some("sess-1"),
        call_id: Some(id),
        command,
        reject_at: crate::policy::active::RejectAt::Medium,
        max_files: DEFAULT_MAX_FILES,
        max_bytes: 1 << 20,
        watcher: None,
    }
}

fn rows(w: &NativeWorkspace) -> Vec<crate::journal::Row> {
    w.journal.read_from(0).unwrap().0
}

/// Loose and packed objects of the user's repository, and its index, byte for byte.
fn repo_state(root: &Path) -> (Vec<String>, Vec<u8>) {
    let mut objects: Vec<String> = Vec::new();
    for e in walk(&root.join(".git/objects")) {
        objects.push(e.display().to_string());
    }
    objects.sort();
    (objects, fs::read(root.join(".git/index")).unwrap())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

/// The command of the issue, run by hand between the hooks: `sed` edits app.py, gen.txt
/// is created, old.txt removed; plus an ignored build output, a symlink out of the
/// workspace and a write into the state directory, none of which is journaled.
fn run_the_command(root: &Path) {
    fs::write(root.join("app.py"), "print('v2')\n").unwrap();
    fs::write(root.join("gen.txt"), "generated\n").unwrap();
    fs::remove_file(root.join("old.txt")).unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/out.bin"), "build output").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("escape")).unwrap();
    fs::write(root.join(".resilient_write/hooks/planted.txt"), "x").unwrap();
}

fn assert_the_rows(w: &NativeWorkspace) {
    let all = rows(w);
    let by_path = |p: &str| all.iter().find(|r| r["path"] == p).cloned();
    assert_eq!(all.len(), 3, "{all:#?}");
    let app = by_path("app.py").unwrap();
    assert_eq!(app["mode"], "overwrite");
    assert_eq!(app["tool"], "native:Bash");
    assert_eq!(app["caller"], "claude-code");
    assert_eq!(app["agent_session"], "sess-1");
    assert_eq!(app["pre_image"], true);
    assert_eq!(app["prev_sha256"], sha256_hex(b"print('v1')\n"));
    assert_eq!(
        app["command"],
        "sed -i s/v1/v2/ app.py && echo generated > gen.txt && rm old.txt"
    );
    let gen_txt = by_path("gen.txt").unwrap();
    assert_eq!(gen_txt["mode"], "create");
    assert!(gen_txt["prev_sha256"].is_null());
    let old = by_path("old.txt").unwrap();
    assert_eq!(old["mode"], "delete");
    assert_eq!(old["sha256"], "");
    assert_eq!(old["prev_sha256"], sha256_hex(b"old\n"));
    // Every version before and after is in the object store.
    for content in [
        &b"print('v1')\n"[..],
        b"print('v2')\n",
        b"old\n",
        b"generated\n",
    ] {
        assert!(w.objects.contains(&sha256_hex(content)), "{content:?}");
    }
}

const COMMAND: &str = "sed -i s/v1/v2/ app.py && echo generated > gen.txt && rm old.txt";

#[test]
fn in_git_a_commands_changes_are_journaled_and_the_users_repository_is_untouched() {
    if !git_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    fs::write(root.join(".gitignore"), "target/\n.resilient_write/\n").unwrap();
    fs::write(root.join("app.py"), "print('v1')\n").unwrap();
    fs::write(root.join("old.txt"), "old\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "init"]);
    fs::write(root.join("notes.md"), "untracked, not changed\n").unwrap();
    let w = NativeWorkspace::open(&root, None, None, None);
    fs::create_dir_all(root.join(".resilient_write/hooks")).unwrap();
    let before = repo_state(&root);
    w.shell_before(&call("t1", COMMAND)).unwrap();
    run_the_command(&root);
    let report = w.shell_after(&call("t1", COMMAND)).unwrap();
    assert_eq!(
        (report.changed, report.journaled),
        (3, 3),
        "{:?}",
        report.notes
    );
    assert!(report.secrets.is_empty());
    assert_the_rows(&w);
    assert_eq!(
        repo_state(&root),
        before,
        "the user's index and objects are untouched"
    );
    // A second command that changes nothing journals nothing.
    w.shell_before(&call("t2", "ls")).unwrap();
    let report = w.shell_after(&call("t2", "ls")).unwrap();
    assert_eq!((report.changed, report.journaled), (0, 0));
}

#[test]
fn outside_git_the_stat_snapshot_journals_the_same_changes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::write(root.join("app.py"), "print('v1')\n").unwrap();
    fs::write(root.join("old.txt"), "old\n").unwrap();
    let w = NativeWorkspace::open(&root, None, None, None);
    fs::create_dir_all(root.join(".resilient_write/hooks")).unwrap();
    w.shell_before(&call("t1", COMMAND)).unwrap();
    run_the_command(&root);
    let report = w.shell_after(&call("t1", COMMAND)).unwrap();
    assert_eq!(
        (report.changed, report.journaled),
        (3, 3),
        "{:?}",
        report.notes
    );
    assert_the_rows(&w);
}

#[test]
fn a_refused_command_leaves_no_row_and_its_snapshot_is_dropped_by_the_next_call() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    let w = NativeWorkspace::open(&root, None, None, None);
    // The user refuses "rm a.txt": its after-hook never runs.
    w.shell_before(&call("refused", "rm a.txt")).unwrap();
    // Meanwhile the user edits a.txt in an editor; the next command changes nothing.
    fs::write(root.join("a.txt"), "edited by the user\n").unwrap();
    w.shell_before(&call("t2", "true")).unwrap();
    let report = w.shell_after(&call("t2", "true")).unwrap();
    assert_eq!(report.journaled, 0);
    assert!(rows(&w).is_empty());
    // An after-hook without its before-hook journals nothing and says so.
    let report = w.shell_after(&call("never-started", "true")).unwrap();
    assert_eq!(report.journaled, 0);
    assert!(
        report.notes[0].contains("no snapshot"),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_secret_the_command_wrote_is_reported_and_the_command_line_is_redacted() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let w = NativeWorkspace::open(&root, None, None, None);
    // Generated, never typed: prefix + characters.
    let token: String = format!(
        "ghp_{}",
        (0..36)
            .map(|i| (b'a' + (i * 7 % 26) as u8) as char)
            .collect::<String>()
    );
    let command = format!("echo 'GITHUB_TOKEN={token}' > leak.env");
    w.shell_before(&call("t1", &command)).unwrap();
    fs::write(root.join("leak.env"), format!("GITHUB_TOKEN={token}\n")).unwrap();
    let report = w.shell_after(&call("t1", &command)).unwrap();
    assert_eq!(report.journaled, 1);
    assert_eq!(report.secrets.len(), 1, "{:?}", report.secrets);
    let f = &report.secrets[0];
    assert_eq!(
        (f.path.as_str(), f.kind.as_str(), f.line),
        ("leak.env", "github_pat", 1)
    );
    let journal = fs::read_to_string(w.journal.path()).unwrap();
    assert!(!journal.contains(&token), "the token reached the journal");
    assert!(journal.contains("{REDACTED:"), "{journal}");
}

#[test]
fn a_command_changing_more_files_than_the_cap_journals_the_first_with_a_note() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let w = NativeWorkspace::open(&root, None, None, None);
    let mut c = call("t1", "formatter");
    c.max_files = 3;
    w.shell_before(&c).unwrap();
    for i in 0..5 {
        fs::write(root.join(format!("f{i}.rs")), "same content\n").unwrap();
    }
    let report = w.shell_after(&c).unwrap();
    assert_eq!((report.changed, report.journaled), (5, 3));
    assert!(report.notes[0].contains("5 files"), "{:?}", report.notes);
    let all = rows(&w);
    let paths: Vec<&str> = all.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(paths, ["f0.rs", "f1.rs", "f2.rs"]);
    assert!(all.iter().all(|r| r[SHELL_CAP_FIELD].as_str().is_some()));
    // One content, one object.
    assert!(w.objects.contains(&sha256_hex(b"same content\n")));
}
