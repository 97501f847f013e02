//! `safe_write` and `safe_replace` (L1): the agent-facing writing tools. Argument parsing and
//! result shapes only; the writes (replay, preconditions, L0 check of an edit, size limit,
//! the pipeline) are [`resilient_write_core::files`].

use super::errors::{EDIT, FailureCode as C, KEYED, PATH, PIPELINE, PRECONDITION, SCREEN};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::schema::describe;
use super::{ToolSpec, is_false, parse_expected_hash, result_schema, schema, to_value};
use resilient_write_core::edit::Edit;
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::files::{self, Edited, Replaced};
use resilient_write_core::policy::active::Classify;
use resilient_write_core::store::Store;
use resilient_write_core::workspace::Target;
pub use resilient_write_core::write::content::{Content, ContentEncoding};
use resilient_write_core::write::idempotency::Answer;
pub use resilient_write_core::write::intent::WriteMode;
use resilient_write_core::write::pipeline::Outcome;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `content` is to `safe_write` and `tx_write`.
pub(crate) const WHOLE_CONTENT: &str = "The whole file, or with append what to add.";
/// What `classify` scores for `safe_write` and `tx_write`.
pub(crate) const CLASSIFY_CONTENT: &str =
    "Score it with risk_score first; refuse (blocked/content_filter) at classify_reject_at.";

/// Arguments of `safe_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = describe("content", WHOLE_CONTENT))]
#[schemars(transform = describe("classify", CLASSIFY_CONTENT))]
pub struct SafeWriteArgs {
    /// Relative to the working directory, or absolute inside a workspace.
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

// One edit of `safe_replace`'s `edits` list (no doc comment: it would be published as the
// items' description, which `edits` already gives).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArg {
    pub old_string: String,
    pub new_string: String,
    #[serde(default = "one")]
    pub count: i64,
}

pub(crate) fn one() -> i64 {
    1
}

/// Arguments of `safe_replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = describe("classify", "Score only what the edit adds."))]
pub struct SafeReplaceArgs {
    pub path: String,
    /// Exact text to find, whitespace included.
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
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    /// Return the unified diff; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    #[serde(flatten)]
    pub classify: Classify,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// Result of `safe_write` (and of `safe_replace`, which adds `replacements`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WriteResult {
    pub ok: bool,
    /// The file's path relative to its workspace root, with `/` separators: what the journal
    /// row records (after following a symlink inside the workspace).
    pub path: String,
    /// The absolute path written (after following a symlink inside the workspace).
    pub abs_path: String,
    /// SHA-256 of the file's new content (verified by reading it back).
    pub sha256: String,
    pub bytes: u64,
    /// create, overwrite, append or replace: what actually happened.
    pub mode_applied: String,
    pub journal_id: String,
    /// RFC 3339 UTC time of the write.
    pub wrote_at: String,
    /// SHA-256 of the content before the write (absent when the file was created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_sha256: Option<String>,
    /// Number of replacements made (safe_replace only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacements: Option<usize>,
    /// True when this is the recorded result of an earlier call with the same idempotency key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
    /// Other hard links of the previous file, which keep the old content.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub detached_hardlinks: u64,
    /// Non-fatal notes (an owner that could not be kept, a directory fsync that failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Result of `safe_replace`: a write result, or with `dry_run` the diff that would apply.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReplaceResult {
    pub ok: bool,
    /// The file's path relative to its workspace root (as in the journal).
    pub path: String,
    pub abs_path: String,
    /// SHA-256 of the new content (would-be content on a dry run).
    pub sha256: String,
    pub bytes: u64,
    /// replace
    pub mode_applied: String,
    pub replacements: usize,
    /// SHA-256 of the content before the edit.
    pub prev_sha256: String,
    /// Absent on a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_id: Option<String>,
    /// Absent on a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrote_at: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// Unified diff of the change (dry run only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub detached_hardlinks: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub const SAFE_WRITE: ToolSpec = ToolSpec {
    name: "safe_write",
    title: "Durable file write",
    description: "Create, overwrite or append to a file instead of a raw write: atomic (temp, fsync, \
        SHA-256 read-back, rename), journaled. A failure leaves the file intact and returns \
        an envelope {error, reason_hint, suggested_action, retry_budget, context} to branch \
        on.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<SafeWriteArgs>,
    output_schema: result_schema::<WriteResult>,
    run: run_safe_write,
    errors: &[PATH, PIPELINE, SCREEN, KEYED, PRECONDITION, &[C::Encoding]],
};

