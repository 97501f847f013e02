//! Idempotency keys (SPEC section 9): a writing tool given `idempotency_key` records the key and
//! the hash of its other arguments in its journal row. A retried call with the same key and
//! arguments is answered from that row without writing again; the same key with other arguments
//! is `stale_precondition`. The journal is the index's only source, so it survives a restart and
//! is shared by every process writing the same journal.

use crate::envelope::{Failure, Result};
use crate::journal::Journal;
use crate::retry::canonical_json;
use crate::store::Store;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// Idempotency keys seen in the journal, kept current by reading only what was appended since
/// the last look. Rows carry `idempotency_key` and `request_sha256`, so the index survives a
/// restart and is shared by every process writing the same journal.
#[derive(Debug, Default)]
pub struct IdempotencyIndex {
    offset: u64,
    rows: HashMap<String, Map<String, Value>>,
}

impl IdempotencyIndex {
    /// The row that recorded `key`, after catching up with the journal.
    pub fn lookup(&mut self, journal: &Journal, key: &str) -> Result<Option<Map<String, Value>>> {
        let (rows, next, _) = journal
            .read_from(self.offset)
            .map_err(|e| Failure::io("read journal", journal.path(), e))?;
        if next < self.offset {
            // The journal was replaced or truncated: rebuild from scratch.
            self.rows.clear();
        }
        self.offset = next;
        for row in rows {
            if let Some(k) = row.get("idempotency_key").and_then(Value::as_str) {
                self.rows.insert(k.to_string(), row);
            }
        }
        Ok(self.rows.get(key).cloned())
    }
}

/// Hash of a request's arguments without its idempotency key, for idempotent replays.
pub fn request_hash(tool: &str, args: &Value) -> String {
    let mut a = args.clone();
    if let Value::Object(m) = &mut a {
        m.remove("idempotency_key");
    }
    crate::hash::sha256_hex(format!("{tool}\0{}", canonical_json(&a)).as_bytes())
}

/// The journal row of an earlier call with idempotency `key` and these arguments (answer
/// with it, write nothing), or `None` (no key, or no earlier call: go ahead). The same key
/// with other arguments is a conflict. Callers check again under their lock.
pub fn recorded(
    store: &Store,
    key: Option<&str>,
    request_sha256: &str,
) -> Result<Option<Map<String, Value>>> {
    let Some(key) = key else {
        return Ok(None);
    };
    if key.is_empty() || key.len() > 256 {
        return Err(Failure::InvalidArguments {
            message: "idempotency_key must be 1 to 256 characters".into(),
        });
    }
    let row = store
        .idempotency
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .lookup(store.pipeline().journal(), key)?;
    match row {
        None => Ok(None),
        Some(r) if r.get("request_sha256").and_then(Value::as_str) == Some(request_sha256) => {
            Ok(Some(r))
        }
        Some(_) => Err(Failure::IdempotencyConflict { key: key.into() }),
    }
}

/// Journal fields recording an idempotency key.
pub fn idempotency_extra(key: Option<&str>, request_sha256: &str) -> BTreeMap<String, Value> {
    let mut extra = BTreeMap::new();
    if let Some(k) = key {
        extra.insert("idempotency_key".into(), json!(k));
        extra.insert("request_sha256".into(), json!(request_sha256));
    }
    extra
}
