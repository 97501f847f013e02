//! `read` and `stat` (read-only): a workspace file's content or metadata with the SHA-256 an
//! edit's `expected_prev_sha256` compares against. The logic is [`resilient_write_core::read`].

use super::errors::{FailureCode as C, PATH};
use super::write::ContentEncoding;
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use base64::Engine;
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::read::{self, LineRange};
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Relative to the working directory, or absolute beneath a workspace root.
    pub path: String,
    /// First line to return, from 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Last line to return, inclusive; absent: the last line.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub end_line: Option<u64>,
    /// base64 for content that is not UTF-8 (utf-8 refuses it).
    #[serde(default)]
    pub encoding: ContentEncoding,
}

/// Result of `read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReadResult {
    pub ok: bool,
    /// Workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    /// The requested lines (newlines kept), in `encoding`.
    pub content: String,
    pub encoding: ContentEncoding,
    /// SHA-256 of the whole file, even for a slice: pass it as expected_prev_sha256.
    pub sha256: String,
    /// Size of the whole file.
    pub bytes: u64,
    /// Lines in the whole file.
    pub lines: u64,
    /// True when content holds only start_line..=end_line.
    pub slice: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}

/// Arguments of `stat`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatArgs {
    /// File to describe, relative to the working directory or absolute beneath a workspace
    /// root.
    pub path: String,
}

/// Result of `stat`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StatResult {
    pub ok: bool,
    #[serde(flatten)]
    pub stat: read::FileStat,
}

pub const READ: ToolSpec = ToolSpec {
    name: "read",
    title: "Read a file",
    description: "Read a file, or lines start_line..=end_line of it, with the SHA-256 of the whole \
        file to pass as expected_prev_sha256 when you edit it.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ReadArgs>,
    output_schema: result_schema::<ReadResult>,
    run: run_read,
    errors: &[PATH, &[C::TooLarge, C::Encoding]],
};

pub const STAT: ToolSpec = ToolSpec {
    name: "stat",
    title: "Describe a file",
    description: "A file's SHA-256 (for expected_prev_sha256), bytes, lines, mtime and the versions \
        history holds; no content.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<StatArgs>,
    output_schema: result_schema::<StatResult>,
    run: run_stat,
    errors: &[PATH],
};

fn run_read(store: &Store, raw: Value) -> Result<Value> {
    let args: ReadArgs = parse_args(raw)?;
    let range = LineRange {
        start: args.start_line,
        end: args.end_line,
    };
    let limit = store.config().max_write_bytes;
    let file = read::read(store, &args.path, range, limit)?;
    let content = match args.encoding {
        ContentEncoding::Base64 => base64::engine::general_purpose::STANDARD.encode(&file.content),
        ContentEncoding::Utf8 => String::from_utf8(file.content).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            Failure::Encoding {
                field: "content".into(),
                reason: format!(
                    "{} is not UTF-8 text (invalid byte at offset {at} of the content read); \
                     read it with encoding=base64",
                    args.path
                ),
            }
        })?,
    };
    let (start_line, end_line) = file.slice.unzip();
    to_value(&ReadResult {
        ok: true,
        path: file.path,
        abs_path: file.abs_path,
        content,
        encoding: args.encoding,
        sha256: file.sha256,
        bytes: file.bytes,
        lines: file.lines,
        slice: file.slice.is_some(),
        start_line,
        end_line,
    })
}

fn run_stat(store: &Store, raw: Value) -> Result<Value> {
    let args: StatArgs = parse_args(raw)?;
    let st = read::stat(store, &args.path)?;
    to_value(&StatResult { ok: true, stat: st })
}
