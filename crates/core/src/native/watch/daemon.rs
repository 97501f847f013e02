//! The watcher process (see the module above for the protocol): one inotify instance over
//! the workspace's directories, a map of changed paths, and a socket that answers `sync`.
//!
//! - Watches are added before each directory is read, so a file created while a directory
//!   is being walked is either listed by the walk or reported by its event. A new directory
//!   is walked the same way, and counts as changed itself (a directory pathspec covers all
//!   below it, so files made in it before its watch existed are not missed).
//! - What inotify cannot follow becomes "everything changed" (`Tree::mark_all`): a queue
//!   overflow, a directory renamed (the paths of the watches below it are stale: the watches
//!   are rebuilt), a `.gitignore` created, changed or removed (which directories are
//!   ignored changed: rebuilt too), more changed paths than an answer lists.
//! - Directories git ignores (asked of `git ls-files --ignored --directory` at each build)
//!   are not watched: build outputs churn and are out of the snapshot's scope anyway.

use super::{Changed, LOCK, MAX_PATHS, OFF, Request, SOCKET, Synced, Watch, write_answer};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read};
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What each directory's watch reports.
fn mask() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::EXCL_UNLINK
}

/// More changed paths than this are forgotten for "everything changed" (bounds memory).
const MAX_REMEMBERED: usize = 100_000;

/// Filesystems whose every change passes through this kernel (so inotify sees it).
pub(super) fn trusted(fs_type: u64) -> bool {
    const EXT: u64 = 0xEF53;
    const XFS: u64 = 0x5846_5342;
    const BTRFS: u64 = 0x9123_683E;
    const TMPFS: u64 = 0x0102_1994;
    const F2FS: u64 = 0xF2F5_2010;
    const ZFS: u64 = 0x2FC1_2FC1;
    const OVERLAY: u64 = 0x794C_7630;
    const BCACHEFS: u64 = 0xCA45_1A4E;
    matches!(
        fs_type,
        EXT | XFS | BTRFS | TMPFS | F2FS | ZFS | OVERLAY | BCACHEFS
    )
}

/// Why the watcher must stop (written to `watch/off` when it is lasting).
struct Refused(String);

/// Watch `root` and answer its hooks until idle for `idle` (the `shell-watcher` command).
/// Returns at once when another watcher holds the workspace.
pub fn serve(root: &Path, state_dir: &Path, idle: Duration) -> io::Result<()> {
    let watch = Watch::open(state_dir).ok_or_else(|| io::Error::other("no watch directory"))?;
    let lock = rustix::fs::openat(
        &watch.dir,
        LOCK,
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o600),
    )?;
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(());
    }
    let refuse = |why: String| {
        let body = format!("{why}\n");
        let _ = crate::state::replace_unsynced(&watch.dir, Path::new(OFF), body.as_bytes(), false);
        Ok(())
    };
    let fs_type = rustix::fs::statfs(root)?.f_type as u64;
    if !trusted(fs_type) {
        return refuse(format!(
            "the workspace's filesystem (type {fs_type:#x}) may change without this kernel \
             seeing it; the shell hooks snapshot the whole work tree instead"
        ));
    }
    let mut tree = match Tree::new(root, state_dir) {
        Ok(t) => t,
        Err(Refused(why)) => return refuse(why),
    };
    let _ = rustix::fs::unlinkat(&watch.dir, SOCKET, AtFlags::empty());
    let listener = UnixListener::bind(watch.socket())?;
    listener.set_nonblocking(true)?;
    let ours = rustix::fs::statat(&watch.dir, SOCKET, AtFlags::SYMLINK_NOFOLLOW)?.st_ino;
    let mut asked = Instant::now();
    loop {
        let left = idle.saturating_sub(asked.elapsed());
        if left.is_zero() || tree.gone {
            break;
        }
        // Wake at least each minute to see whether the socket is still ours.
        let wait = left.min(Duration::from_secs(60));
        let timeout = Timespec {
            tv_sec: wait.as_secs() as i64,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let mut fds = [
            PollFd::new(&listener, PollFlags::IN),
            PollFd::new(&tree.inotify, PollFlags::IN),
        ];
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let (client, events) = (fds[0].revents(), fds[1].revents());
        if !events.is_empty()
            && let Err(Refused(why)) = tree.drain()
        {
            return refuse(why);
        }
        if !client.is_empty() {
            while let Ok((stream, _)) = listener.accept() {
                asked = Instant::now();
                if let Err(Refused(why)) = tree.answer(stream) {
                    return refuse(why);
                }
            }
        }
        let still = rustix::fs::statat(&watch.dir, SOCKET, AtFlags::SYMLINK_NOFOLLOW);
        if !still.is_ok_and(|s| s.st_ino == ours) {
            return Ok(()); // another watcher took over, or the state was removed
        }
    }
    let _ = rustix::fs::unlinkat(&watch.dir, SOCKET, AtFlags::empty());
    Ok(())
}

