//! Temp files left by crashed writers: recognised by [`TEMP_MARKER`] and the writer pid in
//! their name, and listed (`doctor`) or removed (at start) once that process is gone.

use super::TEMP_MARKER;
use crate::util::sys::process_alive;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Directories the sweep never descends into.
const SWEEP_SKIP: &[&str] = &[".git", "node_modules", ".hg", ".svn"];

/// Remove temp files left by crashed writers beneath `root`: names containing
/// [`TEMP_MARKER`] whose writer process is gone. Visits at most `max_entries` entries.
/// Returns the paths removed.
pub fn sweep_temp_files(root: &Path, max_entries: usize) -> Vec<PathBuf> {
    scan_temp_files(root, max_entries, true)
}

/// Remove temp files left by crashed writers in `dir` itself (not below it): the quick
/// sweep of the directories a crash most likely left them in, run before the first call.
pub fn sweep_dir_temp_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| temp_owner_pid(e.file_name().as_bytes()).is_some_and(|pid| !process_alive(pid)))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .map(|e| e.path())
        .collect()
}

/// The temp files beneath `root` whose writer process is gone, as [`sweep_temp_files`]
/// would remove them, without removing anything (`doctor`).
pub fn stale_temp_files(root: &Path, max_entries: usize) -> Vec<PathBuf> {
    scan_temp_files(root, max_entries, false)
}

fn scan_temp_files(root: &Path, max_entries: usize, remove: bool) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return removed;
            }
            let name = entry.file_name();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if !SWEEP_SKIP.iter().any(|s| name.as_bytes() == s.as_bytes()) {
                    stack.push(entry.path());
                }
                continue;
            }
            if !ft.is_file() {
                continue;
            }
            if let Some(pid) = temp_owner_pid(name.as_bytes())
                && !process_alive(pid)
                && (!remove || std::fs::remove_file(entry.path()).is_ok())
            {
                removed.push(entry.path());
            }
        }
    }
    removed
}

/// The writer pid encoded in a temp file name, if `name` is one of ours.
pub fn temp_owner_pid(name: &[u8]) -> Option<i32> {
    let marker = TEMP_MARKER.as_bytes();
    let pos = name.windows(marker.len()).rposition(|w| w == marker)?;
    if name.first() != Some(&b'.') {
        return None;
    }
    let rest = std::str::from_utf8(&name[pos + marker.len()..]).ok()?;
    let mut parts = rest.split('-');
    let pid: i32 = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    let tail = parts.next()?;
    (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(pid)
}
