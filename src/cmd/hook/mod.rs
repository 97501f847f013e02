//! `resilient-write hook <agent> <event>`: the agents' own Write and Edit tools, screened,
//! journaled and made undoable. Claude Code, Cursor and Gemini CLI run a command before and
//! after a tool call with the call as JSON on stdin; this is that command.
//!
//! - Before a native write or edit (Claude Code `PreToolUse` on `Write|Edit|MultiEdit` and
//!   `NotebookEdit` (the new cell source is screened as added text), Gemini
//!   CLI `BeforeTool` on `write_file|replace`): the resulting content is computed (edits applied
//!   to the current file, in order) and scored by L0 under the workspace's policy, as
//!   `safe_write` (a whole file) and `safe_replace` (an edit: only what it introduces) score it;
//!   at the policy's `hooks.reject_at` (default `medium`) the call is denied in the agent's format
//!   with a reason naming the rule, the family and the line. Otherwise the current content is
//!   kept in the object store (`native::NativeWorkspace::keep_pre_image`).
//! - After it (Claude Code `PostToolUse`, Cursor `afterFileEdit`, Gemini CLI `AfterTool`): one
//!   journal row, tool `native:<Tool>`, caller the agent (`native::NativeWorkspace::record`).
//! - Around a shell command (Claude Code `Bash`, Gemini CLI `run_shell_command`; also Claude
//!   Code's `PostToolUseFailure`, a failed command may have written): the workspace is
//!   snapshotted before, and every file the command created, changed or deleted is journaled
//!   after, a secret it wrote reported to the model in the agent's after-hook format
//!   (`shell.rs`). After a call of our own MCP tools, the rows it wrote are attributed to the
//!   agent's session, for `restore --session`.
//!
//! The workspace is the payload's `cwd` (Cursor: the `workspace_roots` entry holding the file),
//! so one global entry serves every repository. The hook must never break an agent: a path
//! outside the workspace passes untouched, and any failure (unreadable stdin, a bad policy, an
//! unwritable state directory) is one line on stderr and an allow. Only a secret at or above the
//! reject level denies. Nothing here starts the async runtime or the server: one process reads,
//! scores, stores and answers (figures in docs/performance-log.md).

mod claude;
mod cursor;
mod gemini;
pub mod install;
pub(crate) mod shell;

use crate::dispatch::Config;
use clap::{Args, ValueEnum};
use resilient_write_core::envelope::Failure;
use resilient_write_core::native::{NativeCall, NativeWorkspace, Replacement, apply};
use resilient_write_core::policy::active::RejectAt;
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest payload read from stdin (a Write of a file this size is let through unscreened).
const MAX_PAYLOAD: u64 = 64 * 1024 * 1024;

#[derive(Debug, Args)]
#[command(after_help = "\
Install with `resilient-write init --hooks --client claude` (or cursor, gemini, all: their \
project settings). Exit status is always 0; a denial is in the agent's own answer format. \
Failures print one line on stderr and allow the call.")]
pub struct HookArgs {
    /// The agent whose hook payload is on stdin.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The hook event, named as the agent names it: PreToolUse, PostToolUse or
    /// PostToolUseFailure (claude-code),
    /// afterFileEdit (cursor), BeforeTool or AfterTool (gemini).
    pub event: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    ClaudeCode,
    Cursor,
    Gemini,
}

impl Agent {
    /// The journal row's `caller`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
        }
    }

    /// The events this agent sends that the hook handles, before-hooks first.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Agent::ClaudeCode => &["PreToolUse", "PostToolUse", "PostToolUseFailure"],
            Agent::Cursor => &["afterFileEdit"],
            Agent::Gemini => &["BeforeTool", "AfterTool"],
        }
    }
}

/// Before or after the agent's tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Before,
    After,
}

/// What the agent asks to write, whatever its format.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The whole new content.
    Write(String),
    /// Replacements applied in order to the current content.
    Edit(Vec<Replacement>),
    /// Text added to the file where only the agent's tool can place it (a notebook cell's
    /// source): screened as what the edit introduces.
    Add(String),
}

/// One native write, parsed from an agent's payload.
#[derive(Debug, Clone)]
pub struct NativeWrite {
    /// The workspace root (the payload's cwd or workspace root).
    pub workspace: PathBuf,
    pub file_path: String,
    /// The agent's tool name (the row's `native:<tool>`).
    pub tool: String,
    /// The change (before-hooks; after-hooks need none).
    pub change: Option<Change>,
    pub session: Option<String>,
    pub call_id: Option<String>,
}

