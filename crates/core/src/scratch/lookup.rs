//! What `scratch_ref` and `scratch_get` read of the index: the latest deposit matching a
//! sha256, a label or both, in the live view ([`super::live_index`]), so the answers are the
//! same before and after `doctor --fix` compacts the index.

use super::{IndexRow, SkippedLine, blob_exists, blob_path, live_index, read_index, row_deposits};
use crate::envelope::{Failure, Result};
use crate::journal::recorded::lenient;
use crate::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An index row's fields, read as leniently as the journal's ([`crate::journal::recorded`]):
/// the original writes the index too.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Entry {
    #[serde(deserialize_with = "lenient")]
    sha256: String,
    #[serde(deserialize_with = "lenient")]
    label: Option<String>,
    #[serde(deserialize_with = "lenient")]
    created_at: Option<String>,
    #[serde(deserialize_with = "lenient")]
    bytes: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    content_type: Option<String>,
    #[serde(deserialize_with = "lenient")]
    notes: Option<String>,
    #[serde(deserialize_with = "lenient")]
    encoding: Option<String>,
}

impl Entry {
    fn of(row: &IndexRow) -> Entry {
        Entry::deserialize(Value::Object(row.clone())).unwrap_or_default()
    }
}

// The latest deposit matching a query, as `scratch_ref` reports it (flattened into its
// result): the index entry's fields, plus its aliases.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Found {
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Every distinct label deposited for this blob, in the order of each label's latest
    /// deposit (oldest first).
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// The index row itself (the latest deposit; `deposits` counts the deposits of this
    /// sha256 and label when there were several).
    pub entry: IndexRow,
    pub scratch_path: String,
    /// Whether the blob file is present.
    pub bin_exists: bool,
    /// Index rows matching the query (as the original counts them: by label, the deposits
    /// that carried that label, whichever blob).
    pub alias_count: u64,
    /// Deposits of this blob, under any label.
    pub deposits: u64,
    /// index.jsonl lines skipped as torn or corrupt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_lines: Vec<SkippedLine>,
}

/// The latest deposit of `sha256` (lowercase hex), labelled `label`, or both; `None` for
/// either matches any. Refused with `scratch_not_found` when no deposit matches.
pub fn find(store: &Store, sha256: Option<String>, label: Option<String>) -> Result<Found> {
    let (rows, skipped) = read_index(store)?;
    let rows = live_index(&rows);
    let entries: Vec<Entry> = rows.iter().map(Entry::of).collect();
    let matching = |e: &Entry| {
        sha256.as_deref().is_none_or(|h| e.sha256 == h)
            && label
                .as_deref()
                .is_none_or(|l| e.label.as_deref() == Some(l))
    };
    let alias_count: u64 = rows
        .iter()
        .zip(&entries)
        .filter(|(_, e)| matching(e))
        .map(|(r, _)| row_deposits(r))
        .sum();
    let Some(at) = entries.iter().rposition(matching) else {
        return Err(Failure::ScratchNotFound { sha256, label });
    };
    let latest = Entry::of(&rows[at]);
    let address = latest.sha256;
    let aliases = || {
        rows.iter()
            .zip(&entries)
            .filter(|(_, e)| e.sha256 == address)
    };
    // One live row per label: in the order of each label's latest deposit.
    let labels = aliases().filter_map(|(_, e)| e.label.clone()).collect();
    let deposits = aliases().map(|(r, _)| row_deposits(r)).sum();
    Ok(Found {
        scratch_path: blob_path(&address),
        bin_exists: blob_exists(store, &address),
        label: latest.label,
        labels,
        created_at: latest.created_at,
        bytes: latest.bytes,
        content_type: latest.content_type,
        notes: latest.notes,
        encoding: latest.encoding,
        alias_count,
        deposits,
        entry: rows[at].clone(),
        skipped_lines: skipped,
        sha256: address,
    })
}

/// What `scratch_get` tells beside a blob's content: the latest deposit's content type and
/// label, from the index as written.
#[derive(Debug, Default)]
pub struct Described {
    pub content_type: Option<String>,
    pub label: Option<String>,
    /// index.jsonl lines skipped as torn or corrupt while looking.
    pub skipped_lines: Vec<SkippedLine>,
}

/// The latest deposit of `sha256`, described. The content is verified apart from the index,
/// so an index that cannot be read costs only the description.
pub fn describe(store: &Store, sha256: &str) -> Described {
    let (rows, skipped_lines) = read_index(store).unwrap_or_default();
    let latest = rows.iter().map(Entry::of).rfind(|e| e.sha256 == sha256);
    let (content_type, label) = latest.map_or((None, None), |e| (e.content_type, e.label));
    Described {
        content_type,
        label,
        skipped_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::deposit;

    #[test]
    fn the_latest_matching_deposit_is_found_with_its_aliases_and_described() {
        let (_t, store) = crate::testing::temp_store();
        let a = deposit(&store, b"one", Some("x"), Some("text/plain"), None).unwrap();
        deposit(&store, b"one", Some("y"), None, Some("again")).unwrap();
        deposit(&store, b"two", Some("x"), None, None).unwrap();
        let sha = a.blob.sha256;
        let by_sha = find(&store, Some(sha.clone()), None).unwrap();
        assert_eq!(by_sha.label.as_deref(), Some("y"));
        assert_eq!(by_sha.notes.as_deref(), Some("again"));
        assert_eq!(by_sha.labels, ["x", "y"]);
        assert_eq!((by_sha.alias_count, by_sha.deposits), (2, 2));
        assert!(by_sha.bin_exists);
        let by_label = find(&store, None, Some("x".into())).unwrap();
        assert_eq!(by_label.sha256, crate::hash::sha256_hex(b"two"));
        assert_eq!((by_label.alias_count, by_label.deposits), (2, 1));
        let e = find(&store, Some(sha.clone()), Some("z".into())).unwrap_err();
        assert!(matches!(e, Failure::ScratchNotFound { .. }), "{e:?}");
        let d = describe(&store, &sha);
        assert_eq!((d.label.as_deref(), d.content_type), (Some("y"), None));
    }
}
