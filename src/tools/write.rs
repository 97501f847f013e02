//! `safe_write` and `safe_replace` (L1): the agent-facing writing tools. Both resolve the path
//! beneath a workspace, decide under the pipeline's lock (mode, `expected_prev_sha256`,
//! idempotency key, edits) and let [`crate::pipeline::Pipeline::commit`] do the durable part.

use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use crate::edit::Edit;
use crate::envelope::{Failure, Result};
use crate::files;
use crate::pipeline::{Caller, Outcome};
use crate::preflight::RejectAt;
use crate::store::Store;
use crate::workspace::Target;
use crate::write::idempotency::Keyed;
pub use crate::write::idempotency::idempotency_extra;
use crate::write::intent;
pub use crate::write::intent::WriteMode;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How `content` is encoded in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
pub enum ContentEncoding {
    #[default]
    #[serde(rename = "utf-8", alias = "utf8")]
    Utf8,
    #[serde(rename = "base64")]
    Base64,
}

/// Arguments of `safe_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SafeWriteArgs {
    /// Relative to the working directory, or absolute inside a workspace.
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
    /// Score only what the edit adds.
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
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
};

/// Decode `content` per `encoding` and enforce the size cap.
pub fn decode_content(svc: &Store, content: String, encoding: ContentEncoding) -> Result<Vec<u8>> {
    let limit = svc.config().max_write_bytes;
    let check = |n: usize| intent::within_limit("content", n as u64, limit);
    match encoding {
        ContentEncoding::Utf8 => {
            check(content.len())?;
            Ok(content.into_bytes())
        }
        ContentEncoding::Base64 => {
            check(content.len() / 4 * 3)?;
            base64::engine::general_purpose::STANDARD
                .decode(content.trim())
                .map_err(|e| Failure::Encoding {
                    field: "content".into(),
                    reason: format!("invalid base64: {e}"),
                })
        }
    }
}

/// A string field of a journal row (empty when absent).
pub(crate) fn row_str(row: &Map<String, Value>, k: &str) -> String {
    row.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn write_result(target: &Target, o: Outcome, replacements: Option<usize>) -> WriteResult {
    WriteResult {
        ok: true,
        path: target.row_path.path.clone(),
        abs_path: o.abs_path.display().to_string(),
        sha256: o.sha256,
        bytes: o.bytes,
        mode_applied: o.mode_label,
        journal_id: o.journal_id,
        wrote_at: o.wrote_at,
        prev_sha256: o.prev_sha256,
        replacements,
        idempotent_replay: false,
        detached_hardlinks: o.detached_hardlinks,
        warnings: o.warnings,
    }
}

/// The recorded result of an earlier call on `target` with the same idempotency key.
fn replayed_write(target: &Target, row: &Map<String, Value>) -> WriteResult {
    WriteResult {
        ok: true,
        path: target.row_path.path.clone(),
        abs_path: target.abs_path.display().to_string(),
        sha256: row_str(row, "sha256"),
        bytes: row.get("bytes").and_then(Value::as_u64).unwrap_or(0),
        mode_applied: row_str(row, "mode"),
        journal_id: row_str(row, "journal_id"),
        wrote_at: row_str(row, "ts"),
        prev_sha256: row
            .get("prev_sha256")
            .and_then(Value::as_str)
            .map(str::to_string),
        replacements: row
            .get("replacements")
            .and_then(Value::as_u64)
            .map(|n| n as usize),
        idempotent_replay: true,
        detached_hardlinks: 0,
        warnings: Vec::new(),
    }
}

fn caller(svc: &Store, tool: &str) -> Caller {
    Caller {
        caller: svc.caller(),
        tool: tool.into(),
    }
}

fn run_safe_write(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = crate::write::idempotency::request_hash("safe_write", &raw);
    let args: SafeWriteArgs = parse_args(raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let bytes = decode_content(svc, args.content, args.encoding)?;
    svc.preflight_bytes(&bytes, args.classify, args.classify_reject_at)?;
    let target = svc.workspaces().resolve(&args.path, true)?;
    let path = args.path.as_str();
    let written = files::put(
        svc,
        &caller(svc, "safe_write"),
        files::Put {
            shown: path,
            target: &target,
            bytes,
            mode: args.mode,
            expected_prev_sha256: expected.as_deref(),
            keyed: Keyed {
                key: args.idempotency_key.as_deref(),
                request_sha256: &request_sha256,
            },
        },
    )?;
    to_value(&match written {
        files::Written::Applied(o) => write_result(&target, o, None),
        files::Written::Replayed(row) => replayed_write(&target, &row),
    })
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

fn run_safe_replace(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = crate::write::idempotency::request_hash("safe_replace", &raw);
    let args: SafeReplaceArgs = parse_args(raw)?;
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let edits = edits_from(
        args.edits.as_deref(),
        args.old_string.as_deref(),
        args.new_string.as_deref(),
        args.count,
    )?;
    let target = svc.workspaces().resolve(&args.path, false)?;
    let path = args.path.as_str();
    let replaced = files::replace(
        svc,
        &caller(svc, "safe_replace"),
        files::Replace {
            shown: path,
            target: &target,
            edits: &edits,
            expected_prev_sha256: expected.as_deref(),
            classify: args.classify,
            reject_at: args.classify_reject_at,
            dry_run: args.dry_run,
            keyed: Keyed {
                key: args.idempotency_key.as_deref(),
                request_sha256: &request_sha256,
            },
        },
    )?;
    let edited = |e: files::Edited, dry_run: bool| ReplaceResult {
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
    let result = match replaced {
        files::Replaced::Applied(e, o) => ReplaceResult {
            sha256: o.sha256,
            bytes: o.bytes,
            journal_id: Some(o.journal_id),
            wrote_at: Some(o.wrote_at),
            detached_hardlinks: o.detached_hardlinks,
            warnings: o.warnings,
            ..edited(e, false)
        },
        files::Replaced::DryRun(e, diff) => ReplaceResult {
            diff: Some(diff),
            ..edited(e, true)
        },
        files::Replaced::Replayed(row) => {
            let w = replayed_write(&target, &row);
            ReplaceResult {
                ok: true,
                path: w.path,
                abs_path: w.abs_path,
                sha256: w.sha256,
                bytes: w.bytes,
                mode_applied: w.mode_applied,
                replacements: w.replacements.unwrap_or(0),
                prev_sha256: w.prev_sha256.unwrap_or_default(),
                journal_id: Some(w.journal_id),
                wrote_at: Some(w.wrote_at),
                dry_run: false,
                diff: None,
                idempotent_replay: true,
                detached_hardlinks: 0,
                warnings: Vec::new(),
            }
        }
    };
    to_value(&result)
}
