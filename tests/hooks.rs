//! `resilient-write hook <agent> <event>`: the agents' native Write/Edit tools screened by L0,
//! journaled and made undoable. Payloads come from tests/fixtures/hooks/ (shaped as each
//! agent's documentation shows them), filled in here; secrets are generated, never stored.

mod common;

use common::hooks::{fixture, hook, hook_raw};
use common::{Workspace, bin, github_token, journal_rows, sha256};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// The fixture `rel` for a call on `file` in the workspace `root`, with the other `fill`s.
fn payload(rel: &str, root: &Path, file: &Path, fill: &[(&str, &str)]) -> Value {
    let mut all = vec![
        ("CWD", root.to_str().unwrap()),
        ("FILE", file.to_str().unwrap()),
    ];
    all.extend_from_slice(fill);
    fixture(rel, &all)
}

fn code_with(secret: &str) -> String {
    format!("import os\n\nclient = Client(token=\"{secret}\")\nprint(client.user())\n")
}

fn objects_hold(root: &Path, content: &[u8]) -> bool {
    let h = sha256(content);
    root.join(".resilient_write/objects")
        .join(&h[..2])
        .join(&h)
        .is_file()
}

#[test]
fn claude_code_pre_tool_use_denies_a_secret_in_the_documented_shape() {
    let ws = Workspace::new();
    let token = github_token(101);
    let file = ws.path("client.py");
    let p = payload(
        "claude-code/PreToolUse-Write.json",
        &ws.root,
        &file,
        &[("CONTENT", &code_with(&token))],
    );
    let r = hook("claude-code", "PreToolUse", &p);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }})
    );
    assert!(
        reason.contains("github_classic_pat (github_pat) on line 3"),
        "{reason}"
    );
    assert!(reason.contains("redact"), "{reason}");
    assert!(!r.stdout.contains(&token) && !r.stderr.contains(&token));
    assert!(journal_rows(&ws.root).is_empty());
}

#[test]
fn claude_code_allows_clean_content_silently_and_keeps_the_pre_image() {
    let ws = Workspace::new();
    let file = ws.path("notes.md");
    std::fs::write(&file, "first draft\n").unwrap();
    let p = payload(
        "claude-code/PreToolUse-Write.json",
        &ws.root,
        &file,
        &[("CONTENT", "second draft\n")],
    );
    let r = hook("claude-code", "PreToolUse", &p);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    // Staged beside the hook's record, not yet in the store: the agent waits for no fsync.
    assert!(!objects_hold(&ws.root, b"first draft\n"));
    std::fs::write(&file, "second draft\n").unwrap();
    let p = payload(
        "claude-code/PostToolUse-Write.json",
        &ws.root,
        &file,
        &[("CONTENT", "second draft\n")],
    );
    let r = hook("claude-code", "PostToolUse", &p);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    // Durable in the store before the row that names it.
    assert!(objects_hold(&ws.root, b"first draft\n"));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["pre_image"], serde_json::Value::Bool(true));
}

