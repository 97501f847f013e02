//! The journal tail that `journal_tail` and the journal-tail resource serve: the newest `n`
//! rows of a [`Journal`], optionally only those for one path and/or one mode. Rows are shown
//! with workspace-relative paths (a row of an earlier version, with an absolute path beneath
//! a root, is shown relative; see [`super::paths`]). Reads the journal backwards from its end
//! and parses only the lines that contain the wanted path in one of its forms ([`Journal::tail_containing`]),
//! so it answers in time proportional to what it returns.

use super::paths::{JournalPaths, row_fields};
use super::{Journal, Row, json_string_forms};
use crate::envelope::{Failure, Result};
use serde_json::Value;
use std::path::PathBuf;

/// Most rows one tail returns.
pub const MAX_TAIL: usize = 10_000;

/// What to tail: built by [`TailQuery::new`], which checks `n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailQuery {
    /// How many rows (newest last), at most [`MAX_TAIL`].
    pub n: usize,
    /// Only rows for this file.
    pub path: Option<PathFilter>,
    /// Only rows with this `mode`.
    pub mode: Option<String>,
    /// How row paths map to files (and are shown).
    pub paths: JournalPaths,
}

/// A path filter: the path as given and the file it names. A row matches when its `path` is
/// the path as given (as the original compares) or names the same file, in the relative form
/// or the absolute one of earlier versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFilter {
    pub raw: String,
    pub abs: PathBuf,
}

/// The rows found, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Tail {
    pub entries: Vec<Row>,
    /// Lines that could not be parsed and were skipped (a torn last line counts).
    pub corrupt_lines: usize,
}

impl TailQuery {
    /// A query for the newest `n` rows (refused over [`MAX_TAIL`]), for the file `path`
    /// names when given (the caller resolved it: [`crate::store::Store::journal_tail`]) and
    /// `mode` when given; `paths` maps row paths to files.
    pub fn new(
        paths: JournalPaths,
        n: usize,
        path: Option<PathFilter>,
        mode: Option<String>,
    ) -> Result<TailQuery> {
        if n > MAX_TAIL {
            return Err(Failure::InvalidArguments {
                message: format!("n must be at most {MAX_TAIL}"),
            });
        }
        Ok(TailQuery {
            n,
            path,
            mode,
            paths,
        })
    }
}

