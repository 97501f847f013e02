//! The L4 tools: `scratch_put`, `scratch_ref`, `scratch_get`. Argument parsing and result
//! shapes only; the store is [`crate::scratch`].

use super::write::{ContentEncoding, decode_content, idempotency_extra};
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use crate::envelope::{Failure, Result};
use crate::pipeline::Caller;
use crate::scratch::{self, Meta, SkippedLine};
use crate::store::Store;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Arguments of `scratch_put`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScratchPutArgs {
    pub content: String,
    /// A name to find it by with scratch_ref.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub encoding: ContentEncoding,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// A non-fatal note on a scratchpad result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ScratchWarning {
    pub reason: String,
    pub hint: String,
}

/// Result of `scratch_put`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ScratchPutResult {
    pub ok: bool,
    /// The content address.
    pub sha256: String,
    /// `.resilient_write/scratch/<sha256>.bin`
    pub scratch_path: String,
    pub bytes: u64,
    /// True when the same bytes were already stored (only an index row was added).
    pub dedup: bool,
    /// The original's name for `dedup`.
    pub deduped: bool,
    /// Journal id of the blob write (absent when deduplicated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_id: Option<String>,
    /// True when answered from the first call with the same idempotency_key.
    #[serde(default)]
    pub idempotent_replay: bool,
    pub warnings: Vec<ScratchWarning>,
}

/// Arguments of `scratch_ref`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScratchRefArgs {
    #[serde(default)]
    pub sha256: Option<String>,
    /// The latest deposit with this label.
    #[serde(default)]
    pub label: Option<String>,
}

/// Result of `scratch_ref`: the latest matching index entry, flattened, plus aliases.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ScratchRefResult {
    pub ok: bool,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Every distinct label deposited for this blob, in the order of each label's latest
    /// deposit (oldest first).
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// The index row itself (the latest deposit; `deposits` counts the deposits of this
    /// sha256 and label when there were several).
    pub entry: Map<String, Value>,
    pub scratch_path: String,
    /// Whether the blob file is present.
    pub bin_exists: bool,
    /// Index rows matching the query (as the original counts them: by label, the deposits
    /// that carried that label, whichever blob).
    pub alias_count: u64,
    /// Deposits of this blob, under any label.
    pub deposits: u64,
    /// index.jsonl lines skipped as torn or corrupt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_lines: Vec<SkippedLine>,
}

/// Arguments of `scratch_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScratchGetArgs {
    pub sha256: String,
    /// base64 for content that is not UTF-8 (utf-8 refuses it).
    #[serde(default)]
    pub encoding: ContentEncoding,
}

/// Result of `scratch_get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ScratchGetResult {
    pub ok: bool,
    pub sha256: String,
    /// The content, verified against its address.
    pub content: String,
    pub encoding: String,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// index.jsonl lines skipped as torn or corrupt while looking up the label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_lines: Vec<SkippedLine>,
}

pub const SCRATCH_PUT: ToolSpec = ToolSpec {
    name: "scratch_put",
    title: "Deposit material out of the workspace",
    description: "Keep material that must not enter the workspace (credentials, PII, binaries) in the \
        owner-only scratchpad, deduplicated by SHA-256; refer to it by the sha256 returned.",
    read_only: false,
    destructive: false,
    idempotent: false,
    input_schema: schema::<ScratchPutArgs>,
    output_schema: result_schema::<ScratchPutResult>,
    run: run_scratch_put,
};

pub const SCRATCH_REF: ToolSpec = ToolSpec {
    name: "scratch_ref",
    title: "Look up a scratchpad entry",
    description: "Look up a scratchpad deposit by sha256 or label, without its content.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ScratchRefArgs>,
    output_schema: result_schema::<ScratchRefResult>,
    run: run_scratch_ref,
};

pub const SCRATCH_GET: ToolSpec = ToolSpec {
    name: "scratch_get",
    title: "Read scratchpad content",
    description: "A scratchpad deposit's content by sha256, re-hashed on read (mismatch: \
        write_corruption); refused when RW_SCRATCH_DISABLE_GET is set.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ScratchGetArgs>,
    output_schema: result_schema::<ScratchGetResult>,
    run: run_scratch_get,
};

/// Checked at each deposit, so a .gitignore fixed mid-session silences it.
fn gitignore_warnings(svc: &Store) -> Vec<ScratchWarning> {
    svc.state_dir()
        .parent()
        .and_then(crate::store::gitignore_note)
        .map(|hint| ScratchWarning {
            reason: "state_dir_not_gitignored".into(),
            hint,
        })
        .into_iter()
        .collect()
}

/// The first result of a deposit, from its index row's journal row.
fn replayed_put(svc: &Store, row: &Map<String, Value>) -> Result<Value> {
    let sha256 = field(row, "blob_sha256").unwrap_or_default();
    let dedup = row.get("dedup").and_then(Value::as_bool).unwrap_or(false);
    to_value(&ScratchPutResult {
        ok: true,
        scratch_path: scratch::blob_path(&sha256),
        sha256,
        bytes: row.get("blob_bytes").and_then(Value::as_u64).unwrap_or(0),
        dedup,
        deduped: dedup,
        journal_id: field(row, "blob_journal_id"),
        idempotent_replay: true,
        warnings: gitignore_warnings(svc),
    })
}

