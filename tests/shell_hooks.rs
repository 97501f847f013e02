//! Shell commands an agent runs, journaled, screened and undoable (issue 42): the agents'
//! documented hook payloads for `Bash` (Claude Code) and `run_shell_command` (Gemini CLI)
//! from tests/fixtures/hooks/, real commands run between the two hooks in real git
//! repositories (and a plain directory), and `restore --session` over mixed sessions.
//! Secrets are generated, never stored.

mod common;

use common::hooks::{fixture, hook};
use common::shell::{claude_bash, git, git_or_skip, repo};
use common::{Workspace, github_token, journal_rows, run_cli, sha256};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const SESSION: &str = "5f0c1e2d-7a3b-4c9d-8e1f-2a3b4c5d6e7f";
/// The session of the Write fixtures (tests/fixtures/hooks/claude-code/*-Write.json).
const WRITE_SESSION: &str = "0b9c3f4e-5a7d-4e2b-9c61-2f8e7d1a3b45";

fn rows_of(root: &Path, path: &str) -> Vec<Value> {
    journal_rows(root)
        .into_iter()
        .filter(|r| r["path"] == path)
        .collect()
}

fn cli(root: &Path, args: &[&str]) -> (bool, String, String) {
    let out = run_cli(root, args, &[]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A native Write through Claude Code's hooks (the fixture's session).
fn claude_write(root: &Path, file: &str, content: &str) {
    let fill = [
        ("CWD", root.to_str().unwrap()),
        ("FILE", &*root.join(file).display().to_string()),
        ("CONTENT", content),
    ];
    let r = hook(
        "claude-code",
        "PreToolUse",
        &fixture("claude-code/PreToolUse-Write.json", &fill),
    );
    assert_eq!(r.stdout, "", "{}", r.stderr);
    std::fs::write(root.join(file), content).unwrap();
    hook(
        "claude-code",
        "PostToolUse",
        &fixture("claude-code/PostToolUse-Write.json", &fill),
    );
}

const THE_COMMAND: &str = "sed -i s/v1/v2/ app.py && echo generated > gen.txt && rm old.txt";

#[test]
fn a_bash_command_that_edits_creates_and_removes_is_journaled_and_every_version_restorable() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    let index_before = std::fs::read(ws.path(".git/index")).unwrap();
    // The agent's own Write a moment before: its content was never kept before issue 42.
    claude_write(&ws.root, "app.py", "print('v1')\n");
    let r = claude_bash(&ws.root, SESSION, "toolu_sh1", THE_COMMAND, &[]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));

    let app = rows_of(&ws.root, "app.py");
    assert_eq!(app.len(), 2, "{app:?}");
    assert_eq!(app[1]["tool"], "native:Bash");
    assert_eq!(app[1]["caller"], "claude-code");
    assert_eq!(app[1]["agent_session"], SESSION);
    assert_eq!(app[1]["mode"], "overwrite");
    assert_eq!(app[1]["command"], THE_COMMAND);
    assert_eq!(app[1]["prev_sha256"], sha256(b"print('v1')\n"));
    assert_eq!(app[1]["pre_image"], true);
    let created = rows_of(&ws.root, "gen.txt");
    assert_eq!(
        (
            created[0]["mode"].as_str(),
            created[0]["prev_sha256"].is_null()
        ),
        (Some("create"), true)
    );
    let removed = rows_of(&ws.root, "old.txt");
    assert_eq!(removed[0]["mode"], "delete");
    assert_eq!(removed[0]["sha256"], "");

    // history sees them; restore reaches the Write's version and the removed file.
    let (ok, out, err) = cli(&ws.root, &["history", "app.py"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("native:Bash") && out.contains("native:Write"),
        "{out}"
    );
    let v1 = sha256(b"print('v1')\n");
    let (ok, _, err) = cli(&ws.root, &["restore", "app.py", "--to", &v1]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path("app.py")).unwrap(),
        "print('v1')\n"
    );
    let (ok, _, err) = cli(&ws.root, &["restore", "old.txt", "--to", &sha256(b"old\n")]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path("old.txt")).unwrap(),
        "old\n"
    );

    // The user's index and stash are untouched.
    assert_eq!(std::fs::read(ws.path(".git/index")).unwrap(), index_before);
    assert_eq!(git(&ws.root, &["stash", "list"]), "");
}

/// A generated token in `leak.env`, written by a command.
fn leak_command(token: &str) -> String {
    format!("printf 'GITHUB_TOKEN={token}\\n' > leak.env")
}

