//! The real agents, end to end: Claude Code, Gemini CLI and Codex CLI (the npm packages
//! pinned in tests/agents/package.json) run non-interactively in a fresh git repository set up
//! by `init`, against a scripted model on loopback (tests/agents/model.rs). The client loads
//! our server from the config `init` wrote and runs our hooks from the settings
//! `init --hooks` wrote; the scripted model makes the tool calls and reads back what the
//! client returned. No network beyond loopback.
//!
//! A client that is not installed is a printed skip here and a failure under CI (.ci/run
//! installs them with `npm ci --prefix tests/agents`). Run alone:
//! `cargo test --test real_agents`. docs/agent-e2e.md says how to add a scenario.

mod agents;
mod common;

use agents::{Agent, Call, Project, Scenario, ToolResult, client_or_skip, listed_tools, ok_json};
use common::{github_token, journal_rows, sha256};
use serde_json::{Value, json};

/// The chunks of the chunked write, and what compose makes of them.
const CHUNKS: [&str; 3] = [
    "# Report\n\n",
    "## Findings\n\nAll writes journaled.\n\n",
    "## Next\n\nShip it.\n",
];

/// Source code holding a generated token on line 3.
fn code_with(secret: &str) -> String {
    format!("import os\n\nclient = Client(token=\"{secret}\")\nprint(client.user())\n")
}

/// The MCP part every client runs: `safe_write`, `risk_score`, a chunked write
/// (`chunk_write` x 3, `chunk_compose`), `handoff_write` and `handoff_read`. `token` is a
/// generated secret that `risk_score` must find without echoing it.
fn mcp_calls(agent: Agent, scenario: Scenario, token: &str) -> Scenario {
    let plan = "# Plan\n\n1. Write the report.\n";
    let report: String = CHUNKS.concat();
    let report_sha = sha256(report.as_bytes());
    let mut s = scenario
        .expect(
            agent.mcp(
                "rw_safe_write",
                json!({"path": "docs/plan.md", "content": plan}),
            ),
            move |r| {
                let v = ok_json(r);
                assert_eq!(v["sha256"], sha256(plan.as_bytes()));
                assert_eq!(v["mode_applied"], "create");
            },
        )
        .expect(
            agent.mcp("rw_risk_score", json!({"content": code_with(token)})),
            {
                let token = token.to_string();
                move |r: &ToolResult| {
                    let v = ok_json(r);
                    assert!(
                        ["medium", "high"].contains(&v["verdict"].as_str().unwrap_or("")),
                        "{v}"
                    );
                    assert_eq!(v["detected_patterns"][0]["line"], 3, "{v}");
                    assert!(!r.text.contains(&token), "the token came back whole");
                }
            },
        );
    for (i, chunk) in CHUNKS.iter().enumerate() {
        let index = i + 1;
        s = s.expect(
            agent.mcp(
                "rw_chunk_write",
                json!({"session": "report", "index": index, "content": chunk,
                    "total_expected": CHUNKS.len()}),
            ),
            move |r| {
                let v = ok_json(r);
                assert_eq!(v["index"], index);
                assert_eq!(v["sha256"], sha256(chunk.as_bytes()));
            },
        );
    }
    let compose_sha = report_sha.clone();
    s.expect(
        agent.mcp(
            "rw_chunk_compose",
            json!({"session": "report", "output_path": "report.md", "cleanup": true}),
        ),
        move |r| {
            let v = ok_json(r);
            assert_eq!(v["sha256"], compose_sha);
            assert_eq!(v["chunk_count"], 3);
        },
    )
    .expect(
        agent.mcp(
            "rw_handoff_write",
            json!({"envelope": {
                "task_id": "e2e-report", "status": "partial", "agent": agent.init_client(),
                "summary": "report composed from three chunks",
                "next_steps": ["review the report"],
                "last_good_state": [{"path": "report.md", "sha256": report_sha,
                    "bytes": report.len()}],
            }, "body": "# Notes\n\nComposed in one session.\n"}),
        ),
        |r| {
            let v = ok_json(r);
            assert_eq!(v["drift"], json!([]), "{v}");
        },
    )
    .expect(agent.mcp("rw_handoff_read", json!({})), |r| {
        let v = ok_json(r);
        assert_eq!(v["envelope"]["task_id"], "e2e-report");
        assert_eq!(v["body"], "# Notes\n\nComposed in one session.\n");
        assert_eq!(v["drift"], json!([]), "{v}");
    })
}

