//! History layer (beyond the paper): the content-addressed object store of pre-images,
//! `.resilient_write/objects/<aa>/<sha256>`.
//!
//! The write pipeline hands every previous content it is about to replace to
//! [`ObjectStore::put`] *before* the rename that replaces it, so a crash can never lose the
//! pre-image of an acknowledged write. Guarantees:
//! - An object is named by the SHA-256 of its bytes and stored once (deduplicated): a second
//!   `put` of the same content is a `stat`.
//! - An object appears under its name only whole and durable: temp file, `fsync`, rename,
//!   `fsync` of the fan-out directory (and of `objects/` when the fan-out directory is new).
//! - [`ObjectStore::get`] re-hashes what it reads: a damaged object is reported as absent
//!   rather than restored.
//!
//! Objects are state, not workspace content: the store writes them itself (like the journal),
//! and only the pipeline and `gc` ([`crate::history::gc`]) call it.

use crate::hash::sha256_hex;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Directory of the store inside the state directory.
pub const OBJECTS_DIR: &str = "objects";

static OBJ_COUNTER: AtomicU64 = AtomicU64::new(0);

/// One stored object, as listed by [`ObjectStore::list`].
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    pub sha256: String,
    pub bytes: u64,
    /// When it was stored (its mtime).
    pub stored_at: std::time::SystemTime,
}

/// The object store of one state directory.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
}

