//! L2: resumable chunked composition. A session lives in
//! `.resilient_write/chunks/<session>/` as `part-NNN.txt` files (NNN zero-padded to at least
//! three digits, so the Python original reads sessions of up to 999 chunks; longer indices
//! sort numerically) plus `manifest.json` {session, created_at, updated_at, total_expected,
//! chunks: {index: {sha256, bytes}}}.
//!
//! Guarantees:
//! - Every chunk, manifest and composed file is written through the write pipeline
//!   ([`crate::pipeline::Pipeline`]): atomic, verified, journaled (chunk rows carry `session`).
//! - Chunk files are the source of truth; the manifest is a cache. A missing or corrupt
//!   manifest is rebuilt from the files at the next write, and never blocks a read.
//! - Every operation on a session holds an inter-process `flock` on `<session>/.lock`
//!   (exclusive for writes, compose and reset; shared for status and preview), so two
//!   processes appending at once never get the same index and never lose a chunk. A lock
//!   file removed by a concurrent reset is detected and the session reopened.
//! - Compose and preview refuse a session with a gap (naming the missing indices), a count
//!   that disagrees with `total_expected`, foreign `part-*` files (a mixed session), or a chunk
//!   whose hash differs from the one recorded when it was written (edited by hand). A
//!   difference that the journal shows to be the chunk's latest journaled write, whose record
//!   was lost to a crash, is not an edit.
//! - Compose streams: each chunk is copied into the pipeline's temp file and hashed on the
//!   way, in constant memory whatever the session's size.

use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::pipeline::{Body, Caller, Decision, Existing, Outcome, Plan, read_existing};
use crate::progress::Progress;
use crate::state::{StateDir, open_subdir};
use crate::store::Store;
use crate::write::intent::{self, Applied, Order, Precondition, WriteMode};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

/// Directory of the sessions inside the state directory.
pub const CHUNKS_DIR: &str = "chunks";
/// The session's manifest file.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The session's lock file (ignored by the original, which lists `part-NNN.txt` only).
pub const LOCK_FILE: &str = ".lock";
/// Chunk records not yet folded into the manifest, one JSON line per chunk write (ignored by
/// the original, like the lock file).
pub const RECORDS_FILE: &str = ".records.jsonl";
/// The records log is folded into the manifest once it outgrows the manifest (so appends
/// cost O(1) amortised) or this many bytes, whichever is larger.
const FOLD_AT_BYTES: u64 = 4096;
/// Highest chunk index (and `total_expected`) accepted.
pub const MAX_INDEX: u64 = 100_000;

/// How many indices an error message lists before eliding the rest.
const LISTED: usize = 20;

/// File name of chunk `index`.
pub fn part_name(index: u64) -> String {
    format!("part-{index:03}.txt")
}

/// The index of a `part-NNN.txt` name (at least three digits), if it is one.
pub fn parse_part_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("part-")?.strip_suffix(".txt")?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a temp file of the original's atomic write (`part-NNN.txt.tmp.<hex>`),
/// left by a crash or still being written: the original ignores it, and so do we (it is not
/// a chunk, nor foreign to the session).
fn is_originals_temp(name: &str) -> bool {
    name.split_once(".tmp.").is_some_and(|(part, suffix)| {
        parse_part_name(part).is_some()
            && !suffix.is_empty()
            && suffix.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Display path of session `name`'s directory (`.resilient_write/chunks/<name>`).
pub fn session_display(name: &str) -> String {
    format!("{}/{CHUNKS_DIR}/{name}", crate::store::STATE_DIR_NAME)
}

/// Check a session name against `^[A-Za-z0-9_-]{1,64}$`.
pub fn validate_session(session: &str) -> Result<()> {
    let ok = !session.is_empty()
        && session.len() <= 64
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::ChunkArgument {
            session: session.chars().take(80).collect(),
            reason: "invalid_session_name",
            message: "session names match ^[A-Za-z0-9_-]{1,64}$".into(),
        })
    }
}

fn validate_index(session: &str, field: &str, index: u64) -> Result<()> {
    if (1..=MAX_INDEX).contains(&index) {
        Ok(())
    } else {
        Err(Failure::ChunkArgument {
            session: session.into(),
            reason: "index_out_of_range",
            message: format!("{field} must be between 1 and {MAX_INDEX}, got {index}"),
        })
    }
}

/// What the manifest records about one chunk when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub sha256: String,
    pub bytes: u64,
    /// Device, inode and change time (`dev:ino:sec.nsec`) of the chunk file when its hash
    /// was recorded. While they are unchanged (no write, rename or chmod can keep a ctime, and
    /// no process can set one), `chunk_status` trusts the hash without reading the file.
    /// Absent in the original's manifests, which ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<String>,
}

/// One line of the records log.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LogLine {
    index: u64,
    #[serde(flatten)]
    record: ChunkRecord,
    /// When the chunk was written (the manifest's `updated_at` lags until the next fold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<String>,
}

/// The manifest's fields a chunk write needs; the chunk records are skipped unparsed.
#[derive(Debug, Default, Deserialize)]
struct ManifestHead {
    #[serde(default)]
    total_expected: Option<u64>,
}

/// The manifest's head as found: `Ok(None)` missing, `Err` corrupt (the parse error).
type HeadState = std::result::Result<Option<ManifestHead>, String>;

/// The later of two RFC 3339 times (`b` when `a` is absent or either does not parse).
fn later(a: Option<String>, b: String) -> String {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match a {
        Some(a) if matches!((parse(&a), parse(&b)), (Some(x), Some(y)) if x > y) => a,
        _ => b,
    }
}

fn stamp_of(st: &rustix::fs::Stat) -> String {
    format!(
        "{}:{}:{}.{:09}",
        st.st_dev, st.st_ino, st.st_ctime, st.st_ctime_nsec
    )
}

/// `manifest.json`. Unknown keys are kept, so a manifest of another version round-trips.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub total_expected: Option<u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chunks: BTreeMap<u64, ChunkRecord>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The manifest as found on disk.
#[derive(Debug, Clone)]
pub enum ManifestState {
    Ok(Manifest),
    Missing,
    Corrupt(String),
}

impl ManifestState {
    pub fn label(&self) -> &'static str {
        match self {
            ManifestState::Ok(_) => "ok",
            ManifestState::Missing => "missing",
            ManifestState::Corrupt(_) => "corrupt",
        }
    }

    pub fn manifest(&self) -> Option<&Manifest> {
        match self {
            ManifestState::Ok(m) => Some(m),
            _ => None,
        }
    }
}

/// An open, locked session directory.
pub struct Session {
    pub name: String,
    pub dir: StateDir,
    lock: File,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.lock, FlockOperation::Unlock);
    }
}

