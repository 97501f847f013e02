//! Transaction tools (beyond the paper): `tx_begin`, `tx_write`, `tx_replace`, `tx_status`,
//! `tx_commit`, `tx_rollback`. Arguments are checked like `safe_write`'s and `safe_replace`'s
//! (same decoding, size cap, `expected_prev_sha256` and edit semantics); the durable part is
//! [`crate::tx`].

use super::write::{ContentEncoding, EditArg, WriteMode, decode_content, edits_from, one, row_str};
use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use crate::envelope::{Failure, Result};
use crate::journal::paths::{JournalPaths, row_fields};
use crate::preflight::RejectAt;
use crate::store::Store;
use crate::tx::{self, StagedOp};
use crate::write::idempotency::request_hash;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Arguments of `tx_begin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxBeginArgs {
    /// A name for people reading `tx_status` and the WAL.
    #[serde(default)]
    pub label: Option<String>,
    /// Seconds before an uncommitted transaction is discarded: 3600 when absent, at most
    /// 604800.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Result of `tx_begin`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TxBeginResult {
    pub ok: bool,
    pub tx_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: String,
    /// RFC 3339 time after which the transaction is discarded if not committed.
    pub expires_at: String,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// Arguments of `tx_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxWriteArgs {
    /// The transaction (from tx_begin).
    pub tx_id: String,
    pub path: String,
    /// The whole file, or with append what to add.
    pub content: String,
    /// create refuses an existing file.
    #[serde(default)]
    pub mode: WriteMode,
    /// The SHA-256 the file must have now, else stale_precondition.
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    #[serde(default)]
    pub encoding: ContentEncoding,
    /// Score it with risk_score first; refuse (blocked/content_filter) at classify_reject_at.
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `tx_replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxReplaceArgs {
    pub tx_id: String,
    /// Existing file (or a file staged earlier in this transaction) to edit.
    pub path: String,
    #[serde(default)]
    pub old_string: Option<String>,
    #[serde(default)]
    pub new_string: Option<String>,
    /// Matches required: 1 exactly one, -1 all, N exactly N.
    #[serde(default = "one")]
    pub count: i64,
    /// Instead of old_string/new_string/count: several, applied in order, all or nothing.
    #[serde(default)]
    pub edits: Option<Vec<EditArg>>,
    /// The SHA-256 the file must have now, else stale_precondition.
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    /// Score what the edit adds; refuse (blocked/content_filter) at classify_reject_at.
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// One staged file, as `tx_write`, `tx_replace` and `tx_status` report it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StagedFile {
    pub path: String,
    pub abs_path: String,
    /// What the commit will journal: create, overwrite, append or replace.
    pub mode: String,
    /// SHA-256 of the staged content (the file's hash after commit).
    pub sha256: String,
    pub bytes: u64,
    /// SHA-256 the file had when first staged (absent: it did not exist); the commit requires
    /// it still has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacements: Option<usize>,
}

/// Result of `tx_write` and `tx_replace`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TxStageResult {
    pub ok: bool,
    pub tx_id: String,
    #[serde(flatten)]
    pub staged: StagedFile,
    /// Files staged in the transaction so far.
    pub staged_count: usize,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// Arguments of `tx_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxIdArgs {
    pub tx_id: String,
}

/// Arguments of `tx_commit` and `tx_rollback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxKeyedArgs {
    pub tx_id: String,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// A staged file and the state of its target now.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StatusFile {
    #[serde(flatten)]
    pub staged: StagedFile,
    /// SHA-256 of the target now (absent: missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_sha256: Option<String>,
    /// True when the target changed since it was staged: tx_commit would fail.
    pub conflict: bool,
}

/// Result of `tx_status`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TxStatusResult {
    pub ok: bool,
    pub tx_id: String,
    /// open
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub files: Vec<StatusFile>,
}

/// One file written by `tx_commit`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CommittedFile {
    pub path: String,
    pub abs_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub mode_applied: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_sha256: Option<String>,
    pub journal_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Result of `tx_commit`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TxCommitResult {
    pub ok: bool,
    pub tx_id: String,
    /// When it committed (for a replay: when its first file was journaled).
    pub committed_at: String,
    pub files: Vec<CommittedFile>,
    /// True when the transaction had already committed (a retried tx_commit, or one rolled
    /// forward after a crash): the files are those it wrote then, and nothing was written now.
    #[serde(default)]
    pub idempotent_replay: bool,
}

