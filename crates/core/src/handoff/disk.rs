//! The handoff store: the I/O around [`super::doc`] over a [`Store`]. [`write()`] puts the
//! envelope through the pipeline beneath a workspace (default `HANDOFF.md`); with `archive`
//! the envelope it replaces is first kept, also through the pipeline, in
//! `.resilient_write/handoffs/<ts>_<task_id>.md`. [`load`] reads and validates an envelope;
//! [`drift`] re-hashes every `last_good_state` file and reports what changed as warnings,
//! never as errors; [`resume_prompt`] is the `resume` prompt's text.

use super::{Drift, Handoff};
use crate::envelope::{Failure, Result};
use crate::journal::now_rfc3339;
use crate::store::Store;
use crate::write::pipeline::{Body, Caller, Decision, Plan, read_existing};
use serde_json::Value;
use std::collections::BTreeMap;

/// Subdirectory of the state directory that keeps archived envelopes.
pub const ARCHIVE_DIR: &str = "handoffs";

/// Hash a workspace file now: `Ok(None)` when it does not exist.
fn hash_file(store: &Store, path: &str) -> Result<Option<(String, u64)>> {
    let target = match store.workspaces().resolve(path, false) {
        Ok(t) => t,
        Err(Failure::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match read_existing(&target.dir, &target.name) {
        Ok(Some(e)) => Ok(Some((e.sha256, e.bytes.len() as u64))),
        Ok(None) => Ok(None),
        Err(e) => Err(Failure::io("read", path, e)),
    }
}

/// Compare every recorded file with the disk. Never fails.
pub fn drift(store: &Store, h: &Handoff) -> Vec<Drift> {
    let mut out = Vec::new();
    for f in &h.last_good_state {
        let warn = |reason: &str, actual: Option<String>| Drift {
            path: f.path.clone(),
            reason: reason.into(),
            expected: f.sha256.clone(),
            actual,
        };
        match hash_file(store, &f.path) {
            Ok(None) => out.push(warn("missing", None)),
            Ok(Some((sha, _))) => {
                if f.sha256.as_deref().map(str::to_ascii_lowercase) != Some(sha.clone()) {
                    out.push(warn("changed", Some(sha)));
                }
            }
            Err(Failure::OutsideWorkspace { .. } | Failure::NoWorkspace { .. }) => {
                out.push(warn("outside_workspace", None))
            }
            Err(_) => out.push(warn("unreadable", None)),
        }
    }
    out
}

/// Make `task_id` safe as part of a file name.
fn file_safe(task_id: &str) -> String {
    let s: String = task_id
        .chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// A handoff just written by [`write()`].
#[derive(Debug)]
pub struct Written {
    /// The handoff file's workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    /// Where the replaced envelope was archived (`archive` and a previous envelope), relative
    /// to the state root: `.resilient_write/handoffs/<ts>_<task_id>.md`.
    pub archived_path: Option<String>,
    /// The envelope as written (hashes filled in, `started_at`/`updated_at` set).
    pub handoff: Handoff,
    /// last_good_state files that differ from their recorded hash right now.
    pub drift: Vec<Drift>,
}

/// Write the handoff `envelope` (front-matter) with Markdown `body` to `path` beneath a
/// workspace: validated, `last_good_state` paths checked to be inside the workspace and their
/// missing hashes filled in from the disk, free text screened by the workspace policy's L0
/// classifier, `updated_at` set (and `started_at` kept from the envelope it replaces). With
/// `archive`, the replaced envelope is kept in `.resilient_write/handoffs/` first. Journaled
/// as tool `handoff_write`.
pub fn write(
    store: &Store,
    envelope: Value,
    body: String,
    path: &str,
    archive: bool,
) -> Result<Written> {
    let mut h = super::from_value(envelope)?;
    // Paths must be inside the workspace; missing hashes are filled in from the disk.
    for (i, f) in h.last_good_state.iter_mut().enumerate() {
        let field = format!("last_good_state[{i}].path");
        match hash_file(store, &f.path) {
            Ok(Some((sha, bytes))) => {
                if f.sha256.is_none() {
                    f.sha256 = Some(sha);
                    f.bytes = f.bytes.or(Some(bytes));
                }
            }
            Ok(None) if f.sha256.is_some() => {}
            Ok(None) => {
                return Err(Failure::InvalidDocument {
                    what: "handoff envelope".into(),
                    message: format!(
                        "{} does not exist, so its sha256 cannot be filled in; give it",
                        f.path
                    ),
                    line: None,
                    field: Some(field),
                    missing_fields: Vec::new(),
                });
            }
            Err(
                e @ (Failure::OutsideWorkspace { .. }
                | Failure::NoWorkspace { .. }
                | Failure::InvalidPath { .. }),
            ) => return Err(e),
            Err(_) if f.sha256.is_some() => {}
            Err(e) => return Err(e),
        }
        if let Some(s) = &mut f.sha256 {
            *s = s.to_ascii_lowercase();
        }
    }
    // The workspace policy's classifier: its extra patterns and disabled families apply.
    super::screen(&h, &body, store.policy().classifier()?)?;
    let now = now_rfc3339();
    h.updated_at = Some(now.clone());

    let target = store.workspaces().resolve(path, true)?;
    let who = Caller {
        caller: store.caller(),
        tool: "handoff_write".into(),
    };
    let (outcome, (archived_path, h)) = store.pipeline().commit(&target, &who, |existing| {
        let mut h = h;
        let previous = existing.and_then(|e| {
            let text = std::str::from_utf8(&e.bytes).ok()?;
            let (front, _) = super::parse(text).ok()?;
            Some(front)
        });
        if h.started_at.is_none() {
            h.started_at = previous
                .as_ref()
                .and_then(|p| p.get("started_at"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| Some(now.clone()));
        }
        let mut archived_path = None;
        if archive && let Some(old) = existing {
            let ts = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
            let name = format!("{ts}_{}.md", file_safe(&h.task_id));
            let archive = crate::state::target(store.state_dir(), ARCHIVE_DIR, &name)?;
            let bytes = old.bytes.clone();
            let archive_who = Caller {
                caller: who.caller.clone(),
                tool: "handoff_write".into(),
            };
            let (out, ()) = store.pipeline().commit(&archive, &archive_who, |_| {
                Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(bytes),
                        mode: "archive".into(),
                        create_only: true,
                        extra: BTreeMap::new(),
                        new_file_mode: Some(0o600),
                    },
                    (),
                ))
            })?;
            archived_path = out.map(|_| archive.row_path.path.clone());
        }
        let text = super::render(&h, &body)?;
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(text.into_bytes()),
                mode: crate::write::pipeline::mode_over(existing, "overwrite"),
                create_only: existing.is_none(),
                extra: BTreeMap::new(),
                new_file_mode: None,
            },
            (archived_path, h),
        ))
    })?;
    let Some(o) = outcome else {
        return Err(Failure::Internal("handoff write was not applied".into()));
    };
    let drift = drift(store, &h);
    Ok(Written {
        path: target.row_path.path.clone(),
        abs_path: o.abs_path.display().to_string(),
        sha256: o.sha256,
        bytes: o.bytes,
        journal_id: o.journal_id,
        archived_path,
        handoff: h,
        drift,
    })
}

