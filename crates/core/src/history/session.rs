//! Undo a whole agent session (`restore --session`): every workspace file the session
//! changed, through our MCP tools, the agent's own edit tools or its shell commands, back to
//! its content before the session's first change, as one transaction ([`crate::tx`]: all or
//! nothing, also across a crash).
//!
//! - A session's rows are those carrying its id in `agent_session` (native edits and shell
//!   commands, written by the hooks) and those [`crate::agent_session`] attributes to it (MCP
//!   tool calls, by `journal_id`).
//! - Per file, the first row's `prev_sha256` is the content to put back (from the object
//!   store); a file the session created (first row `create`) is removed, its content staying
//!   in history (the removal keeps it as a pre-image). A file whose content before the
//!   session was not kept (no pre-image) is skipped with the reason; so is one outside the
//!   workspace or in the state directory. Directories the session created stay.
//! - A file must still be as the session left it (its last row's `sha256`, or absent after a
//!   deletion): a file changed since by anyone else fails the whole restore
//!   ([`Failure::SessionConflict`], naming each), and a file already back as it was is left
//!   alone. A dry run returns the unified diff of every change and writes nothing.

use super::Skipped;
use crate::envelope::{Failure, Result};
use crate::journal::paths::row_fields;
use crate::journal::{Row, json_string_forms};
use crate::store::Store;
use crate::tx::{self, NewContent};
use crate::write::intent;
use crate::write::pipeline::read_existing;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The journal rows of agent session `session`, oldest first.
pub fn session_rows(store: &Store, session: &str) -> Result<Vec<Row>> {
    let journal = store.pipeline().journal();
    let state = store.state_dir();
    let attributed = crate::agent_session::journal_ids_of(state, session)
        .map_err(|e| Failure::io("read agent sessions", state, e))?;
    let mut needles = json_string_forms(session);
    for id in &attributed {
        needles.extend(json_string_forms(id));
    }
    let mut rows = Vec::new();
    journal
        .scan_back(&needles, |line| {
            if let Ok(row) = serde_json::from_slice::<Row>(line) {
                let ours = row.get("agent_session").and_then(Value::as_str) == Some(session)
                    || row
                        .get("journal_id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| attributed.contains(id));
                if ours {
                    rows.push(row);
                }
            }
            true
        })
        .map_err(|e| Failure::io("read journal", journal.path(), e))?;
    rows.reverse();
    Ok(rows)
}

/// What `restore --session` does to one file.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionAction {
    /// Put back this content (its sha256).
    Restore(String),
    /// Remove the file: the session created it.
    Remove,
    /// Already as it was before the session.
    Unchanged,
}

/// One file the session changed, and what the restore does to it.
#[derive(Debug, Clone)]
pub struct SessionFile {
    /// As results show journal paths (relative to its root).
    pub path: String,
    pub abs_path: PathBuf,
    pub action: SessionAction,
    /// Its content now (`None`: absent).
    pub current: Option<String>,
    /// How many rows of the session changed it.
    pub changes: usize,
}

/// The outcome of [`restore_session`].
pub struct SessionRestore {
    pub files: Vec<SessionFile>,
    pub skipped: Vec<Skipped>,
    /// The transaction that applied it (`None`: a dry run, or nothing to do).
    pub committed: Option<tx::Committed>,
    /// A dry run's unified diff of every change.
    pub diff: Option<String>,
}

/// A file's rows in the session: the first and the last, and how many.
struct Span {
    first: Row,
    last: Row,
    changes: usize,
}

fn field<'r>(row: &'r Row, key: &str) -> Option<&'r str> {
    row.get(key).and_then(Value::as_str)
}

