//! The idempotency key every writing tool takes, and the opening every keyed call shares: hash
//! the request's other arguments (before parsing consumes them), parse the arguments, then
//! either hand the key to the core (a tool whose first result is its journal row:
//! [`Request::keyed`]) or run the call at most once per key ([`Request::once`], a tool whose
//! first result is kept whole in the result log).

use super::parse_args;
use resilient_write_core::envelope::Result;
use resilient_write_core::store::Store;
use resilient_write_core::write::idempotency::{Keyed, request_hash};
use resilient_write_core::write::pipeline::Caller;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

// `idempotency_key`, flattened into the arguments of every writing tool.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct IdempotencyKey {
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// A keyed call of `tool`: its key and the hash of its other arguments.
#[derive(Debug)]
pub struct Request {
    tool: &'static str,
    key: Option<String>,
    sha256: String,
}

/// Parse the arguments of a call of keyed `tool`. The key is the validated `idempotency_key`
/// argument, read before parsing moves the arguments into `A`.
pub fn parse_keyed<A>(tool: &'static str, raw: Value) -> Result<(A, Request)>
where
    A: DeserializeOwned + JsonSchema,
{
    let sha256 = request_hash(tool, &raw);
    let key = raw
        .get("idempotency_key")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let args = parse_args(raw)?;
    Ok((args, Request { tool, key, sha256 }))
}

impl Request {
    /// The key and request hash, for a core entry point that replays from the journal.
    pub fn keyed(&self) -> Keyed<'_> {
        Keyed {
            key: self.key.as_deref(),
            request_sha256: &self.sha256,
        }
    }

    /// Who is calling, for the journal: the current client, as this tool.
    pub fn caller(&self, store: &Store) -> Caller {
        Caller {
            caller: store.caller(),
            tool: self.tool.into(),
        }
    }

    /// Run `call` at most once per key ([`Store::once`]): a retry gets the first result
    /// back, marked `idempotent_replay`, without `call` running.
    pub fn once(&self, store: &Store, call: impl FnOnce() -> Result<Value>) -> Result<Value> {
        store.once(self.tool, self.key.as_deref(), &self.sha256, true, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        path: String,
        #[serde(flatten)]
        key: IdempotencyKey,
    }

    #[test]
    fn the_key_is_read_from_the_arguments_and_left_out_of_the_request_hash() {
        let (args, request) =
            parse_keyed::<Args>("t", json!({"path": "a", "idempotency_key": "k"})).unwrap();
        assert_eq!(args.path, "a");
        assert_eq!(args.key.idempotency_key.as_deref(), Some("k"));
        let keyed = request.keyed();
        assert_eq!(keyed.key, Some("k"));
        let (_, other) =
            parse_keyed::<Args>("t", json!({"path": "a", "idempotency_key": "k2"})).unwrap();
        assert_eq!(keyed.request_sha256, other.keyed().request_sha256);
        let (_, unkeyed) = parse_keyed::<Args>("t", json!({"path": "a"})).unwrap();
        assert_eq!(unkeyed.keyed().key, None);
    }

    /// serde leaves `deny_unknown_fields` to a struct with a flattened field only in part:
    /// an unknown argument must still be refused, by the schema check before serde and by
    /// serde itself.
    #[test]
    fn a_struct_with_a_flattened_key_still_refuses_unknown_arguments() {
        let e = parse_keyed::<Args>("t", json!({"path": "a", "nope": 1})).unwrap_err();
        assert!(format!("{e:?}").contains("nope"), "{e:?}");
        let e = serde_json::from_value::<Args>(json!({"path": "a", "nope": 1})).unwrap_err();
        assert!(e.to_string().contains("unknown field `nope`"), "{e}");
        let schema = crate::tools::schema::<Args>();
        assert_eq!(schema["additionalProperties"], json!(false), "{schema}");
        assert_eq!(
            schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["idempotency_key".to_string(), "path".to_string()]),
            "{schema}"
        );
    }
}