/// A handoff as read from disk, with its drift: what `handoff_read`, the `resume` prompt and
/// the handoff resource share.
#[derive(Debug)]
pub struct LoadedHandoff {
    /// The handoff file's workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    pub text: String,
    pub sha256: String,
    pub front: Value,
    pub body: String,
    pub handoff: Handoff,
    pub drift: Vec<Drift>,
}

/// Read, parse and validate the envelope at `path`, and compute its drift. A missing file is
/// [`Failure::TargetMissing`].
pub fn load(store: &Store, path: &str) -> Result<LoadedHandoff> {
    let target = store.workspaces().resolve(path, false)?;
    let existing = read_existing(&target.dir, &target.name)
        .map_err(|e| Failure::io("read", path, e))?
        .ok_or_else(|| crate::write::intent::missing(path))?;
    let text = String::from_utf8(existing.bytes).map_err(|e| Failure::Encoding {
        field: "path".into(),
        reason: format!("the handoff file is not valid UTF-8: {e}"),
    })?;
    let (front, body) = super::parse(&text)?;
    let h = super::from_value(front.clone()).map_err(|e| match e {
        Failure::InvalidDocument {
            message,
            line,
            field,
            missing_fields,
            ..
        } => Failure::InvalidDocument {
            what: format!("handoff file {path}"),
            message,
            line,
            field,
            missing_fields,
        },
        other => other,
    })?;
    let drift = drift(store, &h);
    Ok(LoadedHandoff {
        path: target.row_path.path.clone(),
        abs_path: target.abs_path.display().to_string(),
        text,
        sha256: existing.sha256,
        front,
        body,
        handoff: h,
        drift,
    })
}

