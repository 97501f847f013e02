//! The analytics query as the `analytics` tool and command ask for it: a `since` given as
//! text (RFC 3339 or a date, refused with `invalid_arguments` otherwise), an optional chunk
//! session, and one pass of [`super::analyse`] over a [`Journal`]'s file (a journal not yet
//! written is an empty one), with paths shown workspace-relative ([`JournalPaths`]).

use super::{Analytics, Query, analyse, parse_since};
use crate::envelope::{Failure, Result};
use crate::journal::Journal;
use crate::journal::paths::JournalPaths;

/// Analyse `journal`: only rows at or after `since` (RFC 3339 or a date), and only chunk
/// session `session_filter` in `sessions`; `paths` maps row paths to files.
pub fn query(
    journal: &Journal,
    paths: JournalPaths,
    since: Option<&str>,
    session_filter: Option<String>,
) -> Result<Analytics> {
    let since = match since {
        None => None,
        Some(s) => Some(parse_since(s).ok_or_else(|| Failure::InvalidArguments {
            message: format!(
                "since {s:?} is not an RFC 3339 time (2026-04-12T10:00:00Z) or a date (2026-04-12)"
            ),
        })?),
    };
    let state_dir = journal.path().parent().unwrap_or(std::path::Path::new("."));
    let attributed = crate::agent_session::by_journal_id(state_dir)
        .map_err(|e| Failure::io("read agent sessions", state_dir, e))?;
    let q = Query {
        since,
        session_filter,
        paths: Some(paths),
        attributed,
    };
    let file = match crate::util::statefile::open_read(journal.path()) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Failure::io("read journal", journal.path(), e)),
    };
    let result = match file {
        Some(f) => analyse(f, &q),
        None => analyse(std::io::empty(), &q),
    };
    result.map_err(|e| Failure::io("read journal", journal.path(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalRow;
    use std::collections::BTreeMap;

    fn paths() -> JournalPaths {
        JournalPaths::new("/w".into(), Some("/w".into()), vec!["/w".into()])
    }

    #[test]
    fn a_missing_journal_is_empty_and_a_bad_since_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let a = query(&j, paths(), None, None).unwrap();
        assert_eq!(a.total_writes, 0);
        match query(&j, paths(), Some("yesterday"), None) {
            Err(Failure::InvalidArguments { message }) => {
                assert!(message.contains("\"yesterday\""), "{message}")
            }
            other => panic!("expected InvalidArguments, got {other:?}"),
        }
    }

    #[test]
    fn rows_since_a_date_are_counted() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        for (ts, path) in [
            ("2020-01-01T00:00:00Z", "/w/old"),
            ("2026-04-12T10:00:00Z", "/w/a"),
            ("2026-04-12T10:01:00Z", "/w/a"),
        ] {
            let row = JournalRow {
                journal_id: crate::journal::new_journal_id(),
                ts: ts.into(),
                path: path.into(),
                sha256: String::new(),
                prev_sha256: None,
                bytes: 10,
                mode: "overwrite".into(),
                caller: "test".into(),
                tool: "safe_write".into(),
                extra: BTreeMap::new(),
            };
            j.append(&row).unwrap().commit();
        }
        assert_eq!(query(&j, paths(), None, None).unwrap().total_writes, 3);
        let recent = query(&j, paths(), Some("2026-01-01"), None).unwrap();
        assert_eq!(recent.total_writes, 2);
        assert_eq!(recent.unique_paths, 1);
        assert_eq!(recent.total_bytes_written, 20);
    }
}
