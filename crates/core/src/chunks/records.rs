//! What vouches for a chunk: the record of its hash, size and stamp taken when it was
//! written, kept in `manifest.json` (a cache, rebuilt from the files when missing or corrupt)
//! and, between folds, in the records log (`.records.jsonl`, one line per write). A stamp is
//! trusted only while the chunk file still has it; a hash that differs from its record is an
//! edit by hand unless the chunk's latest journaled write wrote it (a record lost to a crash).

use super::{ChunkSession, MANIFEST_FILE, RECORDS_FILE, errno, list_of, session_failure};
use crate::envelope::{Failure, Result};
use crate::store::Store;
use crate::write::pipeline::read_existing;
use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};

/// What the manifest records about one chunk when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub sha256: String,
    pub bytes: u64,
    /// Device, inode and change time (`dev:ino:sec.nsec`) of the chunk file when its hash
    /// was recorded. While they are unchanged (no write, rename or chmod can keep a ctime, and
    /// no process can set one), `chunk_status` trusts the hash without reading the file.
    /// Absent in the original's manifests, which ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<String>,
}

/// One line of the records log.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LogLine {
    index: u64,
    #[serde(flatten)]
    record: ChunkRecord,
    /// When the chunk was written (the manifest's `updated_at` lags until the next fold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<String>,
}

/// The manifest's fields a chunk write needs; the chunk records are skipped unparsed.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ManifestHead {
    #[serde(default)]
    pub(super) total_expected: Option<u64>,
}

/// The manifest's head as found: `Ok(None)` missing, `Err` corrupt (the parse error).
pub(super) type HeadState = std::result::Result<Option<ManifestHead>, String>;

/// The later of two RFC 3339 times (`b` when `a` is absent or either does not parse).
fn later(a: Option<String>, b: String) -> String {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match a {
        Some(a) if matches!((parse(&a), parse(&b)), (Some(x), Some(y)) if x > y) => a,
        _ => b,
    }
}

pub(super) fn stamp_of(st: &rustix::fs::Stat) -> String {
    format!(
        "{}:{}:{}.{:09}",
        st.st_dev, st.st_ino, st.st_ctime, st.st_ctime_nsec
    )
}

/// `manifest.json`. Unknown keys are kept, so a manifest of another version round-trips.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub total_expected: Option<u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chunks: BTreeMap<u64, ChunkRecord>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The manifest as found on disk.
#[derive(Debug, Clone)]
pub enum ManifestState {
    Ok(Manifest),
    Missing,
    Corrupt(String),
}

impl ManifestState {
    pub fn label(&self) -> &'static str {
        match self {
            ManifestState::Ok(_) => "ok",
            ManifestState::Missing => "missing",
            ManifestState::Corrupt(_) => "corrupt",
        }
    }

    pub fn manifest(&self) -> Option<&Manifest> {
        match self {
            ManifestState::Ok(m) => Some(m),
            _ => None,
        }
    }
}