#[test]
fn a_native_edit_is_journaled_and_restored_through_the_server() {
    let ws = Workspace::new();
    let file = ws.path("src/lib.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let before = "fn answer() -> u32 {\n    41\n}\n";
    std::fs::write(&file, before).unwrap();
    let fill = [
        ("CWD", ws.root.to_str().unwrap()),
        ("FILE", file.to_str().unwrap()),
        ("OLD", "41"),
        ("NEW", "42"),
    ];
    let r = hook(
        "claude-code",
        "PreToolUse",
        &fixture("claude-code/PreToolUse-Edit.json", &fill),
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    // The agent's own Edit tool runs.
    let after = before.replace("41", "42");
    std::fs::write(&file, &after).unwrap();
    let r = hook(
        "claude-code",
        "PostToolUse",
        &fixture("claude-code/PostToolUse-Edit.json", &fill),
    );
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["path"], "src/lib.rs");
    assert_eq!(row["tool"], "native:Edit");
    assert_eq!(row["caller"], "claude-code");
    assert_eq!(row["mode"], "replace");
    assert_eq!(row["sha256"], sha256(after.as_bytes()));
    assert_eq!(row["prev_sha256"], sha256(before.as_bytes()));
    assert_eq!(row["pre_image"], true);
    assert_eq!(row["agent_session"], "0b9c3f4e-5a7d-4e2b-9c61-2f8e7d1a3b45");
    assert!(
        !row.to_string().contains("fn answer"),
        "content in a row: {row}"
    );

    let mut s = ws.server();
    let hist = s.ok("rw_history", json!({"path": "src/lib.rs"}));
    assert_eq!(hist["versions"][0]["sha256"], sha256(after.as_bytes()));
    let tail = s.ok("rw_journal_tail", json!({"n": 5}));
    assert!(tail.to_string().contains("native:Edit"), "{tail}");
    s.ok(
        "rw_restore",
        json!({"path": "src/lib.rs", "to_sha256": sha256(before.as_bytes())}),
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

#[test]
fn multi_edit_is_screened_on_the_file_its_edits_produce_in_order() {
    let ws = Workspace::new();
    let file = ws.path("conf.py");
    std::fs::write(&file, "token = \"TODO\"\n").unwrap();
    let token = github_token(102);
    // The secret exists only after the second edit replaces the first one's marker.
    let p = payload(
        "claude-code/PreToolUse-MultiEdit.json",
        &ws.root,
        &file,
        &[("OLD", "TODO"), ("MID", "MARKER"), ("NEW", &token)],
    );
    let r = hook("claude-code", "PreToolUse", &p);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("on line 1")
    );
    // Clean edits of the same shape pass.
    let p = payload(
        "claude-code/PreToolUse-MultiEdit.json",
        &ws.root,
        &file,
        &[("OLD", "TODO"), ("MID", "MARKER"), ("NEW", "from_env")],
    );
    assert_eq!(hook("claude-code", "PreToolUse", &p).stdout, "");
}

#[test]
fn claude_code_notebook_edits_are_screened_journaled_and_keep_their_pre_image() {
    let ws = Workspace::new();
    let file = ws.path("analysis.ipynb");
    let notebook = "{\"cells\": [{\"cell_type\": \"code\", \"id\": \"cell-2\", \"source\": [\"x = 1\\n\"]}], \"nbformat\": 4}\n";
    std::fs::write(&file, notebook).unwrap();
    let fill = |event: &str, source: &str| {
        payload(
            &format!("claude-code/{event}-NotebookEdit.json"),
            &ws.root,
            &file,
            &[("NEW", source)],
        )
    };
    let token = github_token(104);
    let r = hook(
        "claude-code",
        "PreToolUse",
        &fill("PreToolUse", &format!("client = Client(token=\"{token}\")")),
    );
    let out: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|_| panic!("{r:?}"));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("NotebookEdit of"), "{reason}");
    assert!(!r.stdout.contains(&token));

    let clean = "x = load_config()";
    let r = hook("claude-code", "PreToolUse", &fill("PreToolUse", clean));
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    let edited = notebook.replace("x = 1", clean);
    std::fs::write(&file, &edited).unwrap();
    let r = hook("claude-code", "PostToolUse", &fill("PostToolUse", clean));
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["tool"], "native:NotebookEdit");
    assert_eq!(rows[0]["path"], "analysis.ipynb");
    assert_eq!(rows[0]["prev_sha256"], sha256(notebook.as_bytes()));
    assert_eq!(rows[0]["pre_image"], true);
    assert!(objects_hold(&ws.root, notebook.as_bytes()));
}

