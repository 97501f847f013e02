//! Reading a workspace file for an agent (the `read` and `stat` tools): its content (or a range
//! of its lines) with the SHA-256 of the whole file, which is what `expected_prev_sha256`
//! compares against, so an agent can guard its next edit without a second server.
//!
//! The path resolves beneath a workspace root like a write's ([`Workspaces::resolve`]), and
//! the file is opened relative to its parent's directory handle without following a final
//! symlink, so a read can no more escape the workspace than a write can. The file is streamed
//! once: every byte is hashed and its lines counted, and only the requested lines are kept
//! (at most `max_bytes` of them), so reading ten lines of a huge file costs no memory.

use crate::envelope::{Failure, Result};
use crate::history;
use crate::store::Store;
use crate::util::sys::errno_io;
use crate::workspace::{Target, Workspaces};
use crate::write::intent::missing;
use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read};

/// Which lines to return: 1-based, inclusive; `None` means from the first / to the last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineRange {
    pub start: Option<u64>,
    pub end: Option<u64>,
}

/// What [`read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// Workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    /// SHA-256 of the whole file (even when `content` is a slice).
    pub sha256: String,
    /// Size of the whole file in bytes.
    pub bytes: u64,
    /// Lines in the whole file (a last line without a newline counts).
    pub lines: u64,
    /// The requested lines, raw bytes, newlines included.
    pub content: Vec<u8>,
    /// Set when `content` is not the whole file: the first and last line it holds.
    pub slice: Option<(u64, u64)>,
}

/// What [`stat`] found (also the `stat` tool's result, beside `ok`).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct FileStat {
    pub path: String,
    pub abs_path: String,
    /// SHA-256 of the content: pass it as expected_prev_sha256.
    pub sha256: String,
    pub bytes: u64,
    pub lines: u64,
    /// Last modification (RFC 3339, UTC).
    pub mtime: String,
    /// Journaled versions of the file, the current one included when the journal wrote it
    /// (0: history holds none).
    pub history_versions: u64,
    /// Earlier versions that restore can still put back.
    pub history_restorable: u64,
}

/// Read `user_path` (relative to the workspace or absolute, beneath a root), returning the
/// lines `range` asks for. More than `max_bytes` of content is `TooLarge` (ask for fewer
/// lines); a missing file is `TargetMissing`; a line range that starts past the end is
/// `InvalidArguments`.
pub fn read(store: &Store, user_path: &str, range: LineRange, max_bytes: u64) -> Result<FileRead> {
    let start = range.start.unwrap_or(1);
    let end = range.end.unwrap_or(u64::MAX);
    if start == 0 {
        return Err(bad_range(
            "start_line must be at least 1 (lines are 1-based)".into(),
        ));
    }
    if end < start {
        return Err(bad_range(format!(
            "end_line {end} is before start_line {start}"
        )));
    }
    let workspaces = store.workspaces();
    let target = resolve(&workspaces, user_path)?;
    let (file, _) = open_regular(&target)?;
    let scan = scan(file, start, end, max_bytes).map_err(|e| Failure::io("read", user_path, e))?;
    if scan.wanted > max_bytes {
        let what = if range == LineRange::default() {
            format!(
                "{user_path} ({} lines; ask for fewer with start_line/end_line)",
                scan.lines
            )
        } else {
            format!("lines {start}..={} of {user_path}", end.min(scan.lines))
        };
        return Err(Failure::TooLarge {
            what,
            bytes: scan.wanted,
            limit: max_bytes,
        });
    }
    if start > scan.lines.max(1) {
        return Err(bad_range(format!(
            "start_line {start} is past the end of {user_path} ({} lines)",
            scan.lines
        )));
    }
    let last = end.min(scan.lines);
    let slice = (start > 1 || last < scan.lines).then_some((start, last));
    Ok(FileRead {
        path: target.row_path.path,
        abs_path: target.abs_path.display().to_string(),
        sha256: scan.sha256,
        bytes: scan.bytes,
        lines: scan.lines,
        content: scan.kept,
        slice,
    })
}