impl ChunkSession {
    /// The manifest as found on disk.
    pub fn manifest(&self) -> Result<ManifestState> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(MANIFEST_FILE))
            .map_err(|e| Failure::io("read manifest", self.dir.path.join(MANIFEST_FILE), e))?;
        let Some(found) = found else {
            return Ok(ManifestState::Missing);
        };
        Ok(match serde_json::from_slice::<Manifest>(&found.bytes) {
            Ok(m) => ManifestState::Ok(m),
            Err(e) => ManifestState::Corrupt(e.to_string()),
        })
    }

    /// The manifest's head (`Ok(None)`: missing; `Err`: corrupt) and its size in bytes.
    pub(super) fn manifest_head(&self) -> Result<(HeadState, u64)> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(MANIFEST_FILE))
            .map_err(|e| Failure::io("read manifest", self.dir.path.join(MANIFEST_FILE), e))?;
        Ok(match found {
            None => (Ok(None), 0),
            Some(f) => (
                serde_json::from_slice::<ManifestHead>(&f.bytes)
                    .map(Some)
                    .map_err(|e| e.to_string()),
                f.bytes.len() as u64,
            ),
        })
    }

    /// The records log, oldest first (a line torn by a crash is skipped), and its size.
    fn read_log(&self) -> Result<(Vec<LogLine>, u64)> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(RECORDS_FILE))
            .map_err(|e| Failure::io("read chunk records", self.dir.path.join(RECORDS_FILE), e))?;
        let Some(found) = found else {
            return Ok((Vec::new(), 0));
        };
        let lines = found
            .bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<LogLine>(l).ok())
            .collect();
        Ok((lines, found.bytes.len() as u64))
    }

    /// The size of the records log (0: none), from one `stat`.
    pub(super) fn log_size(&self) -> Result<u64> {
        match rustix::fs::statat(&self.dir.dir, RECORDS_FILE, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(st.st_size.max(0) as u64),
            Err(rustix::io::Errno::NOENT) => Ok(0),
            Err(e) => Err(Failure::io(
                "stat chunk records",
                self.dir.path.join(RECORDS_FILE),
                errno(e),
            )),
        }
    }

    pub(super) fn open_log(&self, flags: OFlags) -> io::Result<File> {
        rustix::fs::openat(
            &self.dir.dir,
            RECORDS_FILE,
            flags | OFlags::CREATE | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(errno)
        .and_then(|fd| crate::util::statefile::regular(fd, &self.dir.path.join(RECORDS_FILE)))
    }

    /// Append a record with one `write`. Not fsynced: the chunk itself is durable (it went
    /// through the pipeline) and the files are the truth; a record lost to a crash leaves the
    /// chunk unrecorded, as if written by another tool, and its journal row vouches for it.
    pub(super) fn append_log(&self, index: u64, record: &ChunkRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(&LogLine {
            index,
            record: record.clone(),
            at: Some(crate::journal::now_rfc3339()),
        })
        .map_err(io::Error::other)?;
        line.push(b'\n');
        let mut f = self.open_log(OFlags::WRONLY | OFlags::APPEND)?;
        f.write_all(&line)
    }

    /// Every recorded chunk: the manifest's records, then the log's (newer) on top.
    pub(super) fn records(&self, manifest: &ManifestState) -> Result<BTreeMap<u64, ChunkRecord>> {
        Ok(self.records_and_update(manifest)?.0)
    }

    /// [`ChunkSession::records`], and when the session was last written: the later of the
    /// manifest's `updated_at` and the records log's newest line.
    pub(super) fn records_and_update(
        &self,
        manifest: &ManifestState,
    ) -> Result<(BTreeMap<u64, ChunkRecord>, Option<String>)> {
        let mut records = manifest
            .manifest()
            .map(|m| m.chunks.clone())
            .unwrap_or_default();
        let mut updated_at = manifest.manifest().and_then(|m| m.updated_at.clone());
        for line in self.read_log()?.0 {
            records.insert(line.index, line.record);
            if let Some(at) = line.at {
                updated_at = Some(later(updated_at, at));
            }
        }
        Ok((records, updated_at))
    }
}

/// Whether the latest journaled write to the chunk at `abs_path` (or at its workspace-relative
/// `shown` path, as the original journals it) wrote `sha256`: a chunk whose hash differs from
/// its record but is what its own latest journaled write left lost only its record (a crash
/// between the two writes), not its integrity. An earlier write does not vouch: a chunk put
/// back by hand to a content it once had is still an edit.
fn journaled(store: &Store, session: &ChunkSession, name: &str, sha256: &str) -> bool {
    journaled_in(
        store.pipeline().journal(),
        &session.dir.path.join(name),
        &session.display(name),
        sha256,
    )
}

pub(super) fn journaled_in(
    journal: &crate::journal::Journal,
    abs_path: &std::path::Path,
    shown: &str,
    sha256: &str,
) -> bool {
    let abs = abs_path.display().to_string();
    let paths = [abs.as_str(), shown];
    let needles: Vec<String> = paths
        .iter()
        .flat_map(|p| crate::journal::json_string_forms(p))
        .collect();
    journal
        .tail_containing(1, &needles, |row| {
            row.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| paths.contains(&p))
        })
        .ok()
        .and_then(|(rows, _)| rows.into_iter().next())
        .is_some_and(|row| row.get("sha256").and_then(Value::as_str) == Some(sha256))
}