/// A shell command of the agent (its shell tool).
#[derive(Debug, Clone)]
pub struct ShellRun {
    /// The workspace root (the payload's cwd).
    pub workspace: PathBuf,
    /// The agent's shell tool (the rows' `native:<tool>`).
    pub tool: String,
    pub command: String,
    pub session: Option<String>,
    pub call_id: Option<String>,
}

/// A call of one of our MCP tools, seen by the agent's after-hook.
#[derive(Debug, Clone)]
pub struct McpCall {
    pub workspace: PathBuf,
    /// The tool as the agent names it.
    pub tool: String,
    pub session: Option<String>,
    /// The tool's result as the agent hands it to the hook.
    pub response: Value,
}

/// A tool call the hook acts on.
#[derive(Debug, Clone)]
pub enum Parsed {
    File(NativeWrite),
    Shell(ShellRun),
    Mcp(McpCall),
}

/// The hook's answer, rendered by each agent's module.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Let the call go on as the agent would have (no opinion).
    Allow,
    /// Refuse the call, telling the model why.
    Deny(String),
    /// After the call: tell the model something it must act on (a secret its command wrote).
    Report(String),
}

/// Whether `name` is one of our MCP tools as an agent names it: `mcp__<server>__rw_<tool>`
/// (Claude Code) or `mcp_<server>_rw_<tool>` (Gemini CLI), either spelling of our names.
pub fn is_our_mcp_tool(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("mcp_") else {
        return false;
    };
    match rest.strip_prefix('_') {
        Some(claude) => claude
            .rsplit_once("__")
            .is_some_and(|(_, tool)| tool.starts_with("rw_") || tool.starts_with("rw.")),
        None => rest.contains("_rw_") || rest.contains("_rw."),
    }
}

/// A call of the agent's shell tool (every agent's payload has `cwd`, `session_id` and
/// `tool_input.command`).
fn shell_run(payload: &Value, tool: String, call_id: Option<String>) -> Result<Parsed, String> {
    let input = payload.get("tool_input").ok_or("`tool_input` is missing")?;
    Ok(Parsed::Shell(ShellRun {
        workspace: PathBuf::from(required(payload, "cwd")?),
        tool,
        command: required(input, "command")?,
        session: str_field(payload, "session_id"),
        call_id,
    }))
}

/// A call of one of our MCP tools: acted on after it, with its result (`tool_response`).
fn mcp_call(payload: &Value, tool: String, phase: Phase) -> Result<Option<Parsed>, String> {
    Ok(match phase {
        Phase::Before => None,
        Phase::After => Some(Parsed::Mcp(McpCall {
            workspace: PathBuf::from(required(payload, "cwd")?),
            tool,
            session: str_field(payload, "session_id"),
            response: payload.get("tool_response").cloned().unwrap_or_default(),
        })),
    })
}

/// What one agent's format module provides.
trait Format {
    /// The call in `payload` for `phase` the hook acts on, or `None` when it is not one
    /// (another tool): the hook then allows it untouched. `Err` for a payload it cannot read.
    fn parse(payload: &Value, phase: Phase) -> Result<Option<Parsed>, String>;
    /// Print the answer on stdout in the agent's format.
    fn answer(event: &str, answer: &Answer) -> String;
}

fn phase_of(agent: Agent, event: &str) -> Option<Phase> {
    match (agent, event) {
        (Agent::ClaudeCode, "PreToolUse") | (Agent::Gemini, "BeforeTool") => Some(Phase::Before),
        (Agent::ClaudeCode, "PostToolUse" | "PostToolUseFailure")
        | (Agent::Cursor, "afterFileEdit")
        | (Agent::Gemini, "AfterTool") => Some(Phase::After),
        _ => None,
    }
}

fn warn(msg: impl std::fmt::Display) {
    let line = msg.to_string().replace(['\n', '\r'], " ");
    eprintln!("resilient-write hook: {line}; the call is allowed");
}

/// One line on stderr for a person (a cap reached, a file not journaled).
fn note(msg: impl std::fmt::Display) {
    let line = msg.to_string().replace(['\n', '\r'], " ");
    eprintln!("resilient-write hook: {line}");
}

