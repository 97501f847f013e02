//! The tool catalogue: each tool's name, description, truthful annotations, and input and
//! output JSON Schemas derived from the Rust types its handler accepts and returns (so the
//! published schemas cannot drift from the code), plus the handler itself.
//!
//! Front ends list [`catalog`] and dispatch through [`crate::dispatch::Service::call`].

use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::store::Store;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod analytics;
pub mod args;
pub mod checkpoint;
pub mod chunks;
pub mod errors;
pub mod handoff;
pub mod history;
pub mod journal_tail;
pub mod keyed;
pub mod l0;
pub mod profile;
pub mod read;
pub mod schema;
pub mod scratch;
pub mod toolsets;
pub mod tx;
pub mod validate;
pub mod write;

pub use profile::{ToolListing, ToolProfile};
pub use schema::{result_schema, schema};

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
    pub run: fn(&Store, Value) -> Result<Value>,
    /// The failures this tool can return beyond those of any call ([`errors::ANY_TOOL`]), as
    /// groups ([`errors::PATH`], ...) and single codes: what `docs/reference/tools.md` lists,
    /// checked against the failures bad calls provoke (`tests/reference.rs`).
    pub errors: &'static [&'static [errors::FailureCode]],
}

impl ToolSpec {
    /// [`ToolSpec::errors`] as one sorted list.
    pub fn error_codes(&self) -> Vec<errors::FailureCode> {
        errors::flatten(self.errors)
    }
}

/// `skip_serializing_if` for flags that are usually false (`idempotent_replay`).
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// Every tool, in listing order.
pub fn catalog() -> &'static [ToolSpec] {
    static CATALOG: &[ToolSpec] = &[
        write::SAFE_WRITE,
        write::SAFE_REPLACE,
        read::READ,
        read::STAT,
        journal_tail::JOURNAL_TAIL,
        l0::RISK_SCORE,
        l0::REDACT,
        chunks::CHUNK_WRITE,
        chunks::CHUNK_APPEND,
        chunks::CHUNK_COMPOSE,
        chunks::CHUNK_PREVIEW,
        chunks::CHUNK_STATUS,
        chunks::CHUNK_RESET,
        scratch::SCRATCH_PUT,
        scratch::SCRATCH_REF,
        scratch::SCRATCH_GET,
        validate::VALIDATE,
        handoff::HANDOFF_WRITE,
        handoff::HANDOFF_READ,
        checkpoint::CHECKPOINT,
        checkpoint::CHECKPOINT_READ,
        checkpoint::CHECKPOINT_LIST,
        checkpoint::CHECKPOINT_CLEANUP,
        analytics::ANALYTICS,
        tx::TX_BEGIN,
        tx::TX_WRITE,
        tx::TX_REPLACE,
        tx::TX_STATUS,
        tx::TX_COMMIT,
        tx::TX_ROLLBACK,
        history::HISTORY,
        history::RESTORE,
    ];
    CATALOG
}

/// The catalogue's tool called `name`: `rw_x`, `rw.x` or bare `x`. (The `toolsets` tool acts
/// on an MCP session, not the store: it is [`toolsets::TOOLSETS`], not in the catalogue.)
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    let bare = bare_name(name);
    catalog().iter().find(|t| t.name == bare)
}

/// `name` without its `rw_` or `rw.` prefix.
pub fn bare_name(name: &str) -> &str {
    name.strip_prefix("rw_")
        .or_else(|| name.strip_prefix("rw."))
        .unwrap_or(name)
}

/// How tools are listed (SPEC section 2); calls accept both spellings whatever is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolNames {
    /// `rw_safe_write`: accepted by every client's name rules.
    #[default]
    Underscore,
    /// `rw.safe_write`: the original's spelling.
    Dotted,
}

/// The name a tool is listed under.
pub fn listed_name(name: &str, style: ToolNames) -> String {
    match style {
        ToolNames::Underscore => format!("rw_{name}"),
        ToolNames::Dotted => format!("rw.{name}"),
    }
}

