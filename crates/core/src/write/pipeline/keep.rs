//! History that never blocks a write: how the pipeline keeps the content a rename is about to
//! replace, and how it holds the object store to its retention budget as objects are added.
//!
//! Keeping a pre-image, cheapest first:
//! 1. **Hard link** ([`ObjectStore::link_from`]): the target's inode is linked under the
//!    object's name. The rename that follows replaces the target's directory entry, not its
//!    inode, so the linked inode is exactly the pre-image and no byte is read or written.
//!    Only when the file has no other hard link (another name could change the inode in
//!    place) and the link landed on the inode that was hashed. Every writer of workspace
//!    files goes through the pipeline's temp-and-rename (an `append` too: it writes old plus
//!    new bytes to a new temp file), so nothing of ours writes into a linked inode later. A
//!    program outside the server that kept the old file open and writes into it would change
//!    the object: [`ObjectStore::get`] re-hashes and reports such an object as absent rather
//!    than restore it.
//! 2. **Reflink** (`FICLONE`, btrfs, XFS, bcachefs): a copy-on-write clone, across file names
//!    on one filesystem (and where the link was refused).
//! 3. **Copy**, the last resort (different filesystems, or both of the above refused).
//!
//! None of these may stop the write: when the pre-image cannot be kept (no space, no
//! permission, larger than the budget), the write goes ahead, the result carries the warning
//! `history_not_kept: <reason>`, and the journal row carries `history_not_kept` with the
//! reason, so nothing claims a pre-image that does not exist (`history` shows that version as
//! not stored unless the same content is kept for another reason).
//!
//! Retention ([`AutoRetention`]): the pipeline counts the bytes it adds to the store (one
//! listing of the store per process, at the first object it adds) and runs a gc pass when the
//! store exceeds `max_bytes`, down to 90% of it, so a pass is paid for by at least a tenth of
//! the budget in new objects; when the protected `keep_last` floor alone exceeds the budget,
//! the next pass waits for another tenth beyond it. Objects older than `max_age` are looked
//! for when the oldest object is that old, at most once an hour per process. A pass never
//! removes an object a write of this process is keeping (pinned) nor one stored in the last
//! minute (a write in another process may have kept it and not yet journaled its row).

use super::fault;
use super::retention::{NOT_KEPT_FIELD, Retention, Sweep, gc_with};
use crate::journal::Journal;
use crate::journal::paths::JournalPaths;
use crate::objects::{Linked, ObjectStore};
use crate::util::sys::errno_io;
use crate::workspace::Target;
use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::Existing;

/// An automatic pass spares objects stored more recently than this.
const SPARE_YOUNGER_THAN: Duration = Duration::from_secs(60);

/// How often at most a process looks for objects past `max_age`.
const AGE_CHECK_EVERY: Duration = Duration::from_secs(3600);

/// How a pre-image was kept.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The object it was kept as (pinned until [`Pipeline::settle`](super::Pipeline)).
    pub sha256: Option<String>,
    /// A new hard link, taken back if the write does not happen.
    pub linked: Option<Linked>,
    /// A new object of another kind (clone, copy), removed if the write does not happen.
    pub new_object: bool,
    /// Bytes this write added to the store.
    pub added: u64,
    /// Why the pre-image was not kept.
    pub not_kept: Option<String>,
    /// Older pre-images dropped to make room for this one (`room.rs`).
    pub pruned: crate::objects::Dropped,
}

impl Kept {
    pub(super) fn not_kept(reason: String) -> Kept {
        Kept {
            not_kept: Some(reason),
            ..Kept::default()
        }
    }

    /// The warning for the result, when the pre-image was not kept.
    pub fn warning(&self) -> Option<String> {
        self.not_kept.as_ref().map(|r| {
            format!("{NOT_KEPT_FIELD}: the previous version could not be kept ({r}); the write went ahead without it")
        })
    }
}

