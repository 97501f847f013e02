//! The L2 tools: `chunk_write`, `chunk_append`, `chunk_compose`, `chunk_preview`,
//! `chunk_status`, `chunk_reset`. Argument parsing and result shapes only; the session logic
//! is [`resilient_write_core::chunks`].

use super::errors::{FailureCode as C, KEYED, PATH, PIPELINE, PRECONDITION, SCREEN, STATE};
use super::keyed::{IdempotencyKey, Request, parse_keyed};
use super::schema::describe;
use super::write::{Content, WriteMode};
use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use resilient_write_core::chunks::{self, ChunkWritten, Composed, Status};
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::policy::active::Classify;
use resilient_write_core::store::Store;
use resilient_write_core::write::idempotency::Answer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `chunk_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkWriteArgs {
    /// ^[A-Za-z0-9_-]{1,64}$
    pub session: String,
    #[schemars(range(min = 1))]
    pub index: i64,
    #[serde(flatten)]
    pub content: Content,
    /// Chunks the document will have; compose refuses until all exist.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub total_expected: Option<i64>,
    #[serde(flatten)]
    pub classify: Classify,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Arguments of `chunk_append`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkAppendArgs {
    /// ^[A-Za-z0-9_-]{1,64}$
    pub session: String,
    #[serde(flatten)]
    pub content: Content,
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub total_expected: Option<i64>,
    #[serde(flatten)]
    pub classify: Classify,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Result of `chunk_write` and `chunk_append`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkWriteResult {
    pub ok: bool,
    pub session: String,
    #[serde(flatten)]
    pub written: ChunkWritten,
    /// True when the write was answered from its first call (same idempotency_key).
    #[serde(default)]
    pub idempotent_replay: bool,
}

/// Arguments of `chunk_compose`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = describe(
    "classify",
    "Score the whole document, across chunk boundaries; refuse (blocked/content_filter) at \
     classify_reject_at, keeping the session."
))]
pub struct ChunkComposeArgs {
    pub session: String,
    pub output_path: String,
    /// Between chunks.
    #[serde(default)]
    pub separator: String,
    /// Remove the session after a successful compose.
    #[serde(default)]
    pub cleanup: bool,
    /// As in safe_write; absent: create, or overwrite an existing file.
    #[serde(default)]
    pub mode: Option<WriteMode>,
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    #[serde(flatten)]
    pub key: IdempotencyKey,
    #[serde(flatten)]
    pub classify: Classify,
}

/// Result of `chunk_compose`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkComposeResult {
    pub ok: bool,
    pub session: String,
    /// The composed file's path relative to its workspace root (as in the journal).
    pub output_path: String,
    pub abs_path: String,
    /// SHA-256 of the composed file (verified by reading it back).
    pub sha256: String,
    pub bytes: u64,
    pub chunk_count: u64,
    /// SHA-256 of each chunk, in order (empty on an idempotent replay).
    pub chunk_hashes: Vec<String>,
    pub journal_id: String,
    /// create, overwrite or append.
    pub mode_applied: String,
    pub wrote_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_sha256: Option<String>,
    pub cleaned_up: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent_replay: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Arguments of `chunk_preview`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkPreviewArgs {
    pub session: String,
    #[serde(default)]
    pub separator: String,
}

/// Result of `chunk_preview`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkPreviewResult {
    pub ok: bool,
    pub session: String,
    /// What compose would write (UTF-8 sessions only).
    pub content: String,
    pub chunk_count: u64,
    pub chunk_hashes: Vec<String>,
    pub total_bytes: u64,
    pub preview: bool,
}

/// Arguments of `chunk_reset`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkResetArgs {
    pub session: String,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Arguments of `chunk_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkStatusArgs {
    pub session: String,
    /// Re-hash chunks unchanged on disk too.
    #[serde(default)]
    pub verify: bool,
}

/// Result of `chunk_status`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkStatusResult {
    pub ok: bool,
    pub session: String,
    #[serde(flatten)]
    pub status: Status,
}

