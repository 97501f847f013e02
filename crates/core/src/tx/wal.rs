//! The on-disk write-ahead log of a transaction: the directory layout under
//! `.resilient_write/wal/<tx_id>/` (`manifest.json`, `staged.bin`, `ops.jsonl`, `COMMIT`),
//! reading and appending the ops log (including `op-NNNN` files and operations kept in the
//! manifest by earlier versions), the commit record, the per-transaction lock and durable
//! writes and removal. See the parent module doc for the guarantees.

use crate::store::Store;
use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Directory of the write-ahead log inside the state directory.
pub const WAL_DIR: &str = "wal";
pub(super) const MANIFEST: &str = "manifest.json";
pub(super) const COMMIT: &str = "COMMIT";
/// Staged contents, appended (see the module doc).
pub(super) const STAGED_DATA: &str = "staged.bin";
/// One staged operation per line, appended.
pub(super) const OPS_LOG: &str = "ops.jsonl";

/// One staged file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StagedOp {
    /// The path as the agent gave it.
    pub path: String,
    pub abs_path: String,
    /// Journal mode: create, overwrite, append, replace, restore, or delete (a removal:
    /// `sha256` empty, nothing staged).
    pub mode: String,
    /// Hash of the target when first staged in this transaction (`None`: did not exist).
    pub base_sha256: Option<String>,
    /// Hash and size of the staged content.
    pub sha256: String,
    pub bytes: u64,
    /// File name of the staged content in the WAL directory.
    pub staged: String,
    /// Where the content starts in `staged` (`bytes` long); `None`: it is the whole file
    /// (transactions staged by earlier versions, one file per operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacements: Option<usize>,
}

/// The transaction: `manifest.json` as `tx_begin` wrote it, with `ops` completed from
/// `ops.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub tx_id: String,
    #[serde(default)]
    pub label: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub timeout_seconds: u64,
    pub owner_pid: u32,
    pub caller: String,
    /// Staged files. Written as `[]` by `tx_begin`; earlier versions rewrote the manifest per
    /// staging call and kept them here, which is still read.
    #[serde(default)]
    pub ops: Vec<StagedOp>,
    /// Counter for staged file names (earlier versions).
    #[serde(default)]
    pub next_op: u64,
}

/// The commit record: its durable presence is the commit point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitRecord {
    pub tx_id: String,
    pub committed_at: String,
    pub caller: String,
    pub files: Vec<StagedOp>,
}

pub(super) fn wal_root(store: &Store) -> PathBuf {
    store.state_dir().join(WAL_DIR)
}

/// Transaction ids: `tx-` and a time-ordered UUID, so they sort by start time.
pub(super) fn valid_tx_id(id: &str) -> bool {
    id.len() == 35 && id.starts_with("tx-") && id[3..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Write `bytes` to `dir/name` durably: temp file, fsync, rename, fsync `dir`.
fn write_durable(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_durable_with(dir, name, bytes, || Ok(()))
}

/// Like [`write_durable`]; `before_rename` runs after the temp file is fsynced and before it
/// is renamed into place, and the one directory fsync that follows covers what it created.
pub(super) fn write_durable_with(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    before_rename()?;
    fs::rename(&tmp, dir.join(name))?;
    File::open(dir)?.sync_all()
}

fn open_append(path: &Path) -> io::Result<File> {
    crate::util::statefile::open_append(path, 0o600)
}

/// Append `bytes` to `path` whole or not at all: a failed write (ENOSPC) is cut off, so
/// the next append starts on a clean boundary. Returns the offset the bytes start at. The
/// caller holds the transaction's lock, so nothing else appends meanwhile.
pub(super) fn append_whole(path: &Path, bytes: &[u8]) -> io::Result<u64> {
    let mut f = open_append(path)?;
    let offset = f.metadata()?.len();
    if let Err(e) = f.write_all(bytes) {
        let _ = f.set_len(offset);
        return Err(e);
    }
    Ok(offset)
}

/// The staged operations recorded in `ops.jsonl`, in order. A line cut short by a failed
/// append is not possible (see [`append_whole`]); any unreadable line is an error.
fn read_ops(dir: &Path) -> io::Result<Vec<StagedOp>> {
    let text = match crate::util::statefile::read(&dir.join(OPS_LOG)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        })
        .collect()
}

/// The content of a staged operation, read from the WAL.
pub(super) fn read_staged(dir: &Path, op: &StagedOp) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let path = dir.join(&op.staged);
    match op.offset {
        None => crate::util::statefile::read(&path),
        Some(offset) => {
            let len = usize::try_from(op.bytes)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "staged size"))?;
            let mut buf = vec![0u8; len];
            crate::util::statefile::open_read(&path)?.read_exact_at(&mut buf, offset)?;
            Ok(buf)
        }
    }
}