/// Result of `tx_rollback`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TxRollbackResult {
    pub ok: bool,
    pub tx_id: String,
    /// Staged files discarded.
    pub discarded: usize,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

fn shown(op: &StagedOp) -> StagedFile {
    StagedFile {
        path: op.path.clone(),
        abs_path: op.abs_path.clone(),
        mode: op.mode.clone(),
        sha256: op.sha256.clone(),
        bytes: op.bytes,
        base_sha256: op.base_sha256.clone(),
        replacements: op.replacements,
    }
}

pub const TX_BEGIN: ToolSpec = ToolSpec {
    name: "tx_begin",
    title: "Begin a cross-file transaction",
    description: "Start a transaction: stage writes to several files with tx_write / tx_replace, then \
        tx_commit applies them all or none (also across a crash), or tx_rollback discards \
        them. Returns tx_id.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<TxBeginArgs>,
    output_schema: result_schema::<TxBeginResult>,
    run: run_tx_begin,
};

pub const TX_WRITE: ToolSpec = ToolSpec {
    name: "tx_write",
    title: "Stage a file write in a transaction",
    description: "Stage a write (the arguments of safe_write) in transaction tx_id; nothing is written \
        until tx_commit. If the file changes before the commit, the commit fails with \
        stale_precondition and writes nothing. Staging a path again builds on the staged \
        content.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<TxWriteArgs>,
    output_schema: result_schema::<TxStageResult>,
    run: run_tx_write,
};

pub const TX_REPLACE: ToolSpec = ToolSpec {
    name: "tx_replace",
    title: "Stage an exact-match edit in a transaction",
    description: "Stage an edit (the arguments of safe_replace) in transaction tx_id, applied to the \
        file as staged so far or as on disk. Match errors are reported now; nothing is \
        written until tx_commit.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<TxReplaceArgs>,
    output_schema: result_schema::<TxStageResult>,
    run: run_tx_replace,
};

pub const TX_STATUS: ToolSpec = ToolSpec {
    name: "tx_status",
    title: "Show a transaction",
    description: "The staged files of an open transaction with their staged hashes, and for \
        each whether its target changed since staging (conflict: tx_commit would fail).",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<TxIdArgs>,
    output_schema: result_schema::<TxStatusResult>,
    run: run_tx_status,
};

pub const TX_COMMIT: ToolSpec = ToolSpec {
    name: "tx_commit",
    title: "Commit a transaction",
    description: "Apply every staged file of tx_id, all or nothing: each target must still have the \
        hash it had when staged, else stale_precondition with context.conflicts, nothing \
        written, the transaction left open. A committed transaction asked again answers with \
        what it wrote.",
    read_only: false,
    destructive: true,
    // A retry of a committed transaction answers from the journal and writes nothing.
    idempotent: true,
    input_schema: schema::<TxKeyedArgs>,
    output_schema: result_schema::<TxCommitResult>,
    run: run_tx_commit,
};

pub const TX_ROLLBACK: ToolSpec = ToolSpec {
    name: "tx_rollback",
    title: "Discard a transaction",
    description: "Discard an open transaction and its staged files; no file is touched.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<TxKeyedArgs>,
    output_schema: result_schema::<TxRollbackResult>,
    run: run_tx_rollback,
};

fn run_tx_begin(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("tx_begin", &raw);
    let args: TxBeginArgs = parse_args(raw)?;
    let key = args.idempotency_key.as_deref();
    svc.once("tx_begin", key, &request_sha256, true, || {
        let m = tx::begin(svc, args.label.clone(), args.timeout)?;
        to_value(&TxBeginResult {
            ok: true,
            tx_id: m.tx_id,
            label: m.label,
            created_at: m.created_at,
            expires_at: m.expires_at,
            idempotent_replay: false,
        })
    })
}

fn stage_result(tx_id: &str, (op, staged_count): (StagedOp, usize)) -> Result<Value> {
    to_value(&TxStageResult {
        ok: true,
        tx_id: tx_id.to_string(),
        staged: shown(&op),
        staged_count,
        idempotent_replay: false,
    })
}

