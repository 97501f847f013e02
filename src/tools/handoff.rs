//! `handoff_write` and `handoff_read` (L5): argument parsing and result shapes only; the
//! store (drift, archive, load, the write through the pipeline) is [`resilient_write_core::handoff::disk`].

use super::errors::{FailureCode as C, KEYED, PATH, PIPELINE, SCREEN};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::{ToolSpec, is_false, parse_args, result_schema, schema, to_value};
use resilient_write_core::envelope::Result;
use resilient_write_core::handoff::{self, DEFAULT_HANDOFF_PATH, Drift, Step, disk};
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use resilient_write_core::handoff::disk::ARCHIVE_DIR;

fn default_path() -> String {
    DEFAULT_HANDOFF_PATH.into()
}

/// Arguments of `handoff_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffWriteArgs {
    /// Required: task_id, status (complete|partial|blocked|handed_off), agent, summary,
    /// next_steps, last_good_state[{path, sha256?, bytes?}]. Optional: started_at,
    /// context_hints, open_questions, blockers, artifacts, checkpoint_refs,
    /// dependency_graph[{id, depends_on, description, done}] (no cycles). Other keys are kept.
    pub envelope: Value,
    #[serde(default)]
    pub body: String,
    #[serde(default = "default_path")]
    pub path: String,
    /// Keep the replaced handoff under .resilient_write/handoffs/.
    #[serde(default)]
    pub archive: bool,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Arguments of `handoff_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffReadArgs {
    #[serde(default = "default_path")]
    pub path: String,
}

/// Result of `handoff_write`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HandoffWriteResult {
    pub ok: bool,
    /// The handoff file's path relative to its workspace root (as in the journal).
    pub handoff_path: String,
    pub abs_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    /// Where the replaced envelope was archived (archive: true and a previous envelope):
    /// `.resilient_write/handoffs/<ts>_<task_id>.md`, relative to the state root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_path: Option<String>,
    /// last_good_state files that differ from their recorded hash right now.
    pub drift: Vec<Drift>,
    /// Same as drift (the original's name).
    pub drift_warnings: Vec<Drift>,
    /// Dependency-graph steps ready now (absent without a graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_steps: Option<Vec<Step>>,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// Result of `handoff_read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HandoffReadResult {
    pub ok: bool,
    /// The handoff file's path relative to its workspace root.
    pub handoff_path: String,
    pub abs_path: String,
    /// The front-matter, unknown keys included.
    pub envelope: Value,
    pub body: String,
    /// SHA-256 of the file as read.
    pub sha256: String,
    /// Warnings: files that changed or went missing since the handoff.
    pub drift: Vec<Drift>,
    /// Same as drift (the original's name).
    pub drift_warnings: Vec<Drift>,
    /// Dependency-graph steps not done whose dependencies are all done, in list order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_steps: Option<Vec<Step>>,
}

pub const HANDOFF_WRITE: ToolSpec = ToolSpec {
    name: "handoff_write",
    title: "Write a task handoff",
    description: "Use before you stop or when blocked: record where the task stands in HANDOFF.md \
        (YAML front-matter, Markdown body) so a fresh agent can resume. A secret in it is \
        refused (blocked/content_filter).",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<HandoffWriteArgs>,
    output_schema: result_schema::<HandoffWriteResult>,
    run: run_handoff_write,
    errors: &[PATH, PIPELINE, SCREEN, KEYED, &[C::InvalidDocument]],
};

pub const HANDOFF_READ: ToolSpec = ToolSpec {
    name: "handoff_read",
    title: "Read the task handoff",
    description: "Use at the start of a session to resume: the handoff's envelope, body, drift \
        warnings for files changed since, and the dependency steps ready now.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<HandoffReadArgs>,
    output_schema: result_schema::<HandoffReadResult>,
    run: run_handoff_read,
    errors: &[
        PATH,
        &[
            C::TargetMissing,
            C::InvalidDocument,
            C::Encoding,
            C::TooLarge,
        ],
    ],
};

fn run_handoff_write(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<HandoffWriteArgs>("handoff_write", raw)?;
    request.once(store, || {
        let w = disk::write(store, args.envelope, args.body, &args.path, args.archive)?;
        to_value(&HandoffWriteResult {
            ok: true,
            handoff_path: w.path,
            abs_path: w.abs_path,
            sha256: w.sha256,
            bytes: w.bytes,
            journal_id: w.journal_id,
            archived_path: w.archived_path,
            drift_warnings: w.drift.clone(),
            drift: w.drift,
            ready_steps: w
                .handoff
                .dependency_graph
                .as_deref()
                .map(handoff::ready_steps),
            idempotent_replay: false,
        })
    })
}

fn run_handoff_read(store: &Store, raw: Value) -> Result<Value> {
    let args: HandoffReadArgs = parse_args(raw)?;
    let l = disk::load(store, &args.path)?;
    to_value(&HandoffReadResult {
        ok: true,
        handoff_path: l.path,
        abs_path: l.abs_path,
        envelope: l.front,
        body: l.body,
        sha256: l.sha256,
        drift_warnings: l.drift.clone(),
        drift: l.drift,
        ready_steps: l
            .handoff
            .dependency_graph
            .as_deref()
            .map(handoff::ready_steps),
    })
}