/// What the MCP part left on disk.
fn assert_mcp_files(project: &Project) {
    let read = |rel: &str| std::fs::read_to_string(project.path(rel)).unwrap_or_default();
    assert_eq!(read("docs/plan.md"), "# Plan\n\n1. Write the report.\n");
    assert_eq!(read("report.md"), CHUNKS.concat());
    assert!(
        read("HANDOFF.md").starts_with("---\ntask_id: e2e-report\n"),
        "{}",
        read("HANDOFF.md")
    );
}

/// A native write refused by our before-hook: an error result naming the rule, the family,
/// the line and the way out, and never the secret.
fn assert_refused(r: &ToolResult, token: &str) {
    for part in ["resilient-write blocked", "github_pat", "line 3", "redact"] {
        assert!(r.text.contains(part), "`{part}` missing from: {}", r.text);
    }
    assert!(!r.text.contains(token), "the token came back whole");
}

/// The native versions of a file the scenarios edit and then restore.
const NOTES: [&str; 3] = [
    "status: draft\nowner: nobody\n",
    "status: review\nowner: nobody\n",
    "status: review\nowner: team\n",
];

/// Journal rows for native edits of `file` by `caller`, oldest first.
fn native_rows(project: &Project, caller: &str, file: &str) -> Vec<Value> {
    journal_rows(&project.root)
        .into_iter()
        .filter(|r| {
            r["tool"].as_str().is_some_and(|t| t.starts_with("native:"))
                && r["caller"] == caller
                && r["path"] == file
        })
        .collect()
}

fn objects_hold(project: &Project, content: &str) -> bool {
    let h = sha256(content.as_bytes());
    project
        .path(".resilient_write/objects")
        .join(&h[..2])
        .join(&h)
        .is_file()
}

/// A restore through the client to `NOTES[v]`.
fn restore_to(agent: Agent, v: usize) -> (Call, impl Fn(&ToolResult) + 'static) {
    let want = sha256(NOTES[v].as_bytes());
    (
        agent.mcp(
            "rw_restore",
            json!({"path": "notes.md", "to_sha256": want.clone()}),
        ),
        move |r: &ToolResult| {
            let v = ok_json(r);
            assert_eq!(v["files"][0]["sha256"], want, "{v}");
        },
    )
}

/// The `undo` toolset enabled through the client, so that `rw_restore` is listed from then
/// on: the client must take the new list within the session (our server sends
/// `notifications/tools/list_changed`); none of these clients lets the model call a tool its
/// list lacks. Claude Code defers MCP tools, so its model then loads the new one with
/// ToolSearch.
fn enable_undo(agent: Agent, scenario: Scenario) -> Scenario {
    let s = scenario.expect(
        agent.mcp("rw_toolsets", json!({"enable": ["undo"]})),
        |r: &ToolResult| {
            let v = ok_json(r);
            assert_eq!(v["enabled_now"], json!(["undo"]), "{v}");
        },
    );
    match agent {
        Agent::ClaudeCode => s.call(Call::new(
            "ToolSearch",
            json!({"query": format!("select:{}", agent.mcp("rw_restore", json!({})).name)}),
        )),
        Agent::GeminiCli | Agent::Codex => s,
    }
}

/// A client's own file tools: write, edit, read.
fn native_tools(agent: Agent) -> [&'static str; 3] {
    match agent {
        Agent::ClaudeCode => ["Write", "Edit", "Read"],
        Agent::GeminiCli => ["write_file", "replace", "read_file"],
        Agent::Codex => panic!("Codex's own edits are not hooked"),
    }
}

