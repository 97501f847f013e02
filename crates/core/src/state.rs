//! Write targets inside the state directory (`.resilient_write/`), for the layers that keep
//! state there (L2 chunk sessions, L4 scratchpad).
//!
//! Tools can never reach the state directory through [`crate::workspace::Workspaces::resolve`];
//! the server's own state writes get their [`Target`] here instead, so they still go through
//! the one write pipeline (lock, temp file, fsync, read-back, journal, rename, directory
//! fsync). Guarantees: every directory below the state directory is opened relative to its
//! parent with `O_NOFOLLOW`, so a symlink planted inside `.resilient_write/` cannot redirect a
//! state write; new directories get the requested permission bits (0700 for the scratchpad)
//! and are reported in `created_dirs` so the pipeline fsyncs them.

use crate::envelope::{Failure, Result};
use crate::workspace::Target;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An open directory below the state directory, and the directories created to reach it
/// (the existing ancestor that received the first new entry, then each new directory).
pub struct StateDir {
    pub path: PathBuf,
    /// `.resilient_write/<components>` with `/` separators, for display.
    pub display: String,
    pub dir: OwnedFd,
    pub created: Vec<OwnedFd>,
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

fn open_dir_at(parent: &OwnedFd, name: &str) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Remove what the agents' before-hooks left in `.resilient_write/hooks/` for calls whose
/// after-hook never came (a call the user refused, an agent that died): staged pre-images,
/// records and temp files last changed more than `older_than` ago. Returns how many files
/// were removed. They are a cache of a call long over: its journal row can no longer come.
pub fn sweep_hook_leftovers(state_dir: &Path, older_than: std::time::Duration) -> usize {
    let Ok(Some(dir)) = open_subdir(state_dir, &[crate::layout::HOOKS_DIR], 0o700, false) else {
        return 0;
    };
    let Ok(entries) = std::fs::read_dir(&dir.path) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        let ours = n.ends_with(".pre") || n.ends_with(".json") || n.contains(".tmp-");
        let old = e.metadata().is_ok_and(|m| {
            m.is_file()
                && m.modified()
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|age| age > older_than)
        });
        if ours && old && rustix::fs::unlinkat(&dir.dir, n, rustix::fs::AtFlags::empty()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Overwrite the small state file at `path` in place by `body`, not durably (created 0600,
/// never through a symlink): no new inode, which costs a millisecond on a journaled
/// filesystem where [`replace_unsynced`]'s temp file and rename do. A reader may find part of
/// the new content over the old: only for state whose torn form is harmless (each caller
/// says why): the shell hooks' watcher token and their objects counter.
pub fn overwrite_unsynced(path: &Path, body: &[u8]) -> io::Result<()> {
    let mut f = crate::util::statefile::open_with(path, OFlags::WRONLY | OFlags::CREATE, 0o600)?;
    f.write_all(body)?;
    f.set_len(body.len() as u64)
}

/// Replace the state file `name` (relative to `dir`; an absolute path with
/// [`rustix::fs::CWD`]) by `body`, not durably: a temp file beside it (`.<name>.tmp-<pid>`,
/// created 0600 without following a symlink) renamed over it, so a reader finds the old
/// content or the new, never part of one; nothing is fsynced. With [`overwrite_unsynced`], the
/// writer of the state that may be lost in a crash because losing it costs only work or precision, never a record
/// (each caller says why): the hooks' before/after records and staged pre-images, the shell
/// snapshots' manifests and cached contents. `writeback` starts writing it to disk meanwhile,
/// a head start for content someone will fsync soon. A temp file a crash leaves goes with
/// whatever sweeps its directory: the hooks' leftovers ([`sweep_hook_leftovers`]), the shell
/// hook's stale calls, the snapshot cache's prune.
pub fn replace_unsynced(
    dir: impl AsFd,
    name: &Path,
    body: &[u8],
    writeback: bool,
) -> io::Result<()> {
    let Some(file_name) = name.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", name.display()),
        ));
    };
    let mut tmp_name = OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = name.with_file_name(tmp_name);
    let dir = dir.as_fd();
    let fd = rustix::fs::openat(
        dir,
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let mut f = std::fs::File::from(fd);
    let written = f.write_all(body);
    if written.is_ok() && writeback {
        // Only a head start for a later fsync: a failure costs nothing.
        let _ = crate::write::pipeline::start_writeback(&f, 0, body.len() as u64);
    }
    drop(f);
    let renamed =
        written.and_then(|()| rustix::fs::renameat(dir, &tmp, dir, name).map_err(io::Error::from));
    if renamed.is_err() {
        let _ = rustix::fs::unlinkat(dir, &tmp, rustix::fs::AtFlags::empty());
    }
    renamed
}

/// Open `state_dir/<components...>`, creating missing directories with `dir_mode` (before
/// the umask) when `create` is set. `Ok(None)` when a directory is missing and `create` is
/// not set.
pub fn open_subdir(
    state_dir: &Path,
    components: &[&str],
    dir_mode: u32,
    create: bool,
) -> Result<Option<StateDir>> {
    let mut display = crate::layout::STATE_DIR_NAME.to_string();
    let mut created = Vec::new();
    let mut dir = match rustix::fs::open(
        state_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(d) => d,
        Err(e) if e == rustix::io::Errno::NOENT && create => {
            std::fs::create_dir_all(state_dir)
                .map_err(|e| Failure::io("create state directory", state_dir, e))?;
            if let Some(parent) = state_dir.parent() {
                let _ = crate::write::pipeline::fsync_dir(parent);
            }
            rustix::fs::open(
                state_dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| Failure::io("open state directory", state_dir, errno(e)))?
        }
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(Failure::io("open state directory", state_dir, errno(e))),
    };
    let mut path = state_dir.to_path_buf();
    for comp in components {
        path.push(comp);
        display.push('/');
        display.push_str(comp);
        let next = match open_dir_at(&dir, comp) {
            Ok(d) => d,
            Err(e) if e == rustix::io::Errno::NOENT && create => {
                // Another process may remove the directory between our mkdir and our open (a
                // chunk_reset of the session being appended to): make it again, a few times.
                let mut attempts = 0;
                let d = loop {
                    match rustix::fs::mkdirat(&dir, *comp, Mode::from_raw_mode(dir_mode)) {
                        Ok(()) => {}
                        Err(e) if e == rustix::io::Errno::EXIST => {}
                        Err(e) => {
                            return Err(Failure::io("create state directory", &path, errno(e)));
                        }
                    }
                    match open_dir_at(&dir, comp) {
                        Err(e) if e == rustix::io::Errno::NOENT && attempts < 8 => attempts += 1,
                        other => {
                            break other.map_err(|e| {
                                Failure::io("open state directory", &path, errno(e))
                            })?;
                        }
                    }
                };
                if created.is_empty() {
                    let parent = dir
                        .try_clone()
                        .map_err(|e| Failure::io("open state directory", &path, e))?;
                    created.push(parent);
                }
                created.push(
                    d.try_clone()
                        .map_err(|e| Failure::io("open state directory", &path, e))?,
                );
                d
            }
            Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
            Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR => {
                return Err(Failure::InvalidPath {
                    path: display,
                    reason: "a state directory component is a symlink or not a directory; \
                        remove or rename it by hand"
                        .into(),
                });
            }
            Err(e) => return Err(Failure::io("open state directory", &path, errno(e))),
        };
        dir = next;
    }
    Ok(Some(StateDir {
        path,
        display,
        dir,
        created,
    }))
}

/// What a hostile repository may have planted in the state directory's place before the
/// server started: the state directory itself (unless the operator named the state root
/// explicitly) or one of [`crate::layout::STATE_SUBDIRS`] being a symlink or not a directory.
/// Each problem is one sentence naming the path and what to do; empty when all is well.
pub fn planted(state_dir: &Path, explicit_root: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let describe = |p: &Path, md: &std::fs::Metadata| -> Option<String> {
        if md.file_type().is_symlink() {
            let to = std::fs::read_link(p)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            Some(format!("{} is a symlink (to {to})", p.display()))
        } else if !md.is_dir() {
            Some(format!("{} is not a directory", p.display()))
        } else {
            None
        }
    };
    match std::fs::symlink_metadata(state_dir) {
        Err(_) => return problems,
        Ok(md) => {
            let symlink = md.file_type().is_symlink();
            if !(symlink && explicit_root)
                && let Some(what) = describe(state_dir, &md)
            {
                problems.push(format!(
                    "{what}: the server's state would be kept there, outside the workspace; \
                     remove it, or keep the state in another directory"
                ));
                return problems;
            }
        }
    }
    for sub in crate::layout::STATE_SUBDIRS {
        let p = state_dir.join(sub);
        if let Ok(md) = std::fs::symlink_metadata(&p)
            && let Some(what) = describe(&p, &md)
        {
            problems.push(format!(
                "{what}: state written there would leave the state directory; remove it"
            ));
        }
    }
    problems
}

impl StateDir {
    /// A pipeline target for file `name` in this directory. The directory handle is
    /// duplicated, so one `StateDir` can serve many writes. The content it replaces is not
    /// kept for history (no tool can list or restore these files).
    pub fn target(&self, name: &str) -> Result<Target> {
        let dir = self
            .dir
            .try_clone()
            .map_err(|e| Failure::io("open state directory", &self.path, e))?;
        let created_dirs = self
            .created
            .iter()
            .map(|d| d.try_clone())
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| Failure::io("open state directory", &self.path, e))?;
        let display = format!("{}/{name}", self.display);
        Ok(Target {
            abs_path: self.path.join(name),
            row_path: crate::journal::paths::RowPath::state(display.clone()),
            display,
            dir: dir.into(),
            name: OsString::from(name),
            created_dirs,
            via_symlink: false,
            keep_history: false,
        })
    }
}