/// The chunk files of a session.
#[derive(Debug, Default)]
pub struct Listing {
    /// index -> file name, in numeric order.
    pub parts: BTreeMap<u64, String>,
    /// `part-*` names that are not the canonical name of their index (`part-0001.txt`,
    /// `part-1.txt`): left by another tool, they make the session mixed.
    pub foreign: Vec<String>,
}

impl Listing {
    pub fn indices(&self) -> Vec<u64> {
        self.parts.keys().copied().collect()
    }

    pub fn highest(&self) -> u64 {
        self.parts.keys().next_back().copied().unwrap_or(0)
    }

    /// Indices missing from `1..=max(highest, total_expected)`.
    pub fn missing(&self, total_expected: Option<u64>) -> Vec<u64> {
        let upto = self.highest().max(total_expected.unwrap_or(0));
        (1..=upto).filter(|i| !self.parts.contains_key(i)).collect()
    }
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

fn list_of(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(LISTED).map(u64::to_string).collect();
    if v.len() > LISTED {
        s.push(format!("... ({} in all)", v.len()));
    }
    s.join(", ")
}

fn session_failure(
    session: &str,
    reason: &'static str,
    message: String,
    details: Value,
) -> Failure {
    let details = match details {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Failure::ChunkSession {
        session: session.into(),
        reason,
        message,
        details,
    }
}

/// Open (and with `create`, create) session `name` and lock it, exclusively or shared.
/// `Ok(None)` when the session does not exist and `create` is not set.
pub fn open_session(
    svc: &Store,
    name: &str,
    create: bool,
    exclusive: bool,
) -> Result<Option<Session>> {
    validate_session(name)?;
    // A reset removes the lock file while a waiter may be blocked on it: after locking,
    // check that the file locked is still the session's lock file, else start over.
    for _ in 0..1000 {
        let Some(dir) = open_subdir(svc.state_dir(), &[CHUNKS_DIR, name], 0o777, create)? else {
            return Ok(None);
        };
        let lock_path = dir.path.join(LOCK_FILE);
        let fd = match rustix::fs::openat(
            &dir.dir,
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => fd,
            // The directory was removed between opening it and creating the lock file.
            Err(e) if e == rustix::io::Errno::NOENT => continue,
            Err(e) => return Err(Failure::io("open session lock", &lock_path, errno(e))),
        };
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        rustix::fs::flock(&fd, op)
            .map_err(|e| Failure::io("lock session", &lock_path, errno(e)))?;
        let lock = File::from(fd);
        let held =
            rustix::fs::fstat(&lock).map_err(|e| Failure::io("stat", &lock_path, errno(e)))?;
        let linked = rustix::fs::statat(&dir.dir, LOCK_FILE, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| st.st_ino == held.st_ino && st.st_dev == held.st_dev)
            .unwrap_or(false);
        let dir_alive = rustix::fs::fstat(&dir.dir)
            .map(|st| st.st_nlink > 0)
            .unwrap_or(false);
        if linked && dir_alive {
            return Ok(Some(Session {
                name: name.into(),
                dir,
                lock,
            }));
        }
    }
    Err(Failure::Internal(format!(
        "session {name}: its lock file kept disappearing"
    )))
}

impl Session {
    /// The chunk files on disk.
    pub fn list(&self) -> Result<Listing> {
        let mut listing = Listing::default();
        let dir = rustix::fs::Dir::read_from(&self.dir.dir)
            .map_err(|e| Failure::io("list session", &self.dir.path, errno(e)))?;
        for entry in dir {
            let entry = entry.map_err(|e| Failure::io("list session", &self.dir.path, errno(e)))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if !name.starts_with("part-") || is_originals_temp(name) {
                continue;
            }
            match parse_part_name(name) {
                Some(i) if name == part_name(i) => {
                    listing.parts.insert(i, name.to_string());
                }
                _ => listing.foreign.push(name.to_string()),
            }
        }
        listing.foreign.sort();
        Ok(listing)
    }

    /// The manifest as found on disk.
    pub fn manifest(&self) -> Result<ManifestState> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(MANIFEST_FILE))
            .map_err(|e| Failure::io("read manifest", self.dir.path.join(MANIFEST_FILE), e))?;
        let Some(found) = found else {
            return Ok(ManifestState::Missing);
        };
        Ok(match serde_json::from_slice::<Manifest>(&found.bytes) {
            Ok(m) => ManifestState::Ok(m),
            Err(e) => ManifestState::Corrupt(e.to_string()),
        })
    }

    fn open_part(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.dir.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        Ok(File::from(fd))
    }

    /// SHA-256, size and stamp of a chunk file.
    pub fn hash_part(&self, name: &str) -> Result<ChunkRecord> {
        let path = self.dir.path.join(name);
        let f = self
            .open_part(name)
            .map_err(|e| Failure::io("read chunk", &path, e))?;
        let st = rustix::fs::fstat(&f).map_err(|e| Failure::io("stat chunk", &path, errno(e)))?;
        let (sha256, bytes) =
            crate::hash::sha256_reader(f).map_err(|e| Failure::io("read chunk", &path, e))?;
        Ok(ChunkRecord {
            sha256,
            bytes,
            stamp: Some(stamp_of(&st)),
        })
    }

    fn stat_part(&self, name: &str) -> Result<rustix::fs::Stat> {
        rustix::fs::statat(&self.dir.dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Failure::io("stat chunk", self.dir.path.join(name), errno(e)))
    }