/// The native part of a hooked client's session: a write holding `token` (refused by our
/// before-hook), a clean write of `NOTES[0]` and two edits to `NOTES[2]` (journaled with their
/// pre-images), `restore` to `NOTES[1]` (read back by the client's own tool) and to `NOTES[0]`.
fn native_calls(agent: Agent, scenario: Scenario, project: &Project, token: &str) -> Scenario {
    let [write, edit, read] = native_tools(agent);
    let abs = |rel: &str| project.path(rel).display().to_string();
    let edit_args = |old: &str, new: &str| {
        let mut args = json!({"file_path": abs("notes.md"), "old_string": old, "new_string": new});
        if agent == Agent::GeminiCli {
            args["instruction"] = json!("update the notes");
        }
        args
    };
    let fine = |r: &ToolResult| assert!(!r.is_error, "{}", r.text);
    let (restore_v1, check_v1) = restore_to(agent, 1);
    let (restore_v0, check_v0) = restore_to(agent, 0);
    let token = token.to_string();
    let edited = scenario
        .expect(
            Call::new(
                write,
                json!({"file_path": abs("config.py"), "content": code_with(&token)}),
            ),
            move |r| {
                assert!(r.is_error, "the write was not refused: {}", r.text);
                assert_refused(r, &token);
            },
        )
        .expect(
            Call::new(
                write,
                json!({"file_path": abs("notes.md"), "content": NOTES[0]}),
            ),
            fine,
        )
        .expect(Call::new(edit, edit_args("draft", "review")), fine)
        .expect(Call::new(edit, edit_args("nobody", "team")), fine);
    enable_undo(agent, edited)
        .expect(restore_v1, check_v1)
        .expect(
            Call::new(read, json!({"file_path": abs("notes.md")})),
            |r| assert!(r.text.contains("status: review") && r.text.contains("owner: nobody")),
        )
        .expect(restore_v0, check_v0)
}

/// What the native part left: nothing of the refused write, `NOTES[0]` restored, one row per
/// native write or edit by `caller` with the previous version's hash, whose content the
/// object store holds, and the token nowhere in the journal.
fn assert_native_edits(agent: Agent, project: &Project, caller: &str, token: &str) {
    let [write, edit, _] = native_tools(agent);
    assert!(
        !project.path("config.py").exists(),
        "the refused write wrote"
    );
    assert_eq!(
        std::fs::read_to_string(project.path("notes.md")).unwrap(),
        NOTES[0]
    );
    let rows = native_rows(project, caller, "notes.md");
    let tools: Vec<&str> = rows.iter().filter_map(|r| r["tool"].as_str()).collect();
    let want = [write, edit, edit].map(|t| format!("native:{t}"));
    assert_eq!(tools, want, "{rows:?}");
    assert_eq!(rows[0]["sha256"], sha256(NOTES[0].as_bytes()));
    assert_eq!(rows[1]["prev_sha256"], sha256(NOTES[0].as_bytes()));
    assert_eq!(rows[2]["prev_sha256"], sha256(NOTES[1].as_bytes()));
    assert_eq!(rows[2]["sha256"], sha256(NOTES[2].as_bytes()));
    assert!(objects_hold(project, NOTES[0]) && objects_hold(project, NOTES[1]));
    let journal = std::fs::read_to_string(project.path(".resilient_write/journal.jsonl")).unwrap();
    assert!(!journal.contains(token), "the token reached the journal");
}

#[test]
fn claude_code_runs_our_tools_and_hooks_and_restores_its_own_edits() {
    let agent = Agent::ClaudeCode;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = Project::new();
    project.init_with_hooks(agent);
    let token = github_token(4101);

    // Claude Code defers MCP tools: the model loads their schemas with ToolSearch first. It
    // loads every tool we list, which is how the whole list is proven accepted.
    let ours: Vec<String> = listed_tools(&[]).into_iter().map(|(n, _)| n).collect();
    let select: Vec<String> = ours.iter().map(|n| agent.mcp(n, json!({})).name).collect();
    let mut s = Scenario::new().call(Call::new(
        "ToolSearch",
        json!({"query": format!("select:{}", select.join(","))}),
    ));
    s = mcp_calls(agent, s, &token);
    s = native_calls(agent, s, &project, &token);
    let out = s.run(agent, &client, &project);

    // Every tool we list reached the model with its schema once loaded.
    let offered = out.model.offered();
    for name in &select {
        let Some(found) = offered.iter().find(|o| &o.name == name) else {
            panic!("{name} was not offered after ToolSearch loaded it");
        };
        assert!(found.schema.is_object(), "{name}: no schema sent");
    }
    assert!(
        !offered.iter().any(|o| o.name == "MultiEdit"),
        "Claude Code offers MultiEdit again: add a MultiEdit step to this scenario"
    );
    assert_mcp_files(&project);
    assert_native_edits(agent, &project, "claude-code", &token);
}