/// What the store holds, as this process counts it.
#[derive(Debug, Default)]
struct Usage {
    /// Bytes in the store (`None` until the first object this process adds).
    bytes: Option<u64>,
    /// The next pass runs above `max(max_bytes, trigger)`.
    trigger: u64,
    /// When the oldest object was stored.
    oldest: Option<SystemTime>,
    age_checked: Option<Instant>,
    running: bool,
}

/// The retention budget, enforced as the pipeline adds objects.
#[derive(Debug)]
pub struct AutoRetention {
    retention: Retention,
    paths: JournalPaths,
    usage: Mutex<Usage>,
}

impl AutoRetention {
    pub fn new(retention: Retention, paths: JournalPaths) -> AutoRetention {
        AutoRetention {
            retention,
            paths,
            usage: Mutex::new(Usage::default()),
        }
    }

    pub fn retention(&self) -> &Retention {
        &self.retention
    }

    /// Count `added` bytes, and run a pass when the store is over its budget or holds objects
    /// past their age. Called after the write's locks are released.
    fn added(&self, journal: &Journal, objects: &ObjectStore) {
        let max = self.retention.max_bytes;
        {
            let Ok(mut u) = self.usage.lock() else { return };
            match objects.usage() {
                Ok(now) => {
                    u.bytes = Some(now.bytes);
                    u.oldest = now.oldest;
                }
                Err(e) => {
                    tracing::warn!("object store not listed for retention: {e}");
                    return;
                }
            }
            let over = u.bytes.unwrap_or(0) > max.max(u.trigger);
            let aged = u.oldest.is_some_and(|t| {
                SystemTime::now()
                    .duration_since(t)
                    .is_ok_and(|age| age > self.retention.max_age)
            }) && u.age_checked.is_none_or(|t| t.elapsed() >= AGE_CHECK_EVERY);
            if !(over || aged) || u.running {
                return;
            }
            u.running = true;
        }
        let sweep = Sweep {
            target_bytes: Some(max - max / 10),
            spare_younger_than: SPARE_YOUNGER_THAN,
            pinned: objects.pinned(),
            keep_last: None,
        };
        let report = gc_with(
            journal,
            &self.paths,
            objects,
            &self.retention,
            false,
            &sweep,
        );
        let Ok(mut u) = self.usage.lock() else { return };
        u.running = false;
        u.age_checked = Some(Instant::now());
        match report {
            Ok(r) => {
                if r.removed > 0 {
                    tracing::info!(
                        "history retention removed {} object(s), {} bytes; {} bytes kept",
                        r.removed,
                        r.removed_bytes,
                        r.kept_bytes
                    );
                }
                u.bytes = Some(r.kept_bytes);
                u.oldest = r.oldest_kept;
                u.trigger = r.kept_bytes.saturating_add(max / 10);
            }
            Err(e) => {
                tracing::warn!("history retention pass failed: {e}");
                u.trigger = u.bytes.unwrap_or(0).saturating_add(max / 10);
            }
        }
    }
}

impl super::Pipeline {
    /// History: keep the content about to be replaced. Called after the new content is staged
    /// and verified (so a refused or failed write keeps nothing) and before the journal row
    /// and the rename (so a crash never loses the pre-image of an acknowledged write whose row
    /// names it). Never fails: what could not be kept is said in [`Kept::not_kept`].
    pub(super) fn preserve(&self, target: &Target, existing: Option<&Existing>) -> Kept {
        if !target.keep_history {
            return Kept::default();
        }
        let (Some(store), Some(old)) = (&self.objects, existing) else {
            return Kept::default();
        };
        if let Some(auto) = &self.auto
            && old.size > auto.retention.max_bytes
        {
            return Kept::not_kept(format!(
                "it is {} bytes, more than the history budget (max_bytes {})",
                old.size, auto.retention.max_bytes
            ));
        }
        store.pin(&old.sha256);
        let mut pruned = crate::objects::Dropped::default();
        match self.keep_making_room(store, target, old, &mut pruned) {
            Ok((linked, new)) => Kept {
                sha256: Some(old.sha256.clone()),
                new_object: new && linked.is_none(),
                linked,
                added: if new { old.size } else { 0 },
                not_kept: None,
                pruned,
            },
            Err(e) => {
                store.unpin(&old.sha256);
                tracing::warn!("pre-image of {} not kept: {e}", target.display);
                Kept {
                    pruned,
                    ..Kept::not_kept(e.to_string())
                }
            }
        }
    }