/// Make what staging appended durable (the commit record will refer to it).
pub(super) fn sync_staged(dir: &Path) -> io::Result<()> {
    match crate::util::statefile::open_read(&dir.join(STAGED_DATA)) {
        Ok(f) => f.sync_data(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

pub(super) fn lock_dir(dir: &Path, blocking: bool) -> io::Result<Option<File>> {
    let f = File::open(dir)?;
    let op = if blocking {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    match rustix::fs::flock(&f, op) {
        Ok(()) => Ok(Some(f)),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The manifest with every staged operation (a later operation on a file supersedes the
/// earlier one in place).
pub(super) fn read_manifest(dir: &Path) -> io::Result<Manifest> {
    let text = crate::util::statefile::read(&dir.join(MANIFEST))?;
    let mut m: Manifest =
        serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    for op in read_ops(dir)? {
        match m.ops.iter().position(|o| o.abs_path == op.abs_path) {
            Some(i) => m.ops[i] = op,
            None => m.ops.push(op),
        }
    }
    Ok(m)
}

pub(super) fn write_manifest(dir: &Path, m: &Manifest) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(m).map_err(io::Error::other)?;
    write_durable(dir, MANIFEST, &bytes)
}

pub(super) fn expired(m: &Manifest) -> bool {
    chrono::DateTime::parse_from_rfc3339(&m.expires_at)
        .map(|t| t < chrono::Utc::now())
        .unwrap_or(true)
}

/// Remove a transaction's WAL directory durably.
pub(super) fn retire(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(abs_path: &str, content: &[u8], staged: &str, offset: Option<u64>) -> StagedOp {
        StagedOp {
            path: abs_path.trim_start_matches('/').into(),
            abs_path: abs_path.into(),
            mode: "create".into(),
            base_sha256: None,
            sha256: crate::hash::sha256_hex(content),
            bytes: content.len() as u64,
            staged: staged.into(),
            offset,
            tool: "tx_write".into(),
            replacements: None,
        }
    }

    fn manifest(ops: Vec<StagedOp>) -> Manifest {
        Manifest {
            tx_id: format!("tx-{}", "0".repeat(32)),
            label: None,
            created_at: "2026-01-01T00:00:00.000000Z".into(),
            expires_at: "2999-01-01T00:00:00.000000Z".into(),
            timeout_seconds: 3600,
            owner_pid: 1,
            caller: "test".into(),
            next_op: ops.len() as u64 + 1,
            ops,
        }
    }

    fn log_line(op: &StagedOp) -> Vec<u8> {
        let mut line = serde_json::to_vec(op).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn a_legacy_op_file_is_read_whole_and_an_appended_op_at_its_offset() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("op-0001.bin"), b"legacy content").unwrap();
        fs::write(t.path().join(STAGED_DATA), b"firstsecond").unwrap();
        let legacy = op("/w/old.txt", b"legacy content", "op-0001.bin", None);
        let appended = op("/w/new.txt", b"second", STAGED_DATA, Some(5));
        assert_eq!(read_staged(t.path(), &legacy).unwrap(), b"legacy content");
        assert_eq!(read_staged(t.path(), &appended).unwrap(), b"second");
    }

    #[test]
    fn legacy_ops_in_the_manifest_are_kept_and_the_ops_log_supersedes_them_in_place() {
        let t = tempfile::tempdir().unwrap();
        let legacy_a = op("/w/a.txt", b"a1", "op-0001.bin", None);
        let legacy_b = op("/w/b.txt", b"b1", "op-0002.bin", None);
        write_manifest(t.path(), &manifest(vec![legacy_a, legacy_b.clone()])).unwrap();
        let later_a = op("/w/a.txt", b"a2", STAGED_DATA, Some(0));
        let new_c = op("/w/c.txt", b"c", STAGED_DATA, Some(2));
        let mut log = log_line(&later_a);
        log.extend(log_line(&new_c));
        fs::write(t.path().join(OPS_LOG), log).unwrap();
        let m = read_manifest(t.path()).unwrap();
        assert_eq!(m.ops, [later_a, legacy_b, new_c]);
    }

    #[test]
    fn an_ops_log_line_for_a_file_already_logged_supersedes_the_earlier_one() {
        let t = tempfile::tempdir().unwrap();
        write_manifest(t.path(), &manifest(Vec::new())).unwrap();
        let first = op("/w/a.txt", b"one", STAGED_DATA, Some(0));
        let other = op("/w/b.txt", b"b", STAGED_DATA, Some(3));
        let second = op("/w/a.txt", b"two", STAGED_DATA, Some(4));
        for o in [&first, &other, &second] {
            append_whole(&t.path().join(OPS_LOG), &log_line(o)).unwrap();
        }
        assert_eq!(read_ops(t.path()).unwrap().len(), 3);
        assert_eq!(read_manifest(t.path()).unwrap().ops, [second, other]);
    }

    #[test]
    fn a_missing_ops_log_is_no_staged_operation() {
        let t = tempfile::tempdir().unwrap();
        assert!(read_ops(t.path()).unwrap().is_empty());
    }

    /// `read_ops` is strict: a torn last line (a crash in the middle of an append) is an
    /// error, never a staged operation silently dropped. Recovery tolerates it by rolling
    /// the uncommitted transaction back (see the tests in `recover.rs`).
    #[test]
    fn a_torn_last_line_of_the_ops_log_is_reported_not_silently_dropped() {
        let t = tempfile::tempdir().unwrap();
        write_manifest(t.path(), &manifest(Vec::new())).unwrap();
        let whole = op("/w/a.txt", b"a", STAGED_DATA, Some(0));
        let mut log = log_line(&whole);
        let torn = log_line(&op("/w/b.txt", b"b", STAGED_DATA, Some(1)));
        log.extend_from_slice(&torn[..torn.len() / 2]);
        fs::write(t.path().join(OPS_LOG), log).unwrap();
        let e = read_ops(t.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let e = read_manifest(t.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn append_whole_returns_the_offset_each_append_starts_at() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(STAGED_DATA);
        assert_eq!(append_whole(&p, b"abc").unwrap(), 0);
        assert_eq!(append_whole(&p, b"").unwrap(), 3);
        assert_eq!(append_whole(&p, b"de").unwrap(), 3);
        assert_eq!(fs::read(&p).unwrap(), b"abcde");
    }

    #[test]
    fn the_commit_record_is_written_durably_and_reads_back() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join(STAGED_DATA), b"x").unwrap();
        let rec = CommitRecord {
            tx_id: format!("tx-{}", "0".repeat(32)),
            committed_at: "2026-01-01T00:00:00Z".into(),
            caller: "test".into(),
            files: vec![op("/w/x.txt", b"x", STAGED_DATA, Some(0))],
        };
        let bytes = serde_json::to_vec_pretty(&rec).unwrap();
        let mut synced = false;
        write_durable_with(t.path(), COMMIT, &bytes, || {
            synced = true;
            sync_staged(t.path())
        })
        .unwrap();
        assert!(synced);
        let back: CommitRecord =
            serde_json::from_slice(&fs::read(t.path().join(COMMIT)).unwrap()).unwrap();
        assert_eq!(back.files, rec.files);
        let names: Vec<String> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.contains(".tmp-")),
            "no temp file left: {names:?}"
        );
    }

    #[test]
    fn a_transaction_id_is_tx_and_32_hex_digits() {
        assert!(valid_tx_id(&format!("tx-{}", "0a".repeat(16))));
        assert!(!valid_tx_id(&format!("tx-{}", "0".repeat(31))));
        assert!(!valid_tx_id(&format!("tx-{}g", "0".repeat(31))));
        assert!(!valid_tx_id(&format!("tq-{}", "0".repeat(32))));
        assert!(!valid_tx_id("../wal"));
    }

    #[test]
    fn retire_removes_the_directory_and_a_missing_one_is_fine() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("tx");
        fs::create_dir(&d).unwrap();
        fs::write(d.join(MANIFEST), b"{}").unwrap();
        retire(&d).unwrap();
        assert!(!d.exists());
        retire(&d).unwrap();
    }
}