#[test]
fn gemini_cli_runs_our_tools_and_hooks_and_restores_its_own_edits() {
    let agent = Agent::GeminiCli;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = Project::new();
    project.init_with_hooks(agent);
    let token = github_token(4102);
    let s = mcp_calls(agent, Scenario::new(), &token);
    native_calls(agent, s, &project, &token).run(agent, &client, &project);
    assert_mcp_files(&project);
    assert_native_edits(agent, &project, "gemini", &token);
}

#[test]
fn codex_runs_our_tools_from_the_global_config_init_writes() {
    let agent = Agent::Codex;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = Project::new();
    project.init(&["--client", "codex", "--write-global"]);
    assert!(project.home.join(".codex/config.toml").is_file());
    let token = github_token(4103);
    mcp_calls(agent, Scenario::new(), &token).run(agent, &client, &project);
    assert_mcp_files(&project);
}

/// Codex CLI 0.171.0 takes our tool list once per session: after `rw_toolsets` enables a
/// toolset (and our server sends `tools/list_changed`), it still refuses the new tools. Its
/// model reaches them through `rw_toolsets` itself (`call`, with the definitions the enabling
/// call returned), in the same session; a Codex user may also name them in a fixed list
/// (`--tools original,undo`). When the direct call succeeds, Codex honours the notification:
/// update docs/guide/tools-by-task.md ("Toolsets and listings") and this test.
#[test]
fn codex_keeps_its_first_tool_list_and_reaches_an_enabled_toolset_through_rw_toolsets() {
    let agent = Agent::Codex;
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let write = |s: Scenario| {
        s.expect(
            agent.mcp(
                "rw_safe_write",
                json!({"path": "notes.md", "content": NOTES[0]}),
            ),
            |r| {
                ok_json(r);
            },
        )
        .expect(
            agent.mcp(
                "rw_safe_replace",
                json!({"path": "notes.md", "old_string": "draft", "new_string": "review"}),
            ),
            |r| {
                ok_json(r);
            },
        )
    };
    // The default listing: enabling works on our side, Codex does not list the new tools,
    // and the same session restores through rw_toolsets.
    let project = Project::new();
    project.init(&["--client", "codex", "--write-global"]);
    let (restore, check) = restore_to(agent, 0);
    let through = agent.mcp(
        "rw_toolsets",
        json!({"call": "rw_restore", "arguments": {"path": "notes.md",
               "to_sha256": sha256(NOTES[0].as_bytes())}}),
    );
    enable_undo(agent, write(Scenario::new()))
        .expect(restore, |r| {
            // Codex answers its model with this text, not with a call of ours.
            assert!(r.text.contains("unsupported call"), "{}", r.text);
        })
        .expect(through, check)
        .run(agent, &client, &project);
    assert_eq!(
        std::fs::read_to_string(project.path("notes.md")).unwrap(),
        NOTES[0]
    );
    // A fixed list with the undo toolset: restore is there from the start.
    let project = project_with_profile(&["--tools", "original,undo"]);
    project.init(&["--client", "codex", "--write-global"]);
    let (restore, check) = restore_to(agent, 0);
    write(Scenario::new())
        .expect(restore, check)
        .run(agent, &client, &project);
    assert_eq!(
        std::fs::read_to_string(project.path("notes.md")).unwrap(),
        NOTES[0]
    );
}