/// Run the hook: read stdin, answer on stdout, always exit 0.
pub fn run(config: &Config, args: &HookArgs) -> ExitCode {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_PAYLOAD)
        .read_to_end(&mut input);
    let answer = match read {
        Err(e) => {
            warn(format!("cannot read the hook payload on stdin: {e}"));
            Answer::Allow
        }
        Ok(_) => handle(config, args.agent, &args.event, &input),
    };
    let out = match args.agent {
        Agent::ClaudeCode => claude::Claude::answer(&args.event, &answer),
        Agent::Cursor => cursor::Cursor::answer(&args.event, &answer),
        Agent::Gemini => gemini::Gemini::answer(&args.event, &answer),
    };
    if !out.is_empty() {
        println!("{out}");
    }
    ExitCode::SUCCESS
}

/// The answer to one payload (every failure is a stderr line and [`Answer::Allow`]).
pub fn handle(config: &Config, agent: Agent, event: &str, input: &[u8]) -> Answer {
    let Some(phase) = phase_of(agent, event) else {
        warn(format!(
            "unknown event {event:?} for {} (expected {})",
            agent.name(),
            agent.events().join(" or ")
        ));
        return Answer::Allow;
    };
    let payload: Value = match serde_json::from_slice(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            warn("the hook payload on stdin is not a JSON object");
            return Answer::Allow;
        }
        Err(e) => {
            warn(format!("the hook payload on stdin is not JSON ({e})"));
            return Answer::Allow;
        }
    };
    let parsed = match agent {
        Agent::ClaudeCode => claude::Claude::parse(&payload, phase),
        Agent::Cursor => cursor::Cursor::parse(&payload, phase),
        Agent::Gemini => gemini::Gemini::parse(&payload, phase),
    };
    let write = match parsed {
        Ok(Some(Parsed::File(w))) => w,
        Ok(Some(Parsed::Shell(run))) => return shell::shell(config, agent, phase, &run),
        Ok(Some(Parsed::Mcp(m))) => return shell::attribute(config, agent, &m),
        Ok(None) => return Answer::Allow,
        Err(e) => {
            warn(format!("unreadable {} {event} payload: {e}", agent.name()));
            return Answer::Allow;
        }
    };
    let ws = workspace(config, &write.workspace);
    if !ws.inside(&write.file_path) {
        return Answer::Allow;
    }
    let call = NativeCall {
        agent: agent.name(),
        tool: &write.tool,
        session: write.session.as_deref(),
        call_id: write.call_id.as_deref(),
        replacing: match write.change {
            Some(Change::Write(_)) => "overwrite",
            _ if write.tool == "Write" || write.tool == "write_file" => "overwrite",
            _ => "replace",
        },
    };
    match phase {
        Phase::Before => before(&ws, &write, &call),
        Phase::After => {
            if let Some(target) = ws.resolve(&write.file_path)
                && let Err(e) = ws.record(&target, &call)
            {
                warn(format!(
                    "could not journal the {} of {}: {e}",
                    write.tool, write.file_path
                ));
            }
            Answer::Allow
        }
    }
}

/// The workspace rooted at `root` (a payload's cwd), with the configured state, policy and
/// write cap.
fn workspace(config: &Config, root: &std::path::Path) -> NativeWorkspace {
    NativeWorkspace::open(
        root,
        config.store.state_root.as_deref(),
        config.store.policy_file.as_deref(),
        config.store.home.as_deref(),
    )
    .with_max_bytes(config.store.max_write_bytes)
}

fn before(ws: &NativeWorkspace, write: &NativeWrite, call: &NativeCall<'_>) -> Answer {
    let target = ws.resolve(&write.file_path);
    let existing = match target.as_ref().map(|t| ws.current(t)) {
        Some(Ok(e)) => e,
        Some(Err(e)) => {
            warn(format!("cannot read {}: {e}", write.file_path));
            return Answer::Allow;
        }
        None => None,
    };
    let current = existing
        .as_ref()
        .map(|e| String::from_utf8_lossy(&e.bytes).into_owned());
    if let Some(change) = &write.change
        && let Some(reason) = screen(ws, write, current.as_deref(), change)
    {
        return Answer::Deny(reason);
    }
    if let Some(t) = &target
        && let Err(e) = ws.keep_pre_image(t, existing.as_ref(), call)
    {
        warn(format!(
            "could not keep the content of {} before the {}: {e}",
            write.file_path, write.tool
        ));
    }
    Answer::Allow
}

/// The keys of the policy file's `hooks` section this command reads (docs/guide/policy.md).
pub const POLICY_KEYS: [&str; 2] = [REJECT_AT, shell::SHELL_MAX_FILES];
const REJECT_AT: &str = "reject_at";