fn run_scratch_put(svc: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = crate::write::idempotency::request_hash("scratch_put", &raw);
    let args: ScratchPutArgs = parse_args(raw)?;
    let key = args.idempotency_key.as_deref();
    if let Some(row) = svc.recorded(key, &request_sha256)? {
        return replayed_put(svc, &row);
    }
    let encoding = match args.encoding {
        ContentEncoding::Utf8 => "utf-8",
        ContentEncoding::Base64 => "base64",
    };
    let bytes = decode_content(svc, args.content, args.encoding)?;
    let who = Caller {
        caller: svc.caller(),
        tool: "scratch_put".into(),
    };
    let replay = || svc.recorded(key, &request_sha256);
    let done = scratch::deposit_keyed(
        svc,
        &who,
        &bytes,
        &Meta {
            label: args.label.as_deref(),
            content_type: args.content_type.as_deref(),
            notes: args.notes.as_deref(),
            encoding,
        },
        idempotency_extra(key, &request_sha256),
        &replay,
    )?;
    let d = match done {
        Ok(d) => d,
        Err(row) => return replayed_put(svc, &row),
    };
    let mut warnings = gitignore_warnings(svc);
    warnings.extend(d.warnings.into_iter().map(|w| ScratchWarning {
        reason: "scratch".into(),
        hint: w,
    }));
    to_value(&ScratchPutResult {
        ok: true,
        sha256: d.sha256,
        scratch_path: d.scratch_path,
        bytes: d.bytes,
        dedup: d.dedup,
        deduped: d.dedup,
        journal_id: d.journal_id,
        idempotent_replay: false,
        warnings,
    })
}

fn field(row: &Map<String, Value>, k: &str) -> Option<String> {
    row.get(k).and_then(Value::as_str).map(str::to_string)
}

fn run_scratch_ref(svc: &Store, raw: Value) -> Result<Value> {
    let args: ScratchRefArgs = parse_args(raw)?;
    let sha = args
        .sha256
        .as_deref()
        .map(scratch::parse_sha256)
        .transpose()?;
    if sha.is_none() && args.label.is_none() {
        return Err(Failure::InvalidArguments {
            message: "give sha256 or label".into(),
        });
    }
    let (rows, skipped) = scratch::read_index(svc)?;
    // The live view: the same answers before and after `doctor --fix` compacts the index.
    let rows = scratch::live_index(&rows);
    let matching = |r: &Map<String, Value>| {
        sha.as_deref()
            .is_none_or(|h| r.get("sha256").and_then(Value::as_str) == Some(h))
            && args
                .label
                .as_deref()
                .is_none_or(|l| r.get("label").and_then(Value::as_str) == Some(l))
    };
    let matches: u64 = rows
        .iter()
        .filter(|r| matching(r))
        .map(scratch::row_deposits)
        .sum();
    let Some(latest) = rows.iter().rev().find(|r| matching(r)).cloned() else {
        return Err(Failure::ScratchNotFound {
            sha256: sha,
            label: args.label,
        });
    };
    let address = field(&latest, "sha256").unwrap_or_default();
    let aliases: Vec<&Map<String, Value>> = rows
        .iter()
        .filter(|r| r.get("sha256").and_then(Value::as_str) == Some(address.as_str()))
        .collect();
    // One live row per label: in the order of each label's latest deposit.
    let labels: Vec<String> = aliases.iter().filter_map(|r| field(r, "label")).collect();
    let deposits: u64 = aliases.iter().map(|r| scratch::row_deposits(r)).sum();
    to_value(&ScratchRefResult {
        ok: true,
        scratch_path: scratch::blob_path(&address),
        bin_exists: scratch::blob_exists(svc, &address),
        sha256: address,
        label: field(&latest, "label"),
        labels,
        created_at: field(&latest, "created_at"),
        bytes: latest.get("bytes").and_then(Value::as_u64),
        content_type: field(&latest, "content_type"),
        notes: field(&latest, "notes"),
        encoding: field(&latest, "encoding"),
        alias_count: matches,
        deposits,
        entry: latest,
        skipped_lines: skipped,
    })
}

fn run_scratch_get(svc: &Store, raw: Value) -> Result<Value> {
    // The switch is checked before anything else: a write-only scratchpad says so even to a
    // malformed request.
    if svc.config().scratch_get_disabled {
        return Err(Failure::ScratchGetDisabled);
    }
    let args: ScratchGetArgs = parse_args(raw)?;
    let sha = scratch::parse_sha256(&args.sha256)?;
    let bytes = scratch::get(svc, &sha)?;
    let (content, encoding) = match args.encoding {
        ContentEncoding::Base64 => (
            base64::engine::general_purpose::STANDARD.encode(&bytes),
            "base64",
        ),
        ContentEncoding::Utf8 => (
            String::from_utf8(bytes.clone()).map_err(|e| Failure::Encoding {
                field: "content".into(),
                reason: format!(
                    "the blob is not UTF-8 ({}); call again with encoding=base64",
                    e.utf8_error()
                ),
            })?,
            "utf-8",
        ),
    };
    // The content is verified: an unreadable index costs only the label.
    let (rows, skipped) = scratch::read_index(svc).unwrap_or_default();
    let meta = rows
        .iter()
        .rev()
        .find(|r| r.get("sha256").and_then(Value::as_str) == Some(sha.as_str()));
    to_value(&ScratchGetResult {
        ok: true,
        content,
        encoding: encoding.into(),
        bytes: bytes.len() as u64,
        content_type: meta.and_then(|m| field(m, "content_type")),
        label: meta.and_then(|m| field(m, "label")),
        sha256: sha,
        skipped_lines: skipped,
    })
}
