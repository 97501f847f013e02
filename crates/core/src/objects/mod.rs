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
//! - An object is kept without copying where the filesystem allows it
//!   ([`ObjectStore::link_from`]: the replaced file's inode is hard-linked under the object's
//!   name just before the rename that detaches it from the target; [`ObjectStore::clone_from`]:
//!   a `FICLONE` reflink), and copied otherwise.
//!
//! Objects are state, not workspace content: the store writes them itself (like the journal),
//! and only the pipeline and `gc` ([`crate::write::pipeline::retention`]) call it.

use crate::hash::sha256_hex;
use crate::util::fault::fault;
use index::{Index, Key, entry_of, key_of};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

mod index;
pub use index::Usage;

/// Directory of the store inside the state directory.
pub const OBJECTS_DIR: &str = "objects";

static OBJ_COUNTER: AtomicU64 = AtomicU64::new(0);

/// [`ObjectStore::put_many`] syncs each object's data up to this many, the filesystem once
/// beyond.
pub const SYNC_EACH_UP_TO: usize = 8;

/// A pre-image just linked into the store ([`ObjectStore::link_from`]).
#[derive(Debug)]
pub struct Linked {
    /// The object's path.
    pub path: PathBuf,
    /// The object's data and the link made durable: its `fdatasync`, then the fsync of the
    /// fan-out directory (and of the directories created for it), on a worker, started
    /// through [`Linked::syncing`] (the pipeline starts it beside its own file's and the
    /// journal row's syncs, so a journaling filesystem makes all three durable in one
    /// commit) or by [`Linked::sync`].
    syncing: crate::util::workers::Deferred,
}

impl Linked {
    /// Waits until the object's data and its link are durable (starting that, if nothing
    /// did yet).
    pub fn sync(&self) -> io::Result<()> {
        self.syncing.wait()
    }

    /// A handle on the same sync, for a thread that waits for it.
    pub fn syncing(&self) -> crate::util::workers::Deferred {
        self.syncing.clone()
    }
}

/// One stored object, as listed by [`ObjectStore::list`].
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    pub sha256: String,
    pub bytes: u64,
    /// What it holds on disk (`st_blocks` × 512).
    pub blocks: u64,
    /// When it was stored (its mtime).
    pub stored_at: std::time::SystemTime,
}

/// Objects removed by [`ObjectStore::drop_oldest`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    pub sha256: Vec<String>,
    /// What they held on disk.
    pub blocks: u64,
}

impl Dropped {
    pub fn is_empty(&self) -> bool {
        self.sha256.is_empty()
    }

    pub fn extend(&mut self, more: Dropped) {
        self.sha256.extend(more.sha256);
        self.blocks += more.blocks;
    }
}

/// The object store of one state directory. Clones share one retention index and one set of
/// pinned objects.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
    shared: Arc<Shared>,
}

/// What the clones of one store share.
#[derive(Debug, Default)]
struct Shared {
    index: Mutex<Index>,
    /// Objects a write of this process is keeping right now (never dropped meanwhile).
    pinned: Mutex<HashMap<String, usize>>,
}

