//! Idempotency keys (SPEC section 9): every writing tool takes an optional `idempotency_key`.
//! A retried call with the same key and arguments is answered with the first call's result
//! without applying again; the same key with other arguments is `stale_precondition`.
//!
//! Where the first result is found:
//! - A tool whose effect is one journal row (`safe_write`, `safe_replace`, `chunk_write`,
//!   `chunk_append`, `chunk_compose`, `scratch_put`) records the key and the hash of its other
//!   arguments in that row, checked under the same lock that orders the write, and rebuilds
//!   its result from the row.
//! - Every other writing tool (transactions, `restore`, `handoff_write`, `checkpoint`,
//!   `checkpoint_cleanup`, `chunk_reset`, `redact`) writes several rows, none, or a result a
//!   row cannot hold (drift warnings, a transaction's files). Its first result is kept whole
//!   in the [`ResultLog`], `.resilient_write/idempotency.jsonl`: a file of its own, in the
//!   journal's line format, that the original never reads, so the journal keeps the rows the
//!   original knows. The call holds the log's lock from the lookup to the record, so two calls
//!   with one key, in any processes, run one after the other (keyed calls of these tools take
//!   turns; calls without a key never wait). A crash between the effect and its record leaves
//!   no record: the retry applies again, as a call without a key would. The log keeps first
//!   results for the policy's `idempotency.max_age` (7 days by default) and is compacted
//!   ([`super::results`]); a retry after that runs as a new call.
//!
//! Both sources feed one [`IdempotencyIndex`], so a key is one key across every tool: reused
//! by another tool, its request hash differs and the call is refused. The index survives a
//! restart and is shared by every process writing the same state directory.

use crate::envelope::{Failure, Result};
use crate::journal::Journal;
use crate::retry::canonical_sha256;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

pub use super::results::{HeldResultLog, RESULTS_FILE, ResultLog, result_row};

type Rows = HashMap<String, Map<String, Value>>;

/// Idempotency keys seen in the journal and the result log, kept current by reading only what
/// was appended to each since the last look.
#[derive(Debug, Default)]
pub struct IdempotencyIndex {
    journal_offset: u64,
    journal_rows: Rows,
    results_offset: u64,
    /// The result log last read: a compaction replaces the file.
    results_file: Option<super::results::FileId>,
    results_rows: Rows,
}

fn index(rows: Vec<Map<String, Value>>, into: &mut Rows) {
    for row in rows {
        if let Some(k) = row.get("idempotency_key").and_then(Value::as_str) {
            into.insert(k.to_string(), row);
        }
    }
}

impl IdempotencyIndex {
    /// The row that recorded `key` (a journal row or a result-log row), after catching up
    /// with both files.
    pub fn lookup(
        &mut self,
        journal: &Journal,
        results: &ResultLog,
        key: &str,
    ) -> Result<Option<Map<String, Value>>> {
        let (rows, next, _) = journal
            .read_from(self.journal_offset)
            .map_err(|e| Failure::io("read journal", journal.path(), e))?;
        if next < self.journal_offset {
            // The journal was replaced or truncated: read it again from the start.
            self.journal_rows.clear();
            self.journal_offset = 0;
            return self.lookup(journal, results, key);
        }
        index(rows, &mut self.journal_rows);
        self.journal_offset = next;
        let read = results
            .read_from(self.results_offset)
            .map_err(|e| Failure::io("read", results.path(), e))?;
        if read.file != self.results_file || read.start != self.results_offset {
            // Compacted (another file now), or truncated: what was read before is stale.
            self.results_rows.clear();
            self.results_file = read.file;
            if read.start != 0 {
                self.results_offset = 0;
                return self.lookup(journal, results, key);
            }
        }
        index(read.rows, &mut self.results_rows);
        self.results_offset = read.next;
        Ok(self
            .results_rows
            .get(key)
            .or_else(|| self.journal_rows.get(key))
            .cloned())
    }
}

/// An idempotency key with the hash of the request's other arguments: what a keyed call is
/// known by.
#[derive(Debug, Clone, Copy)]
pub struct Keyed<'a> {
    pub key: Option<&'a str>,
    pub request_sha256: &'a str,
}

impl Keyed<'_> {
    /// The journal fields recording the key ([`idempotency_extra`]).
    pub fn extra(self) -> BTreeMap<String, Value> {
        idempotency_extra(self.key, self.request_sha256)
    }
}

/// What a keyed call answers with: `T` applied now, or the `T` of its first call, replayed
/// from the row that recorded it (nothing applied now).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    Applied(T),
    Replayed(T),
}

impl<T> Answer<T> {
    /// Whether the answer is the first call's, replayed.
    pub fn replayed(&self) -> bool {
        matches!(self, Answer::Replayed(_))
    }

    /// The value, applied or replayed.
    pub fn into_inner(self) -> T {
        match self {
            Answer::Applied(v) | Answer::Replayed(v) => v,
        }
    }
}