pub const SAFE_REPLACE: ToolSpec = ToolSpec {
    name: "safe_replace",
    title: "Durable exact-match edit",
    description: "Edit an existing file: replace old_string with new_string (or apply edits, all or \
        nothing) through safe_write's pipeline. A miss returns context.nearest (line, \
        similarity, diff) so you can fix old_string without re-reading the file.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<SafeReplaceArgs>,
    output_schema: result_schema::<ReplaceResult>,
    run: run_safe_replace,
    errors: &[PATH, PIPELINE, SCREEN, KEYED, EDIT],
};

impl From<(&Target, Answer<Outcome>)> for WriteResult {
    fn from((target, answer): (&Target, Answer<Outcome>)) -> Self {
        let idempotent_replay = answer.replayed();
        let o = answer.into_inner();
        WriteResult {
            ok: true,
            path: target.row_path.path.clone(),
            abs_path: o.abs_path.display().to_string(),
            sha256: o.sha256,
            bytes: o.bytes,
            mode_applied: o.mode,
            journal_id: o.journal_id,
            wrote_at: o.wrote_at,
            prev_sha256: o.prev_sha256,
            replacements: None,
            idempotent_replay,
            detached_hardlinks: o.detached_hardlinks,
            warnings: o.warnings,
        }
    }
}

impl From<(&Target, Replaced)> for ReplaceResult {
    fn from((target, replaced): (&Target, Replaced)) -> Self {
        let edited = |e: Edited, dry_run: bool| ReplaceResult {
            ok: true,
            path: target.row_path.path.clone(),
            abs_path: target.abs_path.display().to_string(),
            sha256: e.sha256,
            bytes: e.bytes,
            mode_applied: "replace".into(),
            replacements: e.replacements,
            prev_sha256: e.prev_sha256,
            journal_id: None,
            wrote_at: None,
            dry_run,
            diff: None,
            idempotent_replay: false,
            detached_hardlinks: 0,
            warnings: Vec::new(),
        };
        let written = |e: Edited, o: Outcome, idempotent_replay: bool| ReplaceResult {
            sha256: o.sha256,
            bytes: o.bytes,
            mode_applied: o.mode,
            journal_id: Some(o.journal_id),
            wrote_at: Some(o.wrote_at),
            idempotent_replay,
            detached_hardlinks: o.detached_hardlinks,
            warnings: o.warnings,
            ..edited(e, false)
        };
        match replaced {
            Replaced::Applied(e, o) => written(e, o, false),
            Replaced::Replayed(e, o) => written(e, o, true),
            Replaced::DryRun(e, diff) => ReplaceResult {
                diff: Some(diff),
                ..edited(e, true)
            },
        }
    }
}

fn run_safe_write(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<SafeWriteArgs>("safe_write", raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let bytes = args.content.decode(store.config().max_write_bytes)?;
    let c = args.classify;
    store
        .policy()
        .preflight_bytes(&bytes, c.classify, c.classify_reject_at)?;
    let target = store.workspaces().resolve(&args.path, true)?;
    let put = files::Put {
        shown: &args.path,
        target: &target,
        bytes,
        mode: args.mode,
        expected_prev_sha256: expected.as_deref(),
        keyed: request.keyed(),
    };
    let written = files::put(store, &request.caller(store), put)?;
    to_value(&WriteResult::from((&target, written)))
}

/// The edits of a replace request: `old_string`/`new_string`/`count`, or a non-empty `edits`
/// list (shared by `safe_replace` and `tx_replace`).
pub fn edits_from(
    list: Option<&[EditArg]>,
    old: Option<&str>,
    new: Option<&str>,
    count: i64,
) -> Result<Vec<Edit>> {
    match (list, old, new) {
        (Some(list), None, None) if !list.is_empty() => Ok(list
            .iter()
            .map(|e| Edit {
                old_string: e.old_string.clone(),
                new_string: e.new_string.clone(),
                count: e.count,
            })
            .collect()),
        (None, Some(old), Some(new)) => Ok(vec![Edit {
            old_string: old.to_string(),
            new_string: new.to_string(),
            count,
        }]),
        _ => Err(Failure::InvalidArguments {
            message: "give either old_string and new_string, or a non-empty edits list".into(),
        }),
    }
}

fn run_safe_replace(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<SafeReplaceArgs>("safe_replace", raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let edits = edits_from(
        args.edits.as_deref(),
        args.old_string.as_deref(),
        args.new_string.as_deref(),
        args.count,
    )?;
    let target = store.workspaces().resolve(&args.path, false)?;
    let replace = files::Replace {
        shown: &args.path,
        target: &target,
        edits: &edits,
        expected_prev_sha256: expected.as_deref(),
        classify: args.classify,
        dry_run: args.dry_run,
        keyed: request.keyed(),
    };
    let replaced = files::replace(store, &request.caller(store), replace)?;
    to_value(&ReplaceResult::from((&target, replaced)))
}
