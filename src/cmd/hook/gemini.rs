//! Gemini CLI's hook format (hooks reference, `BeforeTool` and `AfterTool`).
//!
//! Payload: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`,
//! `tool_name`, `tool_input` (and `tool_response` after the call). The file tools:
//! `write_file {file_path, content}` and `replace {file_path, old_string, new_string,
//! expected_replacements?}` (every occurrence when `expected_replacements` is above 1 or
//! `allow_multiple` is true; an empty `old_string` creates the file). The shell:
//! `run_shell_command {command, description, dir_path}`. Our MCP tools are named
//! `mcp_<server>_rw_<tool>`; `tool_response.llmContent` carries our result.
//!
//! Answer: stdout must be JSON only: `{}` lets the call go on; a denial is exit 0 with
//! `{"decision": "deny", "reason": ...}`, the reason sent to the model as the tool's error; a
//! report after the call is `hookSpecificOutput.additionalContext`, appended to the tool's
//! result.

use super::{
    Answer, Change, Format, NativeWrite, Parsed, Phase, is_our_mcp_tool, mcp_call, required,
    shell_run, str_field,
};
use resilient_write_core::native::Replacement;
use serde_json::{Value, json};
use std::path::PathBuf;

pub struct Gemini;

impl Format for Gemini {
    fn parse(payload: &Value, phase: Phase) -> Result<Option<Parsed>, String> {
        let tool = required(payload, "tool_name")?;
        if tool == "run_shell_command" {
            return shell_run(payload, tool, None).map(Some);
        }
        if is_our_mcp_tool(&tool) {
            return mcp_call(payload, tool, phase);
        }
        if !matches!(tool.as_str(), "write_file" | "replace") {
            return Ok(None);
        }
        let input = payload.get("tool_input").ok_or("`tool_input` is missing")?;
        let change = match (phase, tool.as_str()) {
            (Phase::After, _) => None,
            (Phase::Before, "write_file") => Some(Change::Write(required(input, "content")?)),
            (Phase::Before, _) => {
                let many = input
                    .get("expected_replacements")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 1)
                    || input
                        .get("allow_multiple")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                Some(Change::Edit(vec![Replacement {
                    old: required(input, "old_string")?,
                    new: required(input, "new_string")?,
                    all: many,
                }]))
            }
        };
        Ok(Some(Parsed::File(NativeWrite {
            workspace: PathBuf::from(required(payload, "cwd")?),
            file_path: required(input, "file_path")?,
            tool,
            change,
            session: str_field(payload, "session_id"),
            call_id: None,
        })))
    }

    fn answer(event: &str, answer: &Answer) -> String {
        match answer {
            Answer::Allow => "{}".into(),
            Answer::Deny(reason) => json!({"decision": "deny", "reason": reason}).to_string(),
            Answer::Report(reason) => json!({
                "hookSpecificOutput": {"hookEventName": event, "additionalContext": reason}
            })
            .to_string(),
        }
    }
}
