//! History and undo (beyond the paper): the journaled versions of a path, restore of a path
//! to one of them or of a whole transaction, and retention (`gc`) of the object store.
//!
//! - [`versions`] reads the journal backwards in large blocks and parses only the lines that
//!   contain the path's JSON-encoded form (a substring search, [`Journal::scan_back`]), and of
//!   those only the fields it reports, so listing the versions of one path costs a scan of
//!   raw bytes plus the rows it returns, not a parse of the whole journal. Whether each
//!   version's content is stored is answered from one listing per object fan-out directory
//!   ([`ObjectStore::presence`]), not one `stat` per version.
//! - A version's content is available (`stored`) when it is the file's current content or its
//!   pre-image is in the object store ([`crate::objects`]): every overwrite keeps the content
//!   it replaces, so every journaled version but the current one is a pre-image of a later
//!   write, until `gc` removes it.
//! - [`restore`] goes through the write pipeline (mode `restore`, journaled, its own
//!   pre-image kept, so a restore is itself undoable); [`restore_tx`] puts every file of a
//!   transaction back as one new transaction ([`crate::tx`]).
//! - Retention comes from the policy file's `history:` section ([`Retention`]): `keep_last`
//!   pre-images per path are always kept; others go when older than `max_age`, then oldest
//!   first while the store is over `max_bytes`.

use crate::journal::{Journal, Row, json_string_forms};
use crate::objects::ObjectStore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::io;

mod gc;
mod restore;

pub use gc::{GcReport, Retention, gc};
pub use restore::{RestoreTo, Restored, Skipped, restore, restore_tx};

/// One journaled version of a path.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct Version {
    pub journal_id: String,
    pub ts: String,
    pub sha256: String,
    pub bytes: u64,
    pub mode: String,
    #[serde(default)]
    pub tx_id: Option<String>,
    /// Whether this version's content can be restored (stored, or the current content).
    pub stored: bool,
}

/// Scan the journal backwards for rows containing the string `value` (JSON-encoded, so a
/// field equal to it), newest first; `visit` gets each parsed row and returns false to stop.
/// The caller checks which field matched.
pub fn scan_back(
    journal: &Journal,
    value: &str,
    mut visit: impl FnMut(Row) -> bool,
) -> io::Result<()> {
    journal.scan_back(
        &json_string_forms(value),
        |line| match serde_json::from_slice::<Row>(line) {
            Ok(row) => visit(row),
            Err(_) => true,
        },
    )?;
    Ok(())
}

/// The fields of a journal row that [`versions`] reports, borrowed from the line where the
/// JSON allows it (the other fields are skipped unparsed).
#[derive(Deserialize)]
struct VersionRow<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow, default)]
    journal_id: Cow<'a, str>,
    #[serde(borrow, default)]
    ts: Cow<'a, str>,
    #[serde(borrow, default)]
    sha256: Cow<'a, str>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(borrow, default)]
    mode: Cow<'a, str>,
    #[serde(borrow, default)]
    tx_id: Option<Cow<'a, str>>,
}

fn s(row: &Row, k: &str) -> String {
    row.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The versions of `abs_path`, newest first, at most `limit`. `current_sha256` is the
/// file's content now (always restorable).
pub fn versions(
    journal: &Journal,
    objects: Option<&ObjectStore>,
    abs_path: &str,
    current_sha256: Option<&str>,
    limit: usize,
) -> io::Result<Vec<Version>> {
    let mut out = Vec::new();
    let mut stored = objects.map(ObjectStore::presence);
    journal.scan_back(&json_string_forms(abs_path), |line| {
        let Ok(row) = serde_json::from_slice::<VersionRow>(line) else {
            return true; // a corrupt line, or one whose `path` is not a string
        };
        if row.path != abs_path {
            return true;
        }
        let sha256 = row.sha256.into_owned();
        let is_stored = current_sha256 == Some(sha256.as_str())
            || stored.as_mut().is_some_and(|p| p.contains(&sha256));
        out.push(Version {
            journal_id: row.journal_id.into_owned(),
            ts: row.ts.into_owned(),
            bytes: row.bytes.unwrap_or(0),
            mode: row.mode.into_owned(),
            tx_id: row.tx_id.map(Cow::into_owned),
            sha256,
            stored: is_stored,
        });
        out.len() < limit
    })?;
    Ok(out)
}

/// The journal row with `journal_id`.
pub fn find_row(journal: &Journal, journal_id: &str) -> io::Result<Option<Row>> {
    let mut found = None;
    scan_back(journal, journal_id, |row| {
        if row.get("journal_id").and_then(Value::as_str) == Some(journal_id) {
            found = Some(row);
            false
        } else {
            true
        }
    })?;
    Ok(found)
}

/// The journal rows of transaction `tx_id` (all land in one append, so the scan stops at the
/// first row of another transaction after them).
pub fn tx_rows(journal: &Journal, tx_id: &str) -> io::Result<Vec<Row>> {
    let mut rows = Vec::new();
    scan_back(journal, tx_id, |row| {
        if row.get("tx_id").and_then(Value::as_str) == Some(tx_id) {
            rows.push(row);
        }
        true
    })?;
    rows.reverse();
    Ok(rows)
}