/// The hash, size, line count and mtime of `user_path`, and how many versions of it history
/// holds. A missing file is `TargetMissing`.
pub fn stat(store: &Store, user_path: &str) -> Result<FileStat> {
    let workspaces = store.workspaces();
    let target = resolve(&workspaces, user_path)?;
    let (file, st) = open_regular(&target)?;
    // An empty range: hash and count, keep nothing.
    let scan = scan(file, 1, 0, 0).map_err(|e| Failure::io("read", user_path, e))?;
    let mtime = chrono::DateTime::from_timestamp(st.st_mtime, st.st_mtime_nsec as u32)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    let journal = store.pipeline().journal();
    let versions = history::versions(
        journal,
        store.pipeline().objects(),
        &workspaces.journal_paths(),
        &target.abs_path,
        Some(&scan.sha256),
        usize::MAX,
    )
    .map_err(|e| Failure::io("read journal", journal.path(), e))?;
    let restorable = versions
        .iter()
        .filter(|v| v.stored && v.sha256 != scan.sha256)
        .count();
    Ok(FileStat {
        path: target.row_path.path,
        abs_path: target.abs_path.display().to_string(),
        sha256: scan.sha256,
        bytes: scan.bytes,
        lines: scan.lines,
        mtime,
        history_versions: versions.len() as u64,
        history_restorable: restorable as u64,
    })
}

fn bad_range(message: String) -> Failure {
    Failure::InvalidArguments { message }
}

/// Resolve beneath a root; a missing parent directory is a missing file.
fn resolve(workspaces: &Workspaces, user_path: &str) -> Result<Target> {
    match workspaces.resolve(user_path, false) {
        Err(Failure::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Err(missing(user_path))
        }
        other => other,
    }
}

/// Open the target read-only without following a final symlink (resolution already followed
/// the ones that stay beneath the root); anything but a regular file is refused.
fn open_regular(target: &Target) -> Result<(File, rustix::fs::Stat)> {
    let shown = target.display.as_str();
    let fd = rustix::fs::openat(
        &target.dir,
        &target.name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::NOENT {
            missing(shown)
        } else if e == rustix::io::Errno::LOOP {
            Failure::OutsideWorkspace {
                path: shown.into(),
                reason: "the file became a symlink after it was resolved".into(),
            }
        } else {
            Failure::io("open", shown, errno_io(e))
        }
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Failure::io("stat", shown, errno_io(e)))?;
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Ok((File::from(fd), st)),
        rustix::fs::FileType::Directory => Err(Failure::IsDirectory { path: shown.into() }),
        _ => Err(Failure::InvalidPath {
            path: shown.into(),
            reason: "not a regular file (a device, pipe or socket)".into(),
        }),
    }
}

/// One pass over a file.
struct Scan {
    sha256: String,
    bytes: u64,
    lines: u64,
    kept: Vec<u8>,
    /// Bytes of the requested lines (more than `kept` holds when over the limit).
    wanted: u64,
}

/// Hash every byte, count lines, keep lines `start..=end` while they fit in `max_bytes` (past
/// that, only count their bytes).
fn scan(mut file: File, start: u64, end: u64, max_bytes: u64) -> io::Result<Scan> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept = Vec::new();
    let mut bytes = 0u64;
    let mut wanted = 0u64;
    let mut newlines = 0u64;
    let mut last = b'\n';
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        bytes += n as u64;
        last = chunk[n - 1];
        let mut pos = 0;
        while pos < n {
            let rest = &chunk[pos..];
            let nl = memchr::memchr(b'\n', rest);
            let seg = nl.map_or(rest.len(), |i| i + 1);
            let line = newlines + 1;
            if (start..=end).contains(&line) {
                wanted += seg as u64;
                if wanted <= max_bytes {
                    kept.extend_from_slice(&rest[..seg]);
                }
            }
            if nl.is_some() {
                newlines += 1;
            }
            pos += seg;
        }
    }
    let lines = newlines + u64::from(last != b'\n');
    Ok(Scan {
        sha256: hex::encode(hasher.finalize()),
        bytes,
        lines,
        kept,
        wanted,
    })
}