fn run_tx_write(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("tx_write", &raw);
    let args: TxWriteArgs = parse_args(raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let key = args.idempotency_key.as_deref();
    svc.once("tx_write", key, &request_sha256, true, || {
        let bytes = decode_content(svc, args.content, args.encoding)?;
        svc.preflight_bytes(&bytes, args.classify, args.classify_reject_at)?;
        let op = tx::stage_write(
            svc,
            &args.tx_id,
            &args.path,
            bytes,
            args.mode,
            expected.as_deref(),
        )?;
        stage_result(&args.tx_id, op)
    })
}

fn run_tx_replace(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("tx_replace", &raw);
    let args: TxReplaceArgs = parse_args(raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let edits = edits_from(
        args.edits.as_deref(),
        args.old_string.as_deref(),
        args.new_string.as_deref(),
        args.count,
    )?;
    let key = args.idempotency_key.as_deref();
    svc.once("tx_replace", key, &request_sha256, true, || {
        let op = tx::stage_replace(
            svc,
            &args.tx_id,
            &args.path,
            &edits,
            expected.as_deref(),
            args.classify,
            args.classify_reject_at,
        )?;
        stage_result(&args.tx_id, op)
    })
}

fn run_tx_status(svc: &Store, raw: Value) -> Result<Value> {
    let args: TxIdArgs = parse_args(raw)?;
    let (m, current) = tx::status(svc, &args.tx_id)?;
    let files = m
        .ops
        .iter()
        .zip(current)
        .map(|(op, cur)| StatusFile {
            conflict: cur != op.base_sha256,
            current_sha256: cur,
            staged: shown(op),
        })
        .collect();
    to_value(&TxStatusResult {
        ok: true,
        tx_id: m.tx_id,
        state: "open".into(),
        label: m.label,
        created_at: m.created_at,
        expires_at: m.expires_at,
        files,
    })
}

/// A committed transaction, from its journal rows.
fn replayed_commit(
    paths: &JournalPaths,
    tx_id: String,
    rows: &[Map<String, Value>],
) -> Result<Value> {
    to_value(&TxCommitResult {
        ok: true,
        tx_id,
        committed_at: rows.first().map(|r| row_str(r, "ts")).unwrap_or_default(),
        files: rows
            .iter()
            .map(|r| CommittedFile {
                path: r
                    .get("tx_path")
                    .and_then(Value::as_str)
                    .map_or_else(|| row_str(r, "path"), str::to_string),
                abs_path: row_fields(r).map_or_else(String::new, |(p, root)| {
                    paths.absolute(p, root).display().to_string()
                }),
                sha256: row_str(r, "sha256"),
                bytes: r.get("bytes").and_then(Value::as_u64).unwrap_or(0),
                mode_applied: row_str(r, "mode"),
                prev_sha256: r
                    .get("prev_sha256")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                journal_id: row_str(r, "journal_id"),
                warnings: Vec::new(),
            })
            .collect(),
        idempotent_replay: true,
    })
}

fn run_tx_commit(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("tx_commit", &raw);
    let args: TxKeyedArgs = parse_args(raw)?;
    let key = args.idempotency_key.as_deref();
    svc.once("tx_commit", key, &request_sha256, true, || {
        commit(svc, &args.tx_id)
    })
}

fn commit(svc: &Store, tx_id: &str) -> Result<Value> {
    let c = match tx::commit(svc, tx_id) {
        Ok(c) => c,
        // Not open: if it committed (its response lost, or rolled forward after a crash),
        // a retry answers as the commit did instead of calling it unknown.
        Err(f @ Failure::TxNotOpen { .. }) => {
            let rows = tx::committed_rows(svc, tx_id)?;
            if rows.is_empty() {
                return Err(f);
            }
            return replayed_commit(&svc.workspaces().journal_paths(), tx_id.to_string(), &rows);
        }
        Err(f) => return Err(f),
    };
    to_value(&TxCommitResult {
        ok: true,
        tx_id: c.tx_id,
        committed_at: c.committed_at,
        files: c
            .files
            .into_iter()
            .map(|(op, o)| CommittedFile {
                path: op.path,
                abs_path: o.abs_path.display().to_string(),
                sha256: o.sha256,
                bytes: o.bytes,
                mode_applied: o.mode_label,
                prev_sha256: o.prev_sha256,
                journal_id: o.journal_id,
                warnings: o.warnings,
            })
            .collect(),
        idempotent_replay: false,
    })
}

fn run_tx_rollback(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("tx_rollback", &raw);
    let args: TxKeyedArgs = parse_args(raw)?;
    let key = args.idempotency_key.as_deref();
    svc.once("tx_rollback", key, &request_sha256, true, || {
        let n = tx::rollback(svc, &args.tx_id)?;
        to_value(&TxRollbackResult {
            ok: true,
            tx_id: args.tx_id.clone(),
            discarded: n,
            idempotent_replay: false,
        })
    })
}
