//! History yields: pre-images are a cache, and a cache never costs a write its room.
//!
//! The records (the journal, a transaction's log, chunk parts, scratch deposits, checkpoints,
//! handoffs) are never dropped to make room; pre-images are, oldest first across every file,
//! below `keep_last` and down to none if that is what the write needs
//! ([`crate::objects::ObjectStore::drop_oldest`], which costs what it drops). Two moments:
//!
//! - **A write meets `ENOSPC`/`EDQUOT`** (its temp file, its rename, its journal row, a copy of
//!   its pre-image, a transaction's log): when the full filesystem is the one that holds
//!   `.resilient_write/` (the workspace's or another), pre-images are dropped for what the
//!   write needs plus [`SLACK`] and the step runs once more. It fails only when nothing could
//!   be dropped, or what was dropped was not enough, with [`Failure::DiskFull`] naming the
//!   filesystem, what it holds for the write, and the bytes needed; the old content is
//!   intact, as after any failed write. Nothing is remembered: the first write after the user
//!   frees space succeeds.
//! - **History grows** (a write kept a new pre-image): the store never takes the state's
//!   filesystem below its floor (`history.min_free`, default 5% of the filesystem, at most
//!   1 GiB). Below it, each new pre-image is paid for by dropping older ones, as many bytes
//!   as it adds, before the write's row is appended; the store does not grow, nor is it
//!   emptied because something else filled the disk (`doctor --fix` restores the floor on
//!   request).
//!
//! The free-space reading ([`FreeSpace`], `fstatvfs`) is one system call, taken only when
//! history grows. A filesystem that reports no size (FUSE filesystems without `statfs`), or
//! one that reported less room than a write needed and took the write anyway, is not
//! believed until its reading changes: there only a real `ENOSPC` makes history yield, and
//! the floor is not enforced, so such a filesystem runs at normal speed with its history.

use super::temp::{Written, write_temp, write_temp_bytes};
use super::{Body, Existing, Pipeline};
use crate::envelope::{DiskFull, Failure, Result};
use crate::objects::Dropped;
use crate::workspace::Target;
use rustix::fd::{AsFd, BorrowedFd};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Room asked for beyond what a write needs when history yields, so that the writes that
/// follow do not each meet `ENOSPC` and drop one pre-image at a time.
pub const SLACK: u64 = 64 * 1024;

/// The journal field (and the warning's prefix) naming the pre-images dropped for a write.
pub const PRUNED_FIELD: &str = "history_pruned";

/// At most this many dropped versions are named in a row or a result; the count says the rest.
const NAMED_AT_MOST: usize = 16;

/// A filesystem's size and free space, as it reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub total: u64,
    /// Free bytes an unprivileged writer may use.
    pub avail: u64,
    /// Its block size (what a small file costs at least).
    pub block: u64,
}

/// Reads a filesystem's free space: `fstatvfs`, or a test double.
pub trait FreeSpace: Send + Sync + std::fmt::Debug {
    fn space(&self, dir: BorrowedFd<'_>) -> io::Result<Space>;
}

/// The kernel's answer (`fstatvfs`).
#[derive(Debug)]
pub struct Statvfs;

impl FreeSpace for Statvfs {
    fn space(&self, dir: BorrowedFd<'_>) -> io::Result<Space> {
        let v = rustix::fs::fstatvfs(dir).map_err(crate::util::sys::errno_io)?;
        Ok(Space {
            total: v.f_blocks.saturating_mul(v.f_frsize),
            avail: v.f_bavail.saturating_mul(v.f_frsize),
            block: v.f_frsize.max(512),
        })
    }
}

/// What the pipeline knows about room on the filesystems it writes to.
#[derive(Debug)]
pub(crate) struct Room {
    probe: Arc<dyn FreeSpace>,
    /// The state directory (`.resilient_write/`): its filesystem holds the history.
    state_dir: PathBuf,
    /// Readings proven wrong (a write the reading said could not fit went through), per
    /// device: not believed while the filesystem reports the same.
    untrusted: Mutex<HashMap<u64, Space>>,
}

/// A reading taken when history grew, to learn from after the write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    dev: u64,
    space: Space,
    /// The reading said the write could not fit.
    short: bool,
}

