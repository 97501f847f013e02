//! The two writes of workspace files an agent asks for by name (L1): [`put`] (`safe_write`:
//! create, overwrite or append a whole content) and [`replace`] (`safe_replace`: exact-match
//! edits of a text file). Each decides under the pipeline's lock, in this order: an idempotent
//! replay ([`Store::replay`]: the first call's outcome, read back from its journal row), the
//! preconditions ([`crate::write::intent`]), the L0 check of what an edit introduces, the size
//! limit; then the pipeline makes the write durable. The adapters around them (MCP tools,
//! `init`) only parse arguments and shape results.
//!
//! They sit above the [`Store`] they act on, beside the other layers' entry points (chunks,
//! scratchpad, transactions); `write/` below holds what a write means before the store.

use crate::edit::{Edit, apply_edits, unified_diff};
use crate::envelope::{Failure, Result};
use crate::journal::recorded::{RecordedRow, lenient};
use crate::policy::active::Classify;
use crate::store::Store;
use crate::workspace::Target;
use crate::write::idempotency::{Answer, Keyed};
use crate::write::intent::{self, Order, Precondition, WriteMode};
use crate::write::pipeline::{Body, Caller, Decision, Outcome, Plan};
use serde_json::json;

/// What [`put`] writes.
pub struct Put<'a> {
    /// The path as the client gave it, for messages.
    pub shown: &'a str,
    pub target: &'a Target,
    pub bytes: Vec<u8>,
    pub mode: WriteMode,
    pub expected_prev_sha256: Option<&'a str>,
    pub keyed: Keyed<'a>,
}

/// The journal row of a `safe_write` or `safe_replace`, as a replay reads it.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
struct WriteRow {
    #[serde(flatten)]
    row: RecordedRow,
    #[serde(deserialize_with = "lenient")]
    replacements: Option<u64>,
}

/// Write `put.bytes` to its target by `put.mode` (`safe_write`). A replay answers with the
/// first call's outcome, written to `put.target`.
pub fn put(store: &Store, who: &Caller, put: Put<'_>) -> Result<Answer<Outcome>> {
    let Put {
        shown,
        target,
        bytes,
        mode,
        expected_prev_sha256,
        keyed,
    } = put;
    let (outcome, replay) = store.pipeline().commit(target, who, |existing| {
        if let Some(w) = store.replay::<WriteRow>(keyed)? {
            return Ok(Decision::Skip(Some(w.row)));
        }
        let applied = Precondition {
            shown,
            mode: Some(mode),
            expected: expected_prev_sha256,
            order: Order::ModeFirst,
        }
        .check(existing)?;
        let body = intent::body(applied, existing, bytes);
        let limit = store.config().max_write_bytes;
        intent::within_limit("resulting file", body.len() as u64, limit)?;
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode: applied.label().into(),
                create_only: applied.create_only(),
                extra: keyed.extra(),
                new_file_mode: None,
            },
            None,
        ))
    })?;
    match (outcome, replay) {
        (Some(o), _) => Ok(Answer::Applied(o)),
        (None, Some(row)) => Ok(Answer::Replayed(Outcome::recorded(
            row,
            target.abs_path.clone(),
        ))),
        (None, None) => Err(Failure::Internal(
            "write neither applied nor replayed".into(),
        )),
    }
}

/// What [`replace`] edits.
pub struct Replace<'a> {
    pub shown: &'a str,
    pub target: &'a Target,
    pub edits: &'a [Edit],
    pub expected_prev_sha256: Option<&'a str>,
    /// Run L0 on what the edit introduces, and refuse at its verdict.
    pub classify: Classify,
    /// Compute the diff, write nothing.
    pub dry_run: bool,
    pub keyed: Keyed<'a>,
}

/// The edit as decided: its content's hash and size, the file's hash before it, and how many
/// replacements it made.
#[derive(Debug, Clone)]
pub struct Edited {
    pub sha256: String,
    pub bytes: u64,
    pub prev_sha256: String,
    pub replacements: usize,
}

/// What [`replace`] did.
pub enum Replaced {
    /// Written now.
    Applied(Edited, Outcome),
    /// A dry run: what would be written, and the unified diff.
    DryRun(Edited, String),
    /// The earlier call with the same idempotency key, as its journal row recorded it.
    Replayed(Edited, Outcome),
}

