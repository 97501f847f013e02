//! `restore --session` is one transaction: a crash at any point of it (the fault points of
//! the commit, and SIGKILL at random moments) leaves, once recovery has run, every file of
//! the session either as the session left it or as it was before the session, never a mix.
//! `RW_SESSION_CRASH_TRIALS` sets the number of SIGKILL trials (default 12).

mod common;

use common::hooks::{fixture, hook};
use common::{Workspace, faults_compiled_in, run_cli};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const SESSION: &str = "crash-session";

/// The workspace's files (path → content), the state directory left out.
fn files(root: &Path) -> BTreeMap<String, String> {
    common::files_under(root)
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(root).ok()?.display().to_string();
            (!rel.starts_with(".resilient_write")).then(|| {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                (rel, text)
            })
        })
        .collect()
}

/// A workspace where session `SESSION` changed eight files, created three and deleted one
/// with one shell command (journaled by the Claude Code hooks); the files before and after.
type State = BTreeMap<String, String>;

fn session_workspace() -> (Workspace, State, State) {
    let ws = Workspace::new();
    for i in 0..8 {
        std::fs::write(ws.path(&format!("m{i}.txt")), format!("before {i}\n")).unwrap();
    }
    std::fs::write(ws.path("gone.txt"), "deleted by the session\n").unwrap();
    let before = files(&ws.root);
    let command = "for i in 0 1 2 3 4 5 6 7; do echo after $i > m$i.txt; done; \
                   echo new > n1.txt; echo new > n2.txt; echo new > n3.txt; rm gone.txt";
    let fill = [
        ("CWD", ws.root.to_str().unwrap()),
        ("SESSION", SESSION),
        ("CALL", "toolu_crash"),
        ("COMMAND", command),
    ];
    hook(
        "claude-code",
        "PreToolUse",
        &fixture("claude-code/PreToolUse-Bash.json", &fill),
    );
    let ran = Command::new("sh")
        .args(["-c", command])
        .current_dir(&ws.root)
        .status();
    assert!(ran.unwrap().success());
    let r = hook(
        "claude-code",
        "PostToolUse",
        &fixture("claude-code/PostToolUse-Bash.json", &fill),
    );
    assert_eq!(r.stderr, "");
    let after = files(&ws.root);
    assert_ne!(before, after);
    (ws, before, after)
}

/// Recovery as any start runs it, then the workspace must be in one of the two states.
fn recovered_state(root: &Path, before: &State, after: &State) -> &'static str {
    let out = run_cli(root, &["recover"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let now = files(root);
    if &now == before {
        "restored"
    } else if &now == after {
        "untouched"
    } else {
        panic!("a mix of the two states after recovery:\n{now:#?}");
    }
}

#[test]
fn a_crash_at_each_fault_point_of_restore_session_recovers_to_one_state() {
    if !faults_compiled_in() {
        return;
    }
    for fault in [
        "tx_crash_after_commit_record",
        "tx_crash_after_journal",
        "tx_crash_mid_renames",
    ] {
        let (ws, before, after) = session_workspace();
        let out = run_cli(
            &ws.root,
            &["restore", "--session", SESSION],
            &[("RW_FAULT_INJECT", fault)],
        );
        assert!(!out.status.success(), "{fault}: the fault did not fire");
        // Past the commit point: recovery rolls the restore forward, whole.
        assert_eq!(
            recovered_state(&ws.root, &before, &after),
            "restored",
            "{fault}"
        );
    }
}

#[test]
fn sigkill_during_restore_session_recovers_to_one_state() {
    let trials: u64 = std::env::var("RW_SESSION_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut seen = BTreeMap::new();
    for trial in 0..trials {
        let (ws, before, after) = session_workspace();
        let mut child = Command::new(common::bin())
            .args(["restore", "--session", SESSION])
            .current_dir(&ws.root)
            .env_remove("RW_STATE_DIR")
            .env_remove("RW_WORKSPACE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Spread the kills over the restore's run (a few to tens of milliseconds).
        std::thread::sleep(Duration::from_micros(1 + trial * 2_500));
        let _ = child.kill();
        let _ = child.wait();
        *seen
            .entry(recovered_state(&ws.root, &before, &after))
            .or_insert(0) += 1;
    }
    println!("states after a kill and recovery: {seen:?}");
}