    /// The manifest's head (`Ok(None)`: missing; `Err`: corrupt) and its size in bytes.
    fn manifest_head(&self) -> Result<(HeadState, u64)> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(MANIFEST_FILE))
            .map_err(|e| Failure::io("read manifest", self.dir.path.join(MANIFEST_FILE), e))?;
        Ok(match found {
            None => (Ok(None), 0),
            Some(f) => (
                serde_json::from_slice::<ManifestHead>(&f.bytes)
                    .map(Some)
                    .map_err(|e| e.to_string()),
                f.bytes.len() as u64,
            ),
        })
    }

    /// The records log, oldest first (a line torn by a crash is skipped), and its size.
    fn read_log(&self) -> Result<(Vec<LogLine>, u64)> {
        let found = read_existing(&self.dir.dir, std::ffi::OsStr::new(RECORDS_FILE))
            .map_err(|e| Failure::io("read chunk records", self.dir.path.join(RECORDS_FILE), e))?;
        let Some(found) = found else {
            return Ok((Vec::new(), 0));
        };
        let lines = found
            .bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<LogLine>(l).ok())
            .collect();
        Ok((lines, found.bytes.len() as u64))
    }

    /// The size of the records log (0: none), from one `stat`.
    fn log_size(&self) -> Result<u64> {
        match rustix::fs::statat(&self.dir.dir, RECORDS_FILE, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(st.st_size.max(0) as u64),
            Err(rustix::io::Errno::NOENT) => Ok(0),
            Err(e) => Err(Failure::io(
                "stat chunk records",
                self.dir.path.join(RECORDS_FILE),
                errno(e),
            )),
        }
    }

    fn open_log(&self, flags: OFlags) -> io::Result<File> {
        rustix::fs::openat(
            &self.dir.dir,
            RECORDS_FILE,
            flags | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map(File::from)
        .map_err(errno)
    }

    /// Append a record with one `write`. Not fsynced: the chunk itself is durable (it went
    /// through the pipeline) and the files are the truth; a record lost to a crash leaves the
    /// chunk unrecorded, as if written by another tool, and its journal row vouches for it.
    fn append_log(&self, index: u64, record: &ChunkRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(&LogLine {
            index,
            record: record.clone(),
            at: Some(crate::journal::now_rfc3339()),
        })
        .map_err(io::Error::other)?;
        line.push(b'\n');
        let mut f = self.open_log(OFlags::WRONLY | OFlags::APPEND)?;
        f.write_all(&line)
    }

    /// Every recorded chunk: the manifest's records, then the log's (newer) on top.
    fn records(&self, manifest: &ManifestState) -> Result<BTreeMap<u64, ChunkRecord>> {
        Ok(self.records_and_update(manifest)?.0)
    }

    /// [`Session::records`], and when the session was last written: the later of the
    /// manifest's `updated_at` and the records log's newest line.
    fn records_and_update(
        &self,
        manifest: &ManifestState,
    ) -> Result<(BTreeMap<u64, ChunkRecord>, Option<String>)> {
        let mut records = manifest
            .manifest()
            .map(|m| m.chunks.clone())
            .unwrap_or_default();
        let mut updated_at = manifest.manifest().and_then(|m| m.updated_at.clone());
        for line in self.read_log()?.0 {
            records.insert(line.index, line.record);
            if let Some(at) = line.at {
                updated_at = Some(later(updated_at, at));
            }
        }
        Ok((records, updated_at))
    }

    fn size_of(&self, name: &str) -> Result<u64> {
        self.stat_part(name).map(|st| st.st_size.max(0) as u64)
    }

    /// Display path of a file in the session (`.resilient_write/chunks/<s>/<name>`).
    pub fn display(&self, name: &str) -> String {
        format!("{}/{name}", self.dir.display)
    }
}

/// Whether the latest journaled write to the chunk at `abs_path` (or at its workspace-relative
/// `shown` path, as the original journals it) wrote `sha256`: a chunk whose hash differs from
/// its record but is what its own latest journaled write left lost only its record (a crash
/// between the two writes), not its integrity. An earlier write does not vouch: a chunk put
/// back by hand to a content it once had is still an edit.
fn journaled(svc: &Store, session: &Session, name: &str, sha256: &str) -> bool {
    journaled_in(
        svc.pipeline().journal(),
        &session.dir.path.join(name),
        &session.display(name),
        sha256,
    )
}

fn journaled_in(
    journal: &crate::journal::Journal,
    abs_path: &std::path::Path,
    shown: &str,
    sha256: &str,
) -> bool {
    let abs = abs_path.display().to_string();
    let paths = [abs.as_str(), shown];
    let needles: Vec<String> = paths
        .iter()
        .flat_map(|p| crate::journal::json_string_forms(p))
        .collect();
    journal
        .tail_containing(1, &needles, |row| {
            row.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| paths.contains(&p))
        })
        .ok()
        .and_then(|(rows, _)| rows.into_iter().next())
        .is_some_and(|row| row.get("sha256").and_then(Value::as_str) == Some(sha256))
}

/// A chunk whose content differs from what was recorded when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModifiedChunk {
    pub index: u64,
    pub recorded_sha256: String,
    pub actual_sha256: String,
}

fn modified_failure(session: &str, modified: &[ModifiedChunk]) -> Failure {
    let idx: Vec<u64> = modified.iter().map(|m| m.index).collect();
    session_failure(
        session,
        "chunk_modified",
        format!(
            "chunk(s) {} changed since they were written (edited outside resilient-write); \
             rewrite them with chunk_write, or chunk_reset and start again",
            list_of(&idx)
        ),
        json!({ "modified": modified, "have": idx }),
    )
}

/// Check a chunk's actual hash against its record.
fn check_record(
    svc: &Store,
    session: &Session,
    index: u64,
    name: &str,
    recorded: Option<&ChunkRecord>,
    actual: &str,
) -> Option<ModifiedChunk> {
    let rec = recorded?;
    if rec.sha256 == actual || journaled(svc, session, name, actual) {
        return None;
    }
    Some(ModifiedChunk {
        index,
        recorded_sha256: rec.sha256.clone(),
        actual_sha256: actual.to_string(),
    })
}

/// A chunk write's outcome.
#[derive(Debug, Clone)]
pub struct ChunkWritten {
    pub index: u64,
    pub chunk_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    pub total_expected: Option<u64>,
    pub warnings: Vec<String>,
}

/// A chunk write's journal fields (an idempotency key) and its replay check.
pub struct ChunkWriteOptions<'a> {
    /// Added to the chunk's journal row (with `total_expected` when it has any field).
    pub extra: BTreeMap<String, Value>,
    /// Run under the session lock before writing: the journal row of an earlier call this
    /// one repeats, to answer with instead of writing (so two retries racing each other
    /// still write once).
    pub replay: &'a dyn Fn() -> Result<Option<Map<String, Value>>>,
}

impl Default for ChunkWriteOptions<'_> {
    fn default() -> Self {
        ChunkWriteOptions {
            extra: BTreeMap::new(),
            replay: &|| Ok(None),
        }
    }
}

