//! The L2 tools: `chunk_write`, `chunk_append`, `chunk_compose`, `chunk_preview`,
//! `chunk_status`, `chunk_reset`. Argument parsing and result shapes only; the session logic
//! is [`crate::chunks`].

use super::write::{ContentEncoding, WriteMode, decode_content, idempotency_extra, row_str};
use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use crate::chunks::{self, ComposeOptions, ModifiedChunk};
use crate::envelope::{Failure, Result};
use crate::journal::paths::row_fields;
use crate::pipeline::Caller;
use crate::preflight::RejectAt;
use crate::store::Store;
use crate::write::idempotency::Keyed;
use crate::write::idempotency::request_hash;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn caller(svc: &Store, tool: &str) -> Caller {
    Caller {
        caller: svc.caller(),
        tool: tool.into(),
    }
}

/// An index of 0 or below is refused with the session named (range checked in the library).
fn index_arg(session: &str, field: &str, v: Option<i64>) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as u64)),
        Some(n) => Err(Failure::ChunkArgument {
            session: session.into(),
            reason: "index_out_of_range",
            message: format!(
                "{field} must be between 1 and {}, got {n}",
                chunks::MAX_INDEX
            ),
        }),
    }
}

/// Arguments of `chunk_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkWriteArgs {
    /// ^[A-Za-z0-9_-]{1,64}$
    pub session: String,
    #[schemars(range(min = 1))]
    pub index: i64,
    pub content: String,
    /// Chunks the document will have; compose refuses until all exist.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub total_expected: Option<i64>,
    #[serde(default)]
    pub encoding: ContentEncoding,
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `chunk_append`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkAppendArgs {
    /// ^[A-Za-z0-9_-]{1,64}$
    pub session: String,
    pub content: String,
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub total_expected: Option<i64>,
    #[serde(default)]
    pub encoding: ContentEncoding,
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Result of `chunk_write` and `chunk_append`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkWriteResult {
    pub ok: bool,
    pub session: String,
    pub index: u64,
    /// `.resilient_write/chunks/<session>/part-NNN.txt`
    pub chunk_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    /// The session's total_expected after this write, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_expected: Option<u64>,
    /// True when the write was answered from its first call (same idempotency_key).
    #[serde(default)]
    pub idempotent_replay: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Arguments of `chunk_compose`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
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
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Score the whole document, across chunk boundaries; refuse (blocked/content_filter) at
    /// classify_reject_at, keeping the session.
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
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
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
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
    pub exists: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_expected: Option<u64>,
    pub present_indices: Vec<u64>,
    /// Gaps below the highest chunk, and indices up to total_expected not yet written.
    pub missing_indices: Vec<u64>,
    pub chunk_dir: String,
    pub chunk_count: u64,
    pub total_bytes: u64,
    /// Chunks whose content differs from the hash recorded when they were written.
    pub modified_chunks: Vec<ModifiedChunk>,
    /// part-* files that are not resilient-write's (a mixed session).
    pub unrecognised_files: Vec<String>,
    /// ok, missing or corrupt (rebuilt from the chunk files at the next write).
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Whether chunk_compose would accept the session now.
    pub ready: bool,
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
};

fn written(session: String, w: chunks::ChunkWritten) -> Result<Value> {
    to_value(&ChunkWriteResult {
        ok: true,
        session,
        index: w.index,
        chunk_path: w.chunk_path,
        sha256: w.sha256,
        bytes: w.bytes,
        journal_id: w.journal_id,
        total_expected: w.total_expected,
        idempotent_replay: false,
        warnings: w.warnings,
    })
}

/// The first result of a chunk write or append, from its journal row.
fn replayed_chunk(session: String, row: &Map<String, Value>) -> Result<Value> {
    let index = row.get("chunk_index").and_then(Value::as_u64).unwrap_or(0);
    to_value(&ChunkWriteResult {
        ok: true,
        index,
        chunk_path: format!(
            "{}/{}",
            chunks::session_display(&session),
            chunks::part_name(index)
        ),
        session,
        sha256: row_str(row, "sha256"),
        bytes: row.get("bytes").and_then(Value::as_u64).unwrap_or(0),
        journal_id: row_str(row, "journal_id"),
        total_expected: row.get("total_expected").and_then(Value::as_u64),
        idempotent_replay: true,
        warnings: Vec::new(),
    })
}

fn run_chunk_write(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("chunk_write", &raw);
    let args: ChunkWriteArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    let index = index_arg(&args.session, "index", Some(args.index))?;
    keyed_chunk_write(
        svc,
        "chunk_write",
        Keyed {
            key: args.idempotency_key.as_deref(),
            request_sha256: &request_sha256,
        },
        ChunkArgs {
            session: args.session.clone(),
            index,
            total_expected: args.total_expected,
            content: args.content,
            encoding: args.encoding,
            classify: args.classify,
            classify_reject_at: args.classify_reject_at,
        },
    )
}

fn run_chunk_append(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("chunk_append", &raw);
    let args: ChunkAppendArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    keyed_chunk_write(
        svc,
        "chunk_append",
        Keyed {
            key: args.idempotency_key.as_deref(),
            request_sha256: &request_sha256,
        },
        ChunkArgs {
            session: args.session.clone(),
            index: None,
            total_expected: args.total_expected,
            content: args.content,
            encoding: args.encoding,
            classify: args.classify,
            classify_reject_at: args.classify_reject_at,
        },
    )
}

/// What `chunk_write` and `chunk_append` write (`index` `None`: the next one).
struct ChunkArgs {
    session: String,
    index: Option<u64>,
    total_expected: Option<i64>,
    content: String,
    encoding: ContentEncoding,
    classify: bool,
    classify_reject_at: RejectAt,
}

/// Write a chunk, or answer a keyed retry from the journal row of its first call (checked
/// again under the session lock, so two retries racing each other still write once).
fn keyed_chunk_write(svc: &Store, tool: &str, keyed: Keyed<'_>, a: ChunkArgs) -> Result<Value> {
    if let Some(row) = svc.recorded(keyed.key, keyed.request_sha256)? {
        return replayed_chunk(a.session, &row);
    }
    let total = index_arg(&a.session, "total_expected", a.total_expected)?;
    let bytes = decode_content(svc, a.content, a.encoding)?;
    svc.preflight_bytes(&bytes, a.classify, a.classify_reject_at)?;
    let replay = || svc.recorded(keyed.key, keyed.request_sha256);
    let done = chunks::write_chunk(
        svc,
        &caller(svc, tool),
        &a.session,
        a.index,
        bytes,
        total,
        chunks::ChunkWriteOptions {
            extra: idempotency_extra(keyed.key, keyed.request_sha256),
            replay: &replay,
        },
    )?;
    match done {
        Ok(w) => written(a.session, w),
        Err(row) => replayed_chunk(a.session, &row),
    }
}

fn replayed(svc: &Store, args: &ChunkComposeArgs, row: &Map<String, Value>) -> ChunkComposeResult {
    let paths = svc.workspaces().journal_paths();
    let (path, root) = row_fields(row).unwrap_or_default();
    ChunkComposeResult {
        ok: true,
        session: args.session.clone(),
        output_path: paths.shown(path, root).0.into_owned(),
        abs_path: paths.absolute(path, root).display().to_string(),
        sha256: row_str(row, "sha256"),
        bytes: row.get("bytes").and_then(Value::as_u64).unwrap_or(0),
        chunk_count: row.get("chunk_count").and_then(Value::as_u64).unwrap_or(0),
        chunk_hashes: Vec::new(),
        journal_id: row_str(row, "journal_id"),
        mode_applied: row_str(row, "compose_mode"),
        wrote_at: row_str(row, "ts"),
        prev_sha256: row
            .get("prev_sha256")
            .and_then(Value::as_str)
            .map(str::to_string),
        cleaned_up: args.cleanup,
        idempotent_replay: true,
        warnings: Vec::new(),
    }
}

fn run_chunk_compose(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = crate::write::idempotency::request_hash("chunk_compose", &raw);
    let args: ChunkComposeArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let key = args.idempotency_key.as_deref();
    // A replay must not need the session (cleanup may have removed it).
    if let Some(row) = svc.recorded(key, &request_sha256)? {
        return to_value(&replayed(svc, &args, &row));
    }
    let target = svc.workspaces().resolve(&args.output_path, true)?;
    let opts = ComposeOptions {
        separator: args.separator.as_bytes().to_vec(),
        mode: args.mode,
        expected_prev_sha256: expected,
        cleanup: args.cleanup,
        extra: idempotency_extra(key, &request_sha256),
        progress: crate::progress::current(),
        classify: match args.classify {
            true => Some((svc.classifier()?.clone(), args.classify_reject_at)),
            false => None,
        },
    };
    let done = chunks::compose(
        svc,
        &caller(svc, "chunk_compose"),
        &args.session,
        &target,
        opts,
        |_| svc.recorded(key, &request_sha256),
    )?;
    let c = match done {
        Ok(c) => c,
        Err(row) => return to_value(&replayed(svc, &args, &row)),
    };
    to_value(&ChunkComposeResult {
        ok: true,
        session: args.session,
        output_path: target.row_path.path.clone(),
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
        idempotent_replay: false,
        warnings: c.warnings,
    })
}

fn run_chunk_preview(svc: &Store, raw: Value) -> Result<Value> {
    let args: ChunkPreviewArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    let p = chunks::preview(
        svc,
        &args.session,
        args.separator.as_bytes(),
        svc.config().max_write_bytes,
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

fn run_chunk_status(svc: &Store, raw: Value) -> Result<Value> {
    let args: ChunkStatusArgs = parse_args(raw)?;
    let (s, chunk_dir) = chunks::status(svc, &args.session, args.verify)?;
    to_value(&ChunkStatusResult {
        ok: true,
        session: args.session,
        exists: s.exists,
        total_expected: s.total_expected,
        present_indices: s.present_indices,
        missing_indices: s.missing_indices,
        chunk_dir,
        chunk_count: s.chunk_count,
        total_bytes: s.total_bytes,
        modified_chunks: s.modified,
        unrecognised_files: s.unrecognised_files,
        manifest: s.manifest,
        created_at: s.created_at,
        updated_at: s.updated_at,
        ready: s.ready,
    })
}

fn run_chunk_reset(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("chunk_reset", &raw);
    let args: ChunkResetArgs = parse_args(raw)?;
    chunks::validate_session(&args.session)?;
    let key = args.idempotency_key.as_deref();
    svc.once("chunk_reset", key, &request_sha256, true, || {
        let (existed, removed) = chunks::reset(svc, &args.session)?;
        to_value(&ChunkResetResult {
            ok: true,
            session: args.session.clone(),
            removed,
            existed,
            idempotent_replay: false,
        })
    })
}
