//! Restore: put one path back to a journaled version through the write pipeline (mode
//! `restore`, journaled, its own pre-image kept, so a restore is itself undoable), or every
//! file of a transaction back to its content before it, as one new transaction.

use super::{find_row, s, scan_file, tx_rows};
use crate::envelope::{Failure, Result};
use crate::journal::paths::row_fields;
use crate::store::Store;
use crate::tx::{self, NewContent};
use crate::write::intent;
use crate::write::pipeline::{Body, Caller, Decision, Outcome, Plan};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// What restore wrote (`None` outcome: the file already had that content).
pub struct Restored {
    /// The file's workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    pub to_sha256: String,
    pub outcome: Option<Outcome>,
    pub prev_sha256: Option<String>,
    /// Unified diff from the current content to the restored one (dry runs).
    pub diff: Option<String>,
}

/// Which version to restore.
pub enum RestoreTo {
    Sha256(String),
    /// A unique prefix (at least 8 lowercase hex characters) of a version's sha256, as
    /// `history` prints it.
    Sha256Prefix(String),
    JournalId(String),
}

/// Restore `path` to a journaled version through the pipeline (mode `restore`).
pub fn restore(
    store: &Store,
    path: &str,
    to: RestoreTo,
    expected_prev_sha256: Option<&str>,
    dry_run: bool,
) -> Result<Restored> {
    let journal = store.pipeline().journal();
    let jerr = |e| Failure::io("read journal", journal.path(), e);
    let target = store.workspaces().resolve(path, true)?;
    let paths = store.workspaces().journal_paths();
    let abs = target.abs_path.display().to_string();
    let (sha, journal_id) = match to {
        RestoreTo::JournalId(id) => {
            let row = find_row(journal, &id).map_err(jerr)?.ok_or_else(|| {
                Failure::VersionUnavailable {
                    path: path.into(),
                    version: id.clone(),
                    reason: "no journal row has this journal_id".into(),
                }
            })?;
            let fields = row_fields(&row);
            if !fields.is_some_and(|(p, root)| paths.names(p, root, &target.abs_path)) {
                let other = fields.map_or_else(String::new, |(p, root)| {
                    paths.absolute(p, root).display().to_string()
                });
                return Err(Failure::VersionUnavailable {
                    path: path.into(),
                    version: id,
                    reason: format!("that journal row is a version of {other}"),
                });
            }
            (s(&row, "sha256"), Some(id))
        }
        RestoreTo::Sha256Prefix(p) => {
            // Every version this path had whose hash starts with `p`: exactly one is needed.
            let mut found = std::collections::BTreeSet::new();
            scan_file(journal, &paths, &target.abs_path, |row| {
                for h in [s(&row, "sha256"), s(&row, "prev_sha256")] {
                    if h.len() == 64 && h.starts_with(&p) {
                        found.insert(h);
                    }
                }
                true
            })
            .map_err(jerr)?;
            let mut found = found.into_iter();
            match (found.next(), found.len()) {
                (None, _) => {
                    return Err(Failure::VersionUnavailable {
                        path: path.into(),
                        version: p,
                        reason: "no journaled version of this path has a sha256 starting \
                                 with it (see history)"
                            .into(),
                    });
                }
                (Some(h), 0) => (h, None),
                (Some(h), _) => {
                    return Err(Failure::AmbiguousVersion {
                        path: path.into(),
                        prefix: p,
                        candidates: std::iter::once(h).chain(found).collect(),
                    });
                }
            }
        }
        RestoreTo::Sha256(h) => {
            // Only a version this path had: its journal rows name it as new or previous.
            let mut known = false;
            scan_file(journal, &paths, &target.abs_path, |row| {
                known = s(&row, "sha256") == h || s(&row, "prev_sha256") == h;
                !known
            })
            .map_err(jerr)?;
            if !known {
                return Err(Failure::VersionUnavailable {
                    path: path.into(),
                    version: h,
                    reason: "not a journaled version of this path (see history)".into(),
                });
            }
            (h, None)
        }
    };
    let objects = store.pipeline().objects().cloned();
    let who = Caller {
        caller: store.caller(),
        tool: "restore".into(),
    };
    let mut diff = None;
    let mut prev = None;
    let (outcome, ()) = store.pipeline().commit(&target, &who, |existing| {
        intent::check_expected(path, expected_prev_sha256, existing)?;
        prev = existing.map(|e| e.sha256.clone());
        if existing.map(|e| e.sha256.as_str()) == Some(sha.as_str()) {
            return Ok(Decision::Skip(()));
        }
        let content = objects
            .as_ref()
            .map(|o| o.get(&sha))
            .transpose()
            .map_err(|e| Failure::io("read object", path, e))?
            .flatten()
            .ok_or_else(|| Failure::VersionUnavailable {
                path: path.into(),
                version: sha.clone(),
                reason: "its content is no longer stored (removed by gc, or written before \
                    history was kept)"
                    .into(),
            })?;
        if dry_run {
            let old = existing.map(|e| String::from_utf8_lossy(&e.bytes).to_string());
            diff = Some(crate::edit::unified_diff(
                old.as_deref().unwrap_or(""),
                &String::from_utf8_lossy(&content),
                path,
            ));
            return Ok(Decision::Skip(()));
        }
        let mut extra = BTreeMap::new();
        extra.insert("restored_sha256".into(), json!(sha));
        if let Some(id) = &journal_id {
            extra.insert("restored_journal_id".into(), json!(id));
        }
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(content),
                mode: "restore".into(),
                create_only: existing.is_none(),
                extra,
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(Restored {
        path: target.row_path.path.clone(),
        abs_path: abs,
        to_sha256: sha,
        outcome,
        prev_sha256: prev,
        diff: diff.or_else(|| dry_run.then(String::new)),
    })
}

/// A file of a transaction that restore could not put back.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// Put every file of transaction `tx_id` back to its content before it, as one new
/// transaction. A file changed since the transaction fails the whole restore
/// (stale_precondition); a file the transaction created is skipped (the pipeline does not
/// delete files).
pub fn restore_tx(store: &Store, tx_id: &str) -> Result<(tx::Committed, Vec<Skipped>)> {
    let journal = store.pipeline().journal();
    let rows =
        tx_rows(journal, tx_id).map_err(|e| Failure::io("read journal", journal.path(), e))?;
    if rows.is_empty() {
        return Err(Failure::TxNotOpen {
            tx_id: tx_id.into(),
            reason: "no journal rows carry this tx_id: nothing to restore".into(),
        });
    }
    let objects = store.pipeline().objects().cloned();
    let paths = store.workspaces().journal_paths();
    let mut skipped = Vec::new();
    let c = in_one_transaction(store, format!("restore of {tx_id}"), |undo| {
        for row in &rows {
            let (row_path, root) = row_fields(row).unwrap_or_default();
            // Staged by absolute path: a relative row path is relative to its root, not to
            // the working directory.
            let path = paths.absolute(row_path, root).display().to_string();
            let Some(prev) = row.get("prev_sha256").and_then(Value::as_str) else {
                skipped.push(Skipped {
                    path: paths.shown(row_path, root).0.into_owned(),
                    reason: "created by the transaction; restore does not delete files".into(),
                });
                continue;
            };
            let after = s(row, "sha256");
            tx::stage(store, undo, &path, "restore", |cur| {
                // A removal (`restore --session` takes back a created file) left it absent.
                if after.is_empty() {
                    intent::check_absent(&path, cur.existing.as_ref())?;
                } else {
                    intent::check_expected(&path, Some(&after), cur.existing.as_ref())?;
                }
                let bytes = objects
                    .as_ref()
                    .map(|o| o.get(prev))
                    .transpose()
                    .map_err(|e| Failure::io("read object", &path, e))?
                    .flatten()
                    .ok_or_else(|| Failure::VersionUnavailable {
                        path: path.clone(),
                        version: prev.to_string(),
                        reason: "its content is no longer stored".into(),
                    })?;
                Ok(NewContent {
                    bytes,
                    mode: "restore".into(),
                    replacements: None,
                })
            })?;
        }
        Ok(())
    })?;
    Ok((c, skipped))
}

/// Begin a transaction labelled `label`, let `stage` stage into it (given its id), and
/// commit it; a failure while staging or committing rolls it back, so nothing of it lands.
pub(super) fn in_one_transaction(
    store: &Store,
    label: String,
    stage: impl FnOnce(&str) -> Result<()>,
) -> Result<tx::Committed> {
    let undo = tx::begin(store, Some(label), None)?;
    let done = stage(&undo.tx_id).and_then(|()| tx::commit(store, &undo.tx_id));
    if done.is_err() {
        let _ = tx::rollback(store, &undo.tx_id);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;
    use crate::history::tests::{service, write};
    use std::fs;

    fn journal_len(store: &Store) -> usize {
        let (rows, _, _) = store.pipeline().journal().read_from(0).unwrap();
        rows.len()
    }

    #[test]
    fn restore_puts_back_a_journaled_version_as_a_new_undoable_write() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        let w2 = write(&store, "a.txt", b"two");
        let r = restore(
            &store,
            "a.txt",
            RestoreTo::JournalId(w1.journal_id),
            None,
            false,
        )
        .unwrap();
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"one");
        assert_eq!(r.to_sha256, w1.sha256);
        assert_eq!(r.prev_sha256.as_deref(), Some(w2.sha256.as_str()));
        let out = r.outcome.expect("restore wrote");
        assert_eq!(out.mode, "restore");
        assert_eq!(out.prev_sha256.as_deref(), Some(w2.sha256.as_str()));
        // The content the restore replaced was kept: it can be restored in turn.
        restore(&store, "a.txt", RestoreTo::Sha256(w2.sha256), None, false).unwrap();
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"two");
    }

    #[test]
    fn restore_refuses_when_the_file_hash_is_not_the_expected_one() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        write(&store, "a.txt", b"two");
        let rows = journal_len(&store);
        let err = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256(w1.sha256.clone()),
            Some(&w1.sha256),
            false,
        )
        .err()
        .expect("the file is at two, not one");
        match err {
            Failure::StaleHash {
                expected, actual, ..
            } => {
                assert_eq!(expected, w1.sha256);
                assert_eq!(actual, Some(sha256_hex(b"two")));
            }
            other => panic!("expected StaleHash, got {other:?}"),
        }
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"two");
        assert_eq!(journal_len(&store), rows, "nothing journaled");
    }

    #[test]
    fn restore_skips_when_the_file_already_has_the_target_hash() {
        let (t, store) = service();
        write(&store, "a.txt", b"one");
        let w2 = write(&store, "a.txt", b"two");
        let rows = journal_len(&store);
        let r = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256(w2.sha256.clone()),
            Some(&w2.sha256),
            false,
        )
        .unwrap();
        assert!(r.outcome.is_none(), "nothing to write");
        assert_eq!(r.prev_sha256.as_deref(), Some(w2.sha256.as_str()));
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"two");
        assert_eq!(journal_len(&store), rows, "nothing journaled");
    }

    #[test]
    fn restore_dry_run_returns_the_diff_and_writes_nothing() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one\n");
        write(&store, "a.txt", b"two\n");
        let rows = journal_len(&store);
        let r = restore(&store, "a.txt", RestoreTo::Sha256(w1.sha256), None, true).unwrap();
        assert!(r.outcome.is_none());
        let diff = r.diff.expect("a dry run has a diff");
        assert!(diff.contains("-two") && diff.contains("+one"), "{diff}");
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"two\n");
        assert_eq!(journal_len(&store), rows);
    }

    #[test]
    fn restore_refuses_a_version_the_path_never_had_or_no_longer_stores() {
        let (_t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        let wb = write(&store, "b.txt", b"b");
        write(&store, "a.txt", b"two");
        let unknown = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256(sha256_hex(b"x")),
            None,
            false,
        );
        assert!(matches!(unknown, Err(Failure::VersionUnavailable { .. })));
        let other = restore(
            &store,
            "a.txt",
            RestoreTo::JournalId(wb.journal_id),
            None,
            false,
        );
        assert!(matches!(other, Err(Failure::VersionUnavailable { .. })));
        let missing = restore(
            &store,
            "a.txt",
            RestoreTo::JournalId("nope".into()),
            None,
            false,
        );
        assert!(matches!(missing, Err(Failure::VersionUnavailable { .. })));
        store
            .pipeline()
            .objects()
            .unwrap()
            .remove(&w1.sha256)
            .unwrap();
        let gone = restore(&store, "a.txt", RestoreTo::Sha256(w1.sha256), None, false);
        assert!(matches!(gone, Err(Failure::VersionUnavailable { .. })));
    }

    fn tx_write(store: &Store, files: &[(&str, &[u8])]) -> String {
        let m = tx::begin(store, None, None).unwrap();
        for (path, bytes) in files {
            tx::stage(store, &m.tx_id, path, "tx_write", |_| {
                Ok(NewContent {
                    bytes: bytes.to_vec(),
                    mode: "tx_write".into(),
                    replacements: None,
                })
            })
            .unwrap();
        }
        tx::commit(store, &m.tx_id).unwrap();
        m.tx_id
    }

    #[test]
    fn restore_tx_puts_every_file_back_and_skips_files_the_tx_created() {
        let (t, store) = service();
        write(&store, "a.txt", b"a before");
        write(&store, "b.txt", b"b before");
        let tx_id = tx_write(
            &store,
            &[
                ("a.txt", b"a in tx"),
                ("b.txt", b"b in tx"),
                ("c.txt", b"new"),
            ],
        );
        let (committed, skipped) = restore_tx(&store, &tx_id).unwrap();
        assert_ne!(committed.tx_id, tx_id, "the restore is a new transaction");
        assert_eq!(committed.files.len(), 2);
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a before");
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b before");
        assert_eq!(fs::read(t.path().join("c.txt")).unwrap(), b"new");
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].path.ends_with("c.txt"), "{:?}", skipped[0]);
    }

    #[test]
    fn restore_tx_refuses_when_a_file_changed_since_and_changes_nothing() {
        let (t, store) = service();
        write(&store, "a.txt", b"a before");
        write(&store, "b.txt", b"b before");
        let tx_id = tx_write(&store, &[("a.txt", b"a in tx"), ("b.txt", b"b in tx")]);
        write(&store, "b.txt", b"b after");
        let err = restore_tx(&store, &tx_id).err().expect("b.txt changed");
        assert!(matches!(err, Failure::StaleHash { .. }), "{err:?}");
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a in tx");
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b after");
        let none = restore_tx(&store, "tx-unknown");
        assert!(matches!(none, Err(Failure::TxNotOpen { .. })));
    }

    /// Two contents whose SHA-256s share their first 8 hex digits (a birthday search over
    /// short strings: about 2^16 hashes).
    fn colliding_pair() -> (Vec<u8>, Vec<u8>) {
        let mut seen = std::collections::HashMap::new();
        for n in 0u64.. {
            let content = format!("version {n}\n").into_bytes();
            let prefix = sha256_hex(&content)[..8].to_string();
            if let Some(other) = seen.insert(prefix, content.clone()) {
                return (other, content);
            }
        }
        unreachable!()
    }

    #[test]
    fn restore_takes_a_unique_prefix_of_a_versions_hash() {
        let (t, store) = service();
        let w1 = write(&store, "a.txt", b"one");
        write(&store, "a.txt", b"two");
        let r = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256Prefix(w1.sha256[..8].to_string()),
            None,
            false,
        )
        .unwrap();
        assert_eq!(r.to_sha256, w1.sha256);
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"one");
        let none = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256Prefix("00000000".into()),
            None,
            false,
        );
        assert!(
            matches!(none, Err(Failure::VersionUnavailable { .. })),
            "{:?}",
            none.err()
        );
    }

    #[test]
    fn an_ambiguous_prefix_is_refused_with_every_candidate_and_changes_nothing() {
        let (a, b) = colliding_pair();
        let (t, store) = service();
        let wa = write(&store, "a.txt", &a);
        let wb = write(&store, "a.txt", &b);
        write(&store, "a.txt", b"now");
        let rows = journal_len(&store);
        let prefix = wa.sha256[..8].to_string();
        let err = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256Prefix(prefix.clone()),
            None,
            false,
        )
        .err()
        .unwrap();
        let Failure::AmbiguousVersion {
            candidates,
            prefix: p,
            ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(p, &prefix);
        let mut want = vec![wa.sha256.clone(), wb.sha256.clone()];
        want.sort();
        assert_eq!(candidates, &want);
        let env = err.envelope("restore", 3);
        assert_eq!(env.context["reason"], "ambiguous_version");
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"now");
        assert_eq!(journal_len(&store), rows);
        // one more digit tells them apart
        let longer = wa
            .sha256
            .chars()
            .zip(wb.sha256.chars())
            .position(|(x, y)| x != y)
            .unwrap()
            + 1;
        let r = restore(
            &store,
            "a.txt",
            RestoreTo::Sha256Prefix(wa.sha256[..longer.max(8)].to_string()),
            None,
            false,
        )
        .unwrap();
        assert_eq!(r.to_sha256, wa.sha256);
    }
}