/// The watched tree and what changed in it.
struct Tree {
    root: PathBuf,
    state_dir: PathBuf,
    /// The state directory relative to the root, when inside it (never watched).
    state_rel: Option<PathBuf>,
    instance: String,
    inotify: OwnedFd,
    /// Watch descriptor -> directory relative to the root (`""`: the root).
    dirs: HashMap<i32, PathBuf>,
    root_wd: i32,
    /// Directories git ignores (relative to the root), not watched.
    ignored: HashSet<PathBuf>,
    seq: u64,
    /// Tokens before this sequence number are answered [`Changed::All`].
    all_at: u64,
    dirty: HashMap<PathBuf, u64>,
    rebuild: bool,
    /// The root is gone: exit.
    gone: bool,
}

impl Tree {
    fn new(root: &Path, state_dir: &Path) -> Result<Tree, Refused> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut tree = Tree {
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            state_rel: state_dir.strip_prefix(root).ok().map(Path::to_path_buf),
            instance: format!("w1-{}-{nanos:x}", std::process::id()),
            inotify: new_inotify()?,
            dirs: HashMap::new(),
            root_wd: -1,
            ignored: HashSet::new(),
            seq: 0,
            all_at: 0,
            dirty: HashMap::new(),
            rebuild: false,
            gone: false,
        };
        tree.watch_all()?;
        Ok(tree)
    }

    /// A fresh inotify instance over the whole tree; every token before it is void.
    fn build(&mut self) -> Result<(), Refused> {
        self.inotify = new_inotify()?;
        self.watch_all()
    }

    fn watch_all(&mut self) -> Result<(), Refused> {
        self.dirs.clear();
        self.ignored = ignored_dirs(&self.root, &self.state_dir);
        self.watch_tree(PathBuf::new())?;
        self.root_wd = self
            .dirs
            .iter()
            .find(|(_, p)| p.as_os_str().is_empty())
            .map(|(wd, _)| *wd)
            .ok_or_else(|| Refused("cannot watch the workspace's root".into()))?;
        self.mark_all();
        Ok(())
    }

    fn skipped(&self, rel: &Path) -> bool {
        rel.file_name() == Some(OsStr::new(".git"))
            || self.state_rel.as_deref() == Some(rel)
            || self.ignored.contains(rel)
    }

    /// Watch `rel` and every directory below it (not followed: symlinks, `.git`, the state
    /// directory, ignored directories). Nested repositories are watched like the rest: git
    /// decides what their paths mean (a pathspec inside a submodule fails, and the hook then
    /// snapshots the whole tree).
    fn watch_tree(&mut self, rel: PathBuf) -> Result<(), Refused> {
        let mut stack = vec![rel];
        while let Some(d) = stack.pop() {
            let abs = self.root.join(&d);
            let wd = match inotify::add_watch(&self.inotify, &abs, mask()) {
                Ok(wd) => wd,
                Err(rustix::io::Errno::NOSPC) => {
                    return Err(Refused(
                        "the inotify watch limit (fs.inotify.max_user_watches) is reached; the \
                         shell hooks snapshot the whole work tree instead"
                            .into(),
                    ));
                }
                // Gone already, or unreadable: its parent's events stand for it.
                Err(_) => continue,
            };
            self.dirs.insert(wd, d.clone());
            let Ok(entries) = std::fs::read_dir(&abs) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let child = d.join(e.file_name());
                    if !self.skipped(&child) {
                        stack.push(child);
                    }
                }
            }
        }
        Ok(())
    }

    fn touch(&mut self, rel: PathBuf) {
        self.seq += 1;
        self.dirty.insert(rel, self.seq);
        if self.dirty.len() > MAX_REMEMBERED {
            self.mark_all();
        }
    }

    fn mark_all(&mut self) {
        self.seq += 1;
        self.all_at = self.seq;
        self.dirty.clear();
    }

    /// Read every pending event (rebuilding the watches when one asked for it). Returns
    /// whether the watches were rebuilt (events of the new ones may be pending).
    fn drain(&mut self) -> Result<bool, Refused> {
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 << 10];
        let mut events = Vec::new();
        {
            let mut reader = inotify::Reader::new(&self.inotify, &mut buf);
            loop {
                match reader.next() {
                    Ok(e) => events.push((
                        e.wd(),
                        e.events(),
                        e.file_name().map(|n| n.to_bytes().to_vec()),
                    )),
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(Refused(format!("reading inotify: {e}"))),
                }
            }
        }
        for (wd, flags, name) in events {
            self.event(wd, flags, name)?;
            if self.rebuild {
                break; // the rest describe watches about to be replaced
            }
        }
        if !self.rebuild {
            return Ok(false);
        }
        self.rebuild = false;
        self.build()?;
        Ok(true)
    }

    fn event(&mut self, wd: i32, flags: ReadFlags, name: Option<Vec<u8>>) -> Result<(), Refused> {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            self.mark_all();
            return Ok(());
        }
        if flags.contains(ReadFlags::IGNORED) {
            self.dirs.remove(&wd);
            if wd == self.root_wd {
                self.gone = true;
            }
            return Ok(());
        }
        if wd == self.root_wd && flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
            self.gone = true;
            return Ok(());
        }
        if flags.contains(ReadFlags::UNMOUNT) {
            self.rebuild = true;
            return Ok(());
        }
        let (Some(dir), Some(name)) = (self.dirs.get(&wd), name) else {
            return Ok(()); // a watched directory's own event: its parent's stands for it
        };
        if name == b".git" {
            // A repository made or unmade inside the tree (`git init`, `rm -rf x/.git`):
            // what `add -A` does with its directory changes, whatever git decides.
            if !dir.as_os_str().is_empty() {
                let dir = dir.clone();
                self.touch(dir);
            }
            return Ok(());
        }
        let rel = dir.join(OsStr::from_bytes(&name));
        if self.skipped(&rel) {
            return Ok(());
        }
        if name == b".gitignore" {
            self.rebuild = true;
            return Ok(());
        }
        if flags.contains(ReadFlags::ISDIR) {
            if flags.contains(ReadFlags::MOVED_FROM) {
                self.rebuild = true;
                return Ok(());
            }
            if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                self.watch_tree(rel.clone())?;
            }
            if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO | ReadFlags::DELETE) {
                self.touch(rel);
            }
            return Ok(());
        }
        self.touch(rel);
        Ok(())
    }

    /// Read every event from before this call. inotify queues an event inside the system
    /// call that made the change, so once a hook asks (its command has returned), every
    /// change of the command is in the queue: reading until it is empty is the barrier
    /// (watchman's and git's cookie files serve backends that report later, like FSEvents;
    /// creating one costs a millisecond on a journaled filesystem).
    fn settle(&mut self) -> Result<(), Refused> {
        while self.drain()? {}
        Ok(())
    }

    /// Answer one hook.
    fn answer(&mut self, stream: UnixStream) -> Result<(), Refused> {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        let read = BufReader::new(&stream).take(1 << 20).read_line(&mut line);
        let mut out = &stream;
        let err = |out: &mut &UnixStream, why: &str| {
            let _ = io::Write::write_all(out, format!("error {why}\n").as_bytes());
        };
        let req: Request = match read.ok().and_then(|_| serde_json::from_str(&line).ok()) {
            Some(r) => r,
            None => {
                err(&mut out, "bad request");
                return Ok(());
            }
        };
        if req.root != self.root {
            err(&mut out, "this watcher watches another root");
            return Ok(());
        }
        self.settle()?;
        if req.rebuild {
            self.build()?;
        }
        let since = req
            .since
            .as_deref()
            .and_then(|t| {
                t.strip_prefix(&self.instance)?
                    .strip_prefix(':')?
                    .parse()
                    .ok()
            })
            .filter(|&s: &u64| s >= self.all_at && s <= self.seq);
        let changed = match since {
            None => Changed::All,
            Some(s) => {
                self.dirty.retain(|_, q| *q > s);
                if self.dirty.len() > MAX_PATHS {
                    Changed::All
                } else {
                    let mut paths: Vec<PathBuf> = self.dirty.keys().cloned().collect();
                    paths.sort();
                    Changed::Paths(paths)
                }
            }
        };
        let synced = Synced {
            token: format!("{}:{}", self.instance, self.seq),
            changed,
        };
        let _ = write_answer(&mut out, &synced);
        Ok(())
    }
}

