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
//!   transaction back as one new transaction ([`crate::tx`]), and [`restore_session`] every
//!   file an agent session changed (`session.rs`).
//! - Retention comes from the policy file's `history:` section ([`Retention`]): `keep_last`
//!   pre-images per path are always kept; others go when older than `max_age`, then oldest
//!   first while the store is over `max_bytes`.

use crate::journal::paths::{JournalPaths, row_fields};
use crate::journal::{Journal, Row, json_string_forms};
use crate::objects::ObjectStore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::io;
use std::path::Path;

mod restore;
mod session;

/// Retention lives with the pipeline, which enforces it as it adds objects
/// ([`crate::write::pipeline::retention`]); `gc` on request is the same pass.
pub use crate::write::pipeline::retention::{GcReport, Retention, gc};
pub use restore::{RestoreTo, Restored, Skipped, restore, restore_tx};
pub use session::{SessionAction, SessionFile, SessionRestore, restore_session, session_rows};

/// One journaled version of a path.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct Version {
    pub journal_id: String,
    pub ts: String,
    pub sha256: String,
    pub bytes: u64,
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_id: Option<String>,
    /// Whether this version's content can be restored (stored, or the current content).
    pub stored: bool,
    /// Only on versions an agent's own tool wrote (`native:<tool>` rows, `resilient-write
    /// hook`): whether the content this version replaced was kept. `false` when the agent has
    /// no hook before its edits (Cursor): that earlier content cannot be restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_image: Option<bool>,
    /// The agent's tool that wrote a native version, e.g. `native:Edit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_tool: Option<String>,
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

/// Like [`scan_back`], for the rows of the file at `abs` (relative or, from earlier
/// versions, absolute; see [`JournalPaths`]): only those reach `visit`.
pub fn scan_file(
    journal: &Journal,
    paths: &JournalPaths,
    abs: &Path,
    mut visit: impl FnMut(Row) -> bool,
) -> io::Result<()> {
    journal.scan_back(&paths.needles(abs), |line| {
        match serde_json::from_slice::<Row>(line) {
            Ok(row) => match row_fields(&row) {
                Some((p, root)) if paths.names(p, root, abs) => visit(row),
                _ => true,
            },
            Err(_) => true,
        }
    })?;
    Ok(())
}

/// The fields of a journal row that [`versions`] reports, borrowed from the line where the
/// JSON allows it (the other fields are skipped unparsed).
#[derive(Deserialize)]
struct VersionRow<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow, default)]
    root: Option<Cow<'a, str>>,
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
    #[serde(borrow, default)]
    tool: Option<Cow<'a, str>>,
    #[serde(default)]
    pre_image: Option<bool>,
}

