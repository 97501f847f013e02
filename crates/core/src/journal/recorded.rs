//! The read side of a journal row ([`super::JournalRow`] is the write side): the fields a call
//! answers with when it replays an earlier call from the row that recorded it (an idempotency
//! key found again, a committed transaction asked again). A layer whose rows carry fields of
//! its own reads them with a struct that flattens [`RecordedRow`] beside them, through [`read`].
//!
//! Rows are read as leniently as every other reader of the journal reads them: the file is
//! shared with the original and with people, so a field that is missing, `null` or of another
//! type reads as empty (`""`, `0`, `None`, `false`), never as an error.

use super::Row;
use crate::envelope::{Failure, Result};
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::Value;

/// The fields every row carries, as read back.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct RecordedRow {
    #[serde(deserialize_with = "lenient")]
    pub journal_id: String,
    /// When the write was journaled (RFC 3339 UTC).
    #[serde(deserialize_with = "lenient")]
    pub ts: String,
    /// The row's path: relative to `root` (or to the working directory without one).
    #[serde(deserialize_with = "lenient")]
    pub path: String,
    #[serde(deserialize_with = "lenient")]
    pub root: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub sha256: String,
    #[serde(deserialize_with = "lenient")]
    pub prev_sha256: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub bytes: u64,
    /// create, overwrite, append, replace, ... (what the write did).
    #[serde(deserialize_with = "lenient")]
    pub mode: String,
}

/// `row` read as `T` (a struct of lenient fields: [`RecordedRow`], or one that flattens it).
pub fn read<T: DeserializeOwned>(row: Row) -> Result<T> {
    serde_json::from_value(Value::Object(row))
        .map_err(|e| Failure::Internal(format!("reading a journal row: {e}")))
}

/// A field read as `T`, or `T`'s default when it holds a value of another type: the
/// `deserialize_with` of every field of a recorded row.
pub fn lenient<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    struct WithExtra {
        #[serde(flatten)]
        row: RecordedRow,
        #[serde(deserialize_with = "lenient")]
        chunk_index: Option<u64>,
    }

    fn row(v: Value) -> Row {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_row_reads_its_fields_and_a_layers_own_beside_them() {
        let r: WithExtra = read(row(json!({
            "journal_id": "j", "ts": "t", "path": "a.txt", "sha256": "s", "bytes": 3,
            "mode": "create", "prev_sha256": null, "chunk_index": 4, "caller": "c"
        })))
        .unwrap();
        assert_eq!(r.chunk_index, Some(4));
        assert_eq!(
            r.row,
            RecordedRow {
                journal_id: "j".into(),
                ts: "t".into(),
                path: "a.txt".into(),
                root: None,
                sha256: "s".into(),
                prev_sha256: None,
                bytes: 3,
                mode: "create".into(),
            }
        );
    }

    #[test]
    fn a_field_missing_or_of_another_type_reads_as_empty() {
        let r: WithExtra = read(row(json!({
            "journal_id": 7, "bytes": "three", "prev_sha256": 1, "chunk_index": -1,
            "root": ["x"]
        })))
        .unwrap();
        assert_eq!(r.row, RecordedRow::default());
        assert_eq!(r.chunk_index, None);
    }
}
