//! Session administration: [`reset`] removes a session (chunks first, from index 1 up, so a
//! crash part way leaves a gap compose refuses), and [`status`] reports what a session holds
//! and whether compose would accept it.

use super::records::{check_record, stamp_of};
use super::{
    LOCK_FILE, ModifiedChunk, RECORDS_FILE, Session, errno, open_session, parse_part_name,
    session_display, validate_session,
};
use crate::envelope::{Failure, Result};
use crate::store::Store;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use serde::Serialize;

/// Remove every file of a locked session, then the session directory. Returns how many
/// files were removed (the lock file and records log not counted).
pub(super) fn remove_session(session: &Session) -> Result<u64> {
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
        if k == 1 && crate::pipeline::fault("reset_crash_after_first_unlink") {
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
pub fn reset(svc: &Store, name: &str) -> Result<(bool, u64)> {
    match open_session(svc, name, false, true)? {
        None => Ok((false, 0)),
        Some(session) => Ok((true, remove_session(&session)?)),
    }
}

/// The state of a session, for `chunk_status`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Status {
    pub exists: bool,
    pub total_expected: Option<u64>,
    pub present_indices: Vec<u64>,
    pub missing_indices: Vec<u64>,
    pub chunk_count: u64,
    pub total_bytes: u64,
    /// Chunks whose content differs from the hash recorded when they were written.
    pub modified: Vec<ModifiedChunk>,
    /// `part-*` files that are not resilient-write's (a mixed session).
    pub unrecognised_files: Vec<String>,
    /// ok, missing or corrupt (a missing or corrupt manifest is rebuilt at the next write).
    pub manifest: String,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// Whether compose would accept the session as it is.
    pub ready: bool,
}

/// Inspect a session (shared lock: concurrent appends wait, other readers do not). A chunk
/// whose file is unchanged since its hash was recorded (same inode, ctime and size) is not
/// read again unless `verify`; compose and preview always hash every chunk.
pub fn status(svc: &Store, name: &str, verify: bool) -> Result<(Status, String)> {
    validate_session(name)?;
    let dir_display = session_display(name);
    let Some(session) = open_session(svc, name, false, false)? else {
        return Ok((
            Status {
                exists: false,
                total_expected: None,
                present_indices: vec![],
                missing_indices: vec![],
                chunk_count: 0,
                total_bytes: 0,
                modified: vec![],
                unrecognised_files: vec![],
                manifest: "missing".into(),
                created_at: None,
                updated_at: None,
                ready: false,
            },
            dir_display,
        ));
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
        if let Some(x) = check_record(svc, &session, *i, part, Some(rec), &actual.sha256) {
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
    Ok((
        Status {
            exists: true,
            total_expected,
            present_indices: listing.indices(),
            missing_indices: missing,
            chunk_count: count,
            total_bytes,
            modified,
            unrecognised_files: listing.foreign.clone(),
            manifest: manifest.label().into(),
            created_at: m.and_then(|m| m.created_at.clone()),
            updated_at,
            ready,
        },
        dir_display,
    ))
}