    /// Make a new link durable before the journal row names it, while (or after) the
    /// write's own temp file is synced: on a journaling filesystem one commit usually
    /// carries both. A link that cannot be made durable is taken back and the pre-image
    /// reported as not kept.
    pub(super) fn sync_kept(&self, kept: &mut Kept) {
        let Some(linked) = &kept.linked else { return };
        if let Err(e) = linked.sync() {
            self.settle(kept, false);
            *kept = Kept::not_kept(e.to_string());
        }
    }

    /// After the rename (`applied`) or a failure: a linked object now counts its age from
    /// this write (or is taken back when the write did not happen, as is a new object of
    /// another kind), and is unpinned.
    pub(super) fn settle(&self, kept: &Kept, applied: bool) {
        let (Some(store), Some(sha)) = (&self.objects, &kept.sha256) else {
            return;
        };
        if let Some(linked) = &kept.linked {
            if applied {
                if let Err(e) = store.touch(sha) {
                    tracing::warn!("object {sha}: mtime not set: {e}");
                }
            } else {
                store.unlink_new(&linked.path);
            }
        } else if kept.new_object && !applied {
            let _ = store.remove(sha);
        }
        store.unpin(sha);
    }

    /// [`keep`], once more after history made room when the copy met a full disk (a copy is
    /// what a pre-image costs on the state's filesystem when it cannot be linked or cloned).
    fn keep_making_room(
        &self,
        store: &ObjectStore,
        target: &Target,
        old: &Existing,
        pruned: &mut crate::objects::Dropped,
    ) -> io::Result<(Option<Linked>, bool)> {
        match keep(store, target, old) {
            Err(e) if crate::envelope::is_no_space(&e) => {
                let more = self.yield_room(old.size);
                if more.is_empty() {
                    return Err(e);
                }
                pruned.extend(more);
                keep(store, target, old)
            }
            other => other,
        }
    }

    /// After the locks are released: hold the store to its budget.
    pub(super) fn enforce_retention(&self, added: u64) {
        if added == 0 {
            return;
        }
        if let (Some(auto), Some(store)) = (&self.auto, &self.objects) {
            auto.added(&self.journal, store);
        }
    }
}

