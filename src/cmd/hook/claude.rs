//! Claude Code's hook format (hooks reference, `PreToolUse` and `PostToolUse`).
//!
//! Payload: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `tool_name`,
//! `tool_input`, `tool_use_id` (and `tool_response` after the call). The file tools:
//! `Write {file_path, content}`, `Edit {file_path, old_string, new_string, replace_all}`,
//! `MultiEdit {file_path, edits: [{old_string, new_string, replace_all}]}`,
//! `NotebookEdit {notebook_path, cell_id, new_source, cell_type, edit_mode}`. The shell:
//! `Bash {command, description, timeout, run_in_background}`; a failed command comes as
//! `PostToolUseFailure` (`error` instead of `tool_response`). Our MCP tools are named
//! `mcp__<server>__rw_<tool>`; their `tool_response` carries our result.
//!
//! Answer: nothing on stdout lets the call go on through the normal permission flow (the hook
//! never answers `allow`, which would skip the user's permission prompt). A denial is exit 0
//! with `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
//! "permissionDecisionReason": ...}}`; the reason is shown to the model. A report after the
//! call is `{"decision": "block", "reason": ...}` on `PostToolUse` (the reason is fed back to
//! the model and the turn goes on) and `hookSpecificOutput.additionalContext` on
//! `PostToolUseFailure`.

use super::{
    Answer, Change, Format, NativeWrite, Parsed, Phase, edits_of, is_our_mcp_tool, mcp_call,
    required, shell_run, str_field,
};
use resilient_write_core::native::Replacement;
use serde_json::{Value, json};
use std::path::PathBuf;

pub struct Claude;

impl Format for Claude {
    fn parse(payload: &Value, phase: Phase) -> Result<Option<Parsed>, String> {
        let tool = required(payload, "tool_name")?;
        if tool == "Bash" {
            return shell_run(payload, tool, str_field(payload, "tool_use_id")).map(Some);
        }
        if is_our_mcp_tool(&tool) {
            return mcp_call(payload, tool, phase);
        }
        if !matches!(
            tool.as_str(),
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit"
        ) {
            return Ok(None);
        }
        let input = payload.get("tool_input").ok_or("`tool_input` is missing")?;
        let file_key = match tool.as_str() {
            "NotebookEdit" => "notebook_path",
            _ => "file_path",
        };
        let change = match (phase, tool.as_str()) {
            (Phase::After, _) => None,
            // A cell's new source, placed in the notebook's JSON by the agent: screened as
            // the text it adds (a deleted cell adds none).
            (Phase::Before, "NotebookEdit") => Some(Change::Add(
                str_field(input, "new_source").unwrap_or_default(),
            )),
            (Phase::Before, "Write") => Some(Change::Write(required(input, "content")?)),
            (Phase::Before, "Edit") => Some(Change::Edit(vec![Replacement {
                old: required(input, "old_string")?,
                new: required(input, "new_string")?,
                all: input
                    .get("replace_all")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }])),
            (Phase::Before, _) => Some(Change::Edit(edits_of(
                input.get("edits").unwrap_or(&Value::Null),
            )?)),
        };
        Ok(Some(Parsed::File(NativeWrite {
            workspace: PathBuf::from(required(payload, "cwd")?),
            file_path: required(input, file_key)?,
            tool,
            change,
            session: str_field(payload, "session_id"),
            call_id: str_field(payload, "tool_use_id"),
        })))
    }

    fn answer(event: &str, answer: &Answer) -> String {
        match answer {
            Answer::Allow => String::new(),
            Answer::Deny(reason) => json!({
                "hookSpecificOutput": {
                    "hookEventName": event,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            })
            .to_string(),
            Answer::Report(reason) if event == "PostToolUse" => {
                json!({"decision": "block", "reason": reason}).to_string()
            }
            Answer::Report(reason) => json!({
                "hookSpecificOutput": {"hookEventName": event, "additionalContext": reason}
            })
            .to_string(),
        }
    }
}