/// The policy's reject level for native writes: `hooks.reject_at`, default `medium` (one live
/// credential). Stricter than the tools' `classify_reject_at` default (`high`): a native write
/// has no opt-in `classify` flag, and screening secrets is the hook's reason to exist.
fn reject_at(ws: &NativeWorkspace) -> RejectAt {
    let set = ws
        .policy()
        .policy()
        .and_then(|p| p.hooks.as_ref())
        .and_then(|h| h.get(REJECT_AT));
    match set.map(|v| serde_json::from_value::<RejectAt>(v.clone())) {
        None => RejectAt::Medium,
        Some(Ok(level)) => level,
        Some(Err(_)) => {
            // Not a reason to let more through: the default, and say so.
            eprintln!(
                "resilient-write hook: {}: hooks.reject_at must be high, medium or low; \
                 using medium",
                ws.policy().path.display()
            );
            RejectAt::Medium
        }
    }
}

/// L0 on what the change produces: the denial's reason, or `None` to allow.
fn screen(
    ws: &NativeWorkspace,
    write: &NativeWrite,
    current: Option<&str>,
    change: &Change,
) -> Option<String> {
    let level = reject_at(ws);
    let checked = match change {
        Change::Write(content) => ws.policy().preflight(content, true, level).map(|_| ()),
        Change::Add(text) => ws
            .policy()
            .preflight_edit(current.unwrap_or(""), text, true, level),
        Change::Edit(edits) => {
            let before = current.unwrap_or("");
            match apply(current, edits) {
                Some(after) => ws.policy().preflight_edit(before, &after, true, level),
                // The edit does not apply (the agent's tool will say so): still screen
                // what it would add.
                None => {
                    let added: Vec<&str> = edits.iter().map(|e| e.new.as_str()).collect();
                    ws.policy()
                        .preflight_edit(before, &added.join("\n"), true, level)
                }
            }
        }
    };
    match checked {
        Ok(()) => None,
        Err(Failure::ContentBlocked {
            score,
            verdict,
            detected,
            ..
        }) => Some(deny_reason(write, level, score, &verdict, &detected)),
        Err(other) => {
            warn(format!("could not screen {}: {other}", write.file_path));
            None
        }
    }
}

/// What the model reads when its call is denied: which rule and family on which line, and
/// what to do instead. Never the secret.
fn deny_reason(
    write: &NativeWrite,
    level: RejectAt,
    score: f64,
    verdict: &str,
    detected: &[Value],
) -> String {
    let mut found: Vec<String> = detected
        .iter()
        .map(|d| {
            let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
            let line = d.get("line").and_then(Value::as_u64).unwrap_or(0);
            format!("{} ({}) on line {line}", s("pattern"), s("kind"))
        })
        .collect();
    found.dedup();
    let level = match level {
        RejectAt::High => "high",
        RejectAt::Medium => "medium",
        RejectAt::Low => "low",
    };
    format!(
        "resilient-write blocked this {tool} of {path}: the resulting file would hold a secret: \
         {found} (verdict {verdict}, score {score:.2}; this workspace refuses {level} and above). \
         Nothing was written. Take the secret out of the content (read it from the environment \
         or a config file outside the repository), or replace it with a placeholder: the \
         resilient-write MCP server's `rw_redact` (listed once `rw_toolsets` enables \
         \"redaction\") returns the content with each secret replaced by {{REDACTED:<rule>}}. \
         Then retry the {tool}.",
        tool = write.tool,
        path = write.file_path,
        found = found.join(", "),
    )
}

/// A string field of `v`.
fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A required string field of `v`, or why it is missing.
fn required(v: &Value, key: &str) -> Result<String, String> {
    str_field(v, key).ok_or_else(|| format!("`{key}` is missing or not a string"))
}

/// The edits of an `edits` array of `{old_string, new_string, replace_all}` objects.
fn edits_of(v: &Value) -> Result<Vec<Replacement>, String> {
    let Some(items) = v.as_array() else {
        return Err("`edits` is not an array".into());
    };
    items
        .iter()
        .map(|e| {
            Ok(Replacement {
                old: required(e, "old_string")?,
                new: required(e, "new_string")?,
                all: e
                    .get("replace_all")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_phases_only_for_their_agent() {
        assert_eq!(
            phase_of(Agent::ClaudeCode, "PreToolUse"),
            Some(Phase::Before)
        );
        assert_eq!(phase_of(Agent::Gemini, "AfterTool"), Some(Phase::After));
        assert_eq!(phase_of(Agent::Cursor, "afterFileEdit"), Some(Phase::After));
        assert_eq!(phase_of(Agent::Cursor, "PreToolUse"), None);
        assert_eq!(phase_of(Agent::Gemini, "PreToolUse"), None);
    }
}
