//! Sessions: the names of sessions and of their part files, the session directory and its
//! inter-process lock ([`open_session`]), the listing of a session's chunk files
//! ([`Session::list`]), and the [`snapshot`] that compose and preview check before reading.

use super::records::stamp_of;
use super::{CHUNKS_DIR, ChunkRecord, LOCK_FILE, MAX_INDEX, errno, list_of, session_failure};
use crate::envelope::{Failure, Result};
use crate::state::{StateDir, open_subdir};
use crate::store::Store;
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use serde_json::json;
use std::collections::BTreeMap;
use std::fs::File;
use std::io;

/// File name of chunk `index`.
pub fn part_name(index: u64) -> String {
    format!("part-{index:03}.txt")
}

/// The index of a `part-NNN.txt` name (at least three digits), if it is one.
pub fn parse_part_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("part-")?.strip_suffix(".txt")?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a temp file of the original's atomic write (`part-NNN.txt.tmp.<hex>`),
/// left by a crash or still being written: the original ignores it, and so do we (it is not
/// a chunk, nor foreign to the session).
fn is_originals_temp(name: &str) -> bool {
    name.split_once(".tmp.").is_some_and(|(part, suffix)| {
        parse_part_name(part).is_some()
            && !suffix.is_empty()
            && suffix.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Display path of session `name`'s directory (`.resilient_write/chunks/<name>`).
pub fn session_display(name: &str) -> String {
    format!("{}/{CHUNKS_DIR}/{name}", crate::store::STATE_DIR_NAME)
}

/// Check a session name against `^[A-Za-z0-9_-]{1,64}$`.
pub fn validate_session(session: &str) -> Result<()> {
    let ok = !session.is_empty()
        && session.len() <= 64
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::ChunkArgument {
            session: session.chars().take(80).collect(),
            reason: "invalid_session_name",
            message: "session names match ^[A-Za-z0-9_-]{1,64}$".into(),
        })
    }
}

pub(super) fn validate_index(session: &str, field: &str, index: u64) -> Result<()> {
    if (1..=MAX_INDEX).contains(&index) {
        Ok(())
    } else {
        Err(Failure::ChunkArgument {
            session: session.into(),
            reason: "index_out_of_range",
            message: format!("{field} must be between 1 and {MAX_INDEX}, got {index}"),
        })
    }
}

/// An open, locked session directory.
pub struct Session {
    pub name: String,
    pub dir: StateDir,
    lock: File,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.lock, FlockOperation::Unlock);
    }
}

/// The chunk files of a session.
#[derive(Debug, Default)]
pub struct Listing {
    /// index -> file name, in numeric order.
    pub parts: BTreeMap<u64, String>,
    /// `part-*` names that are not the canonical name of their index (`part-0001.txt`,
    /// `part-1.txt`): left by another tool, they make the session mixed.
    pub foreign: Vec<String>,
}

impl Listing {
    pub fn indices(&self) -> Vec<u64> {
        self.parts.keys().copied().collect()
    }

    pub fn highest(&self) -> u64 {
        self.parts.keys().next_back().copied().unwrap_or(0)
    }

    /// Indices missing from `1..=max(highest, total_expected)`.
    pub fn missing(&self, total_expected: Option<u64>) -> Vec<u64> {
        let upto = self.highest().max(total_expected.unwrap_or(0));
        (1..=upto).filter(|i| !self.parts.contains_key(i)).collect()
    }
}

/// Open (and with `create`, create) session `name` and lock it, exclusively or shared.
/// `Ok(None)` when the session does not exist and `create` is not set.
pub fn open_session(
    svc: &Store,
    name: &str,
    create: bool,
    exclusive: bool,
) -> Result<Option<Session>> {
    validate_session(name)?;
    // A reset removes the lock file while a waiter may be blocked on it: after locking,
    // check that the file locked is still the session's lock file, else start over.
    for _ in 0..1000 {
        let Some(dir) = open_subdir(svc.state_dir(), &[CHUNKS_DIR, name], 0o777, create)? else {
            return Ok(None);
        };
        let lock_path = dir.path.join(LOCK_FILE);
        let fd = match rustix::fs::openat(
            &dir.dir,
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => fd,
            // The directory was removed between opening it and creating the lock file.
            Err(e) if e == rustix::io::Errno::NOENT => continue,
            Err(e) => return Err(Failure::io("open session lock", &lock_path, errno(e))),
        };
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        rustix::fs::flock(&fd, op)
            .map_err(|e| Failure::io("lock session", &lock_path, errno(e)))?;
        let lock = File::from(fd);
        let held =
            rustix::fs::fstat(&lock).map_err(|e| Failure::io("stat", &lock_path, errno(e)))?;
        let linked = rustix::fs::statat(&dir.dir, LOCK_FILE, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| st.st_ino == held.st_ino && st.st_dev == held.st_dev)
            .unwrap_or(false);
        let dir_alive = rustix::fs::fstat(&dir.dir)
            .map(|st| st.st_nlink > 0)
            .unwrap_or(false);
        if linked && dir_alive {
            return Ok(Some(Session {
                name: name.into(),
                dir,
                lock,
            }));
        }
    }
    Err(Failure::Internal(format!(
        "session {name}: its lock file kept disappearing"
    )))
}

