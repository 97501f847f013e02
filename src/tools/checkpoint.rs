//! `checkpoint`, `checkpoint_read`, `checkpoint_list`, `checkpoint_cleanup`: argument parsing
//! and result shapes only; the store (find, read, list, TTL cleanup, the write plan and the
//! journaled removal) is [`resilient_write_core::checkpoint::disk`].

use super::errors::{FailureCode as C, KEYED, PIPELINE, STATE};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::{ToolSpec, is_false, parse_args, result_schema, schema, to_value};
use resilient_write_core::checkpoint::Format;
use resilient_write_core::checkpoint::disk::{self, Saved};
pub use resilient_write_core::checkpoint::disk::{CheckpointEntry, CorruptEntry, Removed};
use resilient_write_core::envelope::Result;
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn session() -> String {
    "session".into()
}

fn yes() -> bool {
    true
}

/// Arguments of `checkpoint`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointArgs {
    /// ^[A-Za-z0-9_-]{1,64}$
    pub name: String,
    /// Any JSON value; a string for markdown.
    pub data: Value,
    #[serde(default)]
    pub format: Format,
    /// session (removed by checkpoint_cleanup), permanent, or an ISO-8601 duration since
    /// the last save (PT30M, P1D).
    #[serde(default = "session")]
    pub ttl: String,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Arguments of `checkpoint_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointReadArgs {
    pub name: String,
}

/// Arguments of `checkpoint_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointListArgs {}

/// Arguments of `checkpoint_cleanup`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointCleanupArgs {
    #[serde(default = "yes")]
    pub include_session: bool,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Result of `checkpoint`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointResult {
    pub ok: bool,
    #[serde(flatten)]
    pub saved: Saved,
    /// Same as path (the original's name).
    pub checkpoint_path: String,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// Result of `checkpoint_read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointReadResult {
    pub ok: bool,
    pub name: String,
    pub format: Format,
    pub ttl: String,
    pub data: Value,
    pub created_at: String,
    pub updated_at: String,
    pub sha256: String,
    pub bytes: u64,
}

/// Result of `checkpoint_list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointListResult {
    pub ok: bool,
    /// Sorted by name.
    pub checkpoints: Vec<CheckpointEntry>,
    pub count: usize,
}

/// Result of `checkpoint_cleanup`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointCleanupResult {
    pub ok: bool,
    pub removed: Vec<Removed>,
    /// How many readable checkpoints remain.
    pub kept: usize,
    /// Checkpoints whose file cannot be parsed: reported and kept, never silently deleted.
    pub corrupt: Vec<CorruptEntry>,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

pub const CHECKPOINT: ToolSpec = ToolSpec {
    name: "checkpoint",
    title: "Save a checkpoint",
    description: "Save intermediate data under a name (atomic, journaled) so it survives context \
        compaction; saving again replaces it.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<CheckpointArgs>,
    output_schema: result_schema::<CheckpointResult>,
    run: run_checkpoint,
    errors: &[STATE, PIPELINE, KEYED, &[C::InvalidDocument]],
};

pub const CHECKPOINT_READ: ToolSpec = ToolSpec {
    name: "checkpoint_read",
    title: "Read a checkpoint",
    description: "A checkpoint's data and metadata, by name.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<CheckpointReadArgs>,
    output_schema: result_schema::<CheckpointReadResult>,
    run: run_checkpoint_read,
    errors: &[
        STATE,
        &[C::TargetMissing, C::CorruptState, C::InvalidDocument],
    ],
};

pub const CHECKPOINT_LIST: ToolSpec = ToolSpec {
    name: "checkpoint_list",
    title: "List checkpoints",
    description: "The saved checkpoints (name, format, ttl, bytes, times), without data.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<CheckpointListArgs>,
    output_schema: result_schema::<CheckpointListResult>,
    run: run_checkpoint_list,
    errors: &[STATE],
};

pub const CHECKPOINT_CLEANUP: ToolSpec = ToolSpec {
    name: "checkpoint_cleanup",
    title: "Remove expired checkpoints",
    description: "Delete expired checkpoints: durations past, session ones with include_session, never \
        permanent ones.",
    read_only: false,
    destructive: true,
    idempotent: true,
    input_schema: schema::<CheckpointCleanupArgs>,
    output_schema: result_schema::<CheckpointCleanupResult>,
    run: run_checkpoint_cleanup,
    errors: &[STATE, KEYED, &[C::InvalidDocument]],
};

fn run_checkpoint(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<CheckpointArgs>("checkpoint", raw)?;
    request.once(store, || {
        let saved = disk::save(store, &args.name, args.format, args.data, &args.ttl)?;
        to_value(&CheckpointResult {
            ok: true,
            checkpoint_path: saved.path.clone(),
            saved,
            idempotent_replay: false,
        })
    })
}

fn run_checkpoint_read(store: &Store, raw: Value) -> Result<Value> {
    let args: CheckpointReadArgs = parse_args(raw)?;
    let l = disk::read(store, &args.name)?;
    let cp = l.checkpoint;
    to_value(&CheckpointReadResult {
        ok: true,
        name: cp.name,
        format: cp.format,
        ttl: cp.ttl,
        data: cp.data,
        created_at: cp.created_at,
        updated_at: cp.updated_at,
        sha256: l.sha256,
        bytes: l.bytes,
    })
}

fn run_checkpoint_list(store: &Store, raw: Value) -> Result<Value> {
    let _: CheckpointListArgs = parse_args(raw)?;
    let checkpoints = disk::list(store)?;
    to_value(&CheckpointListResult {
        ok: true,
        count: checkpoints.len(),
        checkpoints,
    })
}

fn run_checkpoint_cleanup(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<CheckpointCleanupArgs>("checkpoint_cleanup", raw)?;
    request.once(store, || {
        let c = disk::cleanup(store, args.include_session)?;
        to_value(&CheckpointCleanupResult {
            ok: true,
            removed: c.removed,
            kept: c.kept,
            corrupt: c.corrupt,
            idempotent_replay: false,
        })
    })
}
