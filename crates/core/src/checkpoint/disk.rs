//! The checkpoint store: the I/O around [`super::doc`] over a [`Store`]. [`save`] writes a
//! checkpoint through the pipeline (into the state directory, via [`crate::state::target`]);
//! one over 1 MB is streamed into its temp file instead of being built in memory first
//! (`chunked`). [`read`], [`stored`] and [`list`] find files by name and extension without
//! following symlinks; [`cleanup`] applies the TTL rule ([`super::fate`]). A checkpoint is
//! removed (stale format, cleanup) the journaled way: content kept in the object store, a
//! `delete` row made durable, then the unlink.

use super::{CHECKPOINT_DIR, CHUNK_THRESHOLD, Checkpoint, Fate, Format, Ttl, check_name, fate};
use crate::envelope::{Failure, Result};
use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
use crate::store::Store;
use crate::write::intent;
use crate::write::pipeline::{Body, Caller, Decision, Plan};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A checkpoint just saved by [`save`] (what `checkpoint` answers, flattened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Saved {
    pub name: String,
    pub format: Format,
    /// The TTL's canonical label.
    pub ttl: String,
    /// The checkpoint file relative to the state root: `.resilient_write/checkpoints/<file>`.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    pub created_at: String,
    pub updated_at: String,
    /// True when the content (over 1 MB) was streamed into the file.
    pub chunked: bool,
}

/// A checkpoint as read by [`read`]: the parsed document and the hash and size of its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub checkpoint: Checkpoint,
    pub sha256: String,
    pub bytes: u64,
}

/// One checkpoint in `checkpoint_list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointEntry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub checkpoint_path: String,
    pub sha256: String,
    /// Set when the file cannot be parsed (with why in `reason`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corrupt: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One removed checkpoint.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    pub name: String,
    pub ttl: String,
    /// session_cleanup or expired.
    pub reason: String,
}

/// One checkpoint cleanup could not judge (kept).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CorruptEntry {
    pub name: String,
    pub checkpoint_path: String,
    pub reason: String,
}

/// What [`cleanup`] did.
#[derive(Debug)]
pub struct Cleanup {
    pub removed: Vec<Removed>,
    /// How many readable checkpoints remain.
    pub kept: usize,
    /// Checkpoints whose file cannot be parsed: reported and kept, never silently deleted.
    pub corrupt: Vec<CorruptEntry>,
}

/// A checkpoint file's path as the journal records it and results show it:
/// `.resilient_write/checkpoints/<file>` (relative to the state root).
fn shown(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    format!("{}/{CHECKPOINT_DIR}/{file}", crate::layout::STATE_DIR_NAME)
}

fn dir_path(store: &Store) -> PathBuf {
    store.state_dir().join(CHECKPOINT_DIR)
}

