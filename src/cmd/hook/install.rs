//! `init --hooks [--client AGENT]... [--remove]`: the hook entries in each agent's project
//! settings (the agents named, or those already set up in the project), beside the
//! MCP entry `init` writes. Claude Code: `.claude/settings.json` (`PreToolUse` on the file
//! tools and `Bash`, `PostToolUse` on those and our MCP tools, `PostToolUseFailure` on
//! `Bash`); Cursor: `.cursor/hooks.json` (`afterFileEdit`); Gemini CLI:
//! `.gemini/settings.json` (`BeforeTool` on `write_file|replace|run_shell_command`,
//! `AfterTool` on those and our MCP tools). See `matcher`.
//!
//! Idempotent: an entry is ours when its command ends with `hook <agent> <event>` and names
//! resilient-write (or is the command given); installing replaces ours and keeps every other
//! hook and key, and a file already holding exactly our entries is left byte for byte.
//! `--remove` takes ours out and leaves the rest. Files are written through the pipeline
//! (atomic, journaled), like the rest of `init`.

use super::Agent;
use crate::cmd::init::jsonc;
use jsonc_parser::cst::CstRootNode;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The settings file of `agent` in `project`, relative.
pub fn settings_file(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => ".claude/settings.json",
        Agent::Cursor => ".cursor/hooks.json",
        Agent::Gemini => ".gemini/settings.json",
    }
}

/// The tools each event's matcher covers (Cursor's `afterFileEdit` has no matcher): the
/// agent's file tools and its shell before and after a call, our MCP tools after one (to
/// attribute their writes to the agent's session). Claude Code reads a matcher of names and
/// `|` as a list of exact names, anything else as a regular expression; Gemini CLI reads
/// every matcher as a regular expression, hence the anchors.
fn matcher(agent: Agent, event: &str) -> Option<&'static str> {
    match (agent, event) {
        (Agent::ClaudeCode, "PreToolUse") => Some("Write|Edit|MultiEdit|NotebookEdit|Bash"),
        (Agent::ClaudeCode, "PostToolUseFailure") => Some("Bash"),
        (Agent::ClaudeCode, _) => {
            Some("^(Write|Edit|MultiEdit|NotebookEdit|Bash|mcp__.+__rw[._].+)$")
        }
        (Agent::Cursor, _) => None,
        (Agent::Gemini, "BeforeTool") => Some("^(write_file|replace|run_shell_command)$"),
        (Agent::Gemini, _) => Some("^(write_file|replace|run_shell_command|mcp_.+_rw[._].+)$"),
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command line of one hook.
pub fn hook_command(command: &str, agent: Agent, event: &str) -> String {
    format!("{} hook {} {event}", shell_quote(command), agent.name())
}

/// Whether hook entry `h` (an object with `command`) is ours for `agent` and `event`.
fn is_ours(h: &Value, command: &str, agent: Agent, event: &str) -> bool {
    let Some(c) = h.get("command").and_then(Value::as_str) else {
        return false;
    };
    let tail = format!(" hook {} {event}", agent.name());
    c.trim_end().ends_with(&tail) && (c.contains("resilient-write") || c.starts_with(command))
}

/// Our entry for `event` in the agent's format.
fn entry(command: &str, agent: Agent, event: &str) -> Value {
    let cmd = hook_command(command, agent, event);
    match agent {
        Agent::Cursor => json!({"command": cmd}),
        _ => json!({
            "matcher": matcher(agent, event),
            "hooks": [{"type": "command", "command": cmd}],
        }),
    }
}

/// `text` (a settings file, `None` when missing) with our hook entries for `agent` installed,
/// or with them removed when `remove`. `Ok(None)`: nothing to change.
pub fn edit(
    text: Option<&str>,
    agent: Agent,
    command: &str,
    remove: bool,
) -> Result<Option<String>, String> {
    if text.is_none() && remove {
        return Ok(None);
    }
    let source = match text {
        Some(t) if !t.trim().is_empty() => t,
        _ => "{}\n",
    };
    // Agents' settings may carry comments and trailing commas (Gemini CLI strips them): the
    // file is edited in its syntax tree, so everything outside our entries stays as it was.
    let tree = CstRootNode::parse(source, &jsonc::options())
        .map_err(|e| format!("is not valid JSON ({e})"))?;
    let mut root = match tree.value() {
        None => Value::Object(Map::new()),
        Some(v) => v.to_serde_value().ok_or("is not valid JSON")?,
    };
    let before = root.clone();
    let Some(obj) = root.as_object_mut() else {
        return Err("is not a JSON object".into());
    };
    if agent == Agent::Cursor && !remove {
        obj.entry("version").or_insert(json!(1));
    }
    let hooks = obj
        .entry("hooks".to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err("has a `hooks` that is not an object".into());
    };
    for event in agent.events() {
        let list = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(format!("has a `hooks.{event}` that is not an array"));
        };
        // Take ours out: whole Cursor entries; Claude/Gemini hooks inside their groups, and
        // the groups left empty.
        list.retain_mut(|item| match agent {
            Agent::Cursor => !is_ours(item, command, agent, event),
            _ => match item.get_mut("hooks").and_then(Value::as_array_mut) {
                Some(inner) => {
                    let had = inner.len();
                    inner.retain(|h| !is_ours(h, command, agent, event));
                    !(had > 0 && inner.is_empty())
                }
                None => true,
            },
        });
        if !remove {
            list.push(entry(command, agent, event));
        }
        if list.is_empty() {
            hooks.remove(*event);
        }
    }
    if hooks.is_empty() {
        obj.remove("hooks");
    }
    if root == before && text.is_some() {
        return Ok(None);
    }
    write_back(&tree, &before, &root, agent)?;
    let mut out = tree.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// Keys in the order the agents' documentation writes them (`matcher` before `hooks`, `type`
/// before `command`); any other key follows in its own order.
const KEY_ORDER: [&str; 5] = ["version", "matcher", "hooks", "type", "command"];

/// `value` as the tree's input, object keys in [`KEY_ORDER`].
fn ordered(value: &Value) -> jsonc_parser::cst::CstInputValue {
    use jsonc_parser::cst::CstInputValue;
    match value {
        Value::Array(a) => CstInputValue::Array(a.iter().map(ordered).collect()),
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_by_key(|k| {
                KEY_ORDER
                    .iter()
                    .position(|x| x == k)
                    .unwrap_or(KEY_ORDER.len())
            });
            CstInputValue::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), ordered(&o[k])))
                    .collect(),
            )
        }
        other => jsonc::input(other),
    }
}