#[test]
fn gemini_before_tool_denies_in_its_format_and_after_tool_journals() {
    let ws = Workspace::new();
    let file = ws.path("app.py");
    let token = github_token(103);
    let write = |content: &str| {
        payload(
            "gemini/BeforeTool-write_file.json",
            &ws.root,
            &file,
            &[("CONTENT", content)],
        )
    };
    let r = hook("gemini", "BeforeTool", &write(&code_with(&token)));
    assert_eq!(r.code, 0);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    let reason = out["reason"].as_str().unwrap().to_string();
    assert_eq!(out, json!({"decision": "deny", "reason": reason}));
    assert!(
        reason.contains("on line 3") && reason.contains("redact"),
        "{reason}"
    );
    assert!(!r.stdout.contains(&token));
    let r = hook("gemini", "BeforeTool", &write("print('hi')\n"));
    assert_eq!((r.code, r.stdout.trim()), (0, "{}"));

    std::fs::write(&file, "x = 1\n").unwrap();
    let fill = [
        ("CWD", ws.root.to_str().unwrap()),
        ("FILE", file.to_str().unwrap()),
        ("OLD", "x = 1"),
        ("NEW", "x = 2"),
    ];
    let r = hook(
        "gemini",
        "BeforeTool",
        &fixture("gemini/BeforeTool-replace.json", &fill),
    );
    assert_eq!(r.stdout.trim(), "{}");
    std::fs::write(&file, "x = 2\n").unwrap();
    let r = hook(
        "gemini",
        "AfterTool",
        &fixture("gemini/AfterTool-replace.json", &fill),
    );
    assert_eq!((r.code, r.stdout.trim()), (0, "{}"));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["tool"], "native:replace");
    assert_eq!(rows[0]["caller"], "gemini");
    assert_eq!(rows[0]["prev_sha256"], sha256(b"x = 1\n"));
    assert_eq!(rows[0]["pre_image"], true);
    assert!(objects_hold(&ws.root, b"x = 1\n"));
}

#[test]
fn cursor_edits_are_journaled_and_history_says_no_pre_image_exists() {
    let ws = Workspace::new();
    let file = ws.path("main.ts");
    std::fs::write(&file, "const foo = 2\n").unwrap();
    let p = payload(
        "cursor/afterFileEdit.json",
        &ws.root,
        &file,
        &[("OLD", "const foo = 1"), ("NEW", "const foo = 2")],
    );
    let r = hook("cursor", "afterFileEdit", &p);
    assert_eq!((r.code, r.stdout.trim(), r.stderr.as_str()), (0, "{}", ""));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["tool"], "native:edit_file");
    assert_eq!(rows[0]["caller"], "cursor");
    assert_eq!(rows[0]["pre_image"], false);
    assert_eq!(
        rows[0]["agent_session"],
        "668320d2-2fd8-4888-b33c-2a466fec86e7"
    );
    let mut s = ws.server();
    let hist = s.ok("rw_history", json!({"path": "main.ts"}));
    let v = &hist["versions"][0];
    assert_eq!(v["pre_image"], false, "{hist}");
    let out = Command::new(bin())
        .args(["history", "main.ts"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no pre-image"), "{text}");
}

#[test]
fn paths_outside_the_workspace_pass_untouched_even_with_a_secret() {
    let ws = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("k.py");
    let p = payload(
        "claude-code/PreToolUse-Write.json",
        &ws.root,
        &file,
        &[("CONTENT", &code_with(&github_token(104)))],
    );
    let r = hook("claude-code", "PreToolUse", &p);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    assert!(!ws.path(".resilient_write").exists());
}

#[test]
fn malformed_stdin_is_one_stderr_line_and_an_allow() {
    for (agent, event, allow) in [
        ("claude-code", "PreToolUse", ""),
        ("gemini", "BeforeTool", "{}"),
        ("cursor", "afterFileEdit", "{}"),
    ] {
        for input in [&b"{not json"[..], b"[1, 2]", b"{\"tool_name\": 3}"] {
            let r = hook_raw(agent, event, input, &[]);
            assert_eq!((r.code, r.stdout.trim()), (0, allow), "{agent}");
            assert_eq!(r.stderr.lines().count(), 1, "{agent}: {}", r.stderr);
            assert!(r.stderr.contains("allowed"), "{}", r.stderr);
        }
    }
    // A bad environment is not a reason to block (exit 2 would): the defaults, one line.
    let r = hook_raw("claude-code", "PreToolUse", b"{}", &[("RW_WORKSPACE", "[")]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    assert!(r.stderr.contains("using the defaults"), "{}", r.stderr);
    let r = hook_raw("gemini", "PreToolUse", b"{}", &[]);
    assert_eq!((r.code, r.stdout.trim()), (0, "{}"));
    assert!(r.stderr.contains("BeforeTool or AfterTool"), "{}", r.stderr);
}

#[test]
fn the_policy_sets_the_reject_level_of_native_writes() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "version: 1\nhooks:\n  reject_at: high\n",
    )
    .unwrap();
    let p = fixture(
        "claude-code/PreToolUse-Write.json",
        &[
            ("CWD", ws.root.to_str().unwrap()),
            ("FILE", ws.path("a.py").to_str().unwrap()),
            ("CONTENT", &code_with(&github_token(105))),
        ],
    );
    // One credential is `medium`: under `reject_at: high` it passes.
    assert_eq!(hook("claude-code", "PreToolUse", &p).stdout, "");
    // A bad value lets nothing more through: the default, and one line saying so.
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "version: 1\nhooks:\n  reject_at: never\n",
    )
    .unwrap();
    let r = hook("claude-code", "PreToolUse", &p);
    assert!(r.stdout.contains("\"deny\""), "{}", r.stdout);
    assert!(r.stderr.contains("hooks.reject_at"), "{}", r.stderr);
}