impl ObjectStore {
    pub fn new(state_dir: &Path) -> ObjectStore {
        ObjectStore {
            dir: state_dir.join(OBJECTS_DIR),
            shared: Arc::default(),
        }
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        self.shared.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Update the index, when it was listed, after this process stored, touched (`present`)
    /// or removed object `sha256`.
    fn indexed(&self, sha256: &str, present: bool) {
        let Some(key) = key_of(sha256) else { return };
        let mut index = self.index();
        if !index.is_listed() {
            return;
        }
        match fs::symlink_metadata(self.path_of(sha256)) {
            Ok(m) if present && m.is_file() => index.insert(key, entry_of(&m)),
            _ => {
                index.remove(&key);
            }
        }
        index.restamp(&self.dir, &key);
    }

    /// Keep object `sha256` from being dropped while a write of this process keeps it.
    pub fn pin(&self, sha256: &str) {
        let mut p = self.shared.pinned.lock().unwrap_or_else(|p| p.into_inner());
        *p.entry(sha256.to_string()).or_default() += 1;
    }

    pub fn unpin(&self, sha256: &str) {
        let mut p = self.shared.pinned.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = p.get_mut(sha256) {
            *n -= 1;
            if *n == 0 {
                p.remove(sha256);
            }
        }
    }

    /// The objects pinned right now.
    pub fn pinned(&self) -> HashSet<String> {
        let p = self.shared.pinned.lock().unwrap_or_else(|p| p.into_inner());
        p.keys().cloned().collect()
    }

    /// The store's totals, from the index (listing the store the first time).
    pub fn usage(&self) -> io::Result<Usage> {
        let mut index = self.index();
        if !index.is_listed() {
            index.relist(&self.dir)?;
        }
        Ok(index.usage())
    }

    /// How many times this store (and its clones) listed every object for the index.
    pub fn listings(&self) -> u64 {
        self.index().listings
    }

    /// Replace the index with `all` (a `gc` pass's listing of what it kept).
    pub fn reindex(&self, all: &[ObjectInfo]) {
        let mut index = self.index();
        let listings = index.listings;
        *index = Index::default();
        index.listings = listings;
        index.mark_listed(&self.dir);
        for o in all {
            if let Some(key) = key_of(&o.sha256) {
                index.insert(
                    key,
                    index::Entry {
                        stored_at: o.stored_at,
                        bytes: o.bytes,
                        blocks: o.blocks,
                    },
                );
            }
        }
    }

    /// History yields: remove the oldest objects not pinned, whatever file they belong to,
    /// until they held at least `want` bytes on disk or none is left. Costs what it removes
    /// (the index knows the order); the store is listed again only when the index has run
    /// out and another process changed the store since it was listed.
    pub fn drop_oldest(&self, want: u64) -> io::Result<Dropped> {
        let pinned: HashSet<Key> = self.pinned().iter().filter_map(|s| key_of(s)).collect();
        let mut dropped = Dropped::default();
        let mut index = self.index();
        if !index.is_listed() {
            index.relist(&self.dir)?;
        }
        let mut relisted = false;
        while dropped.blocks < want {
            let Some((key, entry)) = index.oldest(|k| pinned.contains(k)) else {
                if !relisted && index.changed_behind(&self.dir) {
                    index.relist(&self.dir)?;
                    relisted = true;
                    continue;
                }
                break;
            };
            index.remove(&key);
            let sha = hex::encode(key);
            match fs::remove_file(self.path_of(&sha)) {
                Ok(()) => {
                    dropped.blocks += entry.blocks;
                    dropped.sha256.push(sha);
                }
                // Gone behind the index's back: it held nothing any more.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    index.restamp(&self.dir, &key);
                    return if dropped.is_empty() {
                        Err(e)
                    } else {
                        Ok(dropped)
                    };
                }
            }
            index.restamp(&self.dir, &key);
        }
        Ok(dropped)
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

    /// Store the content of `src` (open on the file hashed as `sha256`) as a reflink
    /// (`FICLONE`): the object shares the file's extents copy-on-write, so no data is copied.
    /// Fails (with the caller copying instead) where the filesystem cannot clone, or across
    /// filesystems.
    pub fn clone_from(&self, src: &File, sha256: &str) -> io::Result<bool> {
        self.put_with(sha256, |f| {
            rustix::fs::ioctl_ficlone(&*f, src).map_err(crate::util::sys::errno_io)
        })
    }

    /// Keep the file `name` in `dir` as object `sha256` by hard-linking its inode under the
    /// object's name (no data is read or written). Only safe when the caller is about to
    /// rename another file over `name` (so the object's inode is reachable through the store
    /// alone) and the file has no other hard link; `inode` is the `(st_dev, st_ino)` the
    /// caller hashed, and a link that landed on another inode (the name was swapped since)
    /// is taken back and refused. The inode's data and the link are durable once
    /// [`Linked::sync`] returns; nothing is synced before the caller starts it (there or
    /// through [`Linked::syncing`]), so that it can start it beside its own file's sync and
    /// one commit of a journaling filesystem carries both.
    /// Returns `Ok(None)` when the object was already stored (nothing linked),
    /// `Ok(Some(linked))` for a new link, which the caller removes with
    /// [`ObjectStore::unlink_new`] if its write does not happen.
    pub fn link_from(
        &self,
        dir: &impl rustix::fd::AsFd,
        name: &std::ffi::OsStr,
        sha256: &str,
        inode: (u64, u64),
    ) -> io::Result<Option<Linked>> {
        let (final_path, fan_dir, new_dirs) = match self.prepare(sha256)? {
            Some(p) => p,
            None => return Ok(None),
        };
        match rustix::fs::linkat(
            dir,
            name,
            rustix::fs::CWD,
            &final_path,
            rustix::fs::AtFlags::empty(),
        ) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::EXIST => return Ok(None),
            Err(e) => return Err(crate::util::sys::errno_io(e)),
        }
        let checked = (|| {
            let f = File::open(&final_path)?;
            let st = rustix::fs::fstat(&f).map_err(crate::util::sys::errno_io)?;
            if (st.st_dev as u64, st.st_ino as u64) != inode || st.st_nlink != 2 {
                return Err(io::Error::other(
                    "the file changed or gained a hard link while it was being kept",
                ));
            }
            Ok(f)
        })();
        let mut dirs = vec![fan_dir];
        dirs.extend(new_dirs);
        if checked.is_ok() {
            self.indexed(sha256, true);
        }
        match checked {
            Ok(f) => Ok(Some(Linked {
                path: final_path,
                syncing: crate::util::workers::Deferred::new(
                    move || {
                        // Faults: `slow_object_sync` holds it 500 ms, `eio_object_sync` fails it.
                        if fault("slow_object_sync") {
                            std::thread::sleep(std::time::Duration::from_millis(500));
                        }
                        if fault("eio_object_sync") {
                            return Err(io::Error::from_raw_os_error(
                                rustix::io::Errno::IO.raw_os_error(),
                            ));
                        }
                        // The data of a file another program wrote may not be on disk yet
                        // (fdatasync: the new link is made durable by the directory's
                        // fsync, not the inode's).
                        f.sync_data()?;
                        for d in &dirs {
                            File::open(d)?.sync_all()?;
                        }
                        Ok(())
                    },
                    false,
                ),
            })),
            Err(e) => {
                let _ = fs::remove_file(&final_path);
                Err(e)
            }
        }
    }