/// A pipeline target for `state_dir/<subdir>/<name>`, creating the subdirectory (0700) when
/// missing. `subdir` and `name` are the server's own, already validated (no `/`, no `..`).
/// Used for checkpoints and handoff archives: saves a person may want back by hash, so
/// unlike chunks and the scratchpad ([`StateDir::target`]) their replaced content is kept.
pub fn target(state_dir: &Path, subdir: &str, name: &str) -> Result<Target> {
    match open_subdir(state_dir, &[subdir], 0o700, true)? {
        Some(dir) => dir.target(name).map(|t| Target {
            keep_history: true,
            ..t
        }),
        None => Err(Failure::Internal(format!(
            "state directory {subdir} could not be created"
        ))),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_unsynced_state_file_is_replaced_whole_owner_only_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let dir = fs::File::open(t.path()).unwrap();
        replace_unsynced(&dir, Path::new("r.json"), b"first", false).unwrap();
        replace_unsynced(&dir, Path::new("r.json"), b"second", true).unwrap();
        let abs = t.path().join("r.json");
        // An absolute path, from the working directory.
        replace_unsynced(rustix::fs::CWD, &t.path().join("m.json"), b"m", false).unwrap();
        assert_eq!(fs::read(&abs).unwrap(), b"second");
        assert_eq!(fs::read(t.path().join("m.json")).unwrap(), b"m");
        let mode = fs::metadata(&abs).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mut names: Vec<String> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["m.json", "r.json"]);
    }

    #[test]
    fn an_unsynced_state_file_that_cannot_be_placed_leaves_what_was_there() {
        let t = tempfile::tempdir().unwrap();
        let dir = fs::File::open(t.path()).unwrap();
        // A directory where the file belongs: the rename fails, the temp file goes.
        fs::create_dir(t.path().join("d.json")).unwrap();
        assert!(replace_unsynced(&dir, Path::new("d.json"), b"x", false).is_err());
        assert!(t.path().join("d.json").is_dir());
        // A symlink planted at the temp file's name is not followed.
        let outside = t.path().join("outside");
        fs::write(&outside, b"kept").unwrap();
        let tmp = format!(".f.json.tmp-{}", std::process::id());
        symlink(&outside, t.path().join(&tmp)).unwrap();
        assert!(replace_unsynced(&dir, Path::new("f.json"), b"x", false).is_err());
        assert_eq!(fs::read(&outside).unwrap(), b"kept");
        assert!(!t.path().join("f.json").exists());
        let err = replace_unsynced(&dir, Path::new(".."), b"x", false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    /// A before-hook's leftovers older than the age go; younger ones, and files that are
    /// not the hooks', stay.
    #[test]
    fn hook_leftovers_older_than_the_age_are_swept() {
        use std::time::{Duration, SystemTime};
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join(".resilient_write");
        let hooks = state.join(crate::layout::HOOKS_DIR);
        std::fs::create_dir_all(&hooks).unwrap();
        let day = Duration::from_secs(86400);
        let make = |name: &str, age: Duration| {
            let p = hooks.join(name);
            std::fs::write(&p, b"x").unwrap();
            std::fs::File::open(&p)
                .unwrap()
                .set_modified(SystemTime::now() - age)
                .unwrap();
            p
        };
        let old = [
            make("aa.json", 2 * day),
            make("aa.json.pre", 2 * day),
            make(".bb.json.tmp-123", 2 * day),
        ];
        let young = [
            make("cc.json", Duration::ZERO),
            make("cc.json.pre", Duration::ZERO),
        ];
        let other = make("README", 2 * day);
        assert_eq!(sweep_hook_leftovers(&state, day), 3);
        assert!(old.iter().all(|p| !p.exists()));
        assert!(young.iter().all(|p| p.exists()));
        assert!(other.exists());
        assert_eq!(sweep_hook_leftovers(&t.path().join("none"), day), 0);
    }
    use super::*;
    use crate::layout::STATE_DIR_NAME;
    use std::fs;
    use std::os::unix::fs::{PermissionsExt, symlink};

    /// A temp dir with an empty `.resilient_write/` and a directory `outside` next to it.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join(STATE_DIR_NAME);
        let outside = t.path().join("outside");
        fs::create_dir(&state).unwrap();
        fs::create_dir(&outside).unwrap();
        (t, state, outside)
    }

    fn refused(r: Result<Option<StateDir>>) -> (String, String) {
        match r {
            Err(Failure::InvalidPath { path, reason }) => (path, reason),
            Err(e) => panic!("refused with the wrong error: {e:?}"),
            Ok(Some(d)) => panic!("opened {}", d.path.display()),
            Ok(None) => panic!("reported missing instead of refused"),
        }
    }

    fn entries(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_symlink_planted_inside_the_state_dir_is_refused_with_invalid_path() {
        let (_t, state, outside) = layout();
        symlink(&outside, state.join("chunks")).unwrap();
        for create in [true, false] {
            let (path, reason) = refused(open_subdir(&state, &["chunks", "s1"], 0o700, create));
            assert_eq!(path, format!("{STATE_DIR_NAME}/chunks"));
            assert!(reason.contains("symlink"), "{reason}");
        }
        assert!(
            entries(&outside).is_empty(),
            "nothing created through the link"
        );
    }

    #[test]
    fn a_symlink_deeper_down_is_refused_too() {
        let (_t, state, outside) = layout();
        fs::create_dir(state.join("chunks")).unwrap();
        symlink(&outside, state.join("chunks").join("s1")).unwrap();
        let (path, _) = refused(open_subdir(&state, &["chunks", "s1"], 0o700, true));
        assert_eq!(path, format!("{STATE_DIR_NAME}/chunks/s1"));
        assert!(entries(&outside).is_empty());
    }

    #[test]
    fn a_state_write_target_behind_a_planted_symlink_is_refused() {
        let (_t, state, outside) = layout();
        symlink(&outside, state.join("checkpoints")).unwrap();
        match target(&state, "checkpoints", "c.json") {
            Err(Failure::InvalidPath { path, .. }) => {
                assert_eq!(path, format!("{STATE_DIR_NAME}/checkpoints"))
            }
            Err(e) => panic!("wrong error: {e:?}"),
            Ok(t) => panic!("a target through the symlink: {}", t.abs_path.display()),
        }
    }

    #[test]
    fn a_file_where_a_state_directory_belongs_is_refused() {
        let (_t, state, _) = layout();
        fs::write(state.join("scratch"), b"not a directory").unwrap();
        let (path, _) = refused(open_subdir(&state, &["scratch"], 0o700, true));
        assert_eq!(path, format!("{STATE_DIR_NAME}/scratch"));
    }

    #[test]
    fn a_missing_subdirectory_is_created_with_the_mode_and_reported_for_fsync() {
        let (_t, state, _) = layout();
        let d = open_subdir(&state, &["scratch", "a"], 0o700, true)
            .unwrap()
            .expect("created");
        assert_eq!(d.path, state.join("scratch").join("a"));
        assert_eq!(d.display, format!("{STATE_DIR_NAME}/scratch/a"));
        // The existing ancestor that got the first new entry, then each new directory.
        assert_eq!(d.created.len(), 3);
        for p in [state.join("scratch"), state.join("scratch").join("a")] {
            let meta = fs::symlink_metadata(&p).unwrap();
            assert!(meta.is_dir());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{}", p.display());
        }
        let st = rustix::fs::fstat(&d.dir).unwrap();
        let on_disk = fs::metadata(&d.path).unwrap();
        assert_eq!(
            st.st_ino as u64,
            std::os::unix::fs::MetadataExt::ino(&on_disk)
        );
    }

    #[test]
    fn an_existing_subdirectory_is_opened_and_nothing_reported_created() {
        let (_t, state, _) = layout();
        fs::create_dir_all(state.join("chunks").join("s1")).unwrap();
        for create in [true, false] {
            let d = open_subdir(&state, &["chunks", "s1"], 0o700, create)
                .unwrap()
                .expect("exists");
            assert_eq!(d.path, state.join("chunks").join("s1"));
            assert!(d.created.is_empty());
        }
    }

    #[test]
    fn a_missing_directory_without_create_is_none_and_nothing_is_created() {
        let (t, state, _) = layout();
        assert!(
            open_subdir(&state, &["chunks"], 0o700, false)
                .unwrap()
                .is_none()
        );
        assert!(entries(&state).is_empty());
        let absent = t.path().join("absent").join(STATE_DIR_NAME);
        assert!(
            open_subdir(&absent, &["chunks"], 0o700, false)
                .unwrap()
                .is_none()
        );
        assert!(!absent.exists());
    }

    #[test]
    fn a_missing_state_directory_is_created_when_create_is_set() {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join(STATE_DIR_NAME);
        let d = open_subdir(&state, &["scratch"], 0o700, true)
            .unwrap()
            .expect("created");
        assert!(state.join("scratch").is_dir());
        assert_eq!(d.created.len(), 2);
    }

    #[test]
    fn targets_name_the_file_in_the_opened_directory() {
        let (_t, state, _) = layout();
        let t = target(&state, "checkpoints", "c.json").unwrap();
        assert_eq!(t.abs_path, state.join("checkpoints").join("c.json"));
        assert_eq!(t.display, format!("{STATE_DIR_NAME}/checkpoints/c.json"));
        assert_eq!(t.name, OsString::from("c.json"));
        assert!(t.keep_history, "checkpoints keep replaced content");
        assert!(!t.via_symlink);
        assert_eq!(t.created_dirs.len(), 2);
        // The handle is the directory itself: a file made through it lands there.
        let f = rustix::fs::openat(
            &t.dir,
            "probe",
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .unwrap();
        drop(f);
        assert!(state.join("checkpoints").join("probe").is_file());

        let d = open_subdir(&state, &["scratch"], 0o700, true)
            .unwrap()
            .unwrap();
        let a = d.target("a").unwrap();
        let b = d.target("b").unwrap();
        assert!(!a.keep_history, "scratch and chunks keep no history");
        assert_eq!(b.display, format!("{STATE_DIR_NAME}/scratch/b"));
        assert_eq!(a.created_dirs.len(), d.created.len());
    }
}
