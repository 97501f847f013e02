//! `validate`: the MCP face of [`resilient_write_core::validate`]. Always `ok: true`; `valid` carries the
//! verdict. Content that is not UTF-8 (sent base64-encoded with `encoding: base64`, or
//! arriving as a lone surrogate the transport could not carry) is a report with one error at
//! the first bad byte, not a failed call.

use super::errors::FailureCode as C;
use super::write::ContentEncoding;
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use base64::Engine;
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::store::Store;
use resilient_write_core::validate::ValidationReport;
use resilient_write_core::write::intent::within_limit;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `validate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    pub content: String,
    /// A format (or alias: yml, py, tex, md); else target_path's extension, else the content
    /// decides.
    #[serde(default)]
    pub format_hint: Option<String>,
    #[serde(default)]
    pub target_path: Option<String>,
    #[serde(default)]
    pub encoding: ContentEncoding,
}

/// Result of `validate`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ValidateResult {
    /// Always true: the call worked; `valid` says whether the content passed.
    pub ok: bool,
    #[serde(flatten)]
    pub report: ValidationReport,
}

pub const VALIDATE: ToolSpec = ToolSpec {
    name: "validate",
    title: "Check a draft's syntax",
    description: "Check a draft's syntax before writing it: json, jsonl, yaml, toml, python, latex, \
        markdown, xml, html. Returns valid and errors[{line, col, message, severity}]; ok is \
        always true.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ValidateArgs>,
    output_schema: result_schema::<ValidateResult>,
    run: run_validate,
    errors: &[&[C::Encoding, C::TooLarge]],
};

fn run_validate(store: &Store, mut raw: Value) -> Result<Value> {
    // A lone surrogate or raw non-UTF-8 bytes in `content` reach us as the transport's
    // sentinel: validating is exactly the place to report them, so take content out before
    // the generic argument check (which would refuse the call) and map each sentinel back to
    // an invalid byte.
    let mut bad_bytes: Option<Vec<u8>> = None;
    if let Some(Value::String(s)) = raw.get_mut("content")
        && s.contains(crate::wire::BAD_UNICODE_SENTINEL)
    {
        let mut bytes = Vec::with_capacity(s.len());
        for (i, part) in s.split(crate::wire::BAD_UNICODE_SENTINEL).enumerate() {
            if i > 0 {
                bytes.push(0xff);
            }
            bytes.extend_from_slice(part.as_bytes());
        }
        bad_bytes = Some(bytes);
        *s = String::new();
    }
    let args: ValidateArgs = parse_args(raw)?;
    let hint = args.format_hint.as_deref();
    let path = args.target_path.as_deref();
    let limit = store.config().max_write_bytes;
    let report = match (bad_bytes, args.encoding) {
        (Some(bytes), _) => resilient_write_core::validate::validate_bytes(&bytes, hint, path),
        (None, ContentEncoding::Utf8) => {
            within_limit("content", args.content.len() as u64, limit)?;
            resilient_write_core::validate::validate(&args.content, hint, path)
        }
        (None, ContentEncoding::Base64) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(args.content.trim())
                .map_err(|e| Failure::Encoding {
                    field: "content".into(),
                    reason: format!("invalid base64: {e}"),
                })?;
            within_limit("content", bytes.len() as u64, limit)?;
            resilient_write_core::validate::validate_bytes(&bytes, hint, path)
        }
    };
    to_value(&ValidateResult { ok: true, report })
}
