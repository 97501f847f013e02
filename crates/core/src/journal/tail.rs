//! The journal tail that `journal_tail` and the journal-tail resource serve: the newest `n`
//! rows of a [`Journal`], optionally only those for one path (as given or absolute) and/or
//! one mode. Reads the journal backwards from its end and parses only the lines that contain
//! the wanted path ([`Journal::tail_containing`]), so it answers in time proportional to what
//! it returns.

use super::{Journal, Row, json_string_forms};
use crate::envelope::{Failure, Result};
use crate::workspace::Workspaces;
use serde_json::Value;

/// Most rows one tail returns.
pub const MAX_TAIL: usize = 10_000;

/// What to tail: built by [`TailQuery::new`], which checks `n` and resolves the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailQuery {
    /// How many rows (newest last), at most [`MAX_TAIL`].
    pub n: usize,
    /// Only rows whose `path` is this path as given or as resolved to an absolute path.
    pub path: Option<PathFilter>,
    /// Only rows with this `mode`.
    pub mode: Option<String>,
}

/// A path filter: the path as given and its absolute form; a row matches either.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFilter {
    pub raw: String,
    pub abs: String,
}

/// The rows found, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Tail {
    pub entries: Vec<Row>,
    /// Lines that could not be parsed and were skipped (a torn last line counts).
    pub corrupt_lines: usize,
}

impl TailQuery {
    /// A query for the newest `n` rows (refused over [`MAX_TAIL`]), for `path` (relative to
    /// the working directory of `workspaces`, or absolute) and `mode` when given.
    pub fn new(
        workspaces: &Workspaces,
        n: usize,
        path: Option<&str>,
        mode: Option<String>,
    ) -> Result<TailQuery> {
        if n > MAX_TAIL {
            return Err(Failure::InvalidArguments {
                message: format!("n must be at most {MAX_TAIL}"),
            });
        }
        let path = match path {
            Some(p) => Some(PathFilter {
                raw: p.to_string(),
                abs: workspaces.absolute(p)?.display().to_string(),
            }),
            None => None,
        };
        Ok(TailQuery { n, path, mode })
    }
}

/// The rows `q` asks for, oldest first.
pub fn tail(journal: &Journal, q: &TailQuery) -> Result<Tail> {
    if q.n > MAX_TAIL {
        return Err(Failure::InvalidArguments {
            message: format!("n must be at most {MAX_TAIL}"),
        });
    }
    // Only lines containing the wanted path are parsed (see `Journal::tail_containing`).
    let needles: Vec<String> = q
        .path
        .iter()
        .flat_map(|f| [json_string_forms(&f.raw), json_string_forms(&f.abs)])
        .flatten()
        .collect();
    let (entries, stats) = journal
        .tail_containing(q.n, &needles, |row| {
            let path_ok = q.path.as_ref().is_none_or(|f| {
                let p = row.get("path").and_then(Value::as_str).unwrap_or_default();
                p == f.abs || p == f.raw
            });
            let mode_ok = q
                .mode
                .as_deref()
                .is_none_or(|m| row.get("mode").and_then(Value::as_str) == Some(m));
            path_ok && mode_ok
        })
        .map_err(|e| Failure::io("read journal", journal.path(), e))?;
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
        assert_eq!(appends.entries[0]["path"], "/w/a");
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
}
