//! `journal_tail`: the newest journal rows, optionally filtered by path and mode. Argument
//! parsing and the result shape only; the tail is [`resilient_write_core::journal::tail`].

use super::errors::{FailureCode as C, STATE};
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use resilient_write_core::envelope::Result;
use resilient_write_core::journal::tail::Tail;
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use resilient_write_core::journal::tail::MAX_TAIL;

fn twenty() -> usize {
    20
}

/// Arguments of `journal_tail`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalTailArgs {
    #[serde(default = "twenty")]
    pub n: usize,
    /// Only rows of this file (relative or absolute path).
    #[serde(default)]
    pub filter_path: Option<String>,
    /// create, overwrite, append, replace, ...
    #[serde(default)]
    pub filter_mode: Option<String>,
}

/// Result of `journal_tail`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct JournalTailResult {
    pub ok: bool,
    /// Journal rows, oldest first (newest last); `path` is relative to the workspace root
    /// (`root` names the root when the server has several).
    pub entries: Vec<Map<String, Value>>,
    pub count: usize,
    /// Lines that could not be parsed and were skipped (a torn last line counts).
    #[serde(default)]
    pub corrupt_lines: usize,
}

pub const JOURNAL_TAIL: ToolSpec = ToolSpec {
    name: "journal_tail",
    title: "Recent writes",
    description: "The newest rows of the write journal, newest last: what was written, when, by which \
        tool, with hashes.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<JournalTailArgs>,
    output_schema: result_schema::<JournalTailResult>,
    run: run_journal_tail,
    errors: &[STATE, &[C::InvalidArguments]],
};

impl From<Tail> for JournalTailResult {
    fn from(t: Tail) -> JournalTailResult {
        JournalTailResult {
            ok: true,
            count: t.entries.len(),
            entries: t.entries,
            corrupt_lines: t.corrupt_lines,
        }
    }
}

fn run_journal_tail(store: &Store, raw: Value) -> Result<Value> {
    let args: JournalTailArgs = parse_args(raw)?;
    let t = store.journal_tail(args.n, args.filter_path.as_deref(), args.filter_mode)?;
    to_value(&JournalTailResult::from(t))
}