/// A project whose client configs start the server with `profile` (e.g. `--tools core`),
/// through a wrapper script given to `init --command`.
fn project_with_profile(profile: &[&str]) -> Project {
    let mut project = Project::new();
    if profile.is_empty() {
        return project;
    }
    let wrapper = project.home.join("rw-profile.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" {}\n",
            project.bin.display(),
            profile.join(" ")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    project.command = Some(wrapper);
    project
}

/// Every tool our server lists with `profile` reaches the model under the client's name for
/// it, with an input schema, and no other tool of our server does.
fn presents_exactly_our_tools(agent: Agent, profile: &[&str]) {
    let Some(client) = client_or_skip(agent) else {
        return;
    };
    let project = project_with_profile(profile);
    let mut init = vec!["--client", agent.init_client()];
    if agent == Agent::Codex {
        init.push("--write-global");
    }
    project.init(&init);
    let mut listed: Vec<String> = listed_tools(profile).into_iter().map(|(n, _)| n).collect();
    assert!(!listed.is_empty());
    let mut s = Scenario::new();
    if agent == Agent::ClaudeCode {
        // Deferred: named in the prompt, schemas loaded by ToolSearch.
        let select: Vec<String> = listed
            .iter()
            .map(|n| agent.mcp(n, Value::Null).name)
            .collect();
        s = s.call(Call::new(
            "ToolSearch",
            json!({"query": format!("select:{}", select.join(","))}),
        ));
    }
    let out = s.run(agent, &client, &project);
    let mut offered: Vec<String> = Vec::new();
    for o in out.model.offered() {
        if let Some(name) = agent.ours(&o) {
            assert!(o.schema.is_object(), "{name}: no schema reached the model");
            offered.push(name);
        }
    }
    offered.sort();
    listed.sort();
    assert_eq!(
        offered,
        listed,
        "{} with {profile:?}: our tools the model was offered, against those we list",
        agent.label()
    );
    if profile.is_empty() && agent != Agent::ClaudeCode {
        assert_sends_within_budget(agent, &out.model);
    }
}

/// What a client that does not defer MCP tools sends its model of ours with every request,
/// under the default listing: our entries of the first request as sent (Gemini's function
/// declarations, Codex's namespace, whose description is our `initialize` instructions),
/// compact JSON, within the budget `tests/tool_tokens.rs` holds our model-visible definitions
/// to (14 KB). Gemini CLI 0.61.0 adds a `wait_for_previous` parameter of its own (about 260
/// bytes) to every tool of every server; that part is printed, not counted.
fn assert_sends_within_budget(agent: Agent, model: &agents::ScriptedModel) {
    const BUDGET: usize = 14 * 1024;
    const GEMINIS_OWN: &str = "wait_for_previous";
    let turn = model.turns().into_iter().next().expect("a main turn");
    let tools = turn.body["tools"].as_array().cloned().unwrap_or_default();
    let mut ours: Vec<Value> = match agent {
        Agent::GeminiCli => tools
            .iter()
            .filter_map(|t| t["functionDeclarations"].as_array())
            .flatten()
            .filter(|d| {
                d["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&agent.mcp("", Value::Null).name))
            })
            .cloned()
            .collect(),
        Agent::Codex => tools
            .iter()
            .filter(|t| t["type"] == "namespace" && t["name"] == agent.namespace().as_str())
            .cloned()
            .collect(),
        Agent::ClaudeCode => unreachable!("Claude Code defers MCP tools"),
    };
    assert!(!ours.is_empty(), "none of our tools in {}", turn.body);
    let as_sent = serde_json::to_string(&ours).unwrap().len();
    for d in &mut ours {
        for key in ["parametersJsonSchema", "parameters"] {
            if let Some(props) = d
                .get_mut(key)
                .and_then(|p| p.get_mut("properties"))
                .and_then(Value::as_object_mut)
            {
                props.remove(GEMINIS_OWN);
            }
        }
    }
    let sent = serde_json::to_string(&ours).unwrap().len();
    println!(
        "{} sends {as_sent} bytes of our definitions per request, {sent} without the client's \
         own additions",
        agent.label()
    );
    assert!(
        sent <= BUDGET,
        "{} sends {sent} bytes of our definitions, over {BUDGET}",
        agent.label()
    );
}

#[test]
fn claude_code_is_offered_every_tool_we_list() {
    presents_exactly_our_tools(Agent::ClaudeCode, &[]);
}

#[test]
fn claude_code_is_offered_the_core_profile() {
    presents_exactly_our_tools(Agent::ClaudeCode, &["--tools", "core"]);
}

#[test]
fn gemini_cli_is_offered_every_tool_we_list() {
    presents_exactly_our_tools(Agent::GeminiCli, &[]);
}

#[test]
fn gemini_cli_is_offered_the_core_profile() {
    presents_exactly_our_tools(Agent::GeminiCli, &["--tools", "core"]);
}

#[test]
fn codex_is_offered_every_tool_we_list() {
    presents_exactly_our_tools(Agent::Codex, &[]);
}

#[test]
fn codex_is_offered_the_core_profile() {
    presents_exactly_our_tools(Agent::Codex, &["--tools", "core"]);
}

/// The `p`-th percentile (0-100, nearest rank) of sorted `xs`.
fn percentile(xs: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// The hooks a benchmark session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hooks {
    None,
    /// A command that reads the payload and answers nothing: Claude Code's own cost of a hook.
    Noop,
    Ours,
}

/// The time Claude Code takes between receiving each scripted Edit and sending its result
/// back, over a session of `edits` edits, with `hooks` (ms, one per edit).
fn edit_times(
    client: &std::path::Path,
    bin: &std::path::Path,
    hooks: Hooks,
    edits: usize,
) -> Vec<f64> {
    let project = Project::with_bin(bin.to_path_buf());
    project.init(&["--client", "claude"]);
    match hooks {
        Hooks::None => {}
        Hooks::Ours => {
            project.init(&["--hooks", "--client", "claude"]);
        }
        Hooks::Noop => {
            let noop = project.home.join("noop-hook.sh");
            std::fs::write(&noop, "#!/bin/sh\ncat >/dev/null\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&noop, std::fs::Permissions::from_mode(0o755)).unwrap();
            let noop = noop.display().to_string();
            project.init(&["--hooks", "--client", "claude", "--command", &noop]);
        }
    }
    let file = project.path("src.txt").display().to_string();
    let lines: String = (0..edits).map(|i| format!("line {i}: old\n")).collect();
    let mut s = Scenario::new().call(Call::new(
        "Write",
        json!({"file_path": file, "content": lines}),
    ));
    for i in 0..edits {
        s = s.expect(
            Call::new(
                "Edit",
                json!({"file_path": file, "old_string": format!("line {i}: old"),
                    "new_string": format!("line {i}: new")}),
            ),
            |r| assert!(!r.is_error, "{}", r.text),
        );
    }
    let out = s.run(Agent::ClaudeCode, client, &project);
    let rows = native_rows(&project, "claude-code", "src.txt");
    let want = if hooks == Hooks::Ours { edits + 1 } else { 0 };
    assert_eq!(rows.len(), want, "{hooks:?}: journal rows");
    let turns = out.model.turns();
    let sent = |k: usize| {
        turns
            .iter()
            .find(|e| e.answered == agents::model::Answered::Call(k))
            .map(|e| e.sent)
    };
    let next = |k: usize| {
        let after = sent(k)?;
        turns.iter().map(|e| e.arrived).filter(|&t| t > after).min()
    };
    (1..=edits)
        .map(|k| {
            let (s, n) = (sent(k).expect("edit sent"), next(k).expect("its result"));
            (n - s).as_secs_f64() * 1000.0
        })
        .collect()
}

/// What our hooks add to each native edit inside Claude Code: scripted sessions of 20 Edits,
/// in turn without hooks, with a no-op command hook (what Claude Code's hook machinery costs
/// by itself) and with `init --hooks`, timed at the model from sending each Edit to receiving
/// its result. Prints median and p90 per arm and the differences.
/// `scripts/agent-hook-bench.sh` runs it with the release binary (RW_BENCH_BIN).
#[test]
#[ignore = "a benchmark: scripts/agent-hook-bench.sh runs it"]
fn bench_hook_cost_per_edit_in_claude_code() {
    let Some(client) = client_or_skip(Agent::ClaudeCode) else {
        return;
    };
    let bin = std::env::var_os("RW_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(common::bin);
    let bin = bin.canonicalize().expect("RW_BENCH_BIN exists");
    let rounds: usize = std::env::var("RW_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let edits = 20;
    let arms = [Hooks::None, Hooks::Noop, Hooks::Ours];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    for _ in 0..rounds {
        for (i, &arm) in arms.iter().enumerate() {
            times[i].extend(edit_times(&client, &bin, arm, edits));
        }
    }
    let stats: Vec<(f64, f64)> = times
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            (percentile(t, 50.0), percentile(t, 90.0))
        })
        .collect();
    println!(
        "Claude Code {}, {}, {rounds} rounds x {edits} edits per arm",
        Agent::ClaudeCode.pinned(),
        bin.display()
    );
    println!("| per Edit (ms) | median | p90 |\n|---|---|---|");
    for (label, (m, p)) in ["without hooks", "a no-op command hook", "our hooks"]
        .iter()
        .zip(&stats)
    {
        println!("| {label} | {m:.1} | {p:.1} |");
    }
    let diff = |a: usize, b: usize| (stats[a].0 - stats[b].0, stats[a].1 - stats[b].1);
    let (m, p) = diff(2, 0);
    println!("| added by our hooks | {m:.1} | {p:.1} |");
    let (m, p) = diff(2, 1);
    println!("| of which past a no-op hook | {m:.1} | {p:.1} |");
}
