//! Shell commands between the agents' hooks, in real git repositories (tests/shell_hooks.rs,
//! tests/shell_watcher.rs).

use super::hooks::{Ran, fixture, hook_raw};
use super::{Workspace, missing_prerequisite};
use std::path::Path;
use std::process::Command;

pub fn git_or_skip() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        missing_prerequisite("git is not installed");
    }
    ok
}

pub fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(root)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A git repository with app.py and old.txt committed, the state directory ignored.
pub fn repo() -> Workspace {
    let ws = Workspace::new();
    git(&ws.root, &["init", "-q"]);
    std::fs::write(ws.path(".gitignore"), ".resilient_write/\ntarget/\n").unwrap();
    std::fs::write(ws.path("app.py"), "print('v0')\n").unwrap();
    std::fs::write(ws.path("old.txt"), "old\n").unwrap();
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    ws
}

/// Run `command` in `root` with `sh`, between Claude Code's hooks for it; the after-hook's
/// output. `failing`: the command fails, and its after-hook is `PostToolUseFailure`.
pub fn claude_bash(
    root: &Path,
    session: &str,
    call: &str,
    command: &str,
    env: &[(&str, &str)],
) -> Ran {
    let fill = [
        ("CWD", root.to_str().unwrap()),
        ("SESSION", session),
        ("CALL", call),
        ("COMMAND", command),
    ];
    let pre = fixture("claude-code/PreToolUse-Bash.json", &fill);
    let r = hook_raw("claude-code", "PreToolUse", pre.to_string().as_bytes(), env);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    let status = Command::new("sh")
        .args(["-c", command])
        .current_dir(root)
        .status()
        .unwrap();
    let (rel, event) = if status.success() {
        ("claude-code/PostToolUse-Bash.json", "PostToolUse")
    } else {
        (
            "claude-code/PostToolUseFailure-Bash.json",
            "PostToolUseFailure",
        )
    };
    let post = fixture(rel, &fill);
    hook_raw("claude-code", event, post.to_string().as_bytes(), env)
}

/// Start the shell hooks' watcher of the workspace at `root` (what the first hook would) and
/// wait until it listens.
pub fn start_watcher(root: &Path) {
    let state = root.join(".resilient_write");
    let mut child = Command::new(super::bin())
        .args(["shell-watcher", "--root"])
        .arg(root)
        .arg("--state-dir")
        .arg(&state)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sock = state.join("hooks/shell/watch/sock");
    let t = std::time::Instant::now();
    while !sock.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the watcher exited: {status}");
        }
        assert!(t.elapsed().as_secs() < 10, "the watcher never listened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Reaped by whoever outlives it: it exits when the workspace is removed.
    std::mem::forget(child);
}
