//! ChunkSession administration: [`reset`] removes a session (chunks first, from index 1 up, so a
//! crash part way leaves a gap compose refuses), and [`status`] reports what a session holds
//! and whether compose would accept it.

use super::records::{check_record, stamp_of};
use super::{
    ChunkSession, LOCK_FILE, ModifiedChunk, RECORDS_FILE, errno, open_session, parse_part_name,
    session_display, validate_session,
};
use crate::envelope::{Failure, Result};
use crate::store::Store;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Remove every file of a locked session, then the session directory. Returns how many
/// files were removed (the lock file and records log not counted).
pub(super) fn remove_session(session: &ChunkSession) -> Result<u64> {
    let path = &session.dir.path;
    let mut names = Vec::new();
    let dir = rustix::fs::Dir::read_from(&session.dir.dir)
        .map_err(|e| Failure::io("list session", path, errno(e)))?;
    for entry in dir {
        let entry = entry.map_err(|e| Failure::io("list session", path, errno(e)))?;
        let name = entry.file_name().to_bytes().to_vec();
        if name == b"." || name == b".." {
            continue;
        }
        names.push(name);
    }
    let mut removed = 0u64;
    // Chunks go first, from index 1 up: a crash part way leaves a session whose chunk 1 is
    // gone, which compose refuses (a gap), never a shorter session it would compose as if
    // whole. The lock file goes last: until then, a waiter that wakes up still finds it linked.
    names.sort_by_key(|n| {
        let index = std::str::from_utf8(n).ok().and_then(parse_part_name);
        (n.as_slice() == LOCK_FILE.as_bytes(), index.is_none(), index)
    });
    for (k, name) in names.into_iter().enumerate() {
        if k == 1 && crate::write::pipeline::fault("reset_crash_after_first_unlink") {
            std::process::abort();
        }
        // Our own bookkeeping is not counted, as the original has none.
        let ours =
            name.as_slice() == LOCK_FILE.as_bytes() || name.as_slice() == RECORDS_FILE.as_bytes();
        match rustix::fs::unlinkat(&session.dir.dir, name.as_slice(), AtFlags::empty()) {
            Ok(()) => {
                if !ours {
                    removed += 1;
                }
            }
            Err(e) if e == rustix::io::Errno::NOENT => {}
            Err(e) => return Err(Failure::io("remove session file", path, errno(e))),
        }
    }
    let parent = path.parent().unwrap_or(path);
    let session_name = session.name.as_str();
    let chunks = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Failure::io("open chunks directory", parent, errno(e)))?;
    match rustix::fs::unlinkat(&chunks, session_name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        // A writer that opened the directory before it went created a new lock file in it
        // once ours was gone: a new session has begun after this reset. What this reset
        // removed stays removed; the directory is now that session's.
        Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
            rustix::fs::fsync(&session.dir.dir)
                .map_err(|e| Failure::io("fsync session directory", path, errno(e)))?;
        }
        Err(e) => return Err(Failure::io("remove session directory", path, errno(e))),
    }
    let _ = rustix::fs::fsync(chunks.as_fd());
    Ok(removed)
}

/// Remove session `name`. Returns `(existed, files removed)`.
pub fn reset(store: &Store, name: &str) -> Result<(bool, u64)> {
    match open_session(store, name, false, true)? {
        None => Ok((false, 0)),
        Some(session) => Ok((true, remove_session(&session)?)),
    }
}

/// The state of a session, as `chunk_status` reports it (flattened into its result).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Status {
    pub exists: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_expected: Option<u64>,
    pub present_indices: Vec<u64>,
    /// Gaps below the highest chunk, and indices up to total_expected not yet written.
    pub missing_indices: Vec<u64>,
    pub chunk_dir: String,
    pub chunk_count: u64,
    pub total_bytes: u64,
    /// Chunks whose content differs from the hash recorded when they were written.
    pub modified_chunks: Vec<ModifiedChunk>,
    /// part-* files that are not resilient-write's (a mixed session).
    pub unrecognised_files: Vec<String>,
    /// ok, missing or corrupt (rebuilt from the chunk files at the next write).
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Whether chunk_compose would accept the session now.
    pub ready: bool,
}