/// Result of `chunk_reset`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkResetResult {
    pub ok: bool,
    pub session: String,
    /// Files removed (chunks and manifest).
    pub removed: u64,
    pub existed: bool,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// What `chunk_write` and `chunk_append` can return: the same path to the same part file.
const CHUNK_WRITE_ERRORS: &[&[C]] = &[
    STATE,
    SCREEN,
    KEYED,
    &[
        C::ChunkArgument,
        C::ChunkSession,
        C::TooLarge,
        C::Encoding,
        C::Corruption,
        C::DiskFull,
    ],
];

pub const CHUNK_WRITE: ToolSpec = ToolSpec {
    name: "chunk_write",
    title: "Write one chunk of a large document",
    description: "Use for a large file: write chunk index (from 1) of a session; rewriting an index \
        replaces it, so a failed chunk is retried alone. Then rw_chunk_compose.",
    read_only: false,
    // Rewriting an index replaces that chunk's content.
    destructive: true,
    idempotent: true,
    input_schema: schema::<ChunkWriteArgs>,
    output_schema: result_schema::<ChunkWriteResult>,
    run: run_chunk_write,
    errors: CHUNK_WRITE_ERRORS,
};

pub const CHUNK_APPEND: ToolSpec = ToolSpec {
    name: "chunk_append",
    title: "Append the next chunk",
    description: "Write the next chunk of a session (highest index + 1), so you need not track \
        indices; safe with several agents appending at once.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<ChunkAppendArgs>,
    output_schema: result_schema::<ChunkWriteResult>,
    run: run_chunk_append,
    errors: CHUNK_WRITE_ERRORS,
};

pub const CHUNK_COMPOSE: ToolSpec = ToolSpec {
    name: "chunk_compose",
    title: "Compose a chunk session into a file",
    description: "Concatenate a session's chunks in index order into output_path through safe_write's \
        pipeline (any size). Refuses a gap (naming the missing indices), a count other than \
        total_expected, and chunks edited since written.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<ChunkComposeArgs>,
    output_schema: result_schema::<ChunkComposeResult>,
    run: run_chunk_compose,
    errors: &[
        PATH,
        PIPELINE,
        SCREEN,
        KEYED,
        PRECONDITION,
        &[C::ChunkArgument, C::ChunkSession],
    ],
};

pub const CHUNK_PREVIEW: ToolSpec = ToolSpec {
    name: "chunk_preview",
    title: "Preview a compose",
    description: "Dry-run rw_chunk_compose: every check, and the composed text instead of a write.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ChunkPreviewArgs>,
    output_schema: result_schema::<ChunkPreviewResult>,
    run: run_chunk_preview,
    errors: &[
        STATE,
        &[C::ChunkArgument, C::ChunkSession, C::TooLarge, C::Encoding],
    ],
};

pub const CHUNK_STATUS: ToolSpec = ToolSpec {
    name: "chunk_status",
    title: "Inspect a chunk session",
    description: "A session's present and missing indices, total_expected, chunks edited since \
        written, and whether compose would accept it. Use to resume after an interruption.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ChunkStatusArgs>,
    output_schema: result_schema::<ChunkStatusResult>,
    run: run_chunk_status,
    errors: &[STATE, &[C::ChunkArgument, C::ChunkSession]],
};

pub const CHUNK_RESET: ToolSpec = ToolSpec {
    name: "chunk_reset",
    title: "Delete a chunk session",
    description: "Delete a chunk session and its chunks, to start over under the same name.",
    read_only: false,
    destructive: true,
    idempotent: true,
    input_schema: schema::<ChunkResetArgs>,
    output_schema: result_schema::<ChunkResetResult>,
    run: run_chunk_reset,
    errors: &[STATE, KEYED, &[C::ChunkArgument]],
};

impl From<(String, Answer<ChunkWritten>)> for ChunkWriteResult {
    fn from((session, answer): (String, Answer<ChunkWritten>)) -> Self {
        ChunkWriteResult {
            ok: true,
            session,
            idempotent_replay: answer.replayed(),
            written: answer.into_inner(),
        }
    }
}