fn s(row: &Row, k: &str) -> String {
    row.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The versions of the file at `abs_path`, newest first, at most `limit`: its rows in the
/// relative form and in the absolute one of earlier versions ([`JournalPaths`]).
/// `current_sha256` is the file's content now (always restorable).
pub fn versions(
    journal: &Journal,
    objects: Option<&ObjectStore>,
    paths: &JournalPaths,
    abs_path: &Path,
    current_sha256: Option<&str>,
    limit: usize,
) -> io::Result<Vec<Version>> {
    let mut out = Vec::new();
    let mut stored = objects.map(ObjectStore::presence);
    journal.scan_back(&paths.needles(abs_path), |line| {
        let Ok(row) = serde_json::from_slice::<VersionRow>(line) else {
            return true; // a corrupt line, or one whose `path` is not a string
        };
        if !paths.names(&row.path, row.root.as_deref(), abs_path) {
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
            pre_image: row.pre_image,
            native_tool: row
                .tool
                .filter(|t| t.starts_with("native:"))
                .map(Cow::into_owned),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;
    use crate::store::Store;
    use crate::write::pipeline::{Body, Caller, Decision, Outcome, Plan};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// A store over a fresh temporary workspace (no startup sweep).
    pub(in crate::history) fn service() -> (tempfile::TempDir, Arc<Store>) {
        crate::testing::temp_store()
    }

    /// Write `bytes` to `path` through the pipeline (journaled, pre-image kept).
    pub(in crate::history) fn write(store: &Store, path: &str, bytes: &[u8]) -> Outcome {
        let target = store.workspaces().resolve(path, true).unwrap();
        let who = Caller {
            caller: store.caller(),
            tool: "test".into(),
        };
        let (outcome, ()) = store
            .pipeline()
            .commit(&target, &who, |existing| {
                Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(bytes.to_vec()),
                        mode: if existing.is_some() {
                            "overwrite"
                        } else {
                            "create"
                        }
                        .into(),
                        create_only: false,
                        extra: BTreeMap::new(),
                        new_file_mode: None,
                    },
                    (),
                ))
            })
            .unwrap();
        outcome.expect("the test write was applied")
    }

    fn abs(t: &tempfile::TempDir, name: &str) -> String {
        t.path()
            .canonicalize()
            .unwrap()
            .join(name)
            .display()
            .to_string()
    }

    #[test]
    fn versions_lists_a_paths_versions_newest_first_up_to_the_limit() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        write(&store, "b.txt", b"another path");
        let w2 = write(&store, "a.txt", b"two");
        let w3 = write(&store, "a.txt", b"three");
        let journal = store.pipeline().journal();
        let objects = store.pipeline().objects();
        let paths = store.workspaces().journal_paths();
        let a = abs(&t, "a.txt");
        let all = versions(
            journal,
            objects,
            &paths,
            Path::new(&a),
            Some(&w3.sha256),
            10,
        )
        .unwrap();
        let shas: Vec<&str> = all.iter().map(|v| v.sha256.as_str()).collect();
        assert_eq!(
            shas,
            [sha256_hex(b"three"), sha256_hex(b"two"), sha256_hex(b"one")]
        );
        let ids: Vec<&str> = all.iter().map(|v| v.journal_id.as_str()).collect();
        assert_eq!(ids, [&w3.journal_id, &w2.journal_id, &w1.journal_id]);
        assert_eq!(all[0].mode, "overwrite");
        assert_eq!(all[2].mode, "create");
        assert_eq!(all[2].bytes, 3);
        assert!(all.iter().all(|v| v.stored), "pre-images and the current");
        let two = versions(journal, objects, &paths, Path::new(&a), Some(&w3.sha256), 2).unwrap();
        assert_eq!(two, all[..2]);
    }

    #[test]
    fn versions_include_rows_an_earlier_version_wrote_with_the_absolute_path() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        let journal = store.pipeline().journal();
        // The row as earlier versions wrote it: the absolute path.
        let a = abs(&t, "a.txt");
        let text = std::fs::read_to_string(journal.path()).unwrap();
        assert!(text.contains("\"path\":\"a.txt\""), "{text}");
        std::fs::write(
            journal.path(),
            text.replace(
                "\"path\":\"a.txt\"",
                &format!("\"path\":{}", Value::from(a.clone())),
            ),
        )
        .unwrap();
        let w2 = write(&store, "a.txt", b"two");
        let paths = store.workspaces().journal_paths();
        let vs = versions(
            journal,
            store.pipeline().objects(),
            &paths,
            Path::new(&a),
            Some(&w2.sha256),
            10,
        )
        .unwrap();
        let ids: Vec<&str> = vs.iter().map(|v| v.journal_id.as_str()).collect();
        assert_eq!(ids, [&w2.journal_id, &w1.journal_id]);
    }

    #[test]
    fn versions_marks_a_version_whose_pre_image_is_gone_as_not_stored() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        let w2 = write(&store, "a.txt", b"two");
        let objects = store.pipeline().objects().unwrap();
        assert!(
            objects.remove(&w1.sha256).unwrap(),
            "the pre-image was kept"
        );
        let journal = store.pipeline().journal();
        let paths = store.workspaces().journal_paths();
        let a = abs(&t, "a.txt");
        let vs = versions(
            journal,
            Some(objects),
            &paths,
            Path::new(&a),
            Some(&w2.sha256),
            10,
        )
        .unwrap();
        let stored: Vec<bool> = vs.iter().map(|v| v.stored).collect();
        assert_eq!(stored, [true, false]);
        // Without the current hash or an object store, nothing is known to be stored.
        let vs = versions(journal, None, &paths, Path::new(&a), None, 10).unwrap();
        assert!(vs.iter().all(|v| !v.stored));
    }

    #[test]
    fn find_row_and_tx_rows_find_only_their_own_rows() {
        let (_t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        write(&store, "b.txt", b"b");
        let journal = store.pipeline().journal();
        let row = find_row(journal, &w1.journal_id).unwrap().unwrap();
        assert_eq!(s(&row, "sha256"), w1.sha256);
        assert!(find_row(journal, "no-such-id").unwrap().is_none());

        let m = crate::tx::begin(&store, None, None).unwrap();
        for (path, bytes) in [("a.txt", &b"tx a"[..]), ("c.txt", b"tx c")] {
            crate::tx::stage(&store, &m.tx_id, path, "tx_write", |_| {
                Ok(crate::tx::NewContent {
                    bytes: bytes.to_vec(),
                    mode: "tx_write".into(),
                    replacements: None,
                })
            })
            .unwrap();
        }
        crate::tx::commit(&store, &m.tx_id).unwrap();
        write(&store, "a.txt", b"after the tx");
        let rows = tx_rows(journal, &m.tx_id).unwrap();
        let shas: Vec<String> = rows.iter().map(|r| s(r, "sha256")).collect();
        assert_eq!(shas, [sha256_hex(b"tx a"), sha256_hex(b"tx c")]);
        assert!(tx_rows(journal, "tx-none").unwrap().is_empty());
    }
}