#[test]
fn concurrent_hooks_and_a_server_never_interleave_a_row() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let root = ws.root.clone();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                for i in 0..5 {
                    let file = root.join(format!("t{t}.txt"));
                    std::fs::write(&file, format!("{t} {i}\n")).unwrap();
                    let p = fixture(
                        "claude-code/PostToolUse-Write.json",
                        &[
                            ("CWD", root.to_str().unwrap()),
                            ("FILE", file.to_str().unwrap()),
                            ("CONTENT", "x"),
                        ],
                    );
                    assert_eq!(hook("claude-code", "PostToolUse", &p).code, 0);
                }
            })
        })
        .collect();
    for i in 0..10 {
        s.ok(
            "rw_safe_write",
            json!({"path": "server.txt", "content": format!("{i}\n"), "mode": "overwrite"}),
        );
    }
    for t in threads {
        t.join().unwrap();
    }
    // journal_rows parses every line: a torn or interleaved row fails it.
    let rows = journal_rows(&ws.root);
    let native = rows.iter().filter(|r| r["tool"] == "native:Write").count();
    assert_eq!(native, 20);
    assert_eq!(rows.len(), 30);
}

#[test]
fn init_hooks_installs_beside_other_settings_idempotently_and_removes_only_ours() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".claude")).unwrap();
    let theirs = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]},
    });
    std::fs::write(ws.path(".claude/settings.json"), theirs.to_string()).unwrap();
    let init = |extra: &[&str]| {
        let out = Command::new(bin())
            .args(["init", "--hooks", "--client", "all"])
            .args(["--command", "/opt/rw/resilient-write"])
            .args(extra)
            .current_dir(&ws.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let read = |rel: &str| std::fs::read_to_string(ws.path(rel)).unwrap();
    init(&[]);
    let claude: Value = serde_json::from_str(&read(".claude/settings.json")).unwrap();
    assert_eq!(claude["permissions"], theirs["permissions"]);
    let post = claude["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post[0], theirs["hooks"]["PostToolUse"][0]);
    assert_eq!(
        post[1],
        json!({"matcher": "^(Write|Edit|MultiEdit|NotebookEdit|Bash|mcp__.+__rw[._].+)$",
            "hooks": [{"type": "command",
            "command": "/opt/rw/resilient-write hook claude-code PostToolUse"}]})
    );
    assert_eq!(
        claude["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "/opt/rw/resilient-write hook claude-code PreToolUse"
    );
    let gemini: Value = serde_json::from_str(&read(".gemini/settings.json")).unwrap();
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["matcher"],
        "^(write_file|replace|run_shell_command)$"
    );
    let cursor: Value = serde_json::from_str(&read(".cursor/hooks.json")).unwrap();
    assert_eq!(
        cursor,
        json!({"version": 1, "hooks": {"afterFileEdit": [
            {"command": "/opt/rw/resilient-write hook cursor afterFileEdit"}]}})
    );
    // Again: nothing changes, byte for byte.
    let files = [
        ".claude/settings.json",
        ".gemini/settings.json",
        ".cursor/hooks.json",
    ];
    let before: Vec<String> = files.iter().map(|f| read(f)).collect();
    let out = init(&[]);
    assert_eq!(out.matches("unchanged").count(), 3, "{out}");
    assert_eq!(before, files.iter().map(|f| read(f)).collect::<Vec<_>>());
    // Remove: only ours go.
    init(&["--remove"]);
    let claude: Value = serde_json::from_str(&read(".claude/settings.json")).unwrap();
    assert_eq!(claude, theirs);
    let cursor: Value = serde_json::from_str(&read(".cursor/hooks.json")).unwrap();
    assert_eq!(cursor, json!({"version": 1}));
}

#[test]
fn init_hooks_refuses_a_malformed_settings_file_and_writes_nothing() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".gemini")).unwrap();
    std::fs::write(ws.path(".gemini/settings.json"), "{ \"hooks\": [ }").unwrap();
    let out = Command::new(bin())
        .args(["init", "--hooks", "--client", "all"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".gemini/settings.json") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(!ws.path(".claude/settings.json").exists());
    assert!(!ws.path(".cursor/hooks.json").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path(".gemini/settings.json")).unwrap(),
        "{ \"hooks\": [ }"
    );
}