/// The file holding checkpoint `name`, if any: its format by extension and its bytes. When
/// several formats exist (should not happen: saving removes the others), json wins.
fn find(store: &Store, name: &str) -> Result<Option<(PathBuf, Format, Vec<u8>)>> {
    for f in Format::ALL {
        let p = dir_path(store).join(format!("{name}.{}", f.extension()));
        match read_nofollow(&p) {
            Ok(b) => return Ok(Some((p, f, b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Failure::io("read checkpoint", &p, e)),
        }
    }
    Ok(None)
}

fn read_nofollow(p: &Path) -> std::io::Result<Vec<u8>> {
    crate::util::statefile::read(p)
}

/// Save `data` as checkpoint `name` in `format` with `ttl` (`session`, `permanent` or an
/// ISO-8601 duration), replacing any earlier one (its `created_at` is kept, and a file of the
/// same name in another format is removed). Journaled as tool `checkpoint`.
pub fn save(store: &Store, name: &str, format: Format, data: Value, ttl: &str) -> Result<Saved> {
    check_name(name)?;
    let ttl = Ttl::parse(ttl)?;
    if format == Format::Markdown && !data.is_string() {
        return Err(Failure::InvalidDocument {
            what: "checkpoint".into(),
            message: "format markdown needs data to be a string".into(),
            line: None,
            field: Some("data".into()),
            missing_fields: Vec::new(),
        });
    }
    let now = now_rfc3339();
    let previous = find(store, name)?;
    let created_at = previous
        .as_ref()
        .and_then(|(_, f, b)| Checkpoint::parse(b, name, *f).ok())
        .map(|c| c.created_at)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| now.clone());
    let cp = Checkpoint {
        name: name.to_string(),
        format,
        ttl: ttl.label().to_string(),
        created_at: created_at.clone(),
        updated_at: now.clone(),
        data,
    };
    let size = cp
        .encoded_len()
        .map_err(|e| Failure::Internal(format!("encoding checkpoint: {e}")))?;
    let limit = store.config().max_write_bytes;
    intent::within_limit("checkpoint", size, limit)?;
    let chunked = size > CHUNK_THRESHOLD;
    let body = if chunked {
        Body::Stream(Box::new(move |w| cp.write_to(w)))
    } else {
        let mut buf = Vec::with_capacity(size as usize);
        cp.write_to(&mut buf)
            .map_err(|e| Failure::Internal(format!("encoding checkpoint: {e}")))?;
        Body::Bytes(buf)
    };
    let file = format!("{name}.{}", format.extension());
    let target = crate::state::target(store.state_dir(), CHECKPOINT_DIR, &file)?;
    let who = Caller {
        caller: store.caller(),
        tool: "checkpoint".into(),
    };
    let mut extra = BTreeMap::new();
    extra.insert("checkpoint".into(), Value::from(name));
    let (outcome, ()) = store.pipeline().commit(&target, &who, |existing| {
        Ok(Decision::Write(
            Plan {
                body,
                mode: crate::write::pipeline::mode_over(existing, "overwrite"),
                create_only: false,
                extra,
                new_file_mode: Some(0o600),
            },
            (),
        ))
    })?;
    let Some(o) = outcome else {
        return Err(Failure::Internal("checkpoint write was not applied".into()));
    };
    // The same name saved in another format before: that file is now stale.
    for f in Format::ALL {
        if f != format {
            let p = dir_path(store).join(format!("{name}.{}", f.extension()));
            if let Ok(old) = read_nofollow(&p) {
                remove_journaled(store, &p, &old, "checkpoint", name, "format_changed")?;
            }
        }
    }
    Ok(Saved {
        name: name.to_string(),
        format,
        ttl: ttl.label().to_string(),
        path: target.row_path.path.clone(),
        sha256: o.sha256,
        bytes: o.bytes,
        journal_id: o.journal_id,
        created_at,
        updated_at: now,
        chunked,
    })
}

/// Read and parse checkpoint `name`. An invalid name is refused ([`check_name`]), a missing
/// checkpoint is [`Failure::TargetMissing`], a file that cannot be parsed
/// [`Failure::CorruptState`].
pub fn read(store: &Store, name: &str) -> Result<Loaded> {
    check_name(name)?;
    let Some((path, format, bytes)) = find(store, name)? else {
        return Err(intent::missing(format!(
            ".resilient_write/{CHECKPOINT_DIR}/{name}"
        )));
    };
    let checkpoint =
        Checkpoint::parse(&bytes, name, format).map_err(|reason| Failure::CorruptState {
            path: path.display().to_string(),
            reason,
        })?;
    Ok(Loaded {
        checkpoint,
        sha256: crate::hash::sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    })
}

/// Remove a checkpoint file the way the pipeline writes one: its content goes to the object
/// store first (so `restore` can bring it back by hash), a `delete` journal row naming that
/// hash as `prev_sha256` is made durable, then the file is unlinked and its directory
/// fsynced; if the unlink fails the row is taken back. `Ok(false)` when the file was already
/// gone.
fn remove_journaled(
    store: &Store,
    path: &Path,
    bytes: &[u8],
    tool: &str,
    name: &str,
    reason: &str,
) -> Result<bool> {
    let sha = crate::hash::sha256_hex(bytes);
    if let Some(objects) = store.pipeline().objects() {
        objects
            .put(bytes, &sha)
            .map_err(|e| Failure::io("keep the removed checkpoint", path, e))?;
    }
    let mut extra = BTreeMap::new();
    extra.insert("checkpoint".into(), Value::from(name));
    extra.insert("reason".into(), Value::from(reason));
    let row = JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: shown(path),
        sha256: String::new(),
        prev_sha256: Some(sha),
        bytes: 0,
        mode: "delete".into(),
        caller: store.caller(),
        tool: tool.into(),
        extra,
    };
    let journal = store.pipeline().journal();
    let appended = journal
        .append(&row)
        .map_err(|e| Failure::io("append journal", journal.path(), e))?;
    match std::fs::remove_file(path) {
        Ok(()) => {
            appended.commit();
            // The row is durable already; the unlink becomes durable here.
            if let Some(dir) = path.parent() {
                let _ = crate::write::pipeline::fsync_dir(dir);
            }
            Ok(true)
        }
        Err(e) => {
            let gone = e.kind() == std::io::ErrorKind::NotFound;
            appended
                .rollback()
                .map_err(|e| Failure::io("roll back journal row", journal.path(), e))?;
            if gone {
                Ok(false)
            } else {
                Err(Failure::io("remove checkpoint", path, e))
            }
        }
    }
}