/// Inspect a session (shared lock: concurrent appends wait, other readers do not). A chunk
/// whose file is unchanged since its hash was recorded (same inode, ctime and size) is not
/// read again unless `verify`; compose and preview always hash every chunk.
pub fn status(store: &Store, name: &str, verify: bool) -> Result<Status> {
    validate_session(name)?;
    let dir_display = session_display(name);
    let Some(session) = open_session(store, name, false, false)? else {
        return Ok(Status {
            exists: false,
            total_expected: None,
            present_indices: vec![],
            missing_indices: vec![],
            chunk_dir: dir_display,
            chunk_count: 0,
            total_bytes: 0,
            modified_chunks: vec![],
            unrecognised_files: vec![],
            manifest: "missing".into(),
            created_at: None,
            updated_at: None,
            ready: false,
        });
    };
    let listing = session.list()?;
    let manifest = session.manifest()?;
    let m = manifest.manifest();
    let total_expected = m.and_then(|m| m.total_expected);
    let (records, updated_at) = session.records_and_update(&manifest)?;
    let mut modified = Vec::new();
    let mut total_bytes = 0;
    for (i, part) in &listing.parts {
        let st = session.stat_part(part)?;
        let size = st.st_size.max(0) as u64;
        total_bytes += size;
        let Some(rec) = records.get(i) else {
            continue; // nothing recorded: nothing to compare with
        };
        // Unchanged since recorded (same file, same ctime, same size): its hash stands.
        let unchanged = rec.bytes == size && rec.stamp.as_deref() == Some(&stamp_of(&st));
        if unchanged && !verify {
            continue;
        }
        let actual = session.hash_part(part)?;
        if let Some(x) = check_record(store, &session, *i, part, Some(rec), &actual.sha256) {
            modified.push(x);
        }
    }
    let missing = listing.missing(total_expected);
    let count = listing.parts.len() as u64;
    let ready = count > 0
        && missing.is_empty()
        && modified.is_empty()
        && listing.foreign.is_empty()
        && total_expected.is_none_or(|t| t == count);
    Ok(Status {
        exists: true,
        total_expected,
        present_indices: listing.indices(),
        missing_indices: missing,
        chunk_dir: dir_display,
        chunk_count: count,
        total_bytes,
        modified_chunks: modified,
        unrecognised_files: listing.foreign.clone(),
        manifest: manifest.label().into(),
        created_at: m.and_then(|m| m.created_at.clone()),
        updated_at,
        ready,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{put, put_total, replace_by_hand, service, session_dir};
    use super::super::{MANIFEST_FILE, part_name};
    use super::*;
    use crate::hash::sha256_hex;

    #[test]
    fn reset_removes_the_session_and_counts_its_files_but_not_our_bookkeeping() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let dir = session_dir(&store, "s");
        assert!(dir.join(RECORDS_FILE).exists());
        // Two chunks and the manifest; the lock file and the records log are not counted.
        assert_eq!(reset(&store, "s").unwrap(), (true, 3));
        assert!(!dir.exists());
        assert!(!status(&store, "s", false).unwrap().exists);
        assert_eq!(reset(&store, "s").unwrap(), (false, 0));
    }

    #[test]
    fn reset_removes_foreign_files_too_and_leaves_other_sessions_alone() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "keep", Some(1), b"kept");
        let dir = session_dir(&store, "s");
        std::fs::write(dir.join("part-2.txt"), b"other tool").unwrap();
        std::fs::write(dir.join("part-002.txt.tmp.ab"), b"original's temp").unwrap();
        assert_eq!(reset(&store, "s").unwrap(), (true, 4));
        assert!(!dir.exists());
        let kept = status(&store, "keep", true).unwrap();
        assert!(kept.ready);
        assert_eq!(kept.present_indices, vec![1]);
    }

    #[test]
    fn reset_and_status_refuse_an_invalid_session_name() {
        let (_t, store) = service();
        assert!(reset(&store, "../x").is_err());
        assert!(status(&store, "../x", false).is_err());
    }

    #[test]
    fn status_of_an_unknown_session_says_it_does_not_exist() {
        let (_t, store) = service();
        let s = status(&store, "nothing", false).unwrap();
        assert!(!s.exists);
        assert!(!s.ready);
        assert_eq!(s.manifest, "missing");
        assert_eq!(s.chunk_dir, ".resilient_write/chunks/nothing");
        assert!(!session_dir(&store, "nothing").exists());
    }

    #[test]
    fn status_reports_missing_indices_and_is_ready_only_when_whole() {
        let (_t, store) = service();
        put_total(&store, "s", Some(1), b"aa", Some(3));
        put(&store, "s", Some(3), b"ccc");
        let s = status(&store, "s", false).unwrap();
        assert!(s.exists);
        assert_eq!(s.total_expected, Some(3));
        assert_eq!(s.present_indices, vec![1, 3]);
        assert_eq!(s.missing_indices, vec![2]);
        assert_eq!(s.chunk_count, 2);
        assert_eq!(s.total_bytes, 5);
        assert_eq!(s.manifest, "ok");
        assert!(s.created_at.is_some() && s.updated_at.is_some());
        assert!(!s.ready);
        put(&store, "s", Some(2), b"b");
        let s = status(&store, "s", false).unwrap();
        assert!(s.missing_indices.is_empty());
        assert!(s.ready);
    }

    #[test]
    fn status_is_not_ready_with_foreign_part_files() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        std::fs::write(session_dir(&store, "s").join("part-0002.txt"), b"b").unwrap();
        let s = status(&store, "s", false).unwrap();
        assert_eq!(s.unrecognised_files, vec!["part-0002.txt"]);
        assert!(!s.ready);
    }

    #[test]
    fn status_notices_a_chunk_replaced_by_hand_with_content_of_the_same_size() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"abc");
        put(&store, "s", Some(2), b"def");
        replace_by_hand(&session_dir(&store, "s").join(part_name(2)), b"xyz");
        let s = status(&store, "s", false).unwrap();
        assert_eq!(
            s.modified_chunks,
            vec![ModifiedChunk {
                index: 2,
                recorded_sha256: sha256_hex(b"def"),
                actual_sha256: sha256_hex(b"xyz"),
            }]
        );
        assert!(!s.ready);
    }

    #[test]
    fn status_notices_a_chunk_edited_in_place() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"abc");
        std::fs::write(session_dir(&store, "s").join(part_name(1)), b"abd").unwrap();
        let s = status(&store, "s", false).unwrap();
        assert_eq!(s.modified_chunks.len(), 1);
        assert_eq!(s.modified_chunks[0].actual_sha256, sha256_hex(b"abd"));
    }

    #[test]
    fn status_trusts_a_recorded_hash_only_while_the_chunk_stamp_matches() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"abc");
        let dir = session_dir(&store, "s");
        // Falsify the recorded hash, keeping the stamp, and leave no journal row to vouch
        // for the file: only reading the chunk can tell.
        let path = dir.join(MANIFEST_FILE);
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let fake = sha256_hex(b"not what was written");
        m["chunks"]["1"]["sha256"] = serde_json::json!(fake);
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        std::fs::write(store.pipeline().journal().path(), b"").unwrap();
        // The stamp matches: the record stands without reading the file.
        assert!(
            status(&store, "s", false)
                .unwrap()
                .modified_chunks
                .is_empty()
        );
        // verify reads every chunk.
        let s = status(&store, "s", true).unwrap();
        assert_eq!(s.modified_chunks.len(), 1);
        assert_eq!(s.modified_chunks[0].recorded_sha256, fake);
        // The same content in a new file moves the stamp: the chunk is read again.
        replace_by_hand(&dir.join(part_name(1)), b"abc");
        let s = status(&store, "s", false).unwrap();
        assert_eq!(s.modified_chunks.len(), 1);
        assert_eq!(s.modified_chunks[0].actual_sha256, sha256_hex(b"abc"));
    }

    #[test]
    fn status_reads_a_missing_or_corrupt_manifest_without_repairing_it() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        let path = session_dir(&store, "s").join(MANIFEST_FILE);
        std::fs::write(&path, b"{ torn").unwrap();
        let s = status(&store, "s", false).unwrap();
        assert_eq!(s.manifest, "corrupt");
        assert!(s.ready);
        assert_eq!(std::fs::read(&path).unwrap(), b"{ torn");
        std::fs::remove_file(&path).unwrap();
        let s = status(&store, "s", false).unwrap();
        assert_eq!(s.manifest, "missing");
        assert!(!path.exists());
    }
}