/// Deserialise a tool's arguments, turning every problem into a typed failure. A string that
/// is not valid Unicode (e.g. a lone surrogate escape) is an encoding failure; an argument
/// that is missing, of the wrong type or unknown to the tool's published schema is
/// [`Failure::BadArgument`] naming it, its type and an example ([`args`]).
pub fn parse_args<T: DeserializeOwned + schemars::JsonSchema>(args: Value) -> Result<T> {
    if let Some(bytes) = args.get(crate::wire::OVERSIZE_KEY).and_then(Value::as_u64) {
        return Err(Failure::TooLarge {
            what: "the request message".into(),
            bytes,
            limit: args
                .get(crate::wire::OVERSIZE_LIMIT_KEY)
                .and_then(Value::as_u64)
                .unwrap_or(0),
        });
    }
    if let Some(field) = bad_unicode_field(&args, "") {
        return Err(Failure::Encoding {
            field,
            reason: "not valid Unicode (a lone UTF-16 surrogate escape or bytes that are not \
                UTF-8); send valid UTF-8 text, or binary content base64-encoded with \
                encoding=base64"
                .into(),
        });
    }
    if let Some(problem) = args::check(&args::cached_schema::<T>(), &args) {
        return Err(problem);
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

/// Whether `s` holds [`crate::wire::BAD_UNICODE_SENTINEL`]. It starts with NUL, which text
/// almost never holds: a `memchr` for NUL rejects a megabyte of content at memory speed, where
/// `str::contains` ran its general substring search over the whole of it (2% of a 1 MB write's
/// CPU).
fn holds_sentinel(s: &str) -> bool {
    let (bytes, needle) = (s.as_bytes(), crate::wire::BAD_UNICODE_SENTINEL.as_bytes());
    let mut at = 0;
    while let Some(k) = bytes.get(at..).and_then(|rest| memchr::memchr(0, rest)) {
        if bytes[at + k..].starts_with(needle) {
            return true;
        }
        at += k + 1;
    }
    false
}

/// The path of the first string in `v` carrying the transport's bad-Unicode sentinel.
fn bad_unicode_field(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::String(s) if holds_sentinel(s) => Some(if at.is_empty() {
            "arguments".into()
        } else {
            at.to_string()
        }),
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            let p = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
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
        Some(h) if resilient_write_core::hash::is_sha256_hex(h) => Ok(Some(h.to_ascii_lowercase())),
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
    use serde_json::json;

    #[test]
    fn the_sentinel_is_found_wherever_it_is_and_nowhere_else() {
        let sentinel = crate::wire::BAD_UNICODE_SENTINEL;
        // NULs before it, a sentinel cut short, one at either end, one alone: the same answer
        // as the general substring search, for every placement.
        let pieces = [
            "",
            "a",
            "\u{0}",
            "\u{0}\u{1}",
            "\u{0}\u{1}rw-bad",
            "text\u{0}x",
            "é",
        ];
        let near = &sentinel[..sentinel.len() - 1];
        for before in pieces {
            for after in pieces {
                for middle in ["", sentinel, near] {
                    let s = format!("{before}{middle}{after}");
                    assert_eq!(holds_sentinel(&s), s.contains(sentinel), "{s:?}");
                }
            }
        }
        let field = json!({"content": format!("{}{sentinel}", "x".repeat(100_000))});
        assert_eq!(bad_unicode_field(&field, "").as_deref(), Some("content"));
        assert_eq!(bad_unicode_field(&json!({"content": "\u{0}"}), ""), None);
    }

    /// Arguments many tools share read the same in every tool that describes them (issue 46:
    /// one short wording, learnt once), and an argument a description explains is not
    /// explained again by the tool's description.
    #[test]
    fn shared_arguments_are_described_the_same_short_way_everywhere() {
        let mut wording: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
            Default::default();
        for t in catalog() {
            let input = (t.input_schema)();
            for arg in [
                "idempotency_key",
                "expected_prev_sha256",
                "encoding",
                "classify_reject_at",
            ] {
                if let Some(d) = input["properties"][arg]["description"].as_str() {
                    wording.entry(arg).or_default().insert(d.to_string());
                }
            }
        }
        for (arg, texts) in &wording {
            assert_eq!(texts.len(), 1, "{arg}: {texts:?}");
            let text = texts.iter().next().unwrap();
            assert!(text.len() <= 64, "{arg}: {text}");
        }
        // Enumerated and boolean arguments say their values and defaults in the schema
        // (`enum`, `default`), never again as "(default ...)" in prose.
        for t in catalog() {
            let input = (t.input_schema)();
            for (arg, schema) in input["properties"].as_object().into_iter().flatten() {
                let d = schema["description"].as_str().unwrap_or("");
                assert!(!d.contains("(default"), "{}.{arg}: {d}", t.name);
            }
        }
    }

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

    /// Every subschema in a schema position (properties, items, ...) of `v`, with its path.
    fn boolean_subschemas(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, sub) in m {
                    let p = format!("{path}/{k}");
                    if let ("properties" | "$defs", Value::Object(map)) = (k.as_str(), sub) {
                        for (name, s) in map {
                            if s.is_boolean() {
                                out.push(format!("{p}/{name}"));
                            }
                        }
                    }
                    if k == "items" && sub.is_boolean() {
                        out.push(p.clone());
                    }
                    boolean_subschemas(sub, &p, out);
                }
            }
            Value::Array(list) => {
                for (i, s) in list.iter().enumerate() {
                    boolean_subschemas(s, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn published_schemas_have_no_boolean_property_schemas() {
        let mut found = Vec::new();
        for t in catalog() {
            boolean_subschemas(
                &(t.input_schema)(),
                &format!("{}/input", t.name),
                &mut found,
            );
            boolean_subschemas(
                &(t.output_schema)(),
                &format!("{}/output", t.name),
                &mut found,
            );
        }
        assert!(found.is_empty(), "boolean subschemas: {found:?}");
    }

    #[test]
    fn every_schema_is_an_object_schema() {
        for t in catalog() {
            for s in [(t.input_schema)(), (t.output_schema)()] {
                assert_eq!(s["type"], "object", "{}", t.name);
            }
        }
    }

    #[test]
    fn no_result_field_is_written_as_null() {
        // A field serde always writes must not be an Option written as null: the published
        // output schema has no null type, so such a result would not match it.
        schema::tests::AS_GENERATED.set(true);
        let mut found = Vec::new();
        for t in catalog() {
            schema::tests::required_nullable(&(t.output_schema)(), t.name, &mut found);
        }
        schema::tests::AS_GENERATED.set(false);
        found.sort();
        found.dedup();
        assert!(
            found.is_empty(),
            "{} nullable fields: {found:#?}",
            found.len()
        );
    }

    #[test]
    fn every_writing_tool_takes_an_idempotency_key_and_says_so() {
        let writing: Vec<&ToolSpec> = catalog().iter().filter(|t| !t.read_only).collect();
        assert!(writing.len() >= 17, "{}", writing.len());
        for t in writing {
            let input = (t.input_schema)();
            let key = &input["properties"]["idempotency_key"];
            assert_eq!(key["type"], "string", "{}: {input}", t.name);
            // The argument says what it does; the tool's description does not say it again.
            assert!(
                key["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("same key")),
                "{}: {key}",
                t.name
            );
            assert!(
                !t.description.contains("idempotency_key"),
                "{}: {}",
                t.name,
                t.description
            );
            let output = (t.output_schema)();
            assert_eq!(
                output["properties"]["idempotent_replay"]["type"], "boolean",
                "{}",
                t.name
            );
        }
        // Read-only tools apply nothing: no key.
        for t in catalog().iter().filter(|t| t.read_only) {
            assert!(
                (t.input_schema)()["properties"]
                    .get("idempotency_key")
                    .is_none(),
                "{}",
                t.name
            );
        }
    }
}