fn round_up(n: u64, block: u64) -> u64 {
    n.div_ceil(block.max(1)).saturating_mul(block.max(1))
}

/// Where the filesystem holding `path` is mounted: the highest ancestor on the same device.
pub fn mount_point(path: &Path) -> PathBuf {
    let dev = |p: &Path| rustix::fs::stat(p).ok().map(|s| s.st_dev);
    let Some(mine) = dev(path) else {
        return path.to_path_buf();
    };
    let mut at = path;
    while let Some(up) = at.parent() {
        if dev(up) != Some(mine) {
            break;
        }
        at = up;
    }
    at.to_path_buf()
}

impl Room {
    pub fn new(probe: Arc<dyn FreeSpace>, state_dir: PathBuf) -> Room {
        Room {
            probe,
            state_dir,
            untrusted: Mutex::new(HashMap::new()),
        }
    }

    /// The device of the state directory's filesystem (`None` while it does not exist).
    fn state_dev(&self) -> Option<u64> {
        rustix::fs::stat(&self.state_dir).ok().map(|s| s.st_dev)
    }

    /// Whether `dir` is on the filesystem that holds the state (and so the history).
    pub fn shares_state(&self, dir: impl AsFd) -> bool {
        let d = rustix::fs::fstat(dir).ok().map(|s| s.st_dev);
        d.is_some() && d == self.state_dev()
    }

    /// The state filesystem's space, when it can be believed.
    pub fn state_space(&self) -> Option<(u64, Space)> {
        let dir = std::fs::File::open(&self.state_dir).ok()?;
        let dev = rustix::fs::fstat(&dir).ok()?.st_dev;
        let space = self.probe.space(dir.as_fd()).ok()?;
        let believed = space.total > 0
            && self
                .untrusted
                .lock()
                .map_or(true, |u| u.get(&dev) != Some(&space));
        believed.then_some((dev, space))
    }

    /// A write the reading said could not fit went through: stop believing this reading.
    pub fn disbelieve(&self, r: Reading) {
        if r.short
            && let Ok(mut u) = self.untrusted.lock()
        {
            tracing::debug!(
                "filesystem {} reported {} bytes free and took a larger write: its free-space \
                 reading is ignored until it changes",
                r.dev,
                r.space.avail
            );
            u.insert(r.dev, r.space);
        }
    }
}

/// The filesystem that holds the state, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDisk {
    /// Where it is mounted.
    pub mount: PathBuf,
    pub space: Space,
    /// History's floor on it (`history.min_free`) in bytes.
    pub floor: u64,
}

impl StateDisk {
    pub fn below_floor(&self) -> bool {
        self.space.avail < self.floor
    }
}

impl Pipeline {
    /// The state's filesystem and history's floor on it (`None`: history is off, the state
    /// does not exist yet, or the filesystem reports no size).
    pub fn state_disk(&self) -> Option<StateDisk> {
        let floor = self.auto.as_ref()?.retention().min_free;
        let (_, space) = self.room.state_space()?;
        Some(StateDisk {
            mount: mount_point(&self.room.state_dir),
            space,
            floor: floor.bytes(space.total),
        })
    }

    /// Drop the oldest pre-images until the state's filesystem is back above history's
    /// floor, or none is left (`doctor --fix`). Writes never do this on their own: below
    /// the floor they only keep the store from growing (module doc).
    pub fn restore_floor(&self) -> io::Result<Dropped> {
        let (Some(disk), Some(store)) = (self.state_disk(), &self.objects) else {
            return Ok(Dropped::default());
        };
        if !disk.below_floor() {
            return Ok(Dropped::default());
        }
        store.drop_oldest(disk.floor - disk.space.avail)
    }

