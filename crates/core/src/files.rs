//! The two writes of workspace files an agent asks for by name (L1): [`put`] (`safe_write`:
//! create, overwrite or append a whole content) and [`replace`] (`safe_replace`: exact-match
//! edits of a text file). Each decides under the pipeline's lock, in this order: an idempotent
//! replay ([`Store::recorded`]), the preconditions ([`crate::write::intent`]), the L0 check of
//! what an edit introduces, the size limit; then the pipeline makes the write durable. The
//! adapters around them (MCP tools, `init`) only parse arguments and shape results.
//!
//! They sit above the [`Store`] they act on, beside the other layers' entry points (chunks,
//! scratchpad, transactions); `write/` below holds what a write means before the store.

use crate::edit::{Edit, apply_edits, unified_diff};
use crate::envelope::{Failure, Result};
use crate::preflight::RejectAt;
use crate::store::Store;
use crate::workspace::Target;
use crate::write::idempotency::{Keyed, idempotency_extra};
use crate::write::intent::{self, Order, Precondition, WriteMode};
use crate::write::pipeline::{Body, Caller, Decision, Outcome, Plan};
use serde_json::{Map, Value, json};

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

/// A write that happened now, or the journal row of the earlier call it replays.
pub enum Written {
    Applied(Outcome),
    Replayed(Map<String, Value>),
}

/// Write `put.bytes` to its target by `put.mode` (`safe_write`).
pub fn put(store: &Store, who: &Caller, put: Put<'_>) -> Result<Written> {
    let Put {
        shown,
        target,
        bytes,
        mode,
        expected_prev_sha256,
        keyed,
    } = put;
    let (outcome, replay) = store.pipeline().commit(target, who, |existing| {
        if let Some(row) = store.recorded(keyed.key, keyed.request_sha256)? {
            return Ok(Decision::Skip(Some(row)));
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
                mode_label: applied.label().into(),
                create_only: applied.create_only(),
                extra: idempotency_extra(keyed.key, keyed.request_sha256),
                new_file_mode: None,
            },
            None,
        ))
    })?;
    match (outcome, replay) {
        (Some(o), _) => Ok(Written::Applied(o)),
        (None, Some(row)) => Ok(Written::Replayed(row)),
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
    /// Run L0 on what the edit introduces and refuse at `reject_at`.
    pub classify: bool,
    pub reject_at: RejectAt,
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
    /// The journal row of the earlier call with the same idempotency key.
    Replayed(Map<String, Value>),
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
        reject_at,
        dry_run,
        keyed,
    } = replace;
    let limit = store.config().max_write_bytes;
    let (outcome, decided) = store.pipeline().commit(target, who, |existing| {
        if let Some(row) = store.recorded(keyed.key, keyed.request_sha256)? {
            return Ok(Decision::Skip(Decided::Skip(Replaced::Replayed(row))));
        }
        let existing = intent::existing_for_edit(shown, expected_prev_sha256, existing)?;
        let text = std::str::from_utf8(&existing.bytes).map_err(|e| Failure::Encoding {
            field: "path".into(),
            reason: format!("the file is not valid UTF-8 ({e}); safe_replace edits text files"),
        })?;
        let (new_text, replacements) = apply_edits(text, edits, shown)?;
        store.preflight_edit(text, &new_text, classify, reject_at)?;
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
        let mut extra = idempotency_extra(keyed.key, keyed.request_sha256);
        extra.insert("replacements".into(), json!(replacements));
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(new_text.into_bytes()),
                mode_label: "replace".into(),
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
    ) -> Result<Written> {
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
            Written::Applied(_)
        ));
        let first = put_bytes(&s, "a.txt", b"two\n", WriteMode::Append, Some("k")).unwrap();
        let Written::Applied(o) = first else {
            panic!("the first keyed call writes");
        };
        assert_eq!(o.mode_label, "append");
        let again = put_bytes(&s, "a.txt", b"two\n", WriteMode::Append, Some("k")).unwrap();
        let Written::Replayed(row) = again else {
            panic!("the retry replays");
        };
        assert_eq!(row["journal_id"], json!(o.journal_id));
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
                    classify: false,
                    reject_at: RejectAt::High,
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
}