fn new_inotify() -> Result<OwnedFd, Refused> {
    inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
        .map_err(|e| Refused(format!("inotify: {e}")))
}

/// The directories below `root` git ignores themselves (relative to the root): listed by
/// `ls-files --ignored --directory` (by our snapshot index when there is one: a directory
/// holding a file it tracks is not listed), then kept only when `check-ignore` matches the
/// directory itself. The listing also collapses a directory whose files are all ignored
/// today (`docs/` holding only `c.log`), and a file made there tomorrow would not be.
fn ignored_dirs(root: &Path, state_dir: &Path) -> HashSet<PathBuf> {
    let ours = state_dir
        .join(super::super::HOOKS_DIR)
        .join("shell/git/index");
    let git = |args: &[&str], input: Option<Vec<u8>>| {
        let mut c = super::super::gitsnap::bare_git(root);
        if ours.exists() {
            c.env("GIT_INDEX_FILE", &ours);
        }
        c.args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().ok()?;
        let stdin = child.stdin.take();
        let feeder = std::thread::spawn(move || {
            if let (Some(mut w), Some(i)) = (stdin, input) {
                let _ = io::Write::write_all(&mut w, &i);
            }
        });
        let out = child.wait_with_output().ok()?;
        let _ = feeder.join();
        Some(out.stdout)
    };
    let Some(listed) = git(
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
        None,
    ) else {
        return HashSet::new();
    };
    let dirs: Vec<&[u8]> = listed
        .split(|&b| b == 0)
        .filter(|p| p.ends_with(b"/"))
        .collect();
    if dirs.is_empty() {
        return HashSet::new();
    }
    let input: Vec<u8> = dirs
        .iter()
        .flat_map(|d| d.iter().chain(b"\0"))
        .copied()
        .collect();
    let Some(matched) = git(&["check-ignore", "-z", "--stdin"], Some(input)) else {
        return HashSet::new();
    };
    matched
        .split(|&b| b == 0)
        .filter_map(|p| p.strip_suffix(b"/"))
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}
