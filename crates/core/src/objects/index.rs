//! What retention needs to know about the object store, kept in memory as objects come and
//! go, so deciding what to drop costs what is dropped, not a walk of the store.
//!
//! The index is built by one listing of the store, the first time a process needs it (the
//! first pre-image it keeps, or the first time it must make room), then kept up to date by
//! this process's own puts, links, touches and removals. Other processes change the store
//! too (a second server, the agents' hooks, `gc`): an object removed behind the index's back
//! is found missing when it is dropped (and costs nothing); one added behind its back is
//! unknown until the store is listed again. That happens when the index runs out of objects
//! to drop and the store has changed since it was listed: each fan-out directory's mtime is
//! remembered (updated after this process's own changes), so "changed" costs one `stat` per
//! fan-out directory, and an unchanged store is never listed twice for nothing.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::SystemTime;

/// An object's name as bytes (the SHA-256 its hex name spells).
pub(crate) type Key = [u8; 32];

/// Fan-out directories: the first two hex digits of a name.
const FANS: usize = 256;

pub(crate) fn key_of(sha256: &str) -> Option<Key> {
    let mut k = [0u8; 32];
    hex::decode_to_slice(sha256, &mut k).ok()?;
    Some(k)
}

/// One object as retention sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub stored_at: SystemTime,
    /// Its size.
    pub bytes: u64,
    /// What it holds on disk (`st_blocks` × 512): what removing it gives back.
    pub blocks: u64,
}

/// The modification time of a directory, as the index last saw it.
type Stamp = Option<(i64, i64)>;

fn stamp(dir: &Path) -> Stamp {
    let st = rustix::fs::stat(dir).ok()?;
    Some((st.st_mtime as i64, st.st_mtime_nsec as i64))
}

/// Totals of the store as the index knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub objects: usize,
    pub bytes: u64,
    pub blocks: u64,
    pub oldest: Option<SystemTime>,
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Whether the store was listed (nothing is known before).
    listed: bool,
    entries: HashMap<Key, Entry>,
    by_age: BTreeSet<(SystemTime, Key)>,
    bytes: u64,
    blocks: u64,
    /// Each fan-out directory's mtime when last listed or changed by this process.
    stamps: Vec<Stamp>,
    /// Listings of the whole store so far (tests and benchmarks count them).
    pub listings: u64,
}

impl Index {
    pub fn is_listed(&self) -> bool {
        self.listed
    }

    /// Replace what the index knows with a listing of the store at `dir`.
    pub fn relist(&mut self, dir: &Path) -> std::io::Result<()> {
        let mut fresh = Index {
            listings: self.listings + 1,
            ..Index::default()
        };
        // Stamped before the listing: a change made while it runs is seen as a change.
        fresh.mark_listed(dir);
        for (key, entry) in list(dir)? {
            fresh.insert(key, entry);
        }
        *self = fresh;
        Ok(())
    }

    /// From now on the index stands for the store at `dir` as it is now.
    pub fn mark_listed(&mut self, dir: &Path) {
        self.stamps = (0..FANS).map(|f| stamp(&dir.join(fan_name(f)))).collect();
        self.listed = true;
    }

    /// Record an object this process stored (or found stored), then the new mtime of its
    /// fan-out directory.
    pub fn insert(&mut self, key: Key, entry: Entry) {
        if let Some(old) = self.entries.insert(key, entry) {
            self.by_age.remove(&(old.stored_at, key));
            self.bytes -= old.bytes;
            self.blocks -= old.blocks;
        }
        self.by_age.insert((entry.stored_at, key));
        self.bytes += entry.bytes;
        self.blocks += entry.blocks;
    }

    /// Forget an object (removed, by this process or found gone).
    pub fn remove(&mut self, key: &Key) -> Option<Entry> {
        let old = self.entries.remove(key)?;
        self.by_age.remove(&(old.stored_at, *key));
        self.bytes -= old.bytes;
        self.blocks -= old.blocks;
        Some(old)
    }

    /// Note this process's own change in the fan-out directory of `key`.
    pub fn restamp(&mut self, dir: &Path, key: &Key) {
        let f = key[0] as usize;
        if let Some(s) = self.stamps.get_mut(f) {
            *s = stamp(&dir.join(fan_name(f)));
        }
    }

    /// Whether another process changed the store since it was listed.
    pub fn changed_behind(&self, dir: &Path) -> bool {
        !self.listed
            || (0..FANS)
                .any(|f| self.stamps.get(f).copied().flatten() != stamp(&dir.join(fan_name(f))))
    }

    /// The objects oldest first, for those `spare` does not protect.
    pub fn oldest(&self, mut spare: impl FnMut(&Key) -> bool) -> Option<(Key, Entry)> {
        self.by_age
            .iter()
            .map(|(_, k)| k)
            .find(|k| !spare(k))
            .and_then(|k| self.entries.get(k).map(|e| (*k, *e)))
    }

    pub fn usage(&self) -> Usage {
        Usage {
            objects: self.entries.len(),
            bytes: self.bytes,
            blocks: self.blocks,
            oldest: self.by_age.first().map(|(t, _)| *t),
        }
    }
}

fn fan_name(f: usize) -> String {
    format!("{f:02x}")
}

/// The entry of the object file at `path`, from its metadata.
pub(crate) fn entry_of(meta: &std::fs::Metadata) -> Entry {
    use std::os::unix::fs::MetadataExt;
    Entry {
        stored_at: meta.modified().unwrap_or(std::time::UNIX_EPOCH),
        bytes: meta.len(),
        blocks: meta.blocks().saturating_mul(512),
    }
}

/// Every object under `dir` (temp files of interrupted puts are skipped).
pub(crate) fn list(dir: &Path) -> std::io::Result<Vec<(Key, Entry)>> {
    let mut out = Vec::new();
    let fans = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for fan in fans.flatten() {
        if !fan.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for e in std::fs::read_dir(fan.path())?.flatten() {
            let name = e.file_name();
            let Some(key) = name
                .to_str()
                .filter(|n| crate::hash::is_sha256_hex(n))
                .and_then(key_of)
            else {
                continue;
            };
            let Ok(meta) = e.metadata() else { continue };
            out.push((key, entry_of(&meta)));
        }
    }
    Ok(out)
}