/// Write chunk `index` of `session` (or, with `None`, the chunk after the highest present:
/// an append), updating the manifest. Holds the session lock throughout. `Err(row)`: the
/// call repeats the journaled call `row`, and nothing was written.
pub fn write_chunk(
    svc: &Store,
    who: &Caller,
    session_name: &str,
    index: Option<u64>,
    content: Vec<u8>,
    total_expected: Option<u64>,
    opts: ChunkWriteOptions,
) -> Result<std::result::Result<ChunkWritten, Map<String, Value>>> {
    validate_session(session_name)?;
    if let Some(i) = index {
        validate_index(session_name, "index", i)?;
    }
    if let Some(t) = total_expected {
        validate_index(session_name, "total_expected", t)?;
    }
    let session = open_session(svc, session_name, true, true)?
        .ok_or_else(|| Failure::Internal("session directory vanished".into()))?;
    if let Some(row) = (opts.replay)()? {
        return Ok(Err(row));
    }
    let listing = session.list()?;
    // Only the manifest's head is parsed here: the chunk records are folded in lazily.
    let (head, manifest_bytes) = session.manifest_head()?;
    let recorded_total = head.as_ref().ok().and_then(|h| h.as_ref()?.total_expected);
    let index = match index {
        Some(i) => i,
        None => {
            let next = listing.highest() + 1;
            validate_index(session_name, "the next index", next)?;
            next
        }
    };
    let highest_after = listing.highest().max(index);
    let effective_total = total_expected.or(recorded_total);
    if let Some(t) = effective_total {
        let given = total_expected.is_some();
        if t < highest_after {
            let (reason, message) = if given && t < listing.highest() {
                (
                    "total_expected_below_existing",
                    format!(
                        "total_expected={t} is below the highest chunk already present ({}); \
                         chunk_reset the session or pass a larger total_expected",
                        listing.highest()
                    ),
                )
            } else {
                (
                    "index_exceeds_total_expected",
                    format!(
                        "chunk {index} is beyond total_expected={t}{}; pass a larger \
                         total_expected if the document grew",
                        if given {
                            ""
                        } else {
                            " (recorded in the manifest)"
                        }
                    ),
                )
            };
            return Err(session_failure(
                session_name,
                reason,
                message,
                json!({ "index": index, "total_expected": t, "have": listing.indices() }),
            ));
        }
    }
    let mut warnings = Vec::new();
    if listing.parts.contains_key(&index) && listing.highest() > index {
        warnings.push(format!(
            "replaced chunk {index} while chunks up to {} exist; if this is a new attempt, \
             chunk_reset the session first so old chunks do not end up in the composed file",
            listing.highest()
        ));
    }

    let name = part_name(index);
    let target = session.dir.target(&name)?;
    let mut extra = opts.extra;
    if let (false, Some(t)) = (extra.is_empty(), effective_total) {
        extra.insert("total_expected".to_string(), json!(t));
    }
    extra.insert("session".to_string(), json!(session_name));
    extra.insert("chunk_index".to_string(), json!(index));
    let (outcome, ()) = svc.pipeline().commit(&target, who, |existing| {
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(content),
                mode_label: crate::pipeline::mode_over(existing, "overwrite"),
                create_only: false,
                extra,
                new_file_mode: None,
            },
            (),
        ))
    })?;
    let outcome = outcome.ok_or_else(|| Failure::Internal("chunk write skipped".into()))?;
    // The stamp is taken under the session lock, right after the rename.
    let record = ChunkRecord {
        sha256: outcome.sha256.clone(),
        bytes: outcome.bytes,
        stamp: session.stat_part(&name).ok().map(|st| stamp_of(&st)),
    };

    // The record goes to the log (one append); the manifest is rewritten only when it must
    // change (first chunk, new total_expected, missing or corrupt) or when the log has
    // outgrown it.
    let log_bytes = session.log_size()?;
    let fold = match &head {
        Ok(None) | Err(_) => true,
        Ok(Some(_)) => {
            total_expected.is_some_and(|t| Some(t) != recorded_total)
                || log_bytes >= manifest_bytes.max(FOLD_AT_BYTES)
        }
    };
    let mut saved = false;
    if fold {
        match &head {
            Ok(None) if !listing.parts.is_empty() => {
                warnings.push("manifest.json was missing; rebuilt from the chunk files".into())
            }
            Err(e) => warnings.push(format!(
                "manifest.json was corrupt ({e}); rebuilt from the chunk files"
            )),
            _ => {}
        }
        match fold_manifest(
            svc,
            who,
            &session,
            &listing,
            (index, &record),
            total_expected,
        ) {
            Ok(()) => saved = true,
            // The chunk is durable and the files are the source of truth: a manifest that
            // could not be updated is rebuilt or healed later, never a lost chunk.
            Err(e) => warnings.push(format!("manifest.json was not updated: {e}")),
        }
    }
    if !saved && let Err(e) = session.append_log(index, &record) {
        warnings.push(format!("the chunk's hash was not recorded: {e}"));
    }
    warnings.extend(outcome.warnings);
    Ok(Ok(ChunkWritten {
        index,
        chunk_path: session.display(&name),
        sha256: outcome.sha256,
        bytes: outcome.bytes,
        journal_id: outcome.journal_id,
        total_expected: effective_total,
        warnings,
    }))
}

/// How a session's manifest compares with its chunk files (`doctor`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestDrift {
    /// ok, missing or corrupt.
    pub manifest: String,
    /// Chunk files neither the manifest nor the records log has a record of.
    pub unrecorded: Vec<u64>,
    /// Records of chunks whose file is gone.
    pub stale_records: Vec<u64>,
}

impl ManifestDrift {
    /// Whether [`rebuild_manifest`] would change the manifest.
    pub fn needs_rebuild(&self, has_chunks: bool) -> bool {
        (self.manifest != "ok" && has_chunks)
            || !self.unrecorded.is_empty()
            || !self.stale_records.is_empty()
    }
}

/// Compare session `name`'s records (manifest plus records log) with its files (shared
/// lock; writes nothing).
pub fn manifest_drift(svc: &Store, name: &str) -> Result<Option<(ManifestDrift, Listing)>> {
    let Some(session) = open_session(svc, name, false, false)? else {
        return Ok(None);
    };
    let listing = session.list()?;
    let state = session.manifest()?;
    let mut drift = ManifestDrift {
        manifest: state.label().into(),
        ..ManifestDrift::default()
    };
    if state.manifest().is_some() {
        let records = session.records(&state)?;
        drift.unrecorded = listing
            .parts
            .keys()
            .filter(|i| !records.contains_key(i))
            .copied()
            .collect();
        drift.stale_records = records
            .keys()
            .filter(|i| !listing.parts.contains_key(i))
            .copied()
            .collect();
    }
    Ok(Some((drift, listing)))
}

/// Bring session `name`'s manifest in step with its files, as the next chunk write would:
/// the records log is folded in, records of vanished chunks are dropped, chunks without a
/// record are hashed as they are now, and existing records are kept (so a chunk edited by
/// hand is still reported as modified). Returns whether the manifest was written.
pub fn rebuild_manifest(svc: &Store, who: &Caller, name: &str) -> Result<bool> {
    let Some(session) = open_session(svc, name, false, true)? else {
        return Ok(false);
    };
    let listing = session.list()?;
    let state = session.manifest()?;
    let records = session.records(&state)?;
    let in_step = records.keys().eq(listing.parts.keys());
    if state.manifest().is_some() && in_step {
        return Ok(false);
    }
    if state.manifest().is_none() && listing.parts.is_empty() {
        return Ok(false);
    }
    let mut manifest = state.manifest().cloned().unwrap_or_default();
    manifest.chunks = records;
    manifest.chunks.retain(|i, _| listing.parts.contains_key(i));
    for (i, part) in &listing.parts {
        if !manifest.chunks.contains_key(i) {
            manifest.chunks.insert(*i, session.hash_part(part)?);
        }
    }
    manifest.session = Some(name.to_string());
    let now = crate::journal::now_rfc3339();
    if manifest.created_at.is_none() {
        manifest.created_at = Some(now.clone());
    }
    manifest.updated_at = Some(now);
    store_manifest(svc, who, &session, &manifest)?;
    Ok(true)
}