/// The rows `q` asks for, oldest first, with relative paths.
pub fn tail(journal: &Journal, q: &TailQuery) -> Result<Tail> {
    if q.n > MAX_TAIL {
        return Err(Failure::InvalidArguments {
            message: format!("n must be at most {MAX_TAIL}"),
        });
    }
    // Only lines containing the wanted path (as given, relative or absolute) are parsed
    // (see `Journal::tail_containing`).
    let mut needles: Vec<String> = Vec::new();
    if let Some(f) = &q.path {
        needles = q.paths.needles(&f.abs);
        for n in json_string_forms(&f.raw) {
            if !needles.contains(&n) {
                needles.push(n);
            }
        }
    }
    let (mut entries, stats) = journal
        .tail_containing(q.n, &needles, |row| {
            let path_ok = q.path.as_ref().is_none_or(|f| {
                row_fields(row).is_some_and(|(p, root)| {
                    (p == f.raw && root.is_none()) || q.paths.names(p, root, &f.abs)
                })
            });
            let mode_ok = q
                .mode
                .as_deref()
                .is_none_or(|m| row.get("mode").and_then(Value::as_str) == Some(m));
            path_ok && mode_ok
        })
        .map_err(|e| Failure::io("read journal", journal.path(), e))?;
    for row in &mut entries {
        q.paths.relativize_row(row);
    }
    Ok(Tail {
        entries,
        corrupt_lines: stats.corrupt_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalRow;
    use std::collections::BTreeMap;

    fn row(path: &str, mode: &str) -> JournalRow {
        JournalRow {
            journal_id: crate::journal::new_journal_id(),
            ts: crate::journal::now_rfc3339(),
            path: path.into(),
            sha256: String::new(),
            prev_sha256: None,
            bytes: 1,
            mode: mode.into(),
            caller: "test".into(),
            tool: "test".into(),
            extra: BTreeMap::new(),
        }
    }

    fn query(n: usize, path: Option<(&str, &str)>, mode: Option<&str>) -> TailQuery {
        TailQuery {
            n,
            path: path.map(|(raw, abs)| PathFilter {
                raw: raw.into(),
                abs: abs.into(),
            }),
            mode: mode.map(str::to_string),
            paths: JournalPaths::new("/w".into(), Some("/w".into()), vec!["/w".into()]),
        }
    }

    #[test]
    fn tail_keeps_the_newest_rows_matching_path_and_mode() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        // No journal yet: nothing, not an error.
        assert_eq!(tail(&j, &query(5, None, None)).unwrap().entries.len(), 0);
        for (p, m) in [
            ("/w/a", "create"),
            ("/w/b", "create"),
            ("/w/a", "append"),
            ("a", "overwrite"),
            ("/w/a", "append"),
        ] {
            j.append(&row(p, m)).unwrap().commit();
        }
        let all = tail(&j, &query(3, None, None)).unwrap();
        let modes: Vec<&str> = all
            .entries
            .iter()
            .map(|r| r["mode"].as_str().unwrap())
            .collect();
        assert_eq!(modes, ["append", "overwrite", "append"]);
        assert_eq!(all.corrupt_lines, 0);

        // Rows for the path as given or as absolute, oldest first.
        let a = tail(&j, &query(10, Some(("a", "/w/a")), None)).unwrap();
        let modes: Vec<&str> = a
            .entries
            .iter()
            .map(|r| r["mode"].as_str().unwrap())
            .collect();
        assert_eq!(modes, ["create", "append", "overwrite", "append"]);

        let appends = tail(&j, &query(1, Some(("a", "/w/a")), Some("append"))).unwrap();
        assert_eq!(appends.entries.len(), 1);
        // an earlier version's absolute row is shown relative to the root
        assert_eq!(appends.entries[0]["path"], "a");
        assert_eq!(tail(&j, &query(0, None, None)).unwrap().entries.len(), 0);
    }

    #[test]
    fn corrupt_lines_are_counted_and_too_many_rows_refused() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        j.append(&row("/w/a", "create")).unwrap().commit();
        let mut text = std::fs::read_to_string(j.path()).unwrap();
        text.push_str("not json\n");
        std::fs::write(j.path(), text).unwrap();
        j.append(&row("/w/a", "append")).unwrap().commit();
        let all = tail(&j, &query(10, None, None)).unwrap();
        assert_eq!(all.entries.len(), 2);
        assert_eq!(all.corrupt_lines, 1);
        assert!(matches!(
            tail(&j, &query(MAX_TAIL + 1, None, None)),
            Err(Failure::InvalidArguments { .. })
        ));
    }

    #[test]
    fn a_filter_finds_relative_and_old_absolute_rows_given_either_way_but_not_other_roots() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let mut other_root = row("src/a.rs", "overwrite");
        other_root
            .extra
            .insert("root".into(), Value::from("/elsewhere"));
        for r in [
            row("/w/src/a.rs", "create"),
            row("src/b.rs", "create"),
            other_root,
            row("src/a.rs", "append"),
        ] {
            j.append(&r).unwrap().commit();
        }
        for given in ["src/a.rs", "/w/src/a.rs", "/w/src/../src/a.rs"] {
            let q = query(10, Some((given, "/w/src/a.rs")), None);
            let found = tail(&j, &q).unwrap();
            let modes: Vec<&str> = found
                .entries
                .iter()
                .map(|r| r["mode"].as_str().unwrap())
                .collect();
            assert_eq!(modes, ["create", "append"], "filter_path {given}");
            assert!(found.entries.iter().all(|r| r["path"] == "src/a.rs"));
        }
    }
}