/// A checkpoint file found on disk: name, format, path, and its bytes (or why not).
type ScannedCheckpoint = (String, Format, PathBuf, std::io::Result<Vec<u8>>);

/// Every checkpoint file, sorted by name: (name, format, path, bytes or the read error).
fn scan(store: &Store) -> Result<Vec<ScannedCheckpoint>> {
    let dir = dir_path(store);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Failure::io("list checkpoints", &dir, e)),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if !ft.is_file() {
            continue;
        }
        let file = e.file_name().to_string_lossy().into_owned();
        let Some((name, format)) = Format::from_file_name(&file) else {
            continue;
        };
        let p = e.path();
        let bytes = read_nofollow(&p);
        out.push((name, format, p, bytes));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
    Ok(out)
}

/// Every checkpoint, sorted by name, corrupt ones flagged.
pub fn list(store: &Store) -> Result<Vec<CheckpointEntry>> {
    let mut checkpoints = Vec::new();
    for (name, format, path, bytes) in scan(store)? {
        let checkpoint_path = shown(&path);
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                checkpoints.push(CheckpointEntry {
                    name,
                    format: None,
                    ttl: None,
                    bytes: 0,
                    created_at: None,
                    updated_at: None,
                    checkpoint_path,
                    sha256: String::new(),
                    corrupt: true,
                    reason: Some(format!("unreadable: {e}")),
                });
                continue;
            }
        };
        let sha256 = crate::hash::sha256_hex(&bytes);
        let entry = match Checkpoint::parse(&bytes, &name, format) {
            Ok(cp) => CheckpointEntry {
                name,
                format: Some(cp.format),
                ttl: Some(cp.ttl),
                bytes: bytes.len() as u64,
                created_at: Some(cp.created_at),
                updated_at: Some(cp.updated_at),
                checkpoint_path,
                sha256,
                corrupt: false,
                reason: None,
            },
            Err(reason) => CheckpointEntry {
                name,
                format: None,
                ttl: None,
                bytes: bytes.len() as u64,
                created_at: None,
                updated_at: None,
                checkpoint_path,
                sha256,
                corrupt: true,
                reason: Some(reason),
            },
        };
        checkpoints.push(entry);
    }
    Ok(checkpoints)
}

/// The stored file of checkpoint `name` as it is on disk: its format and bytes. `None` when
/// there is no such checkpoint; an invalid name is refused ([`check_name`]).
pub fn stored(store: &Store, name: &str) -> Result<Option<(Format, Vec<u8>)>> {
    check_name(name)?;
    Ok(find(store, name)?.map(|(_, format, bytes)| (format, bytes)))
}

