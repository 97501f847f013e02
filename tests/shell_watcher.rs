//! The shell hooks' watcher (issue 42's speed) through the binary: once it runs, the hooks
//! around a command that changes nothing start no git at all, and around one that edits a
//! file git looks at that file only; what they journal is what they journaled without it.
//! `hooks.shell_watcher: false` and a refusal in `watch/off` keep the old way; the watcher
//! goes when idle. git is wrapped by a script that logs each run (PATH of the hook, and of
//! the watcher it starts).

#![cfg(target_os = "linux")]

mod common;

use common::shell::{claude_bash, git_or_skip, repo};
use common::{journal_rows, sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SESSION: &str = "9d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";

/// A directory holding a `git` that appends its arguments to `log` and runs the real one.
fn logging_git(dir: &Path) -> (PathBuf, String) {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_string();
    let bin = dir.join("fakebin");
    let log = dir.join("git.log");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{real}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (log, path)
}

/// The `git add` runs logged since the log was last taken (the log is emptied).
fn adds(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
    text.lines()
        .filter(|l| l.contains(" add -A"))
        .map(str::to_string)
        .collect()
}

fn socket(root: &Path) -> PathBuf {
    root.join(".resilient_write/hooks/shell/watch/sock")
}

fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `command` between the hooks and check they said nothing.
fn bash(root: &Path, call: &str, command: &str, env: &[(&str, &str)]) {
    let r = claude_bash(root, SESSION, call, command, env);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
}

#[test]
fn once_the_watcher_runs_a_command_that_changes_nothing_starts_no_git_and_an_edit_one_add() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    let (log, path) = logging_git(&ws.root.join(".git"));
    let env = [("PATH", path.as_str())];
    // The first command starts the watcher and snapshots the whole tree, as before.
    bash(&ws.root, "t1", "true", &env);
    assert!(!adds(&log).is_empty(), "the first snapshot is git's own");
    wait_for("the watcher's socket", Duration::from_secs(10), || {
        socket(&ws.root).exists()
    });
    // Its first answer is "everything" (no token yet): one more full snapshot.
    bash(&ws.root, "t2", "true", &env);
    adds(&log);

    for i in 0..3 {
        bash(&ws.root, &format!("quiet{i}"), "ls > /dev/null", &env);
    }
    assert_eq!(
        adds(&log),
        Vec::<String>::new(),
        "no git around quiet commands"
    );
    assert!(journal_rows(&ws.root).is_empty());

    // The user edits app.py between commands (no hook sees it), then a command edits it
    // again: the row's previous version is the user's, found through the watcher.
    std::fs::write(ws.path("app.py"), "print('by hand')\n").unwrap();
    bash(&ws.root, "t3", "sed -i s/hand/sed/ app.py", &env);
    let added = adds(&log);
    assert_eq!(
        added.len(),
        2,
        "one add per hook, of the changed path: {added:?}"
    );
    assert!(
        added.iter().all(|a| a.contains("--pathspec-from-file")),
        "{added:?}"
    );
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["path"], "app.py");
    assert_eq!(rows[0]["tool"], "native:Bash");
    assert_eq!(rows[0]["prev_sha256"], sha256(b"print('by hand')\n"));
    assert_eq!(rows[0]["sha256"], sha256(b"print('by sed')\n"));

    // Created in a new directory, removed: each journaled.
    bash(
        &ws.root,
        "t4",
        "mkdir -p gen/deep && echo x > gen/deep/x.txt && rm old.txt",
        &env,
    );
    let rows = journal_rows(&ws.root);
    let last: Vec<(&str, &str)> = rows[1..]
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["mode"].as_str().unwrap()))
        .collect();
    assert_eq!(last, [("gen/deep/x.txt", "create"), ("old.txt", "delete")]);

    // A watcher that cannot be reached (its socket replaced): the hooks do what they did
    // without one, journal the same, and start another.
    let sock = socket(&ws.root);
    std::fs::remove_file(&sock).unwrap();
    std::fs::write(&sock, "not a socket").unwrap();
    bash(&ws.root, "t5", "echo more >> app.py", &env);
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows[3]["prev_sha256"], sha256(b"print('by sed')\n"));
}