/// Rewrite the manifest with every record (manifest, log, and the chunk just written) for
/// the chunk files that exist, hashing any chunk nobody recorded (written by the original,
/// or before a crash cut its record), then empty the log. A crash between the two leaves
/// log lines the manifest already holds, which fold again harmlessly.
fn fold_manifest(
    svc: &Store,
    who: &Caller,
    session: &Session,
    listing: &Listing,
    (index, record): (u64, &ChunkRecord),
    total_expected: Option<u64>,
) -> Result<()> {
    let state = session.manifest()?;
    let mut manifest = state.manifest().cloned().unwrap_or_default();
    manifest.chunks = session.records(&state)?;
    manifest.chunks.insert(index, record.clone());
    manifest
        .chunks
        .retain(|i, _| *i == index || listing.parts.contains_key(i));
    for (i, name) in &listing.parts {
        if !manifest.chunks.contains_key(i) {
            manifest.chunks.insert(*i, session.hash_part(name)?);
        }
    }
    let now = crate::journal::now_rfc3339();
    manifest.session = Some(session.name.clone());
    if manifest.created_at.is_none() {
        manifest.created_at = Some(now.clone());
    }
    manifest.updated_at = Some(now);
    if total_expected.is_some() {
        manifest.total_expected = total_expected;
    }
    store_manifest(svc, who, session, &manifest)
}

/// Write the manifest (which now holds every record), then empty the records log.
fn store_manifest(svc: &Store, who: &Caller, session: &Session, m: &Manifest) -> Result<()> {
    write_manifest(svc, who, session, m)?;
    session
        .open_log(OFlags::WRONLY)
        .and_then(|f| f.set_len(0))
        .map_err(|e| {
            Failure::io(
                "empty chunk records",
                session.dir.path.join(RECORDS_FILE),
                e,
            )
        })
}

