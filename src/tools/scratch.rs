//! The L4 tools: `scratch_put`, `scratch_ref`, `scratch_get`. Argument parsing and result
//! shapes only; the store is [`resilient_write_core::scratch`].

use super::errors::{FailureCode as C, KEYED, PIPELINE, STATE};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::write::{Content, ContentEncoding};
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use base64::Engine;
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::scratch::{self, Blob, Deposit, Found, SkippedLine};
use resilient_write_core::store::Store;
use resilient_write_core::write::idempotency::Answer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `scratch_put`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScratchPutArgs {
    #[serde(flatten)]
    pub content: Content,
    /// A name to find it by with scratch_ref.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(flatten)]
    pub key: IdempotencyKey,
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
    #[serde(flatten)]
    pub blob: Blob,
    /// The original's name for `dedup`.
    pub deduped: bool,
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
    #[serde(flatten)]
    pub found: Found,
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
    errors: &[STATE, PIPELINE, KEYED, &[C::Encoding]],
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
    errors: &[STATE, &[C::ScratchNotFound, C::InvalidArguments]],
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
    errors: &[
        STATE,
        &[
            C::ScratchNotFound,
            C::ScratchGetDisabled,
            C::Encoding,
            C::Corruption,
        ],
    ],
};

/// Checked at each deposit, so a .gitignore fixed mid-session silences it.
fn gitignore_warnings(store: &Store) -> Vec<ScratchWarning> {
    store
        .state_dir()
        .parent()
        .and_then(resilient_write_core::store::gitignore_note)
        .map(|hint| ScratchWarning {
            reason: "state_dir_not_gitignored".into(),
            hint,
        })
        .into_iter()
        .collect()
}

impl ScratchPutResult {
    /// A deposit's result, warned about a state directory git would commit.
    fn new(store: &Store, answer: Answer<Deposit>) -> Self {
        let idempotent_replay = answer.replayed();
        let d = answer.into_inner();
        let mut warnings = gitignore_warnings(store);
        warnings.extend(d.warnings.into_iter().map(|w| ScratchWarning {
            reason: "scratch".into(),
            hint: w,
        }));
        ScratchPutResult {
            ok: true,
            deduped: d.blob.dedup,
            blob: d.blob,
            idempotent_replay,
            warnings,
        }
    }
}

fn run_scratch_put(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<ScratchPutArgs>("scratch_put", raw)?;
    let put = scratch::Put {
        content: args.content,
        label: args.label.as_deref(),
        content_type: args.content_type.as_deref(),
        notes: args.notes.as_deref(),
        keyed: request.keyed(),
    };
    let deposited = scratch::put(store, &request.caller(store), put)?;
    to_value(&ScratchPutResult::new(store, deposited))
}

fn run_scratch_ref(store: &Store, raw: Value) -> Result<Value> {
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
    let found = scratch::find(store, sha, args.label)?;
    to_value(&ScratchRefResult { ok: true, found })
}

fn run_scratch_get(store: &Store, raw: Value) -> Result<Value> {
    // The switch is checked before anything else: a write-only scratchpad says so even to a
    // malformed request.
    if let Some(by) = &store.config().scratch_get_disabled {
        return Err(Failure::ScratchGetDisabled { by: by.clone() });
    }
    let args: ScratchGetArgs = parse_args(raw)?;
    let sha = scratch::parse_sha256(&args.sha256)?;
    let bytes = scratch::get(store, &sha)?;
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
    let described = scratch::describe(store, &sha);
    to_value(&ScratchGetResult {
        ok: true,
        content,
        encoding: encoding.into(),
        bytes: bytes.len() as u64,
        content_type: described.content_type,
        label: described.label,
        sha256: sha,
        skipped_lines: described.skipped_lines,
    })
}