    /// Move the file `name` in `dir` (on the store's filesystem; written by the caller and
    /// perhaps not yet durable) into the store as object `sha256`, durably: its data is
    /// synced first, then renamed to the object's name, then the object's directory synced.
    /// An object name therefore only ever appears with its whole content behind it, even
    /// after a power loss. The content is checked against `sha256` on the way. Returns
    /// whether a new object was stored (false: it was already, and the file is removed).
    pub fn adopt(
        &self,
        dir: &impl rustix::fd::AsFd,
        name: &std::ffi::OsStr,
        sha256: &str,
    ) -> io::Result<bool> {
        let discard = || {
            let _ = rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty());
        };
        let (final_path, fan_dir, new_dirs) = match self.prepare(sha256) {
            Ok(Some(p)) => p,
            Ok(None) => {
                discard();
                return Ok(false);
            }
            Err(e) => {
                discard();
                return Err(e);
            }
        };
        let moved = (|| {
            let fd = rustix::fs::openat(
                dir,
                name,
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW,
                rustix::fs::Mode::empty(),
            )
            .map_err(crate::util::sys::errno_io)?;
            let file = File::from(fd);
            // A file left by a before-hook whose after-hook came only after a crash may be
            // torn: it is never stored under a name its content does not have.
            if crate::hash::sha256_reader(&file)?.0 != sha256 {
                return Err(io::Error::other(
                    "the kept content no longer has the hash it was kept under",
                ));
            }
            file.sync_data()?;
            rustix::fs::renameat(dir, name, rustix::fs::CWD, &final_path)
                .map_err(crate::util::sys::errno_io)
        })();
        if let Err(e) = moved {
            discard();
            return Err(e);
        }
        self.stored(sha256, &fan_dir, new_dirs)
    }

    /// A new object is under its name: index it, then make its directory entry (and the
    /// directories made for it) durable before the caller replaces the content it preserves.
    fn stored(&self, sha256: &str, fan_dir: &Path, new_dirs: Vec<PathBuf>) -> io::Result<bool> {
        self.indexed(sha256, true);
        File::open(fan_dir)?.sync_all()?;
        for d in new_dirs {
            File::open(&d)?.sync_all()?;
        }
        Ok(true)
    }

    /// Take back a link made by [`ObjectStore::link_from`] for a write that did not happen,
    /// so no object shares its inode with a live file.
    pub fn unlink_new(&self, linked: &Path) {
        if let Err(e) = fs::remove_file(linked) {
            tracing::warn!("could not take back object link {}: {e}", linked.display());
        }
        if let Some(sha) = linked.file_name().and_then(|n| n.to_str()) {
            self.indexed(sha, false);
        }
    }

    /// Mark object `sha256` as stored now (its mtime, which retention reads as its age): an
    /// object found again by a later write, or linked from a file last modified long ago,
    /// counts from the write that kept it.
    pub fn touch(&self, sha256: &str) -> io::Result<()> {
        // One `utimensat` by name (no descriptor to open and close). `UTIME_NOW` asks for
        // write access or ownership, as a `touch` does: a linked object keeps the replaced
        // file's mode, which may be read-only, and its owner (this process's user, as a rule).
        use rustix::fs::{AtFlags, CWD, Timestamps, UTIME_NOW, UTIME_OMIT};
        let times = Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: 0,
                tv_nsec: UTIME_OMIT,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: 0,
                tv_nsec: UTIME_NOW,
            },
        };
        rustix::fs::utimensat(CWD, self.path_of(sha256), &times, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(io::Error::from)?;
        self.indexed(sha256, true);
        Ok(())
    }

    /// Where object `sha256` goes, its fan-out directory (created) and the directories whose
    /// fsync makes a new entry durable; `None` when the object is already stored.
    #[allow(clippy::type_complexity)]
    fn prepare(&self, sha256: &str) -> io::Result<Option<(PathBuf, PathBuf, Vec<PathBuf>)>> {
        if !crate::hash::is_sha256_hex(sha256) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "object name is not a SHA-256",
            ));
        }
        let final_path = self.path_of(sha256);
        if final_path.is_file() {
            return Ok(None);
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
        Ok(Some((final_path, fan_dir, new_dirs)))
    }

    fn put_with(
        &self,
        sha256: &str,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<bool> {
        let (final_path, fan_dir, new_dirs) = match self.prepare(sha256)? {
            Some(p) => p,
            None => return Ok(false),
        };
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
        self.stored(sha256, &fan_dir, new_dirs)
    }

    /// Store many contents at once (`(bytes, sha256)` each, the hashes computed by the
    /// caller), each as durably as [`ObjectStore::put`] would, for the cost of a few syncs:
    /// every new object is written to a temp file, then their data is synced (each file's
    /// `fdatasync` for up to [`SYNC_EACH_UP_TO`] objects, one `syncfs` beyond: measured
    /// twice as fast for a hundred, though it also waits for other programs' dirty data on
    /// the filesystem), then each is renamed to its name and every directory that gained
    /// one is synced once. A name therefore never appears without its whole content behind
    /// it. Returns, in order, whether each was newly stored (`false`: it was already, or
    /// repeats an earlier item).
    pub fn put_many(&self, items: &[(&[u8], &str)]) -> Vec<io::Result<bool>> {
        let mut out: Vec<io::Result<bool>> = Vec::with_capacity(items.len());
        let mut pending: Vec<(usize, PathBuf, PathBuf)> = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut seen = HashSet::new();
        for (i, (bytes, sha256)) in items.iter().enumerate() {
            if !seen.insert(*sha256) {
                out.push(Ok(false));
                continue;
            }
            let prepared = self.prepare(sha256).and_then(|p| {
                let Some((final_path, fan_dir, new_dirs)) = p else {
                    return Ok(None);
                };
                let tmp = fan_dir.join(format!(
                    ".{sha256}.tmp-{}-{}",
                    std::process::id(),
                    OBJ_COUNTER.fetch_add(1, Ordering::Relaxed)
                ));
                let written = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&tmp)
                    .and_then(|mut f| f.write_all(bytes));
                if let Err(e) = written {
                    let _ = fs::remove_file(&tmp);
                    return Err(e);
                }
                dirs.push(fan_dir);
                dirs.extend(new_dirs);
                Ok(Some((tmp, final_path)))
            });
            match prepared {
                Ok(Some((tmp, final_path))) => {
                    pending.push((i, tmp, final_path));
                    out.push(Ok(true));
                }
                Ok(None) => out.push(Ok(false)),
                Err(e) => out.push(Err(e)),
            }
        }
        if pending.is_empty() {
            return out;
        }
        let synced = if pending.len() <= SYNC_EACH_UP_TO {
            pending
                .iter()
                .try_for_each(|(_, tmp, _)| File::open(tmp)?.sync_data())
        } else {
            File::open(&self.dir).and_then(|d| rustix::fs::syncfs(&d).map_err(io::Error::from))
        };
        for (i, tmp, final_path) in &pending {
            let renamed = synced
                .as_ref()
                .map_err(|e| io::Error::new(e.kind(), e.to_string()))
                .and_then(|()| fs::rename(tmp, final_path));
            match renamed {
                Ok(()) => {
                    if let Some(sha) = final_path.file_name().and_then(|n| n.to_str()) {
                        self.indexed(sha, true);
                    }
                }
                Err(e) => {
                    let _ = fs::remove_file(tmp);
                    out[*i] = Err(e);
                }
            }
        }
        dirs.sort();
        dirs.dedup();
        for d in dirs {
            if let Err(e) = File::open(&d).and_then(|f| f.sync_all()) {
                // Not durable: none of the names this batch gave may be relied on.
                for (i, _, final_path) in &pending {
                    if out[*i].is_ok() {
                        let _ = fs::remove_file(final_path);
                        out[*i] = Err(io::Error::new(e.kind(), e.to_string()));
                    }
                }
                break;
            }
        }
        out
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
        let removed = match fs::remove_file(self.path_of(sha256)) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        };
        self.indexed(sha256, false);
        Ok(removed)
    }

    /// Every stored object (temp files of interrupted puts are skipped).
    pub fn list(&self) -> io::Result<Vec<ObjectInfo>> {
        Ok(index::list(&self.dir)?
            .into_iter()
            .map(|(key, e)| ObjectInfo {
                sha256: hex::encode(key),
                bytes: e.bytes,
                blocks: e.blocks,
                stored_at: e.stored_at,
            })
            .collect())
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

    /// A batch is stored whole with few syncs, deduplicated within itself and against the
    /// store, and leaves no temp file (both the per-file and the `syncfs` path).
    #[test]
    fn put_many_stores_a_batch_deduplicated_and_verifiable() {
        let t = tempfile::tempdir().unwrap();
        let s = ObjectStore::new(t.path());
        let old = sha256_hex(b"old");
        s.put(b"old", &old).unwrap();
        for n in [2usize, 40] {
            let contents: Vec<Vec<u8>> = (0..n).map(|i| format!("c{n}-{i}").into_bytes()).collect();
            let hashes: Vec<String> = contents.iter().map(|c| sha256_hex(c)).collect();
            let mut items: Vec<(&[u8], &str)> = contents
                .iter()
                .zip(&hashes)
                .map(|(c, h)| (c.as_slice(), h.as_str()))
                .collect();
            items.push((b"old", &old));
            items.push((&contents[0], &hashes[0]));
            let out: Vec<bool> = s.put_many(&items).into_iter().map(|r| r.unwrap()).collect();
            assert_eq!(out.iter().filter(|&&b| b).count(), n, "new ones only");
            assert!(!out[n] && !out[n + 1], "stored already, repeated");
            for (c, h) in contents.iter().zip(&hashes) {
                assert_eq!(s.get(h).unwrap().as_deref(), Some(c.as_slice()));
            }
        }
        let temps = walk_files(s.dir())
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(temps, 0);
    }

    fn walk_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(walk_files(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }

    /// `touch` dates an object from now, a read-only one too (a linked object keeps the
    /// replaced file's mode), and never follows a symlink planted in its place.
    #[test]
    fn touch_dates_an_object_from_now_and_never_follows_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        use std::time::{Duration, SystemTime};
        let t = tempfile::tempdir().unwrap();
        let s = ObjectStore::new(t.path());
        let long_ago = SystemTime::now() - Duration::from_secs(90 * 86400);
        let h = sha256_hex(b"kept");
        s.put(b"kept", &h).unwrap();
        File::open(s.path_of(&h))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        fs::set_permissions(s.path_of(&h), fs::Permissions::from_mode(0o444)).unwrap();
        s.touch(&h).unwrap();
        let age = |p: &Path| {
            SystemTime::now()
                .duration_since(fs::symlink_metadata(p).unwrap().modified().unwrap())
                .unwrap_or_default()
        };
        assert!(age(&s.path_of(&h)) < Duration::from_secs(60));

        let outside = t.path().join("outside.txt");
        fs::write(&outside, b"not an object").unwrap();
        File::open(&outside)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let planted = sha256_hex(b"planted");
        let at = s.path_of(&planted);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &at).unwrap();
        let _ = s.touch(&planted);
        assert!(
            age(&outside) > Duration::from_secs(80 * 86400),
            "the symlink's target was touched"
        );
    }

    /// The retention index against a store another process changed behind its back: an
    /// object removed there costs nothing to drop, one added there is found (by one listing)
    /// once the index runs out, and an unchanged store is not listed again for nothing.
    #[test]
    fn the_index_follows_a_store_changed_behind_its_back() {
        use std::time::{Duration, SystemTime};
        let t = tempfile::tempdir().unwrap();
        let ours = ObjectStore::new(t.path());
        let theirs = ObjectStore::new(t.path());
        let put = |s: &ObjectStore, body: &[u8], age_h: u64| {
            let h = sha256_hex(body);
            s.put(body, &h).unwrap();
            File::open(s.path_of(&h))
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(age_h * 3600))
                .unwrap();
            h
        };
        let a = put(&ours, b"a", 5);
        let b = put(&ours, b"b", 4);
        assert_eq!(ours.usage().unwrap().objects, 2);
        assert_eq!(ours.listings(), 1);
        // Another process removes `a` and adds `c`.
        assert!(theirs.remove(&a).unwrap());
        let c = put(&theirs, b"c", 1);
        // Dropping everything: `a` is gone already (nothing freed), `b` goes, then the index
        // is empty, the store changed: one listing finds `c`.
        let dropped = ours.drop_oldest(u64::MAX).unwrap();
        assert_eq!(dropped.sha256, vec![b.clone(), c.clone()]);
        assert_eq!(ours.listings(), 2);
        assert!(!ours.contains(&b) && !ours.contains(&c));
        // Nothing left and nothing changed: no listing.
        assert!(ours.drop_oldest(u64::MAX).unwrap().is_empty());
        assert_eq!(ours.listings(), 2);
        // Our own puts and removals keep the index without a listing.
        let d = put(&ours, b"d", 0);
        assert_eq!(ours.usage().unwrap().objects, 1);
        assert!(ours.pinned().is_empty());
        ours.pin(&d);
        assert!(ours.drop_oldest(u64::MAX).unwrap().is_empty(), "pinned");
        ours.unpin(&d);
        assert_eq!(ours.drop_oldest(1).unwrap().sha256, vec![d]);
        assert_eq!(ours.listings(), 2);
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
