//! Idempotency keys (SPEC section 9): a writing tool given `idempotency_key` records the key and
//! the hash of its other arguments in its journal row. A retried call with the same key and
//! arguments is answered from that row without writing again; the same key with other arguments
//! is `stale_precondition`. The journal is the index's only source, so it survives a restart and
//! is shared by every process writing the same journal.

use crate::envelope::{Failure, Result};
use crate::journal::Journal;
use crate::retry::canonical_json;
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

/// `key` if it is a usable idempotency key (1 to 256 bytes).
pub fn check_key(key: &str) -> Result<&str> {
    if key.is_empty() || key.len() > 256 {
        return Err(Failure::InvalidArguments {
            message: "idempotency_key must be 1 to 256 characters".into(),
        });
    }
    Ok(key)
}

/// What the row that recorded `key` means for a call with `request_sha256`: none, a replay
/// (the same arguments), or a conflict (other arguments).
pub fn replay_of(
    key: &str,
    row: Option<Map<String, Value>>,
    request_sha256: &str,
) -> Result<Option<Map<String, Value>>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
    use serde_json::json;

    fn keyed(key: &str, request: &str) -> JournalRow {
        JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: "a.txt".into(),
            sha256: "00".into(),
            prev_sha256: None,
            bytes: 1,
            mode: "append".into(),
            caller: "test".into(),
            tool: "safe_write".into(),
            extra: idempotency_extra(Some(key), request),
        }
    }

    #[test]
    fn the_same_key_and_arguments_replay_other_arguments_conflict() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        journal.append(&keyed("k1", "req-a")).unwrap();
        let mut index = IdempotencyIndex::default();
        let row = index.lookup(&journal, "k1").unwrap();
        let replay = replay_of("k1", row.clone(), "req-a").unwrap().unwrap();
        assert_eq!(replay["idempotency_key"], json!("k1"));
        assert!(matches!(
            replay_of("k1", row, "req-b"),
            Err(Failure::IdempotencyConflict { .. })
        ));
        assert_eq!(
            replay_of("k2", index.lookup(&journal, "k2").unwrap(), "x").unwrap(),
            None
        );
    }

    #[test]
    fn the_index_catches_up_with_rows_appended_since_its_last_look() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        let mut index = IdempotencyIndex::default();
        assert!(index.lookup(&journal, "late").unwrap().is_none());
        // another process appends a keyed row
        journal.append(&keyed("late", "req")).unwrap();
        assert!(index.lookup(&journal, "late").unwrap().is_some());
    }

    #[test]
    fn a_journal_that_shrank_is_read_again_from_the_start() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        for i in 0..5 {
            journal.append(&keyed(&format!("k{i}"), "req")).unwrap();
        }
        let mut index = IdempotencyIndex::default();
        assert!(index.lookup(&journal, "k4").unwrap().is_some());
        // the journal is replaced by a shorter one: keys it no longer holds are forgotten
        std::fs::remove_file(journal.path()).unwrap();
        journal.append(&keyed("new", "req")).unwrap();
        assert!(index.lookup(&journal, "k4").unwrap().is_none());
        assert!(index.lookup(&journal, "new").unwrap().is_some());
    }

    #[test]
    fn keys_of_1_to_256_bytes_are_accepted() {
        assert!(check_key("k").is_ok());
        assert!(check_key(&"k".repeat(256)).is_ok());
        assert!(matches!(
            check_key(""),
            Err(Failure::InvalidArguments { .. })
        ));
        assert!(matches!(
            check_key(&"k".repeat(257)),
            Err(Failure::InvalidArguments { .. })
        ));
    }

    #[test]
    fn the_request_hash_ignores_the_key_and_the_order_of_arguments() {
        let a = request_hash(
            "safe_write",
            &json!({"path": "a", "content": "x", "idempotency_key": "1"}),
        );
        let b = request_hash(
            "safe_write",
            &json!({"content": "x", "path": "a", "idempotency_key": "2"}),
        );
        assert_eq!(a, b);
        assert_ne!(
            a,
            request_hash("safe_write", &json!({"path": "a", "content": "y"}))
        );
        assert_ne!(
            a,
            request_hash("chunk_append", &json!({"path": "a", "content": "x"}))
        );
    }
}