fn write_manifest(svc: &Store, who: &Caller, session: &Session, m: &Manifest) -> Result<()> {
    // Through a Value so that keys come out sorted, as the original writes them.
    let value = serde_json::to_value(m)
        .map_err(|e| Failure::Internal(format!("serialising manifest: {e}")))?;
    let mut body = serde_json::to_vec_pretty(&value)
        .map_err(|e| Failure::Internal(format!("serialising manifest: {e}")))?;
    body.push(b'\n');
    let target = session.dir.target(MANIFEST_FILE)?;
    let mut extra = BTreeMap::new();
    extra.insert("session".to_string(), json!(session.name));
    svc.pipeline().commit(&target, who, |_| {
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode_label: "manifest".into(),
                create_only: false,
                extra,
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(())
}

/// A session checked for composition: contiguous from 1, reconciled with total_expected,
/// no foreign files.
pub struct Snapshot {
    pub names: Vec<String>,
    pub records: Vec<Option<ChunkRecord>>,
    pub sizes: Vec<u64>,
    pub total_expected: Option<u64>,
}

/// Check that `session` can be composed and return what to compose.
pub fn snapshot(session: &Session) -> Result<Snapshot> {
    let name = session.name.as_str();
    let listing = session.list()?;
    let manifest = session.manifest()?;
    let total_expected = manifest.manifest().and_then(|m| m.total_expected);
    if !listing.foreign.is_empty() {
        return Err(session_failure(
            name,
            "mixed_session",
            format!(
                "the session holds chunk files not written by resilient-write ({}); remove \
                 them or chunk_reset the session",
                listing.foreign.join(", ")
            ),
            json!({ "unrecognised_files": listing.foreign, "have": listing.indices() }),
        ));
    }
    if listing.parts.is_empty() {
        return Err(session_failure(
            name,
            "no_chunks_found",
            "the session has no chunks".into(),
            json!({ "have": [], "total_expected": total_expected }),
        ));
    }
    let gaps = listing.missing(None);
    if !gaps.is_empty() {
        return Err(session_failure(
            name,
            "non_contiguous_chunks",
            format!("chunks are missing: {}", list_of(&gaps)),
            json!({ "have": listing.indices(), "missing": gaps, "total_expected": total_expected }),
        ));
    }
    let count = listing.highest();
    if let Some(t) = total_expected
        && t != count
    {
        let missing: Vec<u64> = (count + 1..=t).collect();
        let message = if t > count {
            format!(
                "total_expected is {t} but only {count} chunk(s) exist; missing: {}",
                list_of(&missing)
            )
        } else {
            format!(
                "{count} chunks exist but total_expected is {t}; a stale session? \
                 chunk_reset it, or raise total_expected with chunk_write"
            )
        };
        return Err(session_failure(
            name,
            "chunk_count_mismatch",
            message,
            json!({ "have": listing.indices(), "missing": missing, "total_expected": t,
                    "chunk_count": count }),
        ));
    }
    let mut all = session.records(&manifest)?;
    let records = listing.parts.keys().map(|i| all.remove(i)).collect();
    let names: Vec<String> = listing.parts.into_values().collect();
    let sizes = names
        .iter()
        .map(|n| session.size_of(n))
        .collect::<Result<Vec<_>>>()?;
    Ok(Snapshot {
        names,
        records,
        sizes,
        total_expected,
    })
}

/// Options of a compose.
pub struct ComposeOptions {
    pub separator: Vec<u8>,
    /// `None`: the original's behaviour, create or overwrite if the file exists.
    pub mode: Option<WriteMode>,
    pub expected_prev_sha256: Option<String>,
    pub cleanup: bool,
    /// Extra journal fields (idempotency key and request hash).
    pub extra: BTreeMap<String, Value>,
    pub progress: Option<Progress>,
    /// Score the composed chunks (separators included, an append's existing content not) as
    /// they stream, and refuse with blocked/content_filter at this verdict; nothing is
    /// written then.
    pub classify: Option<(crate::classify::Classifier, crate::preflight::RejectAt)>,
}

/// A compose's outcome.
pub struct Composed {
    pub outcome: Outcome,
    pub chunk_count: u64,
    pub chunk_hashes: Vec<String>,
    pub mode_applied: String,
    pub cleaned_up: bool,
    pub warnings: Vec<String>,
}

/// What the producer found wrong while streaming, reported after the pipeline aborts.
#[derive(Default)]
struct StreamReport {
    hashes: Vec<String>,
    modified: Vec<ModifiedChunk>,
    /// A chunk (by index) whose stamp moved while compose copied it.
    changed_while_composing: Option<u64>,
    /// The classify refusal, when the composed content reached the verdict.
    blocked: Option<Failure>,
}

/// Compose `session` into `target` through the pipeline, streaming. `check` runs under the
/// pipeline's lock before anything is written (idempotency replay, expected hash); it may
/// return a value that makes compose write nothing and return it instead.
pub fn compose<R>(
    svc: &Store,
    who: &Caller,
    session_name: &str,
    target: &crate::workspace::Target,
    opts: ComposeOptions,
    check: impl FnOnce(Option<&Existing>) -> Result<Option<R>>,
) -> Result<std::result::Result<Composed, R>> {
    let session = open_session(svc, session_name, false, true)?.ok_or_else(|| {
        session_failure(
            session_name,
            "session_not_found",
            "no such session".into(),
            json!({}),
        )
    })?;
    let snap = snapshot(&session)?;
    let count = snap.names.len() as u64;
    let seps = opts.separator.len() as u64 * count.saturating_sub(1);
    let total: u64 = snap.sizes.iter().sum::<u64>() + seps;
    let report = Arc::new(Mutex::new(StreamReport::default()));
    let shown = target.display.clone();
    let mode = opts.mode;
    let expected = opts.expected_prev_sha256.clone();
    let session_dir = session
        .dir
        .dir
        .try_clone()
        .map_err(|e| Failure::io("open session", &session.dir.path, e))?;
    let out_dir = target
        .dir
        .try_clone()
        .map_err(|e| Failure::io("open output directory", &shown, e))?;
    let out_name = target.name.clone();
    let names = snap.names.clone();
    let records = snap.records.clone();
    let separator = opts.separator.clone();
    let progress = opts.progress.clone();
    let classify = opts.classify;
    let rep = report.clone();
    let journal = svc.pipeline().journal().clone();
    let session_path = session.dir.path.clone();
    let session_shown = session.dir.display.clone();
    let mut extra = opts.extra;
    extra.insert("session".into(), json!(session_name));
    extra.insert("chunk_count".into(), json!(count));

    let committed = svc.pipeline().commit_streaming(target, who, |existing| {
        if let Some(r) = check(existing)? {
            return Ok(Decision::Skip(Err(r)));
        }
        // Compose streams: the decision reads the target's hash, never its bytes.
        let applied = Precondition {
            shown: &shown,
            mode,
            expected: expected.as_deref(),
            order: Order::ModeFirst,
        }
        .check(existing)?;
        let prefix_len = if applied == Applied::Append {
            rustix::fs::statat(&out_dir, &out_name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| st.st_size.max(0) as u64)
                .map_err(|e| Failure::io("stat", &shown, errno(e)))?
        } else {
            0
        };
        extra.insert("compose_mode".into(), json!(applied.label()));
        let total = total + prefix_len;
        let producer = move |w: &mut dyn Write| -> io::Result<String> {
            let mut done = 0u64;
            let tick = |done: u64| {
                if let Some(p) = &progress {
                    p(done, total);
                }
            };
            tick(0);
            let mut rep = rep.lock().unwrap_or_else(|p| p.into_inner());
            let mut scorer = classify
                .as_ref()
                .map(|(c, _)| crate::classify::stream::StreamScorer::new(c));
            let mut last_tick = 0u64;
            // This thread reads and writes; a second one hashes the output (the digest the
            // pipeline's read-back is compared with) and each chunk whose record it cannot
            // trust. Buffers go round a small pool, so memory stays constant.
            let (digest, hashes) = std::thread::scope(|scope| {
                let (to_hasher, for_hasher) = std::sync::mpsc::sync_channel::<Block>(POOL);
                let (recycle, pool) = std::sync::mpsc::channel::<Vec<u8>>();
                for _ in 0..POOL {
                    let _ = recycle.send(vec![0u8; BLOCK]);
                }
                let give_back = recycle.clone();
                let sep = separator.clone();
                let hasher = scope.spawn(move || hash_blocks(for_hasher, recycle, &sep));
                // Copies `f` to the output through the pool: what the streaming loop of
                // every input (the existing file of an append, each chunk) shares.
                let mut copy = |w: &mut dyn Write,
                                f: &mut File,
                                done: &mut u64,
                                scorer: Option<&mut crate::classify::stream::StreamScorer>|
                 -> io::Result<()> {
                    let mut scorer = scorer;
                    loop {
                        let mut buf = pool.recv().map_err(|_| hasher_gone())?;
                        let n = loop {
                            match f.read(&mut buf) {
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                                other => break other?,
                            }
                        };
                        if n == 0 {
                            let _ = give_back.send(buf);
                            return Ok(());
                        }
                        w.write_all(&buf[..n])?;
                        if let Some(s) = scorer.as_deref_mut() {
                            s.feed(&buf[..n]);
                        }
                        to_hasher
                            .send(Block::Data(buf, n))
                            .map_err(|_| hasher_gone())?;
                        *done += n as u64;
                        if *done - last_tick >= 8 * 1024 * 1024 {
                            last_tick = *done;
                            tick(*done);
                        }
                    }
                };
                let streamed = (|| -> io::Result<()> {
                    if prefix_len > 0 {
                        // Append: the existing content first, streamed like a chunk but not
                        // scored (it is already on disk).
                        let fd = rustix::fs::openat(
                            &out_dir,
                            &out_name,
                            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .map_err(errno)?;
                        copy(&mut *w, &mut File::from(fd), &mut done, None)?;
                    }
                    for (k, name) in names.iter().enumerate() {
                        if k > 0 {
                            w.write_all(&separator)?;
                            if let Some(s) = scorer.as_mut() {
                                s.feed(&separator);
                            }
                            to_hasher
                                .send(Block::Separator)
                                .map_err(|_| hasher_gone())?;
                            done += separator.len() as u64;
                        }
                        let fd = rustix::fs::openat(
                            &session_dir,
                            name.as_str(),
                            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .map_err(errno)?;
                        // A chunk whose stamp and size are those of its record is the
                        // recorded content (see `ChunkRecord::stamp`): its own hash is not
                        // recomputed. The stamp is taken again after the copy, so a change
                        // while it was read is caught too.
                        let st = rustix::fs::fstat(&fd).map_err(errno)?;
                        let stamp = stamp_of(&st);
                        let trusted = records[k].as_ref().is_some_and(|r| {
                            r.stamp.as_deref() == Some(stamp.as_str())
                                && r.bytes == st.st_size.max(0) as u64
                        });
                        let mut f = File::from(fd);
                        to_hasher
                            .send(Block::Begin { hash: !trusted })
                            .map_err(|_| hasher_gone())?;
                        copy(&mut *w, &mut f, &mut done, scorer.as_mut())?;
                        to_hasher.send(Block::End).map_err(|_| hasher_gone())?;
                        let after = rustix::fs::fstat(&f).map_err(errno)?;
                        if trusted
                            && (stamp_of(&after) != stamp
                                || crate::pipeline::fault("compose_chunk_changed"))
                        {
                            return Err(io::Error::other(ChangedWhileComposing(k as u64 + 1)));
                        }
                    }
                    Ok(())
                })();
                drop(to_hasher);
                let hashed = hasher.join().map_err(|_| hasher_gone());
                streamed.and(hashed)
            })
            .inspect_err(|e| {
                if let Some(ChangedWhileComposing(index)) = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<ChangedWhileComposing>())
                {
                    rep.changed_while_composing = Some(*index);
                }
            })?;
            for (k, computed) in hashes.into_iter().enumerate() {
                let recorded = records[k].as_ref();
                let actual = match (computed, recorded) {
                    (Some(h), _) => h,
                    (None, Some(r)) => r.sha256.clone(),
                    (None, None) => {
                        return Err(io::Error::other("a chunk without a record was not hashed"));
                    }
                };
                if let Some(rec) = recorded
                    && rec.sha256 != actual
                    && !journaled_in(
                        &journal,
                        &session_path.join(&names[k]),
                        &format!("{session_shown}/{}", names[k]),
                        &actual,
                    )
                {
                    rep.modified.push(ModifiedChunk {
                        index: k as u64 + 1,
                        recorded_sha256: rec.sha256.clone(),
                        actual_sha256: actual.clone(),
                    });
                }
                rep.hashes.push(actual);
            }
            tick(done);
            if !rep.modified.is_empty() {
                // The pipeline drops the temp file: nothing is renamed into place.
                return Err(io::Error::other("chunks modified since they were written"));
            }
            if let (Some(s), Some((_, at))) = (scorer, classify.as_ref()) {
                let r = s.finish();
                if r.verdict >= at.verdict() {
                    rep.blocked = Some(crate::preflight::blocked(r.score, r.verdict, &r.findings));
                    return Err(io::Error::other("the composed content is blocked"));
                }
            }
            Ok(digest)
        };
        Ok(Decision::Write(
            Plan {
                body: Body::HashedStream(Box::new(producer)),
                mode_label: "compose".into(),
                create_only: applied.create_only(),
                extra,
                new_file_mode: None,
            },
            Ok(applied.label().to_string()),
        ))
    });

    let mut rep = std::mem::take(&mut *report.lock().unwrap_or_else(|p| p.into_inner()));
    let (outcome, applied) = match committed {
        Ok((_, Err(r))) => return Ok(Err(r)),
        Ok((Some(o), Ok(applied))) => (o, applied),
        Ok((None, Ok(_))) => return Err(Failure::Internal("compose wrote nothing".into())),
        Err(_) if !rep.modified.is_empty() => {
            return Err(modified_failure(session_name, &rep.modified));
        }
        Err(_) if rep.changed_while_composing.is_some() => {
            let index = rep.changed_while_composing.unwrap_or(0);
            return Err(session_failure(
                session_name,
                "chunk_modified",
                format!(
                    "chunk {index} changed while compose read it (written outside \
                     resilient-write); nothing was written; compose again"
                ),
                json!({ "changed_while_composing": index }),
            ));
        }
        Err(e) => return Err(rep.blocked.take().unwrap_or(e)),
    };
    let mut warnings = outcome.warnings.clone();
    let mut cleaned_up = false;
    if opts.cleanup {
        match remove_session(&session) {
            Ok(_) => cleaned_up = true,
            Err(e) => warnings.push(format!("cleanup failed, the session is kept: {e}")),
        }
    }
    Ok(Ok(Composed {
        outcome,
        chunk_count: count,
        chunk_hashes: rep.hashes,
        mode_applied: applied,
        cleaned_up,
        warnings,
    }))
}

/// Read size and count of the buffers compose passes to its hashing thread.
const BLOCK: usize = 1024 * 1024;
const POOL: usize = 4;

/// What compose hands its hashing thread, in output order.
enum Block {
    /// A buffer and how much of it is output (of the open chunk, if one is).
    Data(Vec<u8>, usize),
    /// The separator, written between two chunks.
    Separator,
    /// A chunk starts; `hash`: its own digest is wanted (its record cannot be trusted).
    Begin { hash: bool },
    /// The chunk ends.
    End,
}

/// A chunk changed (its stamp moved) while compose copied it.
#[derive(Debug)]
struct ChangedWhileComposing(u64);

impl std::fmt::Display for ChangedWhileComposing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "chunk {} changed while it was composed", self.0)
    }
}