#[test]
fn a_secret_a_command_wrote_is_reported_in_claude_codes_after_hook_formats() {
    let ws = Workspace::new();
    let token = github_token(4201);
    let r = claude_bash(&ws.root, SESSION, "toolu_leak", &leak_command(&token), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    for part in [
        "leak.env",
        "github_pat",
        "line 1",
        "redact",
        "already happened",
    ] {
        assert!(reason.contains(part), "{part}: {reason}");
    }
    // A failed command that wrote one: PostToolUseFailure's additionalContext.
    let failing = format!(
        "{} && false",
        leak_command(&github_token(4202)).replace("leak.env", "leak2.env")
    );
    let r = claude_bash(&ws.root, SESSION, "toolu_leak2", &failing, &[]);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["hookEventName"],
        "PostToolUseFailure"
    );
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("leak2.env") && context.contains("github_pat"),
        "{context}"
    );
    assert_eq!(
        rows_of(&ws.root, "leak2.env").len(),
        1,
        "a failed command's changes are journaled"
    );
    // The token is nowhere: not in the answers, not in the journal (the command is redacted).
    let journal = std::fs::read_to_string(ws.path(".resilient_write/journal.jsonl")).unwrap();
    for text in [&r.stdout, &r.stderr, &journal] {
        assert!(!text.contains(&token) && !text.contains(&github_token(4202)));
    }
    assert!(journal.contains("{REDACTED:"), "{journal}");
}

#[test]
fn gemini_cli_shell_commands_are_journaled_and_a_secret_reported_in_its_format() {
    let ws = Workspace::new();
    let token = github_token(4203);
    let command = leak_command(&token);
    let fill = [
        ("CWD", ws.root.to_str().unwrap()),
        ("SESSION", SESSION),
        ("COMMAND", command.as_str()),
    ];
    let r = hook(
        "gemini",
        "BeforeTool",
        &fixture("gemini/BeforeTool-run_shell_command.json", &fill),
    );
    assert_eq!((r.code, r.stdout.trim()), (0, "{}"), "{}", r.stderr);
    Command::new("sh")
        .args(["-c", &command])
        .current_dir(&ws.root)
        .status()
        .unwrap();
    let r = hook(
        "gemini",
        "AfterTool",
        &fixture("gemini/AfterTool-run_shell_command.json", &fill),
    );
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "AfterTool");
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("leak.env") && context.contains("line 1"),
        "{context}"
    );
    assert!(!r.stdout.contains(&token));
    let rows = rows_of(&ws.root, "leak.env");
    assert_eq!(rows[0]["tool"], "native:run_shell_command");
    assert_eq!(rows[0]["caller"], "gemini");
    // An MCP write of the same session, attributed by Gemini CLI's AfterTool on our tool.
    let mut server = ws.server();
    let result = server.call_raw(
        "rw_safe_write",
        json!({"path": "plan.md", "content": "p\n"}),
    );
    attribute(&ws.root, "gemini", SESSION, &result);
    let (ok, out, err) = cli(&ws.root, &["journal", "--session", SESSION]);
    assert!(ok, "{err}");
    assert!(out.contains("plan.md") && out.contains("leak.env"), "{out}");
}