/// A chunk whose content differs from what was recorded when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModifiedChunk {
    pub index: u64,
    pub recorded_sha256: String,
    pub actual_sha256: String,
}

pub(super) fn modified_failure(session: &str, modified: &[ModifiedChunk]) -> Failure {
    let idx: Vec<u64> = modified.iter().map(|m| m.index).collect();
    session_failure(
        session,
        "chunk_modified",
        format!(
            "chunk(s) {} changed since they were written (edited outside resilient-write); \
             rewrite them with chunk_write, or chunk_reset and start again",
            list_of(&idx)
        ),
        json!({ "modified": modified, "have": idx }),
    )
}

/// Check a chunk's actual hash against its record.
pub(super) fn check_record(
    store: &Store,
    session: &ChunkSession,
    index: u64,
    name: &str,
    recorded: Option<&ChunkRecord>,
    actual: &str,
) -> Option<ModifiedChunk> {
    let rec = recorded?;
    if rec.sha256 == actual || journaled(store, session, name, actual) {
        return None;
    }
    Some(ModifiedChunk {
        index,
        recorded_sha256: rec.sha256.clone(),
        actual_sha256: actual.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{put, replace_by_hand, service, session_dir};
    use super::super::{open_session, part_name};
    use super::*;
    use crate::hash::sha256_hex;

    fn open(store: &Store, name: &str) -> ChunkSession {
        open_session(store, name, false, false).unwrap().unwrap()
    }

    #[test]
    fn later_keeps_the_later_of_two_rfc3339_times() {
        let early = "2026-01-01T00:00:00Z".to_string();
        let late = "2026-01-02T00:00:00+00:00".to_string();
        assert_eq!(later(Some(late.clone()), early.clone()), late);
        assert_eq!(later(Some(early.clone()), late.clone()), late);
        assert_eq!(later(None, early.clone()), early);
        // An unparsable time never wins over the new one.
        assert_eq!(later(Some("yesterday".into()), early.clone()), early);
    }

    #[test]
    fn manifest_keeps_unknown_keys_and_reads_records_without_a_stamp() {
        let text = r#"{"session": "s", "created_at": null, "updated_at": null,
            "total_expected": 2, "producer": {"name": "other", "v": 3},
            "chunks": {"1": {"sha256": "aa", "bytes": 2}}}"#;
        let m: Manifest = serde_json::from_str(text).unwrap();
        assert_eq!(m.total_expected, Some(2));
        assert_eq!(m.chunks[&1].stamp, None);
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back["producer"], json!({"name": "other", "v": 3}));
        // The original's records stay as they were: no stamp is added.
        assert_eq!(back["chunks"]["1"], json!({"sha256": "aa", "bytes": 2}));
    }

    #[test]
    fn manifest_state_labels_what_was_found_on_disk() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        let s = open(&store, "s");
        assert_eq!(s.manifest().unwrap().label(), "ok");
        let path = session_dir(&store, "s").join(MANIFEST_FILE);
        std::fs::write(&path, b"{ not json").unwrap();
        let state = s.manifest().unwrap();
        assert_eq!(state.label(), "corrupt");
        assert!(state.manifest().is_none());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(s.manifest().unwrap().label(), "missing");
    }

    #[test]
    fn records_log_lines_override_the_manifest_and_move_updated_at() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"first");
        let manifest_updated = {
            let s = open(&store, "s");
            s.manifest().unwrap().manifest().unwrap().updated_at.clone()
        };
        // A second write goes to the records log, not the manifest. (An open session holds
        // its lock: it is closed before writing.)
        put(&store, "s", Some(1), b"second");
        let s = open(&store, "s");
        let state = s.manifest().unwrap();
        assert_eq!(
            state.manifest().unwrap().chunks[&1].sha256,
            sha256_hex(b"first")
        );
        let (records, updated_at) = s.records_and_update(&state).unwrap();
        assert_eq!(records[&1].sha256, sha256_hex(b"second"));
        assert_eq!(records[&1].bytes, 6);
        let updated_at = updated_at.unwrap();
        assert_eq!(later(manifest_updated, updated_at.clone()), updated_at);
    }

    #[test]
    fn a_torn_records_log_line_is_skipped() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let log = session_dir(&store, "s").join(RECORDS_FILE);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"{\"index\": 3, \"sha2").unwrap();
        let s = open(&store, "s");
        let records = s.records(&s.manifest().unwrap()).unwrap();
        assert_eq!(records.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(records[&2].sha256, sha256_hex(b"two"));
    }

    #[test]
    fn a_recorded_stamp_matches_the_chunk_until_it_is_replaced_by_hand() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"same");
        let s = open(&store, "s");
        let name = part_name(1);
        let recorded = s.records(&s.manifest().unwrap()).unwrap()[&1].clone();
        let now = s.hash_part(&name).unwrap();
        assert!(recorded.stamp.is_some());
        assert_eq!(now, recorded);
        // Same content, new file: the hash still matches but the stamp does not.
        replace_by_hand(&session_dir(&store, "s").join(&name), b"same");
        let after = s.hash_part(&name).unwrap();
        assert_eq!(after.sha256, recorded.sha256);
        assert_ne!(after.stamp, recorded.stamp);
    }

    #[test]
    fn check_record_accepts_the_recorded_hash_and_reports_any_other() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"written");
        let s = open(&store, "s");
        let name = part_name(1);
        let rec = s.records(&s.manifest().unwrap()).unwrap()[&1].clone();
        assert_eq!(
            check_record(&store, &s, 1, &name, Some(&rec), &rec.sha256),
            None
        );
        // Nothing recorded: nothing to compare with.
        let other = sha256_hex(b"edited by hand");
        assert_eq!(check_record(&store, &s, 1, &name, None, &other), None);
        assert_eq!(
            check_record(&store, &s, 1, &name, Some(&rec), &other),
            Some(ModifiedChunk {
                index: 1,
                recorded_sha256: rec.sha256.clone(),
                actual_sha256: other,
            })
        );
    }

    #[test]
    fn the_latest_journaled_write_vouches_for_a_chunk_whose_record_was_lost() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"old");
        put(&store, "s", Some(1), b"new");
        // A crash lost the second write's record: the manifest still records "old".
        std::fs::write(session_dir(&store, "s").join(RECORDS_FILE), b"").unwrap();
        let s = open(&store, "s");
        let name = part_name(1);
        let rec = s.records(&s.manifest().unwrap()).unwrap()[&1].clone();
        assert_eq!(rec.sha256, sha256_hex(b"old"));
        let actual = sha256_hex(b"new");
        assert_eq!(
            check_record(&store, &s, 1, &name, Some(&rec), &actual),
            None
        );
    }

    #[test]
    fn an_earlier_journaled_write_does_not_vouch_for_a_chunk_put_back_by_hand() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"old");
        put(&store, "s", Some(1), b"new");
        let path = session_dir(&store, "s").join(part_name(1));
        replace_by_hand(&path, b"old");
        let s = open(&store, "s");
        let rec = s.records(&s.manifest().unwrap()).unwrap()[&1].clone();
        assert_eq!(rec.sha256, sha256_hex(b"new"));
        let actual = sha256_hex(b"old");
        let m = check_record(&store, &s, 1, &part_name(1), Some(&rec), &actual).unwrap();
        assert_eq!(m.actual_sha256, actual);
        assert_eq!(m.recorded_sha256, rec.sha256);
    }

    #[test]
    fn modified_failure_names_the_modified_indices() {
        let modified = vec![ModifiedChunk {
            index: 2,
            recorded_sha256: "aa".into(),
            actual_sha256: "bb".into(),
        }];
        let (reason, details) = super::super::testing::refusal(modified_failure("s", &modified));
        assert_eq!(reason, "chunk_modified");
        assert_eq!(details["have"], json!([2]));
        assert_eq!(details["modified"][0]["actual_sha256"], "bb");
    }
}
