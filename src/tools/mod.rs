//! The tool catalogue: each tool's name, description, truthful annotations, and input and
//! output JSON Schemas derived from the Rust types its handler accepts and returns (so the
//! published schemas cannot drift from the code), plus the handler itself.
//!
//! Front ends list [`catalog`] and dispatch through [`crate::service::Service::call`].

use crate::envelope::{Failure, Result};
use crate::service::{Service, ToolNames};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod chunks;
pub mod journal_tail;
pub mod scratch;
pub mod write;

/// One tool.
pub struct ToolSpec {
    /// Unprefixed name (`safe_write`).
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub input_schema: fn() -> Value,
    pub output_schema: fn() -> Value,
    pub run: fn(&Service, Value) -> Result<Value>,
}

/// The JSON Schema of `T`, as published.
pub fn schema<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Value::Object(m) = &mut v {
        // Some clients reject a `$schema` they do not know; the dialect is 2020-12 either way.
        m.remove("$schema");
    }
    v
}

/// Every tool, in listing order.
pub fn catalog() -> &'static [ToolSpec] {
    static CATALOG: &[ToolSpec] = &[
        write::SAFE_WRITE,
        write::SAFE_REPLACE,
        journal_tail::JOURNAL_TAIL,
        chunks::CHUNK_WRITE,
        chunks::CHUNK_APPEND,
        chunks::CHUNK_COMPOSE,
        chunks::CHUNK_PREVIEW,
        chunks::CHUNK_STATUS,
        chunks::CHUNK_RESET,
        scratch::SCRATCH_PUT,
        scratch::SCRATCH_REF,
        scratch::SCRATCH_GET,
    ];
    CATALOG
}

/// The tool called `name`: `rw_x`, `rw.x` or bare `x`.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    let bare = name
        .strip_prefix("rw_")
        .or_else(|| name.strip_prefix("rw."))
        .unwrap_or(name);
    catalog().iter().find(|t| t.name == bare)
}

/// The name a tool is listed under.
pub fn listed_name(name: &str, style: ToolNames) -> String {
    match style {
        ToolNames::Underscore => format!("rw_{name}"),
        ToolNames::Dotted => format!("rw.{name}"),
    }
}

/// Deserialise a tool's arguments, turning every problem into a typed failure. A string that
/// is not valid Unicode (e.g. a lone surrogate escape) is an encoding failure.
pub fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T> {
    if let Some(field) = bad_unicode_field(&args, "") {
        return Err(Failure::Encoding {
            field,
            reason: "not valid Unicode (a lone UTF-16 surrogate escape or bytes that are not \
                UTF-8); send valid UTF-8 text, or binary content base64-encoded with \
                encoding=base64"
                .into(),
        });
    }
    serde_json::from_value(args).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("surrogate") || msg.contains("unicode") {
            Failure::Encoding {
                field: "arguments".into(),
                reason: msg,
            }
        } else {
            Failure::InvalidArguments { message: msg }
        }
    })
}

/// The path of the first string in `v` carrying the transport's bad-Unicode sentinel.
fn bad_unicode_field(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::String(s) if s.contains(crate::stdio::BAD_UNICODE_SENTINEL) => Some(if at.is_empty() {
            "arguments".into()
        } else {
            at.to_string()
        }),
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            let p = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            bad_unicode_field(v, &p)
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| bad_unicode_field(v, &format!("{at}[{i}]"))),
        _ => None,
    }
}

/// Serialise a result; results are plain data, so this cannot fail in practice.
pub fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Failure::Internal(format!("serialising result: {e}")))
}

/// Parse an optional `expected_prev_sha256`: 64 hex digits, compared in lowercase.
pub fn parse_expected_hash(field: &str, v: Option<&str>) -> Result<Option<String>> {
    match v {
        None => Ok(None),
        Some(h) if crate::hash::is_sha256_hex(h) => Ok(Some(h.to_ascii_lowercase())),
        Some(h) => Err(Failure::InvalidArguments {
            message: format!(
                "{field} must be 64 hex digits (a SHA-256), got {} characters",
                h.chars().count()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_and_bare_names_find_a_tool() {
        assert_eq!(find("rw_safe_write").map(|t| t.name), Some("safe_write"));
        assert_eq!(find("rw.safe_write").map(|t| t.name), Some("safe_write"));
        assert_eq!(find("safe_write").map(|t| t.name), Some("safe_write"));
        assert!(find("rw_nope").is_none());
    }

    #[test]
    fn listed_names_fit_every_clients_rules_with_headroom() {
        let re = regex::Regex::new("^[a-z0-9_]{1,40}$").unwrap();
        for t in catalog() {
            let n = listed_name(t.name, ToolNames::Underscore);
            assert!(re.is_match(&n), "{n}");
        }
    }

    #[test]
    fn every_schema_is_an_object_schema() {
        for t in catalog() {
            for s in [(t.input_schema)(), (t.output_schema)()] {
                assert_eq!(s["type"], "object", "{}", t.name);
            }
        }
    }
}