/// The `resume` prompt's text for the envelope at `path`.
pub fn resume_prompt(store: &Store, path: &str) -> Result<String> {
    let l = load(store, path)?;
    Ok(super::resume_message(
        &l.path, &l.handoff, &l.body, &l.drift,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn store() -> (tempfile::TempDir, Arc<Store>) {
        crate::testing::temp_store()
    }

    fn envelope(task_id: &str) -> Value {
        json!({"task_id": task_id, "status": "partial", "agent": "tester",
            "summary": "halfway", "next_steps": ["finish"],
            "last_good_state": [{"path": "a.txt"}]})
    }

    #[test]
    fn drift_is_reported_when_a_listed_file_changes_or_goes() {
        let (t, s) = store();
        let a = t.path().join("a.txt");
        std::fs::write(&a, "one\n").unwrap();
        let w = write(&s, envelope("t1"), "# Notes\n".into(), "HANDOFF.md", false).unwrap();
        let recorded = crate::hash::sha256_hex(b"one\n");
        assert_eq!(
            w.handoff.last_good_state[0].sha256.as_deref(),
            Some(recorded.as_str())
        );
        assert_eq!(w.handoff.last_good_state[0].bytes, Some(4));
        assert!(w.drift.is_empty(), "{:?}", w.drift);
        assert!(w.handoff.started_at.is_some() && w.handoff.updated_at.is_some());

        let l = load(&s, "HANDOFF.md").unwrap();
        assert!(l.drift.is_empty());
        assert_eq!(l.body, "# Notes\n");
        assert_eq!(l.sha256, w.sha256);
        assert_eq!(l.handoff.task_id, "t1");

        std::fs::write(&a, "two\n").unwrap();
        let d = drift(&s, &load(&s, "HANDOFF.md").unwrap().handoff);
        assert_eq!(
            d,
            [Drift {
                path: "a.txt".into(),
                reason: "changed".into(),
                expected: Some(recorded.clone()),
                actual: Some(crate::hash::sha256_hex(b"two\n")),
            }]
        );
        let prompt = resume_prompt(&s, "HANDOFF.md").unwrap();
        assert!(prompt.contains("`t1`"), "{prompt}");

        std::fs::remove_file(&a).unwrap();
        let d = load(&s, "HANDOFF.md").unwrap().drift;
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].reason, "missing");
        assert_eq!(d[0].actual, None);
    }

    #[test]
    fn archive_keeps_the_replaced_envelope_in_the_state_dir() {
        let (t, s) = store();
        std::fs::write(t.path().join("a.txt"), "x").unwrap();
        let first = write(&s, envelope("task/1"), String::new(), "HANDOFF.md", true).unwrap();
        // Nothing to archive the first time.
        assert_eq!(first.archived_path, None);
        let before = std::fs::read(&first.abs_path).unwrap();
        let second = write(&s, envelope("task/1"), "b\n".into(), "HANDOFF.md", true).unwrap();
        let archived = second.archived_path.expect("archived");
        let dir = s.state_dir().join(ARCHIVE_DIR);
        // relative to the state root
        assert!(
            archived.starts_with(".resilient_write/handoffs/"),
            "{archived}"
        );
        assert!(archived.ends_with("_task_1.md"), "{archived}");
        let file = s.state_dir().parent().unwrap().join(&archived);
        assert_eq!(std::fs::read(&file).unwrap(), before);
        assert_eq!(first.path, "HANDOFF.md");
        // started_at is carried over from the envelope replaced.
        assert_eq!(second.handoff.started_at, first.handoff.started_at);
        // Without archive, no new file.
        write(&s, envelope("task/1"), String::new(), "HANDOFF.md", false).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn loading_a_missing_handoff_is_target_missing() {
        let (_t, s) = store();
        match load(&s, "HANDOFF.md") {
            Err(Failure::TargetMissing { path }) => assert_eq!(path, "HANDOFF.md"),
            other => panic!("expected TargetMissing, got {other:?}"),
        }
        assert!(matches!(
            resume_prompt(&s, "nope.md"),
            Err(Failure::TargetMissing { .. })
        ));
    }

    #[test]
    fn a_listed_file_that_does_not_exist_needs_its_hash() {
        let (_t, s) = store();
        let e = write(&s, envelope("t"), String::new(), "HANDOFF.md", false).unwrap_err();
        assert!(
            matches!(e, Failure::InvalidDocument { field: Some(ref f), .. }
            if f == "last_good_state[0].path")
        );
    }

    #[test]
    fn file_safe_names_are_safe() {
        assert_eq!(file_safe("a b/c"), "a_b_c");
        assert_eq!(file_safe(".hidden"), "_.hidden");
        assert_eq!(file_safe(""), "_");
    }
}