/// Hash of a request's arguments without its idempotency key, for idempotent replays. Empty
/// when the call carries no key: nothing can replay it then, and hashing the canonical JSON
/// of every argument (a megabyte of content) was a fifth of a 1 MB write's CPU.
pub fn request_hash(tool: &str, args: &Value) -> String {
    if args.get("idempotency_key").is_none_or(Value::is_null) {
        return String::new();
    }
    canonical_sha256(tool, args, Some("idempotency_key"))
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
    use std::io::Write;

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
        let row = index
            .lookup(&journal, &ResultLog::new(t.path()), "k1")
            .unwrap();
        let replay = replay_of("k1", row.clone(), "req-a").unwrap().unwrap();
        assert_eq!(replay["idempotency_key"], json!("k1"));
        assert!(matches!(
            replay_of("k1", row, "req-b"),
            Err(Failure::IdempotencyConflict { .. })
        ));
        assert_eq!(
            replay_of(
                "k2",
                index
                    .lookup(&journal, &ResultLog::new(t.path()), "k2")
                    .unwrap(),
                "x"
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn the_index_catches_up_with_rows_appended_since_its_last_look() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        let mut index = IdempotencyIndex::default();
        assert!(
            index
                .lookup(&journal, &ResultLog::new(t.path()), "late")
                .unwrap()
                .is_none()
        );
        // another process appends a keyed row
        journal.append(&keyed("late", "req")).unwrap();
        assert!(
            index
                .lookup(&journal, &ResultLog::new(t.path()), "late")
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn a_journal_that_shrank_is_read_again_from_the_start() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        for i in 0..5 {
            journal.append(&keyed(&format!("k{i}"), "req")).unwrap();
        }
        let mut index = IdempotencyIndex::default();
        assert!(
            index
                .lookup(&journal, &ResultLog::new(t.path()), "k4")
                .unwrap()
                .is_some()
        );
        // the journal is replaced by a shorter one: keys it no longer holds are forgotten
        std::fs::remove_file(journal.path()).unwrap();
        journal.append(&keyed("new", "req")).unwrap();
        assert!(
            index
                .lookup(&journal, &ResultLog::new(t.path()), "k4")
                .unwrap()
                .is_none()
        );
        assert!(
            index
                .lookup(&journal, &ResultLog::new(t.path()), "new")
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn result_log_rows_are_found_with_journal_rows_and_a_torn_line_is_skipped() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        let results = ResultLog::new(t.path());
        journal.append(&keyed("in-journal", "req-j")).unwrap();
        let mut held = results.hold().unwrap();
        held.append(&result_row(
            "first",
            "req-1",
            "tx_begin",
            &json!({"ok": true}),
        ))
        .unwrap();
        drop(held);
        // A crash mid-append leaves a torn line; the next row starts on a line of its own.
        std::fs::OpenOptions::new()
            .append(true)
            .open(results.path())
            .unwrap()
            .write_all(b"{\"idempotency_key\": \"torn")
            .unwrap();
        results
            .hold()
            .unwrap()
            .append(&result_row("second", "req-2", "restore", &json!({"n": 2})))
            .unwrap();
        let mut index = IdempotencyIndex::default();
        let row = index.lookup(&journal, &results, "first").unwrap().unwrap();
        assert_eq!(row["result"], json!({"ok": true}));
        assert_eq!(row["tool"], json!("tx_begin"));
        let row = index.lookup(&journal, &results, "second").unwrap().unwrap();
        assert_eq!(row["result"], json!({"n": 2}));
        assert!(
            index
                .lookup(&journal, &results, "in-journal")
                .unwrap()
                .is_some()
        );
        assert!(index.lookup(&journal, &results, "torn").unwrap().is_none());
        // One key across both files: another request under it is a conflict.
        assert!(matches!(
            replay_of(
                "first",
                index.lookup(&journal, &results, "first").unwrap(),
                "req-x"
            ),
            Err(Failure::IdempotencyConflict { .. })
        ));
    }

    #[test]
    fn the_index_reads_a_compacted_result_log_as_a_new_file() {
        let t = tempfile::tempdir().unwrap();
        let journal = Journal::new(t.path());
        let results = ResultLog::new(t.path());
        let old = (chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339();
        let row = |key: &str, ts: Option<&str>| {
            let mut r = result_row(key, "req", "tx_begin", &json!({"pad": "x".repeat(200)}));
            if let Some(ts) = ts {
                r["ts"] = json!(ts);
            }
            results.hold().unwrap().append(&r).unwrap();
        };
        for i in 0..10 {
            row(&format!("old{i}"), Some(&old));
        }
        row("live", None);
        let mut index = IdempotencyIndex::default();
        assert!(index.lookup(&journal, &results, "old3").unwrap().is_some());
        assert!(results.compact(false).unwrap().rewritten);
        // Rows appended since reach past where the index stopped reading the old file.
        for i in 0..12 {
            row(&format!("new{i}"), None);
        }
        for key in ["live", "new0", "new11"] {
            assert!(
                index.lookup(&journal, &results, key).unwrap().is_some(),
                "{key}"
            );
        }
        assert!(index.lookup(&journal, &results, "old3").unwrap().is_none());
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
            request_hash(
                "safe_write",
                &json!({"path": "a", "content": "y", "idempotency_key": "1"})
            )
        );
        assert_ne!(
            a,
            request_hash(
                "chunk_append",
                &json!({"path": "a", "content": "x", "idempotency_key": "1"})
            )
        );
    }

    #[test]
    fn a_call_without_a_key_is_not_hashed() {
        for args in [
            json!({"path": "a", "content": "x"}),
            json!({"path": "a", "content": "x", "idempotency_key": null}),
        ] {
            assert_eq!(request_hash("safe_write", &args), "");
        }
        assert_eq!(
            request_hash("safe_write", &json!({"path": "a", "idempotency_key": "k"})).len(),
            64
        );
    }
}
