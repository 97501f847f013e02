//! A tmpfs mounted by a test (root only), unmounted when dropped.

use std::path::PathBuf;
use std::process::Command;

/// A tmpfs mounted for one test, unmounted when dropped (also when the test panics). Declare it
/// before any server that uses it, so the servers are dropped (killed) first.
pub struct Tmpfs {
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs of `size` (e.g. "2m"); the error says why it could not be done.
    pub fn mount(size: &str) -> Result<Tmpfs, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("not running as root, cannot mount a tmpfs".into());
        }
        let parent = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        let dir = parent.path().join("mnt");
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir: {e}"))?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let dir = dir
            .canonicalize()
            .map_err(|e| format!("canonicalize: {e}"))?;
        Ok(Tmpfs {
            dir,
            _parent: parent,
        })
    }
}

impl Tmpfs {
    /// Remount read-only (writes then fail with EROFS).
    pub fn remount_ro(&self) -> Result<(), String> {
        let out = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "mount -o remount,ro failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Mount a tmpfs of `$size` for this test, or return from it: a missing prerequisite skips
/// the test with a printed reason, and fails it under CI.
#[macro_export]
macro_rules! tmpfs_or_skip {
    ($size:expr) => {
        match $crate::common::tmpfs::Tmpfs::mount($size) {
            Ok(t) => t,
            Err(why) => {
                $crate::common::missing_prerequisite(&why);
                return;
            }
        }
    };
}

/// Fill the filesystem holding `dir` with a file `filler.bin` until ENOSPC, down to the last
/// byte a write takes; returns its path.
pub fn fill(dir: &std::path::Path) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler.bin");
    let mut f = std::fs::File::create(&filler).expect("create filler");
    let chunk = vec![0x5au8; 4096];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    for n in [2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1] {
        let _ = f.write(&chunk[..n]);
    }
    filler
}