/// Delete checkpoints by TTL: expired durations always, `session` ones when
/// `include_session`, permanent ones never. Files that cannot be parsed are reported and kept.
/// Each removal is journaled as tool `checkpoint_cleanup`.
pub fn cleanup(store: &Store, include_session: bool) -> Result<Cleanup> {
    let now = chrono::Utc::now();
    let mut removed = Vec::new();
    let mut corrupt = Vec::new();
    let mut kept = 0;
    for (name, format, path, bytes) in scan(store)? {
        let checkpoint_path = shown(&path);
        let parsed = bytes
            .map_err(|e| format!("unreadable: {e}"))
            .and_then(|b| Checkpoint::parse(&b, &name, format));
        let cp = match parsed {
            Ok(cp) => cp,
            Err(reason) => {
                corrupt.push(CorruptEntry {
                    name,
                    checkpoint_path,
                    reason,
                });
                continue;
            }
        };
        match fate(&cp, include_session, now) {
            Fate::Keep => kept += 1,
            Fate::Corrupt(reason) => corrupt.push(CorruptEntry {
                name,
                checkpoint_path,
                reason,
            }),
            Fate::Remove(reason) => {
                let bytes = read_nofollow(&path).unwrap_or_default();
                if remove_journaled(store, &path, &bytes, "checkpoint_cleanup", &name, reason)? {
                    removed.push(Removed {
                        name,
                        ttl: cp.ttl,
                        reason: reason.into(),
                    });
                }
            }
        }
    }
    Ok(Cleanup {
        removed,
        kept,
        corrupt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn store() -> (tempfile::TempDir, Arc<Store>) {
        crate::testing::temp_store()
    }

    /// Put a checkpoint file on disk directly (to back-date `updated_at`).
    fn plant(store: &Store, cp: &Checkpoint) {
        let dir = dir_path(store);
        std::fs::create_dir_all(&dir).unwrap();
        let mut buf = Vec::new();
        cp.write_to(&mut buf).unwrap();
        std::fs::write(
            dir.join(format!("{}.{}", cp.name, cp.format.extension())),
            buf,
        )
        .unwrap();
    }

    fn journal_text(store: &Store) -> String {
        std::fs::read_to_string(store.pipeline().journal().path()).unwrap_or_default()
    }

    #[test]
    fn a_saved_checkpoint_reads_back_and_a_resave_keeps_created_at() {
        let (_t, s) = store();
        let data = json!({"step": 3, "items": ["a", "b"]});
        let saved = save(&s, "plan", Format::Json, data.clone(), "P1D").unwrap();
        assert_eq!(saved.name, "plan");
        assert_eq!(saved.ttl, "P1D");
        assert!(!saved.chunked);
        // relative to the state root, as the original shows it
        assert_eq!(saved.path, ".resilient_write/checkpoints/plan.json");
        let file = dir_path(&s).join("plan.json");
        let on_disk = std::fs::read(&file).unwrap();
        assert_eq!(saved.sha256, crate::hash::sha256_hex(&on_disk));
        assert_eq!(saved.bytes, on_disk.len() as u64);

        let back = read(&s, "plan").unwrap();
        assert_eq!(back.checkpoint.data, data);
        assert_eq!(back.checkpoint.format, Format::Json);
        assert_eq!(back.checkpoint.ttl, "P1D");
        assert_eq!(back.checkpoint.created_at, saved.created_at);
        assert_eq!(back.sha256, saved.sha256);
        assert_eq!(back.bytes, saved.bytes);
        assert_eq!(stored(&s, "plan").unwrap(), Some((Format::Json, on_disk)));

        // Saved again as markdown: created_at survives, the json file goes (journaled).
        let again = save(&s, "plan", Format::Markdown, json!("# notes\n"), "session").unwrap();
        assert_eq!(again.created_at, saved.created_at);
        let back = read(&s, "plan").unwrap();
        assert_eq!(back.checkpoint.format, Format::Markdown);
        assert_eq!(back.checkpoint.data, json!("# notes\n"));
        assert!(!file.exists());
        let journal = journal_text(&s);
        assert!(
            journal.contains(
                "\"mode\":\"delete\",\"path\":\".resilient_write/checkpoints/plan.json\""
            ),
            "{journal}"
        );
        assert!(journal.contains("\"format_changed\""), "{journal}");
        let objects = s.pipeline().objects().expect("object store");
        assert!(objects.contains(&saved.sha256));
    }

    #[test]
    fn save_refuses_bad_names_ttls_and_non_string_markdown() {
        let (_t, s) = store();
        assert!(matches!(
            save(&s, "../x", Format::Json, json!(1), "session"),
            Err(Failure::InvalidDocument { .. })
        ));
        assert!(save(&s, "x", Format::Json, json!(1), "sometimes").is_err());
        assert!(matches!(
            save(&s, "x", Format::Markdown, json!({"a": 1}), "session"),
            Err(Failure::InvalidDocument { .. })
        ));
        assert!(list(&s).unwrap().is_empty());
    }

    #[test]
    fn a_missing_checkpoint_is_target_missing() {
        let (_t, s) = store();
        match read(&s, "nothing") {
            Err(Failure::TargetMissing { path }) => {
                assert_eq!(path, ".resilient_write/checkpoints/nothing")
            }
            other => panic!("expected TargetMissing, got {other:?}"),
        }
        assert_eq!(stored(&s, "nothing").unwrap(), None);
    }

    #[test]
    fn list_is_sorted_by_name_and_flags_corrupt_files() {
        let (_t, s) = store();
        assert!(list(&s).unwrap().is_empty());
        save(&s, "b", Format::Yaml, json!({"k": "v"}), "permanent").unwrap();
        save(&s, "a", Format::Json, json!([1, 2]), "session").unwrap();
        std::fs::write(dir_path(&s).join("c.json"), b"{not json").unwrap();
        let entries = list(&s).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(entries[0].format, Some(Format::Json));
        assert_eq!(entries[0].ttl.as_deref(), Some("session"));
        assert_eq!(entries[1].format, Some(Format::Yaml));
        assert!(!entries[1].corrupt);
        assert!(entries[2].corrupt);
        assert!(entries[2].reason.is_some());
        assert_eq!(entries[2].format, None);
    }

    #[test]
    fn cleanup_removes_expired_and_session_checkpoints_and_keeps_the_rest() {
        let (_t, s) = store();
        save(&s, "keep", Format::Json, json!(1), "permanent").unwrap();
        save(&s, "sess", Format::Json, json!(2), "session").unwrap();
        save(&s, "fresh", Format::Json, json!(3), "P1D").unwrap();
        plant(
            &s,
            &Checkpoint {
                name: "old".into(),
                format: Format::Json,
                ttl: "PT30M".into(),
                created_at: "2020-01-01T00:00:00Z".into(),
                updated_at: "2020-01-01T00:00:00Z".into(),
                data: json!(4),
            },
        );
        std::fs::write(dir_path(&s).join("broken.json"), b"{").unwrap();

        // Without include_session: only the expired one goes.
        let c = cleanup(&s, false).unwrap();
        let removed: Vec<(&str, &str)> = c
            .removed
            .iter()
            .map(|r| (r.name.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(removed, [("old", "expired")]);
        assert_eq!(c.removed[0].ttl, "PT30M");
        assert_eq!(c.kept, 3);
        assert_eq!(c.corrupt.len(), 1);
        assert_eq!(c.corrupt[0].name, "broken");
        assert!(!dir_path(&s).join("old.json").exists());

        // With it: the session one goes too; permanent, unexpired and corrupt stay.
        let c = cleanup(&s, true).unwrap();
        let removed: Vec<(&str, &str)> = c
            .removed
            .iter()
            .map(|r| (r.name.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(removed, [("sess", "session_cleanup")]);
        assert_eq!(c.kept, 2);
        assert_eq!(c.corrupt.len(), 1);
        let left: Vec<String> = list(&s).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(left, ["broken", "fresh", "keep"]);

        // Each removal is a journaled delete naming the old content's hash.
        let deletes: Vec<serde_json::Value> = journal_text(&s)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| r["mode"] == "delete")
            .collect();
        assert_eq!(deletes.len(), 2);
        assert!(deletes.iter().all(|r| r["tool"] == "checkpoint_cleanup"));
        assert!(deletes.iter().all(|r| r["prev_sha256"].is_string()));
    }
}