/// Attribute an MCP result to `session` through the agent's after-hook on our tool.
fn attribute(root: &Path, agent: &str, session: &str, result: &Value) {
    let (rel, event) = match agent {
        "claude-code" => ("claude-code/PostToolUse-mcp.json", "PostToolUse"),
        _ => ("gemini/AfterTool-mcp.json", "AfterTool"),
    };
    let text = result.to_string();
    let fill = [
        ("CWD", root.to_str().unwrap()),
        ("SESSION", session),
        ("CALL", "toolu_mcp"),
        ("FILE", "docs/plan.md"),
        ("CONTENT", "plan"),
        ("RESULT", text.as_str()),
    ];
    let r = hook(agent, event, &fixture(rel, &fill));
    assert_eq!(r.code, 0);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn a_mixed_session_of_mcp_writes_native_edits_and_shell_commands_is_undone_by_restore_session() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    let mut server = ws.server();
    // The session: an MCP write (attributed by the after-hook), a native Write, a command.
    let result = server.call_raw(
        "rw_safe_write",
        json!({"path": "app.py", "content": "print('v1')\n", "mode": "overwrite"}),
    );
    assert_eq!(result["isError"], false, "{result}");
    attribute(&ws.root, "claude-code", WRITE_SESSION, &result);
    claude_write(&ws.root, "notes.md", "created by the agent\n");
    claude_bash(&ws.root, WRITE_SESSION, "toolu_sh", THE_COMMAND, &[]);
    // Another session's command stays.
    claude_bash(
        &ws.root,
        "other-session",
        "toolu_other",
        "echo theirs > theirs.txt",
        &[],
    );

    let (ok, out, err) = cli(&ws.root, &["journal", "--session", WRITE_SESSION]);
    assert!(ok, "{err}");
    for part in [
        "safe_write",
        "native:Write",
        "native:Bash",
        "gen.txt",
        "old.txt",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    assert!(!out.contains("theirs.txt"), "{out}");
    let a = server.ok("rw_analytics", json!({}));
    assert_eq!(a["agent_sessions"].as_object().unwrap().len(), 2, "{a}");
    assert_eq!(a["agent_sessions"][WRITE_SESSION]["mcp_writes"], 1);
    assert_eq!(a["agent_sessions"][WRITE_SESSION]["shell_changes"], 3);

    // The tool's dry run, then the command line does it.
    let dry = server.ok(
        "rw_restore",
        json!({"session": WRITE_SESSION, "dry_run": true}),
    );
    let diff = dry["diff"].as_str().unwrap();
    assert!(
        diff.contains("+print('v0')") && diff.contains("(removed: gen.txt)"),
        "{diff}"
    );
    assert!(ws.path("gen.txt").exists());
    // The command line's dry run, by either name: the same diff, nothing written.
    for flag in ["--diff", "--dry-run"] {
        let (ok, out, err) = cli(&ws.root, &["restore", "--session", WRITE_SESSION, flag]);
        assert!(ok, "{flag}: {err}");
        assert!(out.starts_with(diff), "{flag}: {out}");
        assert!(out.contains("gen.txt: would be removed"), "{flag}: {out}");
        assert!(ws.path("gen.txt").exists(), "{flag} wrote nothing");
    }
    let (ok, out, err) = cli(&ws.root, &["restore", "--session", WRITE_SESSION]);
    assert!(ok, "{err}");
    assert!(
        out.contains("gen.txt: removed") && out.contains("undo with --tx"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("app.py")).unwrap(),
        "print('v0')\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("old.txt")).unwrap(),
        "old\n"
    );
    assert!(!ws.path("gen.txt").exists() && !ws.path("notes.md").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path("theirs.txt")).unwrap(),
        "theirs\n"
    );
    // The removed files' content stays in history.
    let (ok, out, _) = cli(&ws.root, &["history", "notes.md"]);
    assert!(ok && out.contains("yes"), "{out}");
    // Bad input: a session nobody knows is a typed refusal, and nothing changes.
    let env = server.err("rw_restore", json!({"session": "nobody"}));
    assert_eq!(env["context"]["reason"], "unknown_session", "{env}");
    let env = server.err(
        "rw_restore",
        json!({"session": WRITE_SESSION, "path": "app.py"}),
    );
    assert_eq!(env["error"], "policy_violation", "{env}");
}

#[test]
fn a_command_deleting_most_of_the_workspace_is_journaled_in_one_append_and_undone() {
    if !git_or_skip() {
        return;
    }
    let ws = repo();
    for i in 0..200 {
        let dir = ws.path(&format!("src/m{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
    git(&ws.root, &["add", "-A"]);
    git(&ws.root, &["commit", "-qm", "src"]);
    let before = journal_rows(&ws.root).len();
    let r = claude_bash(&ws.root, SESSION, "toolu_rm", "rm -rf src app.py", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len() - before, 201);
    assert!(
        rows[before..]
            .iter()
            .all(|r| r["mode"] == "delete" && r["pre_image"] == true)
    );
    let (ok, _, err) = cli(&ws.root, &["restore", "--session", SESSION]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path("src/m3/f13.rs")).unwrap(),
        "// file 13\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("app.py")).unwrap(),
        "print('v0')\n"
    );
}

#[test]
fn a_formatter_rewriting_thousands_of_files_is_capped_with_a_note_in_each_row_and_on_stderr() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "version: 1\nhooks:\n  shell_max_files: 500\n",
    )
    .unwrap();
    for i in 0..1500 {
        std::fs::write(
            ws.path(&format!("f{i:04}.txt")),
            format!("unformatted {i}\n"),
        )
        .unwrap();
    }
    let command = "for f in f*.txt; do echo formatted > $f; done";
    let r = claude_bash(&ws.root, SESSION, "toolu_fmt", command, &[]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(
        r.stderr.contains("changed 1500 files; the first 500"),
        "{}",
        r.stderr
    );
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 500);
    assert!(
        rows.iter()
            .all(|r| r["shell_cap"].as_str().is_some_and(|c| c.contains("1500")))
    );
    assert_eq!(rows[0]["path"], "f0000.txt");
    // One new content, one object: 500 pre-images + 1 post-image.
    let objects = common::files_under(&ws.path(".resilient_write/objects")).len();
    assert_eq!(objects, 501, "deduplicated by content");
}

