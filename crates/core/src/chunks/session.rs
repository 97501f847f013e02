//! Sessions: the names of sessions and of their part files, the session directory and its
//! inter-process lock ([`open_session`]), the listing of a session's chunk files
//! ([`ChunkSession::list`]), and the [`snapshot`] that compose and preview check before reading.

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
    format!("{}/{CHUNKS_DIR}/{name}", crate::layout::STATE_DIR_NAME)
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
pub struct ChunkSession {
    pub name: String,
    pub dir: StateDir,
    lock: File,
}

impl Drop for ChunkSession {
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
    store: &Store,
    name: &str,
    create: bool,
    exclusive: bool,
) -> Result<Option<ChunkSession>> {
    validate_session(name)?;
    // A reset removes the lock file while a waiter may be blocked on it: after locking,
    // check that the file locked is still the session's lock file, else start over.
    for _ in 0..1000 {
        let Some(dir) = open_subdir(store.state_dir(), &[CHUNKS_DIR, name], 0o777, create)? else {
            return Ok(None);
        };
        let lock_path = dir.path.join(LOCK_FILE);
        let fd = match rustix::fs::openat(
            &dir.dir,
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
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
            return Ok(Some(ChunkSession {
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

impl ChunkSession {
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
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        crate::util::statefile::regular(fd, &self.dir.path.join(name))
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
pub fn snapshot(session: &ChunkSession) -> Result<Snapshot> {
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

#[cfg(test)]
mod tests {
    use super::super::testing::{argument_refusal, put, service, session_dir};
    use super::*;

    #[test]
    fn part_name_pads_the_index_to_three_digits_and_keeps_longer_ones_whole() {
        assert_eq!(part_name(1), "part-001.txt");
        assert_eq!(part_name(42), "part-042.txt");
        assert_eq!(part_name(999), "part-999.txt");
        assert_eq!(part_name(1000), "part-1000.txt");
        assert_eq!(part_name(MAX_INDEX), "part-100000.txt");
    }

    #[test]
    fn parse_part_name_reads_back_every_canonical_name() {
        for i in [1, 7, 99, 999, 1000, 12_345, MAX_INDEX] {
            assert_eq!(parse_part_name(&part_name(i)), Some(i), "index {i}");
        }
    }

    #[test]
    fn parse_part_name_rejects_names_that_are_not_part_files() {
        for name in [
            "part-1.txt",
            "part-01.txt",
            "part-.txt",
            "part-abc.txt",
            "part-0x1.txt",
            "part--01.txt",
            "part-001.md",
            "part-001.txt.bak",
            "part-001.txt.tmp.ab12",
            "chunk-001.txt",
            "manifest.json",
            ".lock",
        ] {
            assert_eq!(parse_part_name(name), None, "{name}");
        }
        // Over three digits with leading zeros it parses, but is not the index's canonical
        // name: the listing calls it foreign.
        assert_eq!(parse_part_name("part-0001.txt"), Some(1));
        assert_ne!(part_name(1), "part-0001.txt");
    }

    #[test]
    fn originals_temp_files_are_part_names_with_a_hex_suffix() {
        assert!(is_originals_temp("part-001.txt.tmp.1a2b3c"));
        assert!(is_originals_temp("part-1000.txt.tmp.ABCDEF"));
        assert!(!is_originals_temp("part-001.txt.tmp."));
        assert!(!is_originals_temp("part-001.txt.tmp.xyz"));
        assert!(!is_originals_temp("part-1.txt.tmp.ab"));
        assert!(!is_originals_temp("notes.txt.tmp.ab"));
        assert!(!is_originals_temp("part-001.txt"));
    }

    #[test]
    fn session_names_are_one_to_64_word_characters_or_dashes() {
        for ok in ["a", "doc_1", "Report-2026", &"x".repeat(64)] {
            assert!(validate_session(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a/b", "..", "a b", "é", "x.y", &"x".repeat(65)] {
            let e = validate_session(bad).unwrap_err();
            assert_eq!(argument_refusal(e), "invalid_session_name", "{bad:?}");
        }
    }

    #[test]
    fn chunk_indices_run_from_one_to_max_index() {
        assert!(validate_index("s", "index", 1).is_ok());
        assert!(validate_index("s", "index", MAX_INDEX).is_ok());
        for bad in [0, MAX_INDEX + 1] {
            let e = validate_index("s", "index", bad).unwrap_err();
            assert_eq!(argument_refusal(e), "index_out_of_range");
        }
    }

    #[test]
    fn session_display_is_under_the_state_directory() {
        assert_eq!(session_display("s1"), ".resilient_write/chunks/s1");
    }

    fn listing_of(indices: &[u64]) -> Listing {
        Listing {
            parts: indices.iter().map(|&i| (i, part_name(i))).collect(),
            foreign: vec![],
        }
    }

    #[test]
    fn listing_missing_names_the_gaps_up_to_the_highest_chunk() {
        let l = listing_of(&[1, 2, 4, 7]);
        assert_eq!(l.highest(), 7);
        assert_eq!(l.indices(), vec![1, 2, 4, 7]);
        assert_eq!(l.missing(None), vec![3, 5, 6]);
        // A smaller total_expected does not hide a gap below the highest chunk.
        assert_eq!(l.missing(Some(2)), vec![3, 5, 6]);
    }

    #[test]
    fn listing_missing_extends_to_total_expected() {
        assert_eq!(listing_of(&[1, 2]).missing(Some(4)), vec![3, 4]);
        let empty = Listing::default();
        assert_eq!(empty.highest(), 0);
        assert!(empty.missing(None).is_empty());
        assert_eq!(empty.missing(Some(2)), vec![1, 2]);
        assert!(listing_of(&[1, 2, 3]).missing(Some(3)).is_empty());
    }

    #[test]
    fn list_keeps_canonical_parts_flags_foreign_ones_and_skips_the_originals_temp_files() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(1000), b"thousand");
        let dir = session_dir(&store, "s");
        for name in [
            "part-0002.txt",
            "part-3.txt",
            "part-x.txt",
            "part-004.txt.tmp.0f1e",
            "notes.txt",
        ] {
            std::fs::write(dir.join(name), b"other tool").unwrap();
        }
        let session = open_session(&store, "s", false, false).unwrap().unwrap();
        let listing = session.list().unwrap();
        assert_eq!(listing.indices(), vec![1, 1000]);
        assert_eq!(listing.parts[&1000], "part-1000.txt");
        assert_eq!(
            listing.foreign,
            vec!["part-0002.txt", "part-3.txt", "part-x.txt"]
        );
    }

    #[test]
    fn open_session_without_create_finds_no_session() {
        let (_t, store) = service();
        assert!(
            open_session(&store, "nothing", false, true)
                .unwrap()
                .is_none()
        );
        assert!(!session_dir(&store, "nothing").exists());
        assert!(open_session(&store, "made", true, true).unwrap().is_some());
        assert!(session_dir(&store, "made").join(LOCK_FILE).exists());
    }

    #[test]
    fn snapshot_refuses_a_gap_naming_the_missing_indices() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        put(&store, "s", Some(4), b"d");
        let session = open_session(&store, "s", false, false).unwrap().unwrap();
        let (reason, details) = super::super::testing::refusal(snapshot(&session).err().unwrap());
        assert_eq!(reason, "non_contiguous_chunks");
        assert_eq!(details["missing"], serde_json::json!([2, 3]));
    }

    #[test]
    fn snapshot_refuses_a_count_below_total_expected() {
        let (_t, store) = service();
        super::super::testing::put_total(&store, "s", Some(1), b"a", Some(3));
        put(&store, "s", Some(2), b"b");
        let session = open_session(&store, "s", false, false).unwrap().unwrap();
        let (reason, details) = super::super::testing::refusal(snapshot(&session).err().unwrap());
        assert_eq!(reason, "chunk_count_mismatch");
        assert_eq!(details["missing"], serde_json::json!([3]));
    }

    #[test]
    fn snapshot_refuses_a_session_mixed_with_foreign_part_files() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        std::fs::write(session_dir(&store, "s").join("part-2.txt"), b"b").unwrap();
        let session = open_session(&store, "s", false, false).unwrap().unwrap();
        let (reason, details) = super::super::testing::refusal(snapshot(&session).err().unwrap());
        assert_eq!(reason, "mixed_session");
        assert_eq!(
            details["unrecognised_files"],
            serde_json::json!(["part-2.txt"])
        );
    }

    #[test]
    fn snapshot_of_a_whole_session_lists_chunks_in_index_order_with_sizes() {
        let (_t, store) = service();
        put(&store, "s", Some(2), b"second");
        put(&store, "s", Some(1), b"1st");
        let session = open_session(&store, "s", false, false).unwrap().unwrap();
        let snap = snapshot(&session).unwrap();
        assert_eq!(snap.names, vec!["part-001.txt", "part-002.txt"]);
        assert_eq!(snap.sizes, vec![3, 6]);
        assert!(snap.records.iter().all(Option::is_some));
    }
}