/// Put every file agent session `session` changed back as it was before the session.
pub fn restore_session(store: &Store, session: &str, dry_run: bool) -> Result<SessionRestore> {
    let rows = session_rows(store, session)?;
    if rows.is_empty() {
        return Err(Failure::SessionUnknown {
            session: session.into(),
        });
    }
    let paths = store.workspaces().journal_paths();
    let mut spans: BTreeMap<PathBuf, (String, Span)> = BTreeMap::new();
    for row in rows {
        let Some((p, root)) = row_fields(&row) else {
            continue;
        };
        let abs = paths.absolute(p, root);
        let shown = paths.shown(p, root).0.into_owned();
        match spans.get_mut(&abs) {
            Some((_, span)) => {
                span.last = row;
                span.changes += 1;
            }
            None => {
                let span = Span {
                    first: row.clone(),
                    last: row,
                    changes: 1,
                };
                spans.insert(abs, (shown, span));
            }
        }
    }
    let state_dir = store.state_dir();
    let objects = store.pipeline().objects().cloned();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut conflicts = Vec::new();
    for (abs, (shown, span)) in spans {
        if abs.starts_with(state_dir) {
            continue; // chunk parts, checkpoints: state, not the workspace
        }
        let skip = |reason: &str| Skipped {
            path: shown.clone(),
            reason: reason.into(),
        };
        let before = field(&span.first, "prev_sha256").map(str::to_string);
        let action = match &before {
            Some(h) => SessionAction::Restore(h.clone()),
            None if field(&span.first, "mode") == Some("create") => SessionAction::Remove,
            None => {
                skipped.push(skip(
                    "its content before the session was not kept (the agent has no \
                     before-edit hook)",
                ));
                continue;
            }
        };
        let current = match current_hash(store, &abs) {
            Ok(c) => c,
            Err(e) => {
                skipped.push(skip(&e.to_string()));
                continue;
            }
        };
        let target = match &action {
            SessionAction::Restore(h) => Some(h.as_str()),
            _ => None,
        };
        if current.as_deref() == target {
            files.push(SessionFile {
                path: shown,
                abs_path: abs,
                action: SessionAction::Unchanged,
                current,
                changes: span.changes,
            });
            continue;
        }
        let left = field(&span.last, "sha256").filter(|s| !s.is_empty());
        if current.as_deref() != left {
            conflicts.push(json!({
                "path": shown,
                "expected_sha256": left,
                "actual_sha256": current,
            }));
            continue;
        }
        if let Some(h) = target
            && !objects.as_ref().is_some_and(|o| o.contains(h))
        {
            skipped.push(skip(&format!(
                "its content before the session ({h}) is no longer stored (not kept, or \
                 removed by gc)"
            )));
            continue;
        }
        files.push(SessionFile {
            path: shown,
            abs_path: abs,
            action,
            current,
            changes: span.changes,
        });
    }
    if !conflicts.is_empty() {
        return Err(Failure::SessionConflict {
            session: session.into(),
            conflicts,
        });
    }
    let content = |sha: &str, shown: &str| -> Result<Vec<u8>> {
        objects
            .as_ref()
            .map(|o| o.get(sha))
            .transpose()
            .map_err(|e| Failure::io("read object", shown, e))?
            .flatten()
            .ok_or_else(|| Failure::VersionUnavailable {
                path: shown.into(),
                version: sha.into(),
                reason: "its content is no longer stored".into(),
            })
    };
    let acting: Vec<&SessionFile> = files
        .iter()
        .filter(|f| f.action != SessionAction::Unchanged)
        .collect();
    if dry_run {
        let mut diff = String::new();
        for f in &acting {
            let old = current_text(store, &f.abs_path);
            let new = match &f.action {
                SessionAction::Restore(h) => {
                    String::from_utf8_lossy(&content(h, &f.path)?).into_owned()
                }
                _ => String::new(),
            };
            diff.push_str(&crate::edit::unified_diff(&old, &new, &f.path));
            if f.action == SessionAction::Remove {
                diff.push_str(&format!("(removed: {})\n", f.path));
            }
        }
        return Ok(SessionRestore {
            files,
            skipped,
            committed: None,
            diff: Some(diff),
        });
    }
    if acting.is_empty() {
        return Ok(SessionRestore {
            files,
            skipped,
            committed: None,
            diff: None,
        });
    }
    let label = format!("restore of agent session {session}");
    let committed = super::restore::in_one_transaction(store, label, |undo| {
        for f in &acting {
            let abs = f.abs_path.display().to_string();
            let expected = f.current.clone();
            match &f.action {
                SessionAction::Restore(h) => {
                    let bytes = content(h, &f.path)?;
                    tx::stage(store, undo, &abs, "restore", |cur| {
                        check(&abs, expected.as_deref(), cur.existing.as_ref())?;
                        Ok(NewContent {
                            bytes,
                            mode: "restore".into(),
                            replacements: None,
                        })
                    })?;
                }
                _ => {
                    tx::stage_remove(store, undo, &abs, "restore", |cur| {
                        check(&abs, expected.as_deref(), cur.existing.as_ref())
                    })?;
                }
            }
        }
        Ok(())
    })?;
    Ok(SessionRestore {
        files,
        skipped,
        committed: Some(committed),
        diff: None,
    })
}