/// What the decision under the lock hands back to [`replace`].
enum Decided {
    Write(Edited),
    Skip(Replaced),
}

/// Apply `replace.edits` to the existing text file, all or nothing (`safe_replace`).
pub fn replace(store: &Store, who: &Caller, replace: Replace<'_>) -> Result<Replaced> {
    let Replace {
        shown,
        target,
        edits,
        expected_prev_sha256,
        classify,
        dry_run,
        keyed,
    } = replace;
    let limit = store.config().max_write_bytes;
    let (outcome, decided) = store.pipeline().commit(target, who, |existing| {
        if let Some(w) = store.replay::<WriteRow>(keyed)? {
            let edited = Edited {
                sha256: w.row.sha256.clone(),
                bytes: w.row.bytes,
                prev_sha256: w.row.prev_sha256.clone().unwrap_or_default(),
                replacements: w.replacements.unwrap_or(0) as usize,
            };
            let outcome = Outcome::recorded(w.row, target.abs_path.clone());
            return Ok(Decision::Skip(Decided::Skip(Replaced::Replayed(
                edited, outcome,
            ))));
        }
        let existing = intent::existing_for_edit(shown, expected_prev_sha256, existing)?;
        let text = std::str::from_utf8(&existing.bytes).map_err(|e| Failure::Encoding {
            field: "path".into(),
            reason: format!("the file is not valid UTF-8 ({e}); safe_replace edits text files"),
        })?;
        let (new_text, replacements) = apply_edits(text, edits, shown)?;
        store.policy().preflight_edit(
            text,
            &new_text,
            classify.classify,
            classify.classify_reject_at,
        )?;
        intent::within_limit("resulting file", new_text.len() as u64, limit)?;
        let edited = Edited {
            sha256: crate::hash::sha256_hex(new_text.as_bytes()),
            bytes: new_text.len() as u64,
            prev_sha256: existing.sha256.clone(),
            replacements,
        };
        if dry_run {
            let diff = unified_diff(text, &new_text, shown);
            return Ok(Decision::Skip(Decided::Skip(Replaced::DryRun(
                edited, diff,
            ))));
        }
        let mut extra = keyed.extra();
        extra.insert("replacements".into(), json!(replacements));
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(new_text.into_bytes()),
                mode: "replace".into(),
                create_only: false,
                extra,
                new_file_mode: None,
            },
            Decided::Write(edited),
        ))
    })?;
    match (outcome, decided) {
        (Some(o), Decided::Write(edited)) => Ok(Replaced::Applied(edited, o)),
        (_, Decided::Skip(done)) => Ok(done),
        (None, Decided::Write(_)) => Err(Failure::Internal("edit decided but not written".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn store() -> (tempfile::TempDir, Arc<Store>) {
        crate::testing::temp_store()
    }

    fn who() -> Caller {
        Caller {
            caller: "test".into(),
            tool: "safe_write".into(),
        }
    }

    fn put_bytes(
        s: &Store,
        path: &str,
        bytes: &[u8],
        mode: WriteMode,
        key: Option<&str>,
    ) -> Result<Answer<Outcome>> {
        let target = s.workspaces().resolve(path, true)?;
        put(
            s,
            &who(),
            Put {
                shown: path,
                target: &target,
                bytes: bytes.to_vec(),
                mode,
                expected_prev_sha256: None,
                keyed: Keyed {
                    key,
                    request_sha256: "req",
                },
            },
        )
    }

    #[test]
    fn put_creates_then_appends_and_a_keyed_retry_replays_without_writing() {
        let (t, s) = store();
        assert!(matches!(
            put_bytes(&s, "a.txt", b"one\n", WriteMode::Create, None).unwrap(),
            Answer::Applied(_)
        ));
        let first = put_bytes(&s, "a.txt", b"two\n", WriteMode::Append, Some("k")).unwrap();
        let Answer::Applied(o) = first else {
            panic!("the first keyed call writes");
        };
        assert_eq!(o.mode, "append");
        let again = put_bytes(&s, "a.txt", b"two\n", WriteMode::Append, Some("k")).unwrap();
        let Answer::Replayed(r) = again else {
            panic!("the retry replays");
        };
        assert_eq!(r.journal_id, o.journal_id);
        assert_eq!((r.sha256, r.bytes), (o.sha256, o.bytes));
        assert_eq!(r.mode, "append");
        assert_eq!(
            std::fs::read(t.path().join("a.txt")).unwrap(),
            b"one\ntwo\n"
        );
    }

    #[test]
    fn put_over_the_size_limit_is_refused_and_writes_nothing() {
        let (t, mut c) = crate::testing::temp_config();
        c.max_write_bytes = 4;
        let s = crate::startup::open(c).0;
        put_bytes(&s, "a.txt", b"abc", WriteMode::Create, None).unwrap();
        let e = put_bytes(&s, "a.txt", b"de", WriteMode::Append, None)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                Failure::TooLarge {
                    bytes: 5,
                    limit: 4,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(std::fs::read(t.path().join("a.txt")).unwrap(), b"abc");
    }

    #[test]
    fn replace_edits_once_a_dry_run_writes_nothing_and_a_miss_changes_nothing() {
        let (t, s) = store();
        put_bytes(&s, "a.txt", b"alpha beta\n", WriteMode::Create, None).unwrap();
        let target = s.workspaces().resolve("a.txt", false).unwrap();
        let edits = [Edit {
            old_string: "beta".into(),
            new_string: "gamma".into(),
            count: 1,
        }];
        let run = |dry_run: bool, edits: &[Edit]| {
            replace(
                &s,
                &who(),
                Replace {
                    shown: "a.txt",
                    target: &target,
                    edits,
                    expected_prev_sha256: None,
                    classify: Classify::default(),
                    dry_run,
                    keyed: Keyed {
                        key: None,
                        request_sha256: "r",
                    },
                },
            )
        };
        let Replaced::DryRun(e, diff) = run(true, &edits).unwrap() else {
            panic!("a dry run");
        };
        assert_eq!(e.replacements, 1);
        assert!(diff.contains("+alpha gamma"), "{diff}");
        assert_eq!(
            std::fs::read(t.path().join("a.txt")).unwrap(),
            b"alpha beta\n"
        );
        let Replaced::Applied(e, o) = run(false, &edits).unwrap() else {
            panic!("applied");
        };
        assert_eq!(e.sha256, o.sha256);
        assert_eq!(
            std::fs::read(t.path().join("a.txt")).unwrap(),
            b"alpha gamma\n"
        );
        let miss = [Edit {
            old_string: "delta".into(),
            new_string: "x".into(),
            count: 1,
        }];
        assert!(run(false, &miss).is_err());
        assert_eq!(
            std::fs::read(t.path().join("a.txt")).unwrap(),
            b"alpha gamma\n"
        );
    }

    #[test]
    fn a_keyed_replace_retried_answers_with_the_recorded_edit_and_writes_nothing() {
        let (_t, s) = store();
        put_bytes(&s, "a.txt", b"a a b\n", WriteMode::Create, None).unwrap();
        let target = s.workspaces().resolve("a.txt", false).unwrap();
        let edits = [Edit {
            old_string: "a".into(),
            new_string: "c".into(),
            count: -1,
        }];
        let run = || {
            let r = Replace {
                shown: "a.txt",
                target: &target,
                edits: &edits,
                expected_prev_sha256: None,
                classify: Classify::default(),
                dry_run: false,
                keyed: Keyed {
                    key: Some("k"),
                    request_sha256: "r",
                },
            };
            replace(&s, &who(), r).unwrap()
        };
        let Replaced::Applied(e, o) = run() else {
            panic!("the first call edits");
        };
        let rows = s.pipeline().journal().read_from(0).unwrap().0;
        let Replaced::Replayed(again, recorded) = run() else {
            panic!("the retry replays");
        };
        assert_eq!(s.pipeline().journal().read_from(0).unwrap().0, rows);
        assert_eq!(
            (
                again.sha256,
                again.bytes,
                again.prev_sha256,
                again.replacements
            ),
            (e.sha256, e.bytes, e.prev_sha256, 2)
        );
        assert_eq!(
            (recorded.journal_id, recorded.mode, recorded.abs_path),
            (o.journal_id, "replace".to_string(), target.abs_path.clone())
        );
    }
}
