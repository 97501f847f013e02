//! Transaction tools (beyond the paper): `tx_begin`, `tx_write`, `tx_replace`, `tx_status`,
//! `tx_commit`, `tx_rollback`. Arguments are checked like `safe_write`'s and `safe_replace`'s
//! (same decoding, size cap, `expected_prev_sha256` and edit semantics); the durable part is
//! [`resilient_write_core::tx`].

use super::errors::{EDIT, FailureCode as C, KEYED, PATH, PIPELINE, PRECONDITION, SCREEN, STATE};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::schema::describe;
use super::write::{CLASSIFY_CONTENT, Content, EditArg, WHOLE_CONTENT, WriteMode, edits_from, one};
use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use resilient_write_core::envelope::Result;
use resilient_write_core::policy::active::Classify;
use resilient_write_core::store::Store;
use resilient_write_core::tx::{self, CommitReport, CommittedFile, StagedOp};
use resilient_write_core::write::idempotency::Answer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    #[serde(flatten)]
    pub key: IdempotencyKey,
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
#[schemars(transform = describe("content", WHOLE_CONTENT))]
#[schemars(transform = describe("classify", CLASSIFY_CONTENT))]
pub struct TxWriteArgs {
    /// The transaction (from tx_begin).
    pub tx_id: String,
    pub path: String,
    #[serde(flatten)]
    pub content: Content,
    /// create refuses an existing file.
    #[serde(default)]
    pub mode: WriteMode,
    /// The SHA-256 the file must have now, else stale_precondition.
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    #[serde(flatten)]
    pub classify: Classify,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Arguments of `tx_replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = describe(
    "classify",
    "Score what the edit adds; refuse (blocked/content_filter) at classify_reject_at."
))]
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
    #[serde(flatten)]
    pub classify: Classify,
    #[serde(flatten)]
    pub key: IdempotencyKey,
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
    #[serde(flatten)]
    pub key: IdempotencyKey,
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

impl From<&StagedOp> for StagedFile {
    fn from(op: &StagedOp) -> Self {
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
}

impl From<Answer<CommitReport>> for TxCommitResult {
    fn from(answer: Answer<CommitReport>) -> Self {
        let idempotent_replay = answer.replayed();
        let c = answer.into_inner();
        TxCommitResult {
            ok: true,
            tx_id: c.tx_id,
            committed_at: c.committed_at,
            files: c.files,
            idempotent_replay,
        }
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
    errors: &[STATE, KEYED],
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
    errors: &[
        PATH,
        SCREEN,
        KEYED,
        PRECONDITION,
        &[C::TxNotOpen, C::TargetMissing, C::TooLarge, C::Encoding],
    ],
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
    errors: &[PATH, SCREEN, KEYED, EDIT, &[C::TxNotOpen]],
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
    errors: &[STATE, &[C::TxNotOpen]],
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
    errors: &[PATH, PIPELINE, KEYED, &[C::TxNotOpen, C::TxConflict]],
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
    errors: &[STATE, KEYED, &[C::TxNotOpen]],
};

fn run_tx_begin(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<TxBeginArgs>("tx_begin", raw)?;
    request.once(store, || {
        let m = tx::begin(store, args.label.clone(), args.timeout)?;
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
        staged: StagedFile::from(&op),
        staged_count,
        idempotent_replay: false,
    })
}

fn run_tx_write(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<TxWriteArgs>("tx_write", raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    request.once(store, || {
        let bytes = args.content.decode(store.config().max_write_bytes)?;
        let c = args.classify;
        store
            .policy()
            .preflight_bytes(&bytes, c.classify, c.classify_reject_at)?;
        let op = tx::stage_write(
            store,
            &args.tx_id,
            &args.path,
            bytes,
            args.mode,
            expected.as_deref(),
        )?;
        stage_result(&args.tx_id, op)
    })
}

fn run_tx_replace(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<TxReplaceArgs>("tx_replace", raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let edits = edits_from(
        args.edits.as_deref(),
        args.old_string.as_deref(),
        args.new_string.as_deref(),
        args.count,
    )?;
    request.once(store, || {
        let op = tx::stage_replace(
            store,
            &args.tx_id,
            &args.path,
            &edits,
            expected.as_deref(),
            args.classify.classify,
            args.classify.classify_reject_at,
        )?;
        stage_result(&args.tx_id, op)
    })
}

fn run_tx_status(store: &Store, raw: Value) -> Result<Value> {
    let args: TxIdArgs = parse_args(raw)?;
    let (m, current) = tx::status(store, &args.tx_id)?;
    let files = m
        .ops
        .iter()
        .zip(current)
        .map(|(op, cur)| StatusFile {
            conflict: cur != op.base_sha256,
            current_sha256: cur,
            staged: StagedFile::from(op),
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

fn run_tx_commit(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<TxKeyedArgs>("tx_commit", raw)?;
    request.once(store, || {
        to_value(&TxCommitResult::from(tx::commit_or_replay(
            store,
            &args.tx_id,
        )?))
    })
}

fn run_tx_rollback(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<TxKeyedArgs>("tx_rollback", raw)?;
    request.once(store, || {
        let n = tx::rollback(store, &args.tx_id)?;
        to_value(&TxRollbackResult {
            ok: true,
            tx_id: args.tx_id.clone(),
            discarded: n,
            idempotent_replay: false,
        })
    })
}