/// Keep `old` (the file at `target`, hashed under the lock) as an object: link, clone or
/// copy. Returns the new link (if one was made) and whether the object is new.
fn keep(
    store: &ObjectStore,
    target: &Target,
    old: &Existing,
) -> io::Result<(Option<Linked>, bool)> {
    if fault("enospc_object") {
        return Err(errno_io(rustix::io::Errno::NOSPC));
    }
    if let (1, Some(inode)) = (old.nlink, old.inode) {
        match store.link_from(&target.dir, &target.name, &old.sha256, inode) {
            Ok(Some(linked)) => return Ok((Some(linked), true)),
            Ok(None) => return already(store, &old.sha256),
            Err(e) => tracing::debug!("pre-image not linked ({e}); cloning or copying"),
        }
    }
    let file = rustix::fs::openat(
        &target.dir,
        &target.name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(errno_io)?;
    if let Some(inode) = old.inode {
        let st = rustix::fs::fstat(&file).map_err(errno_io)?;
        if (st.st_dev, st.st_ino) != inode {
            return Err(io::Error::other(
                "the file was replaced while it was being kept",
            ));
        }
    }
    match store.clone_from(&file, &old.sha256) {
        Ok(true) => return Ok((None, true)),
        Ok(false) => return already(store, &old.sha256),
        Err(e) => tracing::debug!("pre-image not cloned ({e}); copying"),
    }
    let new = if old.bytes.is_empty() && old.size > 0 {
        // A streamed commit did not keep the bytes: copy the file as it is now (we hold the
        // directory lock, so it is still the content hashed above).
        store.put_reader(file, &old.sha256)?
    } else {
        store.put(&old.bytes, &old.sha256)?
    };
    if new {
        Ok((None, true))
    } else {
        already(store, &old.sha256)
    }
}

/// The object was stored already: it counts its age from this write.
fn already(store: &ObjectStore, sha256: &str) -> io::Result<(Option<Linked>, bool)> {
    if let Err(e) = store.touch(sha256) {
        tracing::warn!("object {sha256}: mtime not set: {e}");
    }
    Ok((None, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Failure;
    use crate::hash::sha256_hex;
    use crate::workspace::Workspaces;
    use crate::write::pipeline::{Body, Caller, Decision, Outcome, Pipeline, Plan, Step};
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    struct Fixture {
        _t: tempfile::TempDir,
        root: PathBuf,
        ws: Workspaces,
        pipeline: Pipeline,
        objects: ObjectStore,
    }

    fn fixture(retention: Retention) -> Fixture {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let ws = Workspaces::new(std::slice::from_ref(&root), &root, None);
        let state = root.join(".resilient_write");
        let objects = ObjectStore::new(&state);
        let pipeline = Pipeline::new(Journal::new(&state))
            .with_objects(objects.clone())
            .with_retention(retention, ws.journal_paths());
        Fixture {
            _t: t,
            root,
            ws,
            pipeline,
            objects,
        }
    }

    fn plan(bytes: &[u8]) -> Plan {
        Plan {
            body: Body::Bytes(bytes.to_vec()),
            mode: "overwrite".into(),
            create_only: false,
            extra: BTreeMap::new(),
            new_file_mode: None,
        }
    }

    fn who() -> Caller {
        Caller {
            caller: "test".into(),
            tool: "safe_write".into(),
        }
    }

    fn write(f: &Fixture, path: &str, bytes: &[u8]) -> Outcome {
        let target = f.ws.resolve(path, true).unwrap();
        let (out, ()) = f
            .pipeline
            .commit(&target, &who(), |_| Ok(Decision::Write(plan(bytes), ())))
            .unwrap();
        out.unwrap()
    }

    fn last_row(f: &Fixture) -> crate::journal::Row {
        let (rows, _) = f.pipeline.journal().tail(1, |_| true).unwrap();
        rows.into_iter().next().unwrap()
    }

    fn age_all_objects(objects: &ObjectStore, by: Duration) {
        for o in objects.list().unwrap() {
            File::open(objects.path_of(&o.sha256))
                .unwrap()
                .set_modified(SystemTime::now() - by)
                .unwrap();
        }
    }

    #[test]
    fn an_overwrite_keeps_the_old_inode_itself_by_hard_link() {
        let f = fixture(Retention::default());
        write(&f, "a.txt", b"old content");
        let old = std::fs::metadata(f.root.join("a.txt")).unwrap();
        // The old file was last modified long ago; its object counts from this write.
        File::open(f.root.join("a.txt"))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(90 * 86400))
            .unwrap();
        let out = write(&f, "a.txt", b"new content");
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let sha = sha256_hex(b"old content");
        let obj = std::fs::metadata(f.objects.path_of(&sha)).unwrap();
        assert_eq!((obj.dev(), obj.ino()), (old.dev(), old.ino()), "linked");
        assert_eq!(obj.nlink(), 1, "the rename left the store the only name");
        let age = SystemTime::now()
            .duration_since(obj.modified().unwrap())
            .unwrap();
        assert!(age < Duration::from_secs(60), "stored now, not 90 days ago");
        assert_eq!(f.objects.get(&sha).unwrap().unwrap(), b"old content");
        assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"new content");
        assert!(!last_row(&f).contains_key(NOT_KEPT_FIELD));
    }

    #[test]
    fn a_file_with_another_hard_link_is_copied_not_linked() {
        let f = fixture(Retention::default());
        write(&f, "a.txt", b"shared");
        std::fs::hard_link(f.root.join("a.txt"), f.root.join("twin.txt")).unwrap();
        let twin = std::fs::metadata(f.root.join("twin.txt")).unwrap();
        write(&f, "a.txt", b"mine");
        let sha = sha256_hex(b"shared");
        let obj = std::fs::metadata(f.objects.path_of(&sha)).unwrap();
        assert_ne!(
            obj.ino(),
            twin.ino(),
            "the twin could change the object in place"
        );
        std::fs::write(f.root.join("twin.txt"), b"edited in place").unwrap();
        assert_eq!(f.objects.get(&sha).unwrap().unwrap(), b"shared");
    }

    #[test]
    fn a_pre_image_larger_than_the_budget_is_not_kept_and_the_write_happens() {
        let f = fixture(Retention {
            max_bytes: 10,
            ..Retention::default()
        });
        write(&f, "a.txt", b"more than ten bytes of old content");
        let out = write(&f, "a.txt", b"new");
        assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"new");
        let w = out.warnings.join("\n");
        assert!(w.starts_with("history_not_kept: "), "{w}");
        assert!(
            w.contains("more than the history budget (max_bytes 10)"),
            "{w}"
        );
        let row = last_row(&f);
        assert!(
            row[NOT_KEPT_FIELD]
                .as_str()
                .is_some_and(|r| r.contains("budget")),
            "{row:?}"
        );
        assert_eq!(row["prev_sha256"], out.prev_sha256.unwrap().as_str());
        assert!(f.objects.list().unwrap().is_empty());
        // A small one still is kept.
        let out = write(&f, "a.txt", b"newer");
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert!(f.objects.contains(&sha256_hex(b"new")));
    }

    #[test]
    fn the_budget_is_enforced_as_objects_are_added() {
        let f = fixture(Retention {
            max_bytes: 1000,
            max_age: Duration::from_secs(30 * 86400),
            keep_last: 1,
            ..Retention::default()
        });
        let mut prev = Vec::new();
        for i in 0..20u8 {
            let body = vec![b'a' + i; 300];
            write(&f, "a.txt", &body);
            // Older than the minute an automatic pass spares.
            age_all_objects(&f.objects, Duration::from_secs(3600));
            let total: u64 = f.objects.list().unwrap().iter().map(|o| o.bytes).sum();
            assert!(total <= 1000 + 300, "round {i}: {total} bytes stored");
            if !prev.is_empty() {
                assert!(
                    f.objects.contains(&sha256_hex(&prev)),
                    "the newest pre-image"
                );
            }
            prev = body;
        }
        assert!(f.objects.list().unwrap().len() >= 2);
    }

    #[test]
    fn objects_past_their_age_go_when_an_object_is_added() {
        let f = fixture(Retention {
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(86400),
            keep_last: 1,
            ..Retention::default()
        });
        write(&f, "a.txt", b"v0");
        write(&f, "a.txt", b"v1");
        write(&f, "a.txt", b"v2");
        age_all_objects(&f.objects, Duration::from_secs(2 * 86400));
        assert_eq!(f.objects.list().unwrap().len(), 2);
        // A process started now (this one counted their age from when it stored them, and
        // its store's clones share what it counted).
        let state = f.objects.dir().parent().unwrap().to_path_buf();
        let f = Fixture {
            pipeline: Pipeline::new(f.pipeline.journal().clone())
                .with_objects(ObjectStore::new(&state))
                .with_retention(
                    f.pipeline.retention().unwrap().clone(),
                    f.ws.journal_paths(),
                ),
            ..f
        };
        write(&f, "a.txt", b"v3");
        assert!(!f.objects.contains(&sha256_hex(b"v0")), "past max_age");
        assert!(!f.objects.contains(&sha256_hex(b"v1")), "past max_age");
        assert!(
            f.objects.contains(&sha256_hex(b"v2")),
            "the last one of the file"
        );
    }

    /// A filesystem that reports no free space yet takes every write (FUSE filesystems do):
    /// its reading is not believed once a write proves it wrong, history is kept as usual,
    /// and no write walks the object store.
    #[test]
    fn a_disk_reporting_no_free_space_costs_no_store_walk_per_write() {
        #[derive(Debug)]
        struct Full;
        impl crate::write::pipeline::FreeSpace for Full {
            fn space(
                &self,
                _: rustix::fd::BorrowedFd<'_>,
            ) -> io::Result<crate::write::pipeline::Space> {
                Ok(crate::write::pipeline::Space {
                    total: 64 << 20,
                    avail: 0,
                    block: 4096,
                })
            }
        }
        let f = fixture(Retention::default());
        let f = Fixture {
            pipeline: f
                .pipeline
                .clone()
                .with_free_space(std::sync::Arc::new(Full)),
            ..f
        };
        for i in 0..100u32 {
            let out = write(&f, "a.txt", format!("version {i}").as_bytes());
            assert!(out.warnings.is_empty(), "write {i}: {:?}", out.warnings);
        }
        assert_eq!(f.objects.list().unwrap().len(), 99, "every pre-image kept");
        assert!(
            f.objects.listings() <= 1,
            "{} walks of the store for 100 writes",
            f.objects.listings()
        );
    }

    /// History grows on a disk below its floor: each new pre-image is paid for by dropping
    /// the oldest, the store does not grow, and the write's row names what went.
    #[test]
    fn below_the_floor_a_new_pre_image_is_paid_for_by_the_oldest() {
        #[derive(Debug)]
        struct Low;
        impl crate::write::pipeline::FreeSpace for Low {
            fn space(
                &self,
                _: rustix::fd::BorrowedFd<'_>,
            ) -> io::Result<crate::write::pipeline::Space> {
                // Room for any write, but below the 5% floor of 1 GiB.
                Ok(crate::write::pipeline::Space {
                    total: 1 << 30,
                    avail: 1 << 20,
                    block: 4096,
                })
            }
        }
        let f = fixture(Retention::default());
        let f = Fixture {
            pipeline: f.pipeline.clone().with_free_space(std::sync::Arc::new(Low)),
            ..f
        };
        write(&f, "a.txt", b"v0");
        let out = write(&f, "a.txt", b"v1");
        assert!(
            out.warnings.is_empty(),
            "nothing to drop yet: {:?}",
            out.warnings
        );
        let out = write(&f, "a.txt", b"v2");
        assert!(
            out.warnings
                .iter()
                .any(|w| w.starts_with("history_pruned: ")),
            "{:?}",
            out.warnings
        );
        let row = last_row(&f);
        assert_eq!(
            row[crate::write::pipeline::PRUNED_FIELD]["sha256"],
            serde_json::json!([sha256_hex(b"v0")])
        );
        let stored: Vec<String> = f
            .objects
            .list()
            .unwrap()
            .into_iter()
            .map(|o| o.sha256)
            .collect();
        assert_eq!(stored, vec![sha256_hex(b"v1")]);
    }

    #[test]
    fn a_transaction_that_does_not_commit_takes_its_links_back() {
        let f = fixture(Retention::default());
        write(&f, "b.txt", b"old b");
        let (a, b) = (
            f.ws.resolve("a.txt", true).unwrap(),
            f.ws.resolve("b.txt", true).unwrap(),
        );
        let err = f
            .pipeline
            .commit_many(
                &[&a, &b],
                &who(),
                |_| {
                    Ok(vec![
                        Some(Step::Write(plan(b"new a"))),
                        Some(Step::Write(plan(b"new b"))),
                    ])
                },
                |_| Err(Failure::Internal("commit record not written".into())),
                true,
            )
            .unwrap_err();
        assert!(matches!(err, Failure::Internal(_)), "{err:?}");
        assert_eq!(std::fs::read(f.root.join("b.txt")).unwrap(), b"old b");
        let meta = std::fs::metadata(f.root.join("b.txt")).unwrap();
        assert_eq!(meta.nlink(), 1, "no object shares the live file's inode");
        assert!(!f.objects.contains(&sha256_hex(b"old b")));
        assert!(!Path::new(&f.objects.path_of(&sha256_hex(b"old b"))).exists());
    }
}
