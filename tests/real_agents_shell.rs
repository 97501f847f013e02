//! The agents' shell commands in the real clients (issue 42): Claude Code's `Bash` and
//! Gemini CLI's `run_shell_command`, run with our hooks installed by `init --hooks`, against
//! the scripted model on loopback (docs/agent-e2e.md). A command that sed-edits app.py,
//! creates gen.txt and removes old.txt is journaled file by file and restorable; a command
//! that writes a generated token into leak.env is reported to the model; `restore --session`
//! then undoes the whole session, MCP calls included.
//!
//! Run alone: `cargo test --test real_agents_shell` (clients from `npm ci --prefix
//! tests/agents`, or `RW_AGENTS_MODULES`); a missing client skips, and fails under CI.

mod agents;
mod common;

use agents::{Agent, Call, Project, Scenario, ToolResult, client_or_skip, ok_json};
use common::{github_token, journal_rows, sha256};
use serde_json::{Value, json};

const THE_COMMAND: &str = "sed -i s/v1/v2/ app.py && echo generated > gen.txt && rm old.txt";
const V1: &str = "print('v1')\n";

/// Every text the client sent the model after call `k`'s result arrived, as one string.
fn sent_after(out: &agents::Outcome, marker: &str) -> String {
    out.model
        .turns()
        .iter()
        .map(|e| e.body.to_string())
        .filter(|b| b.contains(marker))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the shell part left in the journal: one row per file, each restorable.
fn assert_shell_rows(project: &Project, caller: &str, tool: &str) -> String {
    let rows = journal_rows(&project.root);
    let by = |path: &str| -> Vec<Value> {
        rows.iter()
            .filter(|r| r["path"] == path && r["tool"] == tool)
            .cloned()
            .collect()
    };
    let app = by("app.py");
    assert_eq!(app.len(), 1, "{rows:#?}");
    assert_eq!(app[0]["mode"], "overwrite");
    assert_eq!(app[0]["caller"], caller);
    assert_eq!(app[0]["prev_sha256"], sha256(V1.as_bytes()));
    assert_eq!(app[0]["pre_image"], true);
    assert_eq!(app[0]["command"], THE_COMMAND);
    assert_eq!(by("gen.txt")[0]["mode"], "create");
    assert_eq!(by("old.txt")[0]["mode"], "delete");
    assert_eq!(by("leak.env")[0]["mode"], "create");
    app[0]["agent_session"]
        .as_str()
        .expect("the rows carry the agent's session")
        .to_string()
}

/// `restore --session` on the command line, as a person would after the session.
fn restore_session(project: &Project, session: &str) -> String {
    let out = common::run_cli(&project.root, &["restore", "--session", session], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn leak(token: &str) -> String {
    format!("printf 'GITHUB_TOKEN={token}\\n' > leak.env")
}

#[test]
fn claude_code_bash_commands_are_journaled_reported_restorable_and_undone_by_session() {
    let agent = Agent::ClaudeCode;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = Project::new();
    project.init_with_hooks(agent);
    std::fs::write(project.path("old.txt"), "old\n").unwrap();
    // The shell hooks' watcher listening from the start, as from a workspace's third command
    // on (the first hook starts it, the second gets its first token).
    common::shell::start_watcher(&project.root);
    let token = github_token(4204);
    let app = project.path("app.py").display().to_string();
    let v1 = sha256(V1.as_bytes());
    let select: Vec<String> = ["rw_history", "rw_restore"]
        .iter()
        .map(|n| agent.mcp(n, json!({})).name)
        .collect();
    let fine = |r: &ToolResult| assert!(!r.is_error, "{}", r.text);
    // history and restore are in the `undo` toolset: enabled first (Claude Code takes the
    // new list within the session), then loaded with the deferred tools' search.
    let toolsets = agent.mcp("rw_toolsets", json!({})).name;
    let out = Scenario::new()
        .call(Call::new(
            "ToolSearch",
            json!({"query": format!("select:{toolsets}")}),
        ))
        .expect(agent.mcp("rw_toolsets", json!({"enable": ["undo"]})), fine)
        .call(Call::new(
            "ToolSearch",
            json!({"query": format!("select:{}", select.join(","))}),
        ))
        .expect(
            Call::new("Write", json!({"file_path": app, "content": V1})),
            fine,
        )
        .expect(
            Call::new(
                "Bash",
                json!({"command": THE_COMMAND, "description": "edit"}),
            ),
            fine,
        )
        .call(Call::new(
            "Bash",
            json!({"command": leak(&token), "description": "write env"}),
        ))
        .expect(
            agent.mcp("rw_history", json!({"path": "app.py"})),
            move |r| {
                let v = ok_json(r);
                let tools: Vec<&str> = v["versions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|x| x["native_tool"].as_str())
                    .collect();
                assert_eq!(tools, ["native:Bash", "native:Write"], "{v}");
            },
        )
        .expect(
            agent.mcp("rw_restore", json!({"path": "app.py", "to_sha256": v1})),
            |r| {
                ok_json(r);
            },
        )
        .run(agent, &client, &project);

    // The report reached the model, naming file, family and line, without the token.
    let report = sent_after(&out, "wrote a secret into the workspace");
    assert!(!report.is_empty(), "the model never saw the report");
    for part in ["leak.env", "github_pat", "line 1", "redact"] {
        assert!(report.contains(part), "{part}");
    }
    let session = assert_shell_rows(&project, "claude-code", "native:Bash");
    assert_eq!(std::fs::read_to_string(project.path("app.py")).unwrap(), V1);
    // The hooks asked the watcher (and kept its token) rather than walking the tree only.
    assert!(
        project
            .path(".resilient_write/hooks/shell/git/watch-token")
            .exists()
    );

    // journal --session shows the MCP restore too (attributed by the PostToolUse hook).
    let listed = common::run_cli(&project.root, &["journal", "--session", &session], &[]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for part in ["native:Write", "native:Bash", "restore"] {
        assert!(listed.contains(part), "{part}: {listed}");
    }
    let text = restore_session(&project, &session);
    assert!(!project.path("app.py").exists(), "{text}");
    assert!(!project.path("gen.txt").exists() && !project.path("leak.env").exists());
    assert_eq!(
        std::fs::read_to_string(project.path("old.txt")).unwrap(),
        "old\n"
    );
}

#[test]
fn gemini_cli_shell_commands_are_journaled_and_a_secret_reported_to_the_model() {
    let agent = Agent::GeminiCli;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = Project::new();
    project.init_with_hooks(agent);
    std::fs::write(project.path("app.py"), V1).unwrap();
    std::fs::write(project.path("old.txt"), "old\n").unwrap();
    let token = github_token(4205);
    let shell = |command: &str| {
        Call::new(
            "run_shell_command",
            json!({"command": command, "description": "run it"}),
        )
    };
    let token_c = token.clone();
    Scenario::new()
        .expect(shell(THE_COMMAND), |r| assert!(!r.is_error, "{}", r.text))
        .expect(shell(&leak(&token)), move |r| {
            // AfterTool's additionalContext is appended to the tool's result.
            for part in [
                "wrote a secret into the workspace",
                "leak.env",
                "github_pat",
            ] {
                assert!(r.text.contains(part), "{part}: {}", r.text);
            }
            let report = &r.text[r.text.find("resilient-write:").unwrap_or(0)..];
            assert!(!report.contains(&token_c), "the report echoed the token");
        })
        .run(agent, &client, &project);
    let session = assert_shell_rows(&project, "gemini", "native:run_shell_command");
    restore_session(&project, &session);
    assert_eq!(std::fs::read_to_string(project.path("app.py")).unwrap(), V1);
    assert!(!project.path("gen.txt").exists() && !project.path("leak.env").exists());
    assert_eq!(
        std::fs::read_to_string(project.path("old.txt")).unwrap(),
        "old\n"
    );
}
