//! Cursor's hook format (hooks documentation, `afterFileEdit`).
//!
//! Payload: `hook_event_name`, `conversation_id`, `generation_id`, `workspace_roots`,
//! `file_path` (absolute) and `edits: [{old_string, new_string}]`. Cursor has no hook before a
//! file edit, so its edits are journaled but the content they replaced is not kept (their
//! rows say `pre_image: false`, and `history` says so). The answer is `{}` (Cursor reads JSON
//! from every hook; `afterFileEdit` cannot refuse).

use super::{Answer, Format, NativeWrite, Parsed, Phase, required, str_field};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct Cursor;

impl Format for Cursor {
    fn parse(payload: &Value, _phase: Phase) -> Result<Option<Parsed>, String> {
        let file_path = required(payload, "file_path")?;
        let roots: Vec<&str> = payload
            .get("workspace_roots")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // The root holding the file, else the first (the file is then outside: allowed).
        let Some(root) = roots
            .iter()
            .find(|r| Path::new(&file_path).starts_with(r))
            .or(roots.first())
        else {
            return Err("`workspace_roots` is missing or empty".into());
        };
        Ok(Some(Parsed::File(NativeWrite {
            workspace: PathBuf::from(root),
            file_path,
            tool: "edit_file".into(),
            change: None,
            session: str_field(payload, "conversation_id"),
            call_id: str_field(payload, "generation_id"),
        })))
    }

    fn answer(_event: &str, _answer: &Answer) -> String {
        "{}".into()
    }
}