impl std::error::Error for ChangedWhileComposing {}

/// The hashing thread of compose: the SHA-256 of the whole output, and of each chunk that
/// asked for it (`None` for the others), in order; buffers go back to the pool once hashed.
fn hash_blocks(
    blocks: std::sync::mpsc::Receiver<Block>,
    recycle: std::sync::mpsc::Sender<Vec<u8>>,
    separator: &[u8],
) -> (String, Vec<Option<String>>) {
    let mut output = Sha256::new();
    let mut chunk: Option<Sha256> = None;
    let mut hashes = Vec::new();
    for block in blocks {
        match block {
            Block::Data(buf, n) => {
                output.update(&buf[..n]);
                if let Some(h) = chunk.as_mut() {
                    h.update(&buf[..n]);
                }
                let _ = recycle.send(buf);
            }
            Block::Separator => output.update(separator),
            Block::Begin { hash } => chunk = hash.then(Sha256::new),
            Block::End => hashes.push(chunk.take().map(|h| hex::encode(h.finalize()))),
        }
    }
    (hex::encode(output.finalize()), hashes)
}

fn hasher_gone() -> io::Error {
    io::Error::other("the hashing thread of compose stopped")
}

/// Remove every file of a locked session, then the session directory. Returns how many
/// files were removed (the lock file and records log not counted).
fn remove_session(session: &Session) -> Result<u64> {
    let path = &session.dir.path;
    let mut names = Vec::new();
    let dir = rustix::fs::Dir::read_from(&session.dir.dir)
        .map_err(|e| Failure::io("list session", path, errno(e)))?;
    for entry in dir {
        let entry = entry.map_err(|e| Failure::io("list session", path, errno(e)))?;
        let name = entry.file_name().to_bytes().to_vec();
        if name == b"." || name == b".." {
            continue;
        }
        names.push(name);
    }
    let mut removed = 0u64;
    // Chunks go first, from index 1 up: a crash part way leaves a session whose chunk 1 is
    // gone, which compose refuses (a gap), never a shorter session it would compose as if
    // whole. The lock file goes last: until then, a waiter that wakes up still finds it linked.
    names.sort_by_key(|n| {
        let index = std::str::from_utf8(n).ok().and_then(parse_part_name);
        (n.as_slice() == LOCK_FILE.as_bytes(), index.is_none(), index)
    });
    for (k, name) in names.into_iter().enumerate() {
        if k == 1 && crate::pipeline::fault("reset_crash_after_first_unlink") {
            std::process::abort();
        }
        // Our own bookkeeping is not counted, as the original has none.
        let ours =
            name.as_slice() == LOCK_FILE.as_bytes() || name.as_slice() == RECORDS_FILE.as_bytes();
        match rustix::fs::unlinkat(&session.dir.dir, name.as_slice(), AtFlags::empty()) {
            Ok(()) => {
                if !ours {
                    removed += 1;
                }
            }
            Err(e) if e == rustix::io::Errno::NOENT => {}
            Err(e) => return Err(Failure::io("remove session file", path, errno(e))),
        }
    }
    let parent = path.parent().unwrap_or(path);
    let session_name = session.name.as_str();
    let chunks = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Failure::io("open chunks directory", parent, errno(e)))?;
    match rustix::fs::unlinkat(&chunks, session_name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        // A writer that opened the directory before it went created a new lock file in it
        // once ours was gone: a new session has begun after this reset. What this reset
        // removed stays removed; the directory is now that session's.
        Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
            rustix::fs::fsync(&session.dir.dir)
                .map_err(|e| Failure::io("fsync session directory", path, errno(e)))?;
        }
        Err(e) => return Err(Failure::io("remove session directory", path, errno(e))),
    }
    let _ = rustix::fs::fsync(chunks.as_fd());
    Ok(removed)
}