#[test]
fn binary_files_files_over_the_cap_symlinks_out_and_the_state_directory() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
    let command = "head -c 3000 /dev/zero > big.bin && printf '\\000\\001\\377' > small.bin \
                   && ln -s /etc/hostname escape && echo x > .resilient_write/planted";
    let env = [("RW_MAX_WRITE_BYTES", "2000")];
    let r = claude_bash(&ws.root, SESSION, "toolu_bad", command, &env);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    let rows = journal_rows(&ws.root);
    let paths: Vec<&str> = rows.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(
        paths,
        ["big.bin", "small.bin"],
        "no symlink, nothing in the state directory"
    );
    // Over the write cap: journaled with its hash, its content not kept.
    assert_eq!(rows[0]["sha256"], sha256(&[0u8; 3000]));
    assert_eq!(rows[0]["bytes"], 3000);
    let objects = ws.path(".resilient_write/objects");
    let stored = |c: &[u8]| objects.join(&sha256(c)[..2]).join(sha256(c)).is_file();
    assert!(!stored(&[0u8; 3000]));
    assert!(
        stored(&[0u8, 1, 255]),
        "a binary file is kept like any other"
    );
}

#[test]
fn a_refused_command_journals_nothing_and_a_failing_hook_only_allows_with_a_line() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "a\n").unwrap();
    let fill = [
        ("CWD", ws.root.to_str().unwrap()),
        ("SESSION", SESSION),
        ("CALL", "toolu_refused"),
        ("COMMAND", "rm a.txt"),
    ];
    // The user refuses the command: only its before-hook runs.
    let r = hook(
        "claude-code",
        "PreToolUse",
        &fixture("claude-code/PreToolUse-Bash.json", &fill),
    );
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    std::fs::write(ws.path("a.txt"), "edited by the user\n").unwrap();
    claude_bash(&ws.root, SESSION, "toolu_next", "true", &[]);
    assert!(journal_rows(&ws.root).is_empty());

    // A payload without its command: allowed, one line on stderr.
    let mut bad = fixture("claude-code/PreToolUse-Bash.json", &fill);
    bad["tool_input"] = json!({});
    let r = hook("claude-code", "PreToolUse", &bad);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    // A state directory that cannot be used (a planted symlink): allowed, one line.
    let planted = Workspace::new();
    std::os::unix::fs::symlink("/tmp", planted.path(".resilient_write")).unwrap();
    let fill = [
        ("CWD", planted.root.to_str().unwrap()),
        ("SESSION", SESSION),
        ("CALL", "toolu_planted"),
        ("COMMAND", "true"),
    ];
    let r = hook(
        "claude-code",
        "PreToolUse",
        &fixture("claude-code/PreToolUse-Bash.json", &fill),
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(r.stderr.contains("the call is allowed"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn outside_git_a_command_is_journaled_from_the_stat_snapshot_and_undone() {
    let ws = Workspace::new();
    std::fs::write(ws.path("app.py"), "print('v1')\n").unwrap();
    std::fs::write(ws.path("old.txt"), "old\n").unwrap();
    let r = claude_bash(&ws.root, SESSION, "toolu_plain", THE_COMMAND, &[]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    let rows = journal_rows(&ws.root);
    let modes: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["mode"].as_str().unwrap()))
        .collect();
    assert_eq!(
        modes,
        [
            ("app.py", "overwrite"),
            ("gen.txt", "create"),
            ("old.txt", "delete")
        ]
    );
    let (ok, _, err) = cli(&ws.root, &["restore", "--session", SESSION]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path("app.py")).unwrap(),
        "print('v1')\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("old.txt")).unwrap(),
        "old\n"
    );
    assert!(!ws.path("gen.txt").exists());
}