/// A repository whose policy sets `hooks.shell_watcher` to `value` (`None`: no git here).
fn repo_with_shell_watcher(value: &str) -> Option<common::Workspace> {
    if !git_or_skip() {
        return None;
    }
    let ws = repo();
    std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        format!("version: 1\nhooks:\n  shell_watcher: {value}\n"),
    )
    .unwrap();
    Some(ws)
}

#[test]
fn with_the_watcher_off_by_policy_each_hook_snapshots_the_whole_tree() {
    let Some(ws) = repo_with_shell_watcher("false") else {
        return;
    };
    let (log, path) = logging_git(&ws.root.join(".git"));
    let env = [("PATH", path.as_str())];
    for i in 0..3 {
        bash(&ws.root, &format!("p{i}"), "true", &env);
    }
    let added = adds(&log);
    assert_eq!(added.len(), 6, "a full add -A per hook: {added:?}");
    assert!(added.iter().all(|a| !a.contains("pathspec-from-file")));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!socket(&ws.root).exists(), "no watcher started");
    bash(&ws.root, "p3", "echo v9 > app.py", &env);
    assert_eq!(journal_rows(&ws.root).len(), 1);
}

#[test]
fn a_refusal_in_watch_off_keeps_the_hooks_from_starting_a_watcher() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    let dir = ws.path(".resilient_write/hooks/shell/watch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("off"),
        "the workspace's filesystem is not trusted\n",
    )
    .unwrap();
    bash(&ws.root, "o1", "true", &[]);
    bash(&ws.root, "o2", "echo v3 > app.py", &[]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!socket(&ws.root).exists());
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["prev_sha256"], sha256(b"print('v0')\n"));
    // doctor says so, as a warning (the commands are journaled all the same).
    let o = common::run_cli(&ws.root, &["doctor", "--json"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "shell_watcher")
        .collect();
    assert_eq!(found.len(), 1, "{v}");
    assert_eq!(found[0]["severity"], "warning");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("not trusted")
    );
}

#[test]
fn the_watcher_goes_when_idle() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    let env = [("RW_SHELL_WATCHER_IDLE_SECS", "1")];
    bash(&ws.root, "i1", "true", &env);
    wait_for("the watcher's socket", Duration::from_secs(10), || {
        socket(&ws.root).exists()
    });
    wait_for("the idle watcher to exit", Duration::from_secs(10), || {
        !socket(&ws.root).exists()
    });
}

#[test]
fn state_files_planted_as_symlinks_are_never_written_through() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    // A repository can commit its own `.resilient_write/` (ignoring it only keeps it out of
    // `git add`): the hooks' small state files must not write where a symlink points.
    let victim = ws.root.parent().unwrap().join(format!(
        "victim-{}",
        ws.root.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&victim, "keep me\n").unwrap();
    let git_dir = ws.path(".resilient_write/hooks/shell/git");
    std::fs::create_dir_all(&git_dir).unwrap();
    for name in ["watch-token", "grown", "repo.json"] {
        std::os::unix::fs::symlink(&victim, git_dir.join(name)).unwrap();
    }
    for i in 0..3 {
        let _ = claude_bash(&ws.root, SESSION, &format!("s{i}"), "echo x >> app.py", &[]);
        wait_for("the watcher's socket", Duration::from_secs(10), || {
            socket(&ws.root).exists()
        });
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    let _ = std::fs::remove_file(&victim);
}

#[test]
fn a_bad_shell_watcher_value_keeps_the_watcher_and_says_so() {
    let Some(ws) = repo_with_shell_watcher("sometimes") else {
        return;
    };
    let r = claude_bash(&ws.root, SESSION, "b1", "true", &[]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(
        r.stderr
            .contains("hooks.shell_watcher must be true or false; using true"),
        "{}",
        r.stderr
    );
    wait_for("the watcher's socket", Duration::from_secs(10), || {
        socket(&ws.root).exists()
    });
}