    /// History grew by about `grew` bytes for a write that needs `need_here` bytes in
    /// `dir`: keep the state's filesystem above its floor by dropping as many bytes of older
    /// pre-images as the store added (module doc). Returns what was dropped, and the reading
    /// to learn from once the write is done.
    pub(super) fn hold_floor(
        &self,
        dir: BorrowedFd<'_>,
        need_here: u64,
        grew: u64,
    ) -> (Dropped, Option<Reading>) {
        let (Some(auto), Some(store)) = (&self.auto, &self.objects) else {
            return (Dropped::default(), None);
        };
        if grew == 0 {
            return (Dropped::default(), None);
        }
        let Some((dev, space)) = self.room.state_space() else {
            return (Dropped::default(), None);
        };
        // The row, and the temp file when it is on the same filesystem.
        let mut need = space.block;
        if self.room.shares_state(dir) {
            need += round_up(need_here, space.block);
        }
        let short = space.avail < need;
        let reading = Reading { dev, space, short };
        if short {
            // The write will tell whether the reading is right (module doc).
            return (Dropped::default(), Some(reading));
        }
        let floor = auto.retention().min_free.bytes(space.total);
        let after = space.avail - need;
        if after >= floor {
            return (Dropped::default(), Some(reading));
        }
        let want = (floor - after).min(round_up(grew, space.block));
        let dropped = store.drop_oldest(want).unwrap_or_else(|e| {
            tracing::warn!("history could not give up room: {e}");
            Dropped::default()
        });
        (dropped, Some(reading))
    }

    /// Before a streamed write of about `need` bytes into `target` (a compose, which cannot
    /// be written twice): when the target's filesystem holds the history and reports less
    /// room than that, history yields the difference first. The result names what it
    /// dropped in the journal (`extra`) and returns the warning for the result.
    pub fn make_room_for(
        &self,
        target: &Target,
        need: u64,
        extra: &mut std::collections::BTreeMap<String, Value>,
    ) -> Option<String> {
        if self.auto.is_none() || !self.room.shares_state(&target.dir) {
            return None;
        }
        let (_, space) = self.room.state_space()?;
        let want = need.saturating_add(SLACK);
        if space.avail >= want {
            return None;
        }
        let dropped = self
            .objects
            .as_ref()?
            .drop_oldest(want - space.avail)
            .ok()?;
        extra.insert(PRUNED_FIELD.into(), pruned_field(&dropped)?);
        pruned_warning(&dropped)
    }

    /// A write met `ENOSPC` on the filesystem that holds the state: drop pre-images for
    /// `need` bytes plus [`SLACK`]. Empty when history is off or had nothing to drop.
    pub fn yield_room(&self, need: u64) -> Dropped {
        let Some(store) = &self.objects else {
            return Dropped::default();
        };
        if self.auto.is_none() {
            return Dropped::default();
        }
        match store.drop_oldest(need.saturating_add(SLACK)) {
            Ok(d) => {
                if !d.is_empty() {
                    tracing::info!(
                        "history gave up {} pre-image(s), {} bytes, for a write that met a full disk",
                        d.sha256.len(),
                        d.blocks
                    );
                }
                d
            }
            Err(e) => {
                tracing::warn!("history could not give up room: {e}");
                Dropped::default()
            }
        }
    }

    /// Run `step`, which writes about `need` bytes into the state directory (a transaction's
    /// log, a chunk's record, a deposit's index row): on `ENOSPC` history yields and the step
    /// runs once more. A failure for lack of room names the state's filesystem.
    pub fn with_state_room<T>(&self, need: u64, mut step: impl FnMut() -> Result<T>) -> Result<T> {
        let first = step();
        let Err(f) = first else { return first };
        if !f.is_no_space() {
            return Err(f);
        }
        let dropped = self.yield_room(need);
        if dropped.is_empty() {
            return Err(self.disk_full(f, Holds::State, need, &dropped));
        }
        step().map_err(|f| self.disk_full(f, Holds::State, need, &dropped))
    }