impl Session {
    /// The chunk files on disk.
    pub fn list(&self) -> Result<Listing> {
        let mut listing = Listing::default();
        let dir = rustix::fs::Dir::read_from(&self.dir.dir)
            .map_err(|e| Failure::io("list session", &self.dir.path, errno(e)))?;
        for entry in dir {
            let entry = entry.map_err(|e| Failure::io("list session", &self.dir.path, errno(e)))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if !name.starts_with("part-") || is_originals_temp(name) {
                continue;
            }
            match parse_part_name(name) {
                Some(i) if name == part_name(i) => {
                    listing.parts.insert(i, name.to_string());
                }
                _ => listing.foreign.push(name.to_string()),
            }
        }
        listing.foreign.sort();
        Ok(listing)
    }

    pub(super) fn open_part(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.dir.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        Ok(File::from(fd))
    }

    /// SHA-256, size and stamp of a chunk file.
    pub fn hash_part(&self, name: &str) -> Result<ChunkRecord> {
        let path = self.dir.path.join(name);
        let f = self
            .open_part(name)
            .map_err(|e| Failure::io("read chunk", &path, e))?;
        let st = rustix::fs::fstat(&f).map_err(|e| Failure::io("stat chunk", &path, errno(e)))?;
        let (sha256, bytes) =
            crate::hash::sha256_reader(f).map_err(|e| Failure::io("read chunk", &path, e))?;
        Ok(ChunkRecord {
            sha256,
            bytes,
            stamp: Some(stamp_of(&st)),
        })
    }

    pub(super) fn stat_part(&self, name: &str) -> Result<rustix::fs::Stat> {
        rustix::fs::statat(&self.dir.dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Failure::io("stat chunk", self.dir.path.join(name), errno(e)))
    }

    fn size_of(&self, name: &str) -> Result<u64> {
        self.stat_part(name).map(|st| st.st_size.max(0) as u64)
    }

    /// Display path of a file in the session (`.resilient_write/chunks/<s>/<name>`).
    pub fn display(&self, name: &str) -> String {
        format!("{}/{name}", self.dir.display)
    }
}

/// A session checked for composition: contiguous from 1, reconciled with total_expected,
/// no foreign files.
pub struct Snapshot {
    pub names: Vec<String>,
    pub records: Vec<Option<ChunkRecord>>,
    pub sizes: Vec<u64>,
    pub total_expected: Option<u64>,
}

/// Check that `session` can be composed and return what to compose.
pub fn snapshot(session: &Session) -> Result<Snapshot> {
    let name = session.name.as_str();
    let listing = session.list()?;
    let manifest = session.manifest()?;
    let total_expected = manifest.manifest().and_then(|m| m.total_expected);
    if !listing.foreign.is_empty() {
        return Err(session_failure(
            name,
            "mixed_session",
            format!(
                "the session holds chunk files not written by resilient-write ({}); remove \
                 them or chunk_reset the session",
                listing.foreign.join(", ")
            ),
            json!({ "unrecognised_files": listing.foreign, "have": listing.indices() }),
        ));
    }
    if listing.parts.is_empty() {
        return Err(session_failure(
            name,
            "no_chunks_found",
            "the session has no chunks".into(),
            json!({ "have": [], "total_expected": total_expected }),
        ));
    }
    let gaps = listing.missing(None);
    if !gaps.is_empty() {
        return Err(session_failure(
            name,
            "non_contiguous_chunks",
            format!("chunks are missing: {}", list_of(&gaps)),
            json!({ "have": listing.indices(), "missing": gaps, "total_expected": total_expected }),
        ));
    }
    let count = listing.highest();
    if let Some(t) = total_expected
        && t != count
    {
        let missing: Vec<u64> = (count + 1..=t).collect();
        let message = if t > count {
            format!(
                "total_expected is {t} but only {count} chunk(s) exist; missing: {}",
                list_of(&missing)
            )
        } else {
            format!(
                "{count} chunks exist but total_expected is {t}; a stale session? \
                 chunk_reset it, or raise total_expected with chunk_write"
            )
        };
        return Err(session_failure(
            name,
            "chunk_count_mismatch",
            message,
            json!({ "have": listing.indices(), "missing": missing, "total_expected": t,
                    "chunk_count": count }),
        ));
    }
    let mut all = session.records(&manifest)?;
    let records = listing.parts.keys().map(|i| all.remove(i)).collect();
    let names: Vec<String> = listing.parts.into_values().collect();
    let sizes = names
        .iter()
        .map(|n| session.size_of(n))
        .collect::<Result<Vec<_>>>()?;
    Ok(Snapshot {
        names,
        records,
        sizes,
        total_expected,
    })
}