/// Carry the change from `before` to `after` (the settings as values) into `tree`, touching
/// only what changed: the Cursor `version`, and each of the agent's `hooks.<event>` lists.
fn write_back(
    tree: &CstRootNode,
    before: &Value,
    after: &Value,
    agent: Agent,
) -> Result<(), String> {
    let top = match tree.value() {
        None => tree.object_value_or_set(),
        Some(v) => v.as_object().ok_or("is not a JSON object")?,
    };
    if let Some(version) = after.get("version")
        && before.get("version").is_none()
    {
        top.append("version", ordered(version));
    }
    let Some(hooks_after) = after.get("hooks") else {
        if let Some(prop) = top.get("hooks") {
            prop.remove();
        }
        return Ok(());
    };
    let hooks = top
        .object_value_or_create("hooks")
        .ok_or("has a `hooks` that is not an object")?;
    for event in agent.events() {
        let old = before.get("hooks").and_then(|h| h.get(*event));
        let new = hooks_after.get(*event);
        if old == new {
            continue;
        }
        match (hooks.get(event), new) {
            (Some(prop), Some(list)) => prop.set_value(ordered(list)),
            (Some(prop), None) => prop.remove(),
            (None, Some(list)) => {
                hooks.append(event, ordered(list));
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// One settings file `init --hooks` would write.
pub struct HookFile {
    pub agent: Agent,
    pub path: PathBuf,
    pub shown: &'static str,
    pub old: Option<String>,
    /// `None`: unchanged.
    pub new: Option<String>,
}

/// What `init --hooks` would write for `agents` in `project`.
pub fn plan(
    project: &Path,
    agents: &[Agent],
    command: &str,
    remove: bool,
) -> Result<Vec<HookFile>, String> {
    let mut out = Vec::new();
    for &agent in agents {
        let shown = settings_file(agent);
        let path = project.join(shown);
        let old = match std::fs::read(&path) {
            Ok(b) => Some(String::from_utf8(b).map_err(|_| format!("{shown}: is not UTF-8"))?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {shown}: {e}")),
        };
        let new =
            edit(old.as_deref(), agent, command, remove).map_err(|e| format!("{shown}: {e}"))?;
        out.push(HookFile {
            agent,
            path,
            shown,
            old,
            new,
        });
    }
    Ok(out)
}

/// Run `init --hooks` in `project` (already canonical) for `agents`: print the diffs with
/// `print`, else write the files that change. Exit 0, 1 when a file is malformed or cannot be
/// written (nothing is written when any file is malformed).
pub fn run(
    config: &crate::dispatch::Config,
    project: &Path,
    agents: &[Agent],
    command: &str,
    remove: bool,
    print: bool,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let files = match plan(project, agents, command, remove) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "resilient-write init: {e}; fix or remove it and run init again (nothing was written)"
            );
            return ExitCode::FAILURE;
        }
    };
    let label = |f: &HookFile| match (&f.old, &f.new) {
        (_, None) => "unchanged",
        (None, Some(_)) => "created",
        (Some(_), Some(_)) => "updated",
    };
    if print {
        // Nothing is written: say what would be, as `init --dry-run` does for the rest.
        for f in &files {
            match &f.new {
                Some(_) => println!("would be {}  {}", label(f), f.shown),
                None => println!("{:<10} {}", label(f), f.shown),
            }
            if let Some(new) = &f.new {
                let old = f.old.as_deref().unwrap_or("");
                print!(
                    "{}",
                    similar::TextDiff::from_lines(old, new.as_str())
                        .unified_diff()
                        .context_radius(2)
                        .header(&format!("a/{}", f.shown), &format!("b/{}", f.shown))
                );
            }
        }
        return ExitCode::SUCCESS;
    }
    let mut cfg = config.clone();
    cfg.store.cwd = project.to_path_buf();
    cfg.store.workspaces = vec![project.to_path_buf()];
    if cfg.store.state_root.is_none() {
        cfg.store.state_root = Some(project.to_path_buf());
    }
    cfg.store.sweep_on_start = false;
    let Some(service) = crate::cmd::service(cfg) else {
        return ExitCode::from(2);
    };
    for f in &files {
        if let Some(new) = &f.new
            && let Err(e) = resilient_write_core::maint::gitignore::write_text(
                service.store(),
                &f.path,
                f.old.as_deref(),
                new,
            )
        {
            eprintln!("resilient-write init: writing {} failed: {e}", f.shown);
            return ExitCode::FAILURE;
        }
        println!("{:<10} {}", label(f), f.shown);
    }
    if !remove {
        println!(
            "\nThe agents' own Write/Edit tools and shell commands now run `{command} hook ...` \
             before and after each call, and after each call of our MCP tools (Gemini CLI runs \
             them unless `hooksConfig.enabled` is false in its settings). Undo with \
             `init --hooks --remove`."
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_idempotent_keeps_other_hooks_and_remove_takes_only_ours() {
        let theirs = r#"{"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}]}}"#;
        let once = edit(Some(theirs), Agent::ClaudeCode, "resilient-write", false)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "resilient-write hook claude-code PostToolUse"
        );
        assert_eq!(
            v["hooks"]["PreToolUse"][1]["matcher"],
            "Write|Edit|MultiEdit|NotebookEdit|Bash"
        );
        assert_eq!(
            v["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"],
            "resilient-write hook claude-code PostToolUseFailure"
        );
        assert_eq!(
            edit(Some(&once), Agent::ClaudeCode, "resilient-write", false).unwrap(),
            None
        );
        let removed = edit(Some(&once), Agent::ClaudeCode, "resilient-write", true)
            .unwrap()
            .unwrap();
        let r: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(r, serde_json::from_str::<Value>(theirs).unwrap());
        assert_eq!(edit(None, Agent::Gemini, "rw", true).unwrap(), None);
    }

    /// The matchers as the agents read them: a regular expression anchored at both ends
    /// (Claude Code's list of names is a plain alternation).
    #[test]
    fn matchers_cover_the_file_tools_the_shell_and_our_mcp_tools_and_nothing_else() {
        let m = |agent, event| regex::Regex::new(matcher(agent, event).unwrap()).unwrap();
        let claude_post = m(Agent::ClaudeCode, "PostToolUse");
        for name in [
            "Write",
            "Bash",
            "mcp__resilient-write__rw_safe_write",
            "mcp__rw__rw.restore",
        ] {
            assert!(claude_post.is_match(name), "{name}");
        }
        for name in [
            "BashOutput",
            "Read",
            "mcp__other__search",
            "mcp__rw__tool_rw_x",
        ] {
            assert!(!claude_post.is_match(name), "{name}");
        }
        assert_eq!(
            matcher(Agent::ClaudeCode, "PreToolUse"),
            Some("Write|Edit|MultiEdit|NotebookEdit|Bash")
        );
        let gemini_after = m(Agent::Gemini, "AfterTool");
        for name in [
            "replace",
            "run_shell_command",
            "mcp_resilient-write_rw_safe_write",
        ] {
            assert!(gemini_after.is_match(name), "{name}");
        }
        for name in ["read_file", "mcp_other_search", "replace_all"] {
            assert!(!gemini_after.is_match(name), "{name}");
        }
        let gemini_before = m(Agent::Gemini, "BeforeTool");
        assert!(gemini_before.is_match("run_shell_command"));
        assert!(!gemini_before.is_match("mcp_resilient-write_rw_safe_write"));
    }

    #[test]
    fn a_moved_binary_replaces_the_old_entry() {
        let old = edit(None, Agent::Cursor, "/old/bin/resilient-write", false)
            .unwrap()
            .unwrap();
        let new = edit(Some(&old), Agent::Cursor, "/new/resilient-write", false)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["afterFileEdit"],
            json!([{"command": "/new/resilient-write hook cursor afterFileEdit"}])
        );
    }

    #[test]
    fn comments_and_other_keys_survive_install_and_remove() {
        let theirs = "// project settings\n{\n  \"model\": \"x\", // pinned\n  /* env */ \"env\": {\"A\": \"1\"},\n  \"hooks\": {\n    // the linter\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}],\n  },\n}\n";
        let once = edit(Some(theirs), Agent::ClaudeCode, "resilient-write", false)
            .unwrap()
            .unwrap();
        for kept in [
            "// project settings",
            "// pinned",
            "/* env */",
            "// the linter",
            "\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}]",
        ] {
            assert!(once.contains(kept), "{kept} lost:\n{once}");
        }
        let m = once.find("\"model\"").unwrap();
        let e = once.find("\"env\"").unwrap();
        let h = once.find("\"hooks\"").unwrap();
        assert!(m < e && e < h, "{once}");
        assert!(
            once.contains("resilient-write hook claude-code PreToolUse"),
            "{once}"
        );
        assert_eq!(
            edit(Some(&once), Agent::ClaudeCode, "resilient-write", false).unwrap(),
            None,
            "a second install changes nothing"
        );
        let removed = edit(Some(&once), Agent::ClaudeCode, "resilient-write", true)
            .unwrap()
            .unwrap();
        assert!(!removed.contains("hook claude-code"), "{removed}");
        for kept in [
            "// project settings",
            "// pinned",
            "// the linter",
            "lint.sh",
        ] {
            assert!(removed.contains(kept), "{kept} lost:\n{removed}");
        }
    }

    #[test]
    fn malformed_settings_are_refused() {
        assert!(edit(Some("{,"), Agent::Gemini, "rw", false).is_err());
        assert!(edit(Some("[]"), Agent::Gemini, "rw", false).is_err());
        assert!(edit(Some(r#"{"hooks": []}"#), Agent::Gemini, "rw", false).is_err());
    }
}
