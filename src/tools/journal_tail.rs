//! `journal_tail`: the newest journal rows, optionally filtered by path and mode. Reads the
//! journal backwards from its end, so it answers in time proportional to what it returns.

use super::{ToolSpec, parse_args, schema, to_value};
use crate::dispatch::Service;
use crate::envelope::{Failure, Result};
use crate::journal::json_string_forms;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Most rows one call returns.
pub const MAX_TAIL: usize = 10_000;

fn twenty() -> usize {
    20
}

/// Arguments of `journal_tail`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalTailArgs {
    /// How many rows (newest last); default 20, at most 10000.
    #[serde(default = "twenty")]
    pub n: usize,
    /// Only rows for this path (relative to the working directory, or absolute).
    #[serde(default)]
    pub filter_path: Option<String>,
    /// Only rows with this mode (create, overwrite, append, replace, ...).
    #[serde(default)]
    pub filter_mode: Option<String>,
}

/// Result of `journal_tail`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct JournalTailResult {
    pub ok: bool,
    /// Journal rows, oldest first (newest last).
    pub entries: Vec<Map<String, Value>>,
    pub count: usize,
    /// Lines that could not be parsed and were skipped (a torn last line counts).
    #[serde(default)]
    pub corrupt_lines: usize,
}

pub const JOURNAL_TAIL: ToolSpec = ToolSpec {
    name: "journal_tail",
    title: "Recent writes",
    description: "The newest rows of the write journal (.resilient_write/journal.jsonl): \
        journal_id, ts, path, sha256, prev_sha256, bytes, mode, caller, tool. Filter by \
        path and mode. Newest last. Read-only.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<JournalTailArgs>,
    output_schema: schema::<JournalTailResult>,
    run: run_journal_tail,
};

fn run_journal_tail(svc: &Service, raw: Value) -> Result<Value> {
    let args: JournalTailArgs = parse_args(raw)?;
    to_value(&tail(svc, &args)?)
}

/// The rows `args` asks for (shared with the journal-tail MCP resource).
pub fn tail(svc: &Service, args: &JournalTailArgs) -> Result<JournalTailResult> {
    if args.n > MAX_TAIL {
        return Err(Failure::InvalidArguments {
            message: format!("n must be at most {MAX_TAIL}"),
        });
    }
    let wanted_path = match &args.filter_path {
        Some(p) => Some((
            p.clone(),
            svc.workspaces().absolute(p)?.display().to_string(),
        )),
        None => None,
    };
    // Only lines containing the wanted path are parsed (see `Journal::tail_containing`).
    let needles: Vec<String> = wanted_path
        .iter()
        .flat_map(|(raw, abs)| [json_string_forms(raw), json_string_forms(abs)])
        .flatten()
        .collect();
    let journal = svc.pipeline().journal();
    let (entries, stats) = journal
        .tail_containing(args.n, &needles, |row| {
            let path_ok = wanted_path.as_ref().is_none_or(|(raw, abs)| {
                let p = row.get("path").and_then(Value::as_str).unwrap_or_default();
                p == abs || p == raw
            });
            let mode_ok = args
                .filter_mode
                .as_deref()
                .is_none_or(|m| row.get("mode").and_then(Value::as_str) == Some(m));
            path_ok && mode_ok
        })
        .map_err(|e| Failure::io("read journal", journal.path(), e))?;
    Ok(JournalTailResult {
        ok: true,
        count: entries.len(),
        entries,
        corrupt_lines: stats.corrupt_lines,
    })
}