impl ObjectStore {
    pub fn new(state_dir: &Path) -> ObjectStore {
        ObjectStore {
            dir: state_dir.join(OBJECTS_DIR),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of object `sha256` (which must be 64 lowercase hex digits).
    pub fn path_of(&self, sha256: &str) -> PathBuf {
        let fan = sha256.get(..2).unwrap_or("00");
        self.dir.join(fan).join(sha256)
    }

    /// Whether object `sha256` is stored.
    pub fn contains(&self, sha256: &str) -> bool {
        crate::hash::is_sha256_hex(sha256) && self.path_of(sha256).is_file()
    }

    /// A memo for asking whether many objects are stored (history of a long-lived path).
    pub fn presence(&self) -> Presence<'_> {
        Presence {
            store: self,
            lookups: 0,
            listed: HashMap::new(),
        }
    }

    /// Store `bytes`, whose SHA-256 the caller computed as `sha256`, durably. Returns whether
    /// a new object was written (false: it was already stored).
    pub fn put(&self, bytes: &[u8], sha256: &str) -> io::Result<bool> {
        self.put_with(sha256, |f| f.write_all(bytes))
    }

    /// Like [`ObjectStore::put`], streaming the content from `reader` (constant memory).
    pub fn put_reader(&self, mut reader: impl io::Read, sha256: &str) -> io::Result<bool> {
        self.put_with(sha256, |f| io::copy(&mut reader, f).map(|_| ()))
    }

    fn put_with(
        &self,
        sha256: &str,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<bool> {
        if !crate::hash::is_sha256_hex(sha256) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "object name is not a SHA-256",
            ));
        }
        let final_path = self.path_of(sha256);
        if final_path.is_file() {
            return Ok(false);
        }
        let fan_dir = final_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.dir.clone());
        let mut new_dirs: Vec<PathBuf> = Vec::new();
        if !fan_dir.is_dir() {
            if !self.dir.is_dir() {
                new_dirs.push(self.dir.parent().unwrap_or(Path::new(".")).to_path_buf());
            }
            new_dirs.push(self.dir.clone());
            fs::create_dir_all(&fan_dir)?;
        }
        let tmp = fan_dir.join(format!(
            ".{sha256}.tmp-{}-{}",
            std::process::id(),
            OBJ_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            write(&mut f)?;
            f.sync_all()?;
            fs::rename(&tmp, &final_path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        // The rename must be durable before the caller replaces the content it preserves.
        File::open(&fan_dir)?.sync_all()?;
        for d in new_dirs {
            File::open(&d)?.sync_all()?;
        }
        Ok(true)
    }

    /// The bytes of object `sha256`, verified; `None` when absent or damaged.
    pub fn get(&self, sha256: &str) -> io::Result<Option<Vec<u8>>> {
        if !crate::hash::is_sha256_hex(sha256) {
            return Ok(None);
        }
        match crate::util::statefile::read(&self.path_of(sha256)) {
            Ok(b) if sha256_hex(&b) == sha256 => Ok(Some(b)),
            Ok(_) => {
                tracing::warn!("object {sha256} is damaged (hash mismatch); treated as absent");
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Remove object `sha256`. Returns whether it existed.
    pub fn remove(&self, sha256: &str) -> io::Result<bool> {
        match fs::remove_file(self.path_of(sha256)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every stored object (temp files of interrupted puts are skipped).
    pub fn list(&self) -> io::Result<Vec<ObjectInfo>> {
        let mut out = Vec::new();
        let fans = match fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for fan in fans.flatten() {
            if !fan.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            for e in fs::read_dir(fan.path())?.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if !crate::hash::is_sha256_hex(&name) {
                    continue;
                }
                let Ok(meta) = e.metadata() else { continue };
                out.push(ObjectInfo {
                    sha256: name,
                    bytes: meta.len(),
                    stored_at: meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                });
            }
        }
        Ok(out)
    }
}

/// Answers [`ObjectStore::contains`] for many objects: the first few with a `stat` each, then
/// from one listing per fan-out directory, read when first needed (a history of 10,000
/// versions costs at most 256 directory reads instead of 10,000 `stat`s).
pub struct Presence<'a> {
    store: &'a ObjectStore,
    lookups: usize,
    listed: HashMap<String, HashSet<String>>,
}

/// Lookups answered by `stat` before [`Presence`] switches to directory listings.
const STAT_LOOKUPS: usize = 64;

impl Presence<'_> {
    pub fn contains(&mut self, sha256: &str) -> bool {
        if !crate::hash::is_sha256_hex(sha256) {
            return false;
        }
        self.lookups += 1;
        if self.lookups <= STAT_LOOKUPS {
            return self.store.contains(sha256);
        }
        let fan = sha256.get(..2).unwrap_or("00");
        let store = self.store;
        self.listed
            .entry(fan.to_string())
            .or_insert_with(|| {
                fs::read_dir(store.dir.join(fan))
                    .map(|entries| {
                        entries
                            .flatten()
                            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                            .filter_map(|e| e.file_name().into_string().ok())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .contains(sha256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_is_deduplicated_and_get_verifies() {
        let t = tempfile::tempdir().unwrap();
        let s = ObjectStore::new(t.path());
        let h = sha256_hex(b"hello");
        assert!(s.put(b"hello", &h).unwrap());
        assert!(!s.put(b"hello", &h).unwrap());
        assert_eq!(s.get(&h).unwrap().unwrap(), b"hello");
        assert_eq!(s.list().unwrap().len(), 1);
        fs::write(s.path_of(&h), b"tampered").unwrap();
        assert!(s.get(&h).unwrap().is_none());
    }

    #[test]
    fn presence_answers_like_contains_past_its_stat_budget() {
        let t = tempfile::tempdir().unwrap();
        let s = ObjectStore::new(t.path());
        let stored: Vec<String> = (0..40u32)
            .map(|i| {
                let b = i.to_le_bytes();
                let h = sha256_hex(&b);
                s.put(&b, &h).unwrap();
                h
            })
            .collect();
        let absent: Vec<String> = (100..140u32)
            .map(|i| sha256_hex(&i.to_le_bytes()))
            .collect();
        let mut p = s.presence();
        // Several rounds, so most answers come from listings rather than stats.
        for _ in 0..4 {
            for h in &stored {
                assert!(p.contains(h), "{h}");
            }
            for h in &absent {
                assert!(!p.contains(h), "{h}");
            }
        }
        assert!(p.lookups > STAT_LOOKUPS && !p.listed.is_empty());
        assert!(!p.contains("not-a-hash"));
    }
}
