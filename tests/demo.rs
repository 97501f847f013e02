//! `resilient-write demo` is a test of the whole product: it replays the paper's incident
//! against the real server and exits non-zero when any step misbehaves.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn demo(cwd: &Path, args: &[&str]) -> Output {
    Command::new(common::bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_POLICY_FILE")
        .env_remove("NO_COLOR")
        .output()
        .expect("run resilient-write demo")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The path printed after `label` at the start of a line.
fn printed_path(out: &str, label: &str) -> PathBuf {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{out}"));
    PathBuf::from(line.split_whitespace().next().expect("a path"))
}

/// A whole token: the prefix followed by more than the 3 characters a 16-character snippet
/// leaves room for.
fn whole_token(out: &str) -> Option<String> {
    let re = regex::Regex::new(r"sk-ant-oat01-[A-Za-z0-9_\-]{4,}").expect("regex");
    re.find(out).map(|m| m.as_str().to_string())
}

#[test]
fn demo_replays_the_incident_and_every_step_behaves() {
    let ws = common::Workspace::new();
    let o = demo(&ws.root, &["demo"]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "demo failed:\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for expected in [
        "-> rw_risk_score",
        "verdict medium",
        "-> rw_safe_write path=report.tex classify=true classify_reject_at=medium",
        "refused: error=blocked reason_hint=content_filter suggested_action=redact",
        "report.tex was not written",
        "-> rw_redact",
        "{REDACTED:",
        "written: ",
        "-> rw_chunk_write session=paper index=4",
        "paper.md: 4 chunks",
        "-> rw_handoff_write",
        "-> rw_handoff_read",
        "drift: none",
        "-> rw_journal_tail",
        "compose",
        "in 1 scratch blob(s)",
        "All 8 steps behaved as the paper describes.",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    assert_eq!(whole_token(&out), None, "a whole token was printed:\n{out}");
    assert!(!out.contains('\x1b'), "colour codes on a pipe:\n{out}");
    let workspace = printed_path(&out, "workspace ");
    assert!(
        !workspace.exists(),
        "the throwaway workspace {} was not removed",
        workspace.display()
    );
    // The demo wrote nothing where it was started.
    assert_eq!(std::fs::read_dir(&ws.root).unwrap().count(), 0);
}

#[test]
fn demo_keep_leaves_the_workspace_with_its_files_and_journal() {
    let ws = common::Workspace::new();
    let o = demo(&ws.root, &["demo", "--keep"]);
    let out = stdout(&o);
    assert!(o.status.success(), "demo failed:\n{out}");
    let kept = printed_path(&out, "kept: ");
    for f in [
        "report.tex",
        "paper.md",
        "HANDOFF.md",
        ".resilient_write/journal.jsonl",
    ] {
        assert!(kept.join(f).is_file(), "{f} missing in {}", kept.display());
    }
    let report = std::fs::read_to_string(kept.join("report.tex")).unwrap();
    assert!(report.contains("{REDACTED:"), "{report}");
    assert_eq!(whole_token(&report), None);
    let journal = std::fs::read_to_string(kept.join(".resilient_write/journal.jsonl")).unwrap();
    assert_eq!(whole_token(&journal), None);
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn demo_exits_non_zero_naming_the_step_that_misbehaves() {
    // A policy that switches off the families the token belongs to: the draft is no longer
    // rated risky, which the demo must notice rather than report success.
    let ws = common::Workspace::new();
    std::fs::write(
        ws.path("policy.yaml"),
        "version: 1\ndisable_families: [api_key, redacted_prefix]\n",
    )
    .unwrap();
    let o = demo(&ws.root, &["--policy-file", "policy.yaml", "demo"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("DEMO FAILED: risk_score should rate the draft medium or high"),
        "{out}"
    );
    assert!(!out.contains("All 8 steps"), "{out}");
}

#[test]
fn demo_reports_a_server_that_cannot_start() {
    let ws = common::Workspace::new();
    let o = demo(
        &ws.root,
        &["demo", "--server", "/nonexistent/resilient-write"],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("DEMO FAILED: cannot start /nonexistent/resilient-write"),
        "{out}"
    );
}

#[test]
fn a_tool_profile_in_the_shell_does_not_change_what_the_demo_sees() {
    // RW_TOOLS/RW_READ_ONLY configure a server a client starts; the demo's own server is
    // started without them (client::SERVER_ENV), so its chunk and transaction steps still run.
    let ws = common::Workspace::new();
    let o = Command::new(common::bin())
        .arg("demo")
        .current_dir(&ws.root)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env("RW_TOOLS", "core")
        .env("RW_READ_ONLY", "1")
        .output()
        .expect("run resilient-write demo");
    assert!(
        o.status.success(),
        "demo failed:\n{}\n{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout(&o).contains("-> rw_chunk_write"), "{}", stdout(&o));
}