/// Remove session `name`. Returns `(existed, files removed)`.
pub fn reset(svc: &Store, name: &str) -> Result<(bool, u64)> {
    match open_session(svc, name, false, true)? {
        None => Ok((false, 0)),
        Some(session) => Ok((true, remove_session(&session)?)),
    }
}

/// The state of a session, for `chunk_status`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Status {
    pub exists: bool,
    pub total_expected: Option<u64>,
    pub present_indices: Vec<u64>,
    pub missing_indices: Vec<u64>,
    pub chunk_count: u64,
    pub total_bytes: u64,
    /// Chunks whose content differs from the hash recorded when they were written.
    pub modified: Vec<ModifiedChunk>,
    /// `part-*` files that are not resilient-write's (a mixed session).
    pub unrecognised_files: Vec<String>,
    /// ok, missing or corrupt (a missing or corrupt manifest is rebuilt at the next write).
    pub manifest: String,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// Whether compose would accept the session as it is.
    pub ready: bool,
}

/// Inspect a session (shared lock: concurrent appends wait, other readers do not). A chunk
/// whose file is unchanged since its hash was recorded (same inode, ctime and size) is not
/// read again unless `verify`; compose and preview always hash every chunk.
pub fn status(svc: &Store, name: &str, verify: bool) -> Result<(Status, String)> {
    validate_session(name)?;
    let dir_display = session_display(name);
    let Some(session) = open_session(svc, name, false, false)? else {
        return Ok((
            Status {
                exists: false,
                total_expected: None,
                present_indices: vec![],
                missing_indices: vec![],
                chunk_count: 0,
                total_bytes: 0,
                modified: vec![],
                unrecognised_files: vec![],
                manifest: "missing".into(),
                created_at: None,
                updated_at: None,
                ready: false,
            },
            dir_display,
        ));
    };
    let listing = session.list()?;
    let manifest = session.manifest()?;
    let m = manifest.manifest();
    let total_expected = m.and_then(|m| m.total_expected);
    let (records, updated_at) = session.records_and_update(&manifest)?;
    let mut modified = Vec::new();
    let mut total_bytes = 0;
    for (i, part) in &listing.parts {
        let st = session.stat_part(part)?;
        let size = st.st_size.max(0) as u64;
        total_bytes += size;
        let Some(rec) = records.get(i) else {
            continue; // nothing recorded: nothing to compare with
        };
        // Unchanged since recorded (same file, same ctime, same size): its hash stands.
        let unchanged = rec.bytes == size && rec.stamp.as_deref() == Some(&stamp_of(&st));
        if unchanged && !verify {
            continue;
        }
        let actual = session.hash_part(part)?;
        if let Some(x) = check_record(svc, &session, *i, part, Some(rec), &actual.sha256) {
            modified.push(x);
        }
    }
    let missing = listing.missing(total_expected);
    let count = listing.parts.len() as u64;
    let ready = count > 0
        && missing.is_empty()
        && modified.is_empty()
        && listing.foreign.is_empty()
        && total_expected.is_none_or(|t| t == count);
    Ok((
        Status {
            exists: true,
            total_expected,
            present_indices: listing.indices(),
            missing_indices: missing,
            chunk_count: count,
            total_bytes,
            modified,
            unrecognised_files: listing.foreign.clone(),
            manifest: manifest.label().into(),
            created_at: m.and_then(|m| m.created_at.clone()),
            updated_at,
            ready,
        },
        dir_display,
    ))
}

/// A preview: the composed content in memory, checked like a compose.
pub struct Preview {
    pub content: Vec<u8>,
    pub chunk_hashes: Vec<String>,
}

/// Compose `session` in memory (at most `limit` bytes), with every check of a compose.
pub fn preview(svc: &Store, name: &str, separator: &[u8], limit: u64) -> Result<Preview> {
    let session = open_session(svc, name, false, false)?.ok_or_else(|| {
        session_failure(
            name,
            "session_not_found",
            "no such session".into(),
            json!({}),
        )
    })?;
    let snap = snapshot(&session)?;
    let seps = separator.len() as u64 * (snap.names.len() as u64).saturating_sub(1);
    let total = snap.sizes.iter().sum::<u64>() + seps;
    intent::within_limit("previewed content", total, limit)?;
    let mut content = Vec::with_capacity(total as usize);
    let mut hashes = Vec::with_capacity(snap.names.len());
    let mut modified = Vec::new();
    for (k, part) in snap.names.iter().enumerate() {
        if k > 0 {
            content.extend_from_slice(separator);
        }
        let path = session.dir.path.join(part);
        let start = content.len();
        session
            .open_part(part)
            .and_then(|mut f| f.read_to_end(&mut content))
            .map_err(|e| Failure::io("read chunk", &path, e))?;
        let actual = sha256_hex(&content[start..]);
        if let Some(x) = check_record(
            svc,
            &session,
            k as u64 + 1,
            part,
            snap.records[k].as_ref(),
            &actual,
        ) {
            modified.push(x);
        }
        hashes.push(actual);
    }
    if !modified.is_empty() {
        return Err(modified_failure(name, &modified));
    }
    Ok(Preview {
        content,
        chunk_hashes: hashes,
    })
}