/// The file must still hold `expected` (`None`: absent) when staged.
fn check(
    abs: &str,
    expected: Option<&str>,
    existing: Option<&crate::write::pipeline::Existing>,
) -> Result<()> {
    match expected {
        Some(h) => intent::check_expected(abs, Some(h), existing),
        None => intent::check_absent(abs, existing),
    }
}

/// The sha256 of the file at `abs` now (`None`: absent, or its directory is).
fn current_hash(store: &Store, abs: &std::path::Path) -> Result<Option<String>> {
    let shown = abs.display().to_string();
    match store.workspaces().resolve(&shown, false) {
        Ok(t) => Ok(read_existing(&t.dir, &t.name)
            .map_err(|e| Failure::io("read", &shown, e))?
            .map(|e| e.sha256)),
        Err(Failure::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The file's text now, for a diff (empty when absent or unreadable).
fn current_text(store: &Store, abs: &std::path::Path) -> String {
    store
        .workspaces()
        .resolve(&abs.display().to_string(), false)
        .ok()
        .and_then(|t| read_existing(&t.dir, &t.name).ok().flatten())
        .map(|e| String::from_utf8_lossy(&e.bytes).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;
    use crate::history::tests::{service, write};
    use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
    use std::fs;

    /// A change made outside the pipeline, as a hook journals it: the file set to `new`
    /// (`None`: removed), its previous content kept, a row with `agent_session`.
    fn native(store: &Store, rel: &str, new: Option<&[u8]>, session: &str) {
        let abs = store.workspaces().cwd().join(rel);
        let prev = fs::read(&abs).ok();
        if let Some(p) = &prev {
            store
                .pipeline()
                .objects()
                .unwrap()
                .put(p, &sha256_hex(p))
                .unwrap();
        }
        match new {
            Some(b) => fs::write(&abs, b).unwrap(),
            None => fs::remove_file(&abs).unwrap(),
        }
        let mut extra = BTreeMap::new();
        extra.insert("agent_session".into(), json!(session));
        let row = JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: rel.into(),
            sha256: new.map(sha256_hex).unwrap_or_default(),
            prev_sha256: prev.as_deref().map(sha256_hex),
            bytes: new.map_or(0, |b| b.len() as u64),
            mode: match (&prev, new) {
                (None, _) => "create",
                (_, None) => "delete",
                _ => "overwrite",
            }
            .into(),
            caller: "claude-code".into(),
            tool: "native:Bash".into(),
            extra,
        };
        store.pipeline().journal().append(&row).unwrap().commit();
    }

    /// Attribute the pipeline write `journal_id` to `session`, as the MCP after-hook does.
    fn attribute(store: &Store, journal_id: &str, session: &str) {
        crate::agent_session::append(
            store.state_dir(),
            &crate::agent_session::Attribution {
                ts: now_rfc3339(),
                agent_session: session.into(),
                caller: "claude-code".into(),
                tool: "mcp__rw__rw_safe_write".into(),
                journal_ids: vec![journal_id.into()],
            },
        )
        .unwrap();
    }

    #[test]
    fn a_mixed_session_is_undone_as_one_transaction_and_other_sessions_stay() {
        let (t, store) = service();
        let p = |n: &str| t.path().join(n);
        write(&store, "app.py", b"v0\n");
        write(&store, "old.txt", b"old\n");
        write(&store, "other.txt", b"o0\n");
        // The session: an MCP write, a native edit, a shell command creating and deleting.
        let w = write(&store, "app.py", b"v1 by mcp\n");
        attribute(&store, &w.journal_id, "s1");
        native(&store, "app.py", Some(b"v2 by edit\n"), "s1");
        native(&store, "gen.txt", Some(b"generated\n"), "s1");
        native(&store, "old.txt", None, "s1");
        // Another session's change stays.
        native(&store, "other.txt", Some(b"o1 by s2\n"), "s2");
        assert_eq!(session_rows(&store, "s1").unwrap().len(), 4);

        let dry = restore_session(&store, "s1", true).unwrap();
        let diff = dry.diff.unwrap();
        assert!(
            diff.contains("-v2 by edit") && diff.contains("+v0"),
            "{diff}"
        );
        assert!(
            diff.contains("+old") && diff.contains("(removed: gen.txt)"),
            "{diff}"
        );
        assert!(p("gen.txt").exists(), "a dry run writes nothing");

        let r = restore_session(&store, "s1", false).unwrap();
        let c = r.committed.expect("a transaction");
        assert_eq!(c.files.len(), 3);
        assert_eq!(fs::read(p("app.py")).unwrap(), b"v0\n");
        assert_eq!(fs::read(p("old.txt")).unwrap(), b"old\n");
        assert!(!p("gen.txt").exists(), "created by the session: removed");
        assert_eq!(fs::read(p("other.txt")).unwrap(), b"o1 by s2\n");
        // The removed file's content stays in history.
        let objects = store.pipeline().objects().unwrap();
        assert!(objects.contains(&sha256_hex(b"generated\n")));
        let rows = crate::tx::committed_rows(&store, &c.tx_id).unwrap();
        let removal = rows.iter().find(|r| r["path"] == "gen.txt").unwrap();
        assert_eq!(removal["mode"], "delete");
        assert_eq!(removal["sha256"], "");
        // Again: everything is already back.
        let again = restore_session(&store, "s1", false).unwrap();
        assert!(again.committed.is_none());
        assert!(
            again
                .files
                .iter()
                .all(|f| f.action == SessionAction::Unchanged)
        );
        // The restore is itself undoable, the removal too (restore --tx leaves the file the
        // restore re-created, as it leaves any file a transaction created).
        let (_, skipped) = crate::history::restore_tx(&store, &c.tx_id).unwrap();
        assert_eq!(fs::read(p("app.py")).unwrap(), b"v2 by edit\n");
        assert_eq!(fs::read(p("gen.txt")).unwrap(), b"generated\n");
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].path, "old.txt");
    }

    #[test]
    fn a_file_changed_since_the_session_refuses_the_whole_restore() {
        let (t, store) = service();
        write(&store, "a.txt", b"a0");
        write(&store, "b.txt", b"b0");
        native(&store, "a.txt", Some(b"a1"), "s1");
        native(&store, "b.txt", Some(b"b1"), "s1");
        write(&store, "b.txt", b"b2 by someone else");
        let err = restore_session(&store, "s1", false).err().unwrap();
        let Failure::SessionConflict { conflicts, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0]["path"], "b.txt");
        assert_eq!(
            err.envelope("restore", 3).context["reason"],
            "session_conflict"
        );
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a1");
        let none = restore_session(&store, "nobody", false).err().unwrap();
        assert!(matches!(none, Failure::SessionUnknown { .. }), "{none:?}");
    }

    #[test]
    fn a_file_whose_earlier_content_was_not_kept_is_skipped_with_the_reason() {
        let (t, store) = service();
        fs::write(t.path().join("c.txt"), b"never journaled").unwrap();
        // As Cursor's after-only hook records it: no previous hash, not a creation.
        let mut extra = BTreeMap::new();
        extra.insert("agent_session".into(), json!("s1"));
        extra.insert("pre_image".into(), json!(false));
        store
            .pipeline()
            .journal()
            .append(&JournalRow {
                journal_id: new_journal_id(),
                ts: now_rfc3339(),
                path: "c.txt".into(),
                sha256: sha256_hex(b"never journaled"),
                prev_sha256: None,
                bytes: 15,
                mode: "overwrite".into(),
                caller: "cursor".into(),
                tool: "native:edit_file".into(),
                extra,
            })
            .unwrap()
            .commit();
        write(&store, "d.txt", b"d0");
        native(&store, "d.txt", Some(b"d1"), "s1");
        let r = restore_session(&store, "s1", false).unwrap();
        assert_eq!(r.skipped.len(), 1);
        assert_eq!(r.skipped[0].path, "c.txt");
        assert!(r.skipped[0].reason.contains("not kept"), "{:?}", r.skipped);
        assert_eq!(fs::read(t.path().join("d.txt")).unwrap(), b"d0");
    }
}