    /// Turn an `ENOSPC`/`EDQUOT` failure into [`Failure::DiskFull`], naming the filesystem
    /// (`holds` says which of the write's filesystems failed) and the bytes needed. Other
    /// failures pass unchanged.
    pub(crate) fn disk_full(
        &self,
        f: Failure,
        holds: Holds<'_>,
        need: u64,
        dropped: &Dropped,
    ) -> Failure {
        if !f.is_no_space() {
            return f;
        }
        let Failure::Io { op, path, source } = f else {
            return f;
        };
        let (dir, what): (PathBuf, &str) = match holds {
            Holds::State => (self.room.state_dir.clone(), "state (.resilient_write)"),
            Holds::Workspace(d, shared) => (
                d.to_path_buf(),
                if shared {
                    "workspace and the state (.resilient_write)"
                } else {
                    "workspace"
                },
            ),
        };
        let existing = std::iter::successors(Some(dir.as_path()), |p| p.parent())
            .find(|p| p.exists())
            .unwrap_or(Path::new("/"));
        let free = std::fs::File::open(existing)
            .ok()
            .and_then(|d| self.room.probe.space(d.as_fd()).ok())
            .filter(|s| s.total > 0)
            .map(|s| s.avail);
        Failure::DiskFull {
            op,
            path,
            source,
            disk: Box::new(DiskFull {
                filesystem: mount_point(existing).display().to_string(),
                holds: what.to_string(),
                free_bytes: free,
                needed_bytes: need,
                pruned_versions: dropped.sha256.len(),
                pruned_bytes: dropped.blocks,
            }),
        }
    }
}

impl Pipeline {
    /// Step 3 of one target without its fsync ([`write_temp`](super::temp::write_temp)); a body held in memory that
    /// meets a full disk holding the history is written once more after history made room
    /// (`pruned` gains what was dropped). A failure for lack of room names the filesystem.
    pub(super) fn write_temp_making_room<'a>(
        &self,
        target: &'a Target,
        existing: Option<&Existing>,
        body: Body,
        new_file_mode: Option<u32>,
        pruned: &mut Dropped,
    ) -> Result<Written<'a>> {
        let Body::Bytes(mut bytes) = body else {
            return write_temp(target, existing, body, new_file_mode)
                .map_err(|f| self.disk_full(f, self.holds(target), 0, pruned));
        };
        let need = bytes.len() as u64;
        let mut made_room = false;
        loop {
            let f = match write_temp_bytes(target, existing, bytes, new_file_mode) {
                Ok(w) => return Ok(w),
                Err(not_written) => {
                    let (f, back) = *not_written;
                    bytes = back;
                    f
                }
            };
            let holds = self.holds(target);
            if f.is_no_space() && !made_room && matches!(holds, Holds::Workspace(_, true)) {
                made_room = true;
                let more = self.yield_room(need);
                if !more.is_empty() {
                    pruned.extend(more);
                    continue;
                }
            }
            return Err(self.disk_full(f, holds, need, pruned));
        }
    }
}

/// Which of a write's filesystems was full.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Holds<'a> {
    /// The state directory's.
    State,
    /// The target's directory (`true`: the state is on it too).
    Workspace(&'a Path, bool),
}

/// The journal field for pre-images dropped for a write (`None` when none was).
pub(crate) fn pruned_field(dropped: &Dropped) -> Option<Value> {
    (!dropped.is_empty()).then(|| {
        json!({
            "versions": dropped.sha256.len(),
            "bytes": dropped.blocks,
            "sha256": dropped.sha256.iter().take(NAMED_AT_MOST).collect::<Vec<_>>(),
        })
    })
}

/// The result's warning for pre-images dropped for a write.
pub(crate) fn pruned_warning(dropped: &Dropped) -> Option<String> {
    (!dropped.is_empty()).then(|| {
        format!(
            "{PRUNED_FIELD}: the disk was short of room for this write; {} earlier version(s) \
             of files ({} bytes) were dropped from history to make it, oldest first; \
             `history` shows them as not stored",
            dropped.sha256.len(),
            dropped.blocks
        )
    })
}