impl From<(String, Answer<Composed>)> for ChunkComposeResult {
    fn from((session, answer): (String, Answer<Composed>)) -> Self {
        let idempotent_replay = answer.replayed();
        let c = answer.into_inner();
        ChunkComposeResult {
            ok: true,
            session,
            output_path: c.output_path,
            abs_path: c.outcome.abs_path.display().to_string(),
            sha256: c.outcome.sha256,
            bytes: c.outcome.bytes,
            chunk_count: c.chunk_count,
            chunk_hashes: c.chunk_hashes,
            journal_id: c.outcome.journal_id,
            mode_applied: c.mode_applied,
            wrote_at: c.outcome.wrote_at,
            prev_sha256: c.outcome.prev_sha256,
            cleaned_up: c.cleaned_up,
            idempotent_replay,
            warnings: c.warnings,
        }
    }
}

fn run_chunk_write(store: &Store, raw: Value) -> Result<Value> {
    let (a, request) = parse_keyed::<ChunkWriteArgs>("chunk_write", raw)?;
    let index = Some(a.index);
    put_chunk(
        store,
        &request,
        a.session,
        index,
        a.total_expected,
        a.content,
        a.classify,
    )
}

fn run_chunk_append(store: &Store, raw: Value) -> Result<Value> {
    let (a, request) = parse_keyed::<ChunkAppendArgs>("chunk_append", raw)?;
    put_chunk(
        store,
        &request,
        a.session,
        None,
        a.total_expected,
        a.content,
        a.classify,
    )
}

/// `chunk_write` (an index) and `chunk_append` (`None`: the next one), parsed.
fn put_chunk(
    store: &Store,
    request: &Request,
    session: String,
    index: Option<i64>,
    total_expected: Option<i64>,
    content: Content,
    classify: Classify,
) -> Result<Value> {
    let put = chunks::ChunkPut {
        session: &session,
        index,
        total_expected,
        content,
        classify,
        keyed: request.keyed(),
    };
    let written = chunks::put(store, &request.caller(store), put)?;
    to_value(&ChunkWriteResult::from((session, written)))
}

fn run_chunk_compose(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<ChunkComposeArgs>("chunk_compose", raw)?;
    // A bad session name is reported before a bad hash (and checked again by the core).
    chunks::validate_session(&args.session)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let compose = chunks::Compose {
        session: &args.session,
        output_path: &args.output_path,
        separator: args.separator.into_bytes(),
        mode: args.mode,
        expected_prev_sha256: expected,
        cleanup: args.cleanup,
        classify: args.classify,
        keyed: request.keyed(),
    };
    let composed = chunks::compose(store, &request.caller(store), compose)?;
    to_value(&ChunkComposeResult::from((args.session, composed)))
}

fn run_chunk_preview(store: &Store, raw: Value) -> Result<Value> {
    let args: ChunkPreviewArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    let p = chunks::preview(
        store,
        &args.session,
        args.separator.as_bytes(),
        store.config().max_write_bytes,
    )?;
    let total_bytes = p.content.len() as u64;
    let chunk_count = p.chunk_hashes.len() as u64;
    let content = String::from_utf8(p.content).map_err(|e| Failure::Encoding {
        field: "content".into(),
        reason: format!(
            "the composed content is not UTF-8 ({}); chunk_compose writes it to a file",
            e.utf8_error()
        ),
    })?;
    to_value(&ChunkPreviewResult {
        ok: true,
        session: args.session,
        content,
        chunk_count,
        chunk_hashes: p.chunk_hashes,
        total_bytes,
        preview: true,
    })
}

fn run_chunk_status(store: &Store, raw: Value) -> Result<Value> {
    let args: ChunkStatusArgs = parse_args(raw)?;
    let status = chunks::status(store, &args.session, args.verify)?;
    to_value(&ChunkStatusResult {
        ok: true,
        session: args.session,
        status,
    })
}

fn run_chunk_reset(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<ChunkResetArgs>("chunk_reset", raw)?;
    chunks::validate_session(&args.session)?;
    request.once(store, || {
        let (existed, removed) = chunks::reset(store, &args.session)?;
        to_value(&ChunkResetResult {
            ok: true,
            session: args.session.clone(),
            removed,
            existed,
            idempotent_replay: false,
        })
    })
}