#[test]
fn a_hand_typed_entry_with_an_unknown_agent_or_event_allows_with_one_line() {
    for (agent, event) in [
        ("bogus-agent", "PreToolUse"),
        ("claude-code", "NoSuchEvent"),
    ] {
        let r = hook_raw(agent, event, b"{}", &[]);
        assert_eq!(r.code, 0, "{agent} {event}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{agent} {event}");
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("allowed"), "{}", r.stderr);
    }
}

/// `init ARGS` in `root` (HOME a directory of its own); returns (exit code, stdout, stderr).
fn init_in(root: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let home = root.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(bin())
        .arg("init")
        .args(args)
        .current_dir(root)
        .env("HOME", &home)
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_WORKSPACE")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn init_hooks_follows_client_and_writes_only_that_agents_settings() {
    let ws = Workspace::new();
    let (code, out, err) = init_in(&ws.root, &["--hooks", "--client", "claude"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path(".claude/settings.json")).unwrap())
            .unwrap();
    assert!(
        claude["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook claude-code PreToolUse")
    );
    assert!(!ws.path(".cursor/hooks.json").exists(), "{out}");
    assert!(!ws.path(".gemini/settings.json").exists(), "{out}");
    assert!(
        !out.contains(".cursor") && !out.contains(".gemini"),
        "{out}"
    );
    // Two agents named: both, and only those.
    let (code, _, err) = init_in(
        &ws.root,
        &["--hooks", "--client", "claude", "--client", "gemini"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(ws.path(".gemini/settings.json").exists());
    assert!(!ws.path(".cursor/hooks.json").exists());
}

#[test]
fn init_hooks_dry_run_says_what_would_be_written_and_writes_nothing() {
    let ws = Workspace::new();
    let (code, out, err) = init_in(&ws.root, &["--hooks", "--client", "claude", "--dry-run"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("would be created  .claude/settings.json"),
        "{out}"
    );
    assert!(out.contains("+    \"PreToolUse\": ["), "{out}");
    assert!(!ws.path(".claude").exists(), "{out}");
}

#[test]
fn init_hooks_without_client_sets_up_only_the_agents_configured_in_the_project() {
    let ws = Workspace::new();
    // Nothing set up: a clear refusal, nothing written.
    let (code, out, err) = init_in(&ws.root, &["--hooks"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("--client claude") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(!ws.path(".claude").exists() && !ws.path(".gemini").exists());
    // A Claude-only project: Claude's hooks, no Cursor or Gemini files.
    let (code, _, err) = init_in(&ws.root, &["--client", "claude"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = init_in(&ws.root, &["--hooks"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(ws.path(".claude/settings.json").is_file(), "{out}");
    assert!(!ws.path(".cursor/hooks.json").exists(), "{out}");
    assert!(!ws.path(".gemini/settings.json").exists(), "{out}");
    // Gemini set up later: the next `init --hooks` covers it too.
    init_in(&ws.root, &["--client", "gemini"]);
    let (code, out, _) = init_in(&ws.root, &["--hooks"]);
    assert_eq!(code, Some(0));
    let gemini: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path(".gemini/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["matcher"],
        "^(write_file|replace|run_shell_command)$"
    );
    assert!(gemini["mcpServers"]["resilient-write"].is_object());
    assert!(!ws.path(".cursor/hooks.json").exists(), "{out}");
    // --remove without --client takes ours out wherever they are.
    let (code, _, err) = init_in(&ws.root, &["--hooks", "--remove"]);
    assert_eq!(code, Some(0), "{err}");
    for f in [".claude/settings.json", ".gemini/settings.json"] {
        let text = std::fs::read_to_string(ws.path(f)).unwrap();
        assert!(!text.contains(" hook "), "{f}: {text}");
    }
}

#[test]
fn init_hooks_refuses_a_client_without_hooks_and_writes_nothing() {
    let ws = Workspace::new();
    let (code, _, err) = init_in(
        &ws.root,
        &["--hooks", "--client", "claude", "--client", "codex"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("Codex has no native-edit hooks"), "{err}");
    assert!(!ws.path(".claude").exists());
}

#[test]
fn init_writes_hook_entries_with_keys_in_the_documented_order() {
    let ws = Workspace::new();
    let (code, _, err) = init_in(&ws.root, &["--hooks", "--client", "all", "--command", "rw"]);
    assert_eq!(code, Some(0), "{err}");
    for (file, event) in [
        (".claude/settings.json", "PreToolUse"),
        (".gemini/settings.json", "BeforeTool"),
    ] {
        let text = std::fs::read_to_string(ws.path(file)).unwrap();
        let group = text.find(&format!("\"{event}\"")).unwrap();
        let after = &text[group..];
        let (m, h) = (
            after.find("\"matcher\"").unwrap(),
            after.find("\"hooks\"").unwrap(),
        );
        assert!(m < h, "{file}: `matcher` must come before `hooks`:\n{text}");
        let (t, c) = (
            after.find("\"type\"").unwrap(),
            after.find("\"command\"").unwrap(),
        );
        assert!(t < c, "{file}: `type` must come before `command`:\n{text}");
    }
    let cursor = std::fs::read_to_string(ws.path(".cursor/hooks.json")).unwrap();
    assert!(cursor.find("\"version\"").unwrap() < cursor.find("\"hooks\"").unwrap());
}

#[test]
fn init_does_not_warn_about_the_gitignore_entry_it_adds_in_the_same_run() {
    let ws = Workspace::new();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws.root)
        .status()
        .unwrap();
    assert!(git.success());
    let (code, out, err) = init_in(&ws.root, &["--client", "claude"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(".gitignore"), "{out}");
    assert!(!err.contains("not git-ignored"), "{err}");
    assert!(
        std::fs::read_to_string(ws.path(".gitignore"))
            .unwrap()
            .contains(".resilient_write/")
    );
    // The check itself still runs where nothing fixes it: the entry taken out again, a
    // command that does not add it warns.
    std::fs::write(ws.path(".gitignore"), "target/\n").unwrap();
    let (_, _, err) = init_in(&ws.root, &["--hooks", "--client", "claude"]);
    assert!(err.contains("not git-ignored"), "{err}");
}
