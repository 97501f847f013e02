//! The audit journal: `.resilient_write/journal.jsonl`, one JSON object per line, sorted keys.
//!
//! Guarantees:
//! - Rows are appended with one `write(2)` on an `O_APPEND` descriptor while holding an
//!   exclusive `flock` on the journal, so rows of concurrent processes never interleave.
//! - A row is `fdatasync`ed before the write it describes is acknowledged, and never by a sync
//!   that began before the row was written.
//! - A torn last line (a process killed mid-append) is cut off, under the lock, before the next
//!   append and at start; readers skip it (and count corrupt lines) instead of failing.
//! - Content is never copied into the journal: rows carry hashes, sizes and names only.
//! - [`Journal::tail`] reads backwards from the end in blocks, so it costs what it returns, not
//!   the size of the journal. A filtered read ([`Journal::tail_containing`],
//!   [`Journal::scan_back`]) first looks for the value it wants (a JSON-encoded string) in the
//!   raw bytes and parses only the lines that contain it: finding the rare rows of one path in
//!   a million-row journal costs a substring search over the file, not a million parses.
//!
//! ## Two append protocols
//!
//! A row is written before the rename it describes (docs/ARCHITECTURE.md, "Order of journal
//! row and rename"), in one of two ways:
//!
//! **The commit queue** ([`Journal::commit_row`], [`group::CommitQueue`]), which
//! [`Pipeline::commit`](crate::write::pipeline::Pipeline::commit) uses for every single-file
//! write. Writers of one process queue a row and the step that applies it (the rename); one
//! of them leads a batch:
//! 1. `flock`, cut a torn tail, one `write(2)` of every queued row, unlock. A crash here
//!    leaves rows of writes not yet applied nor acknowledged: orphan rows (below).
//! 2. Each writer's `on_written` hook (the pipeline starts its temp file's and pre-image
//!    link's syncs), then one `fdatasync` of the journal. A crash leaves the same.
//! 3. The renames, in queue order, without the journal lock (the pipeline's directory lock
//!    still excludes other writers of each target). A crash between a row's sync and its
//!    rename leaves an orphan row: a durable row for a file still old. The file, not the row,
//!    is the truth; readers of history check the object store, and the crash tests count
//!    such rows. A rename that fails takes its row back *in place*: its bytes become spaces
//!    (one blank line every reader skips, the original's too), never cut, since rows of other
//!    processes may follow; the rows queued after it in the batch are written again in the
//!    next batch.
//! 4. Each writer checks its [`group::Receipt`] (its sync began after its row was written)
//!    before it acknowledges; the directory fsync follows in the pipeline.
//!
//! **The direct append** ([`Journal::append`], [`Journal::append_many`]), which
//! [`Pipeline::commit_many`](crate::write::pipeline::Pipeline::commit_many) (transactions)
//! and the agents' hooks (`native`) use: `flock`, cut a torn tail, one `write(2)` of all the
//! rows, `fdatasync`, and the lock is *kept* ([`Appended`]) while the caller renames. The
//! caller then [`Appended::commit`]s (unlock) or [`Appended::rollback`]s: the rows are cut
//! off (`ftruncate` to where they began, then `fdatasync`), which is safe because the lock
//! held since the append means nothing follows them. A crash after the sync and before the
//! renames leaves orphan rows (a transaction's recovery rolls forward from its commit record,
//! so its rows name what recovery applies); a crash during the `write(2)` leaves a torn tail,
//! cut at the next append or start.
//!
//! [`tail`] is the filtered tail that `journal_tail` and the journal-tail resource serve;
//! [`recorded`] a row read back, for the calls that answer from it.

pub mod group;
pub mod paths;
pub mod recorded;
pub mod tail;

use aho_corasick::AhoCorasick;
use rustix::fs::FlockOperation;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// A parsed journal row.
pub type Row = Map<String, Value>;

/// One journal row. Serialised with sorted keys ([`JournalRow::to_line`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    pub journal_id: String,
    pub ts: String,
    pub path: String,
    pub sha256: String,
    pub prev_sha256: Option<String>,
    pub bytes: u64,
    pub mode: String,
    pub caller: String,
    pub tool: String,
    /// Optional fields: session, tx_id, idempotency_key, request_sha256, replacements, ...
    pub extra: BTreeMap<String, Value>,
}

impl JournalRow {
    /// The row as one line of JSON with sorted keys, newline-terminated. The fields are
    /// serialised where they are (`Line`), not cloned into a map of `Value`s first; a field
    /// of `extra` with a fixed field's name gives way to the fixed one.
    pub fn to_line(&self) -> String {
        // A row is a few hundred bytes: one allocation for the line, not a doubling series.
        let mut line = Vec::with_capacity(384);
        // Strings, numbers and Values serialise infallibly, into valid UTF-8.
        let _ = serde_json::to_writer(&mut line, &Line(self));
        line.push(b'\n');
        String::from_utf8(line).unwrap_or_default()
    }
}

/// A [`JournalRow`] as one JSON object with sorted keys: its fixed fields (in key order)
/// merged with `extra` (a `BTreeMap`, so in key order too), as a `BTreeMap` of all of them
/// would give it.
struct Line<'a>(&'a JournalRow);

/// One fixed field of a [`JournalRow`], borrowed.
enum Field<'a> {
    Str(&'a str),
    U64(u64),
    Null,
}

impl serde::Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Field::Str(v) => s.serialize_str(v),
            Field::U64(n) => s.serialize_u64(*n),
            Field::Null => s.serialize_unit(),
        }
    }
}

impl serde::Serialize for Line<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        // sorted by key (byte order, as `str` compares)
        let fixed = [
            ("bytes", Field::U64(r.bytes)),
            ("caller", Field::Str(&r.caller)),
            ("journal_id", Field::Str(&r.journal_id)),
            ("mode", Field::Str(&r.mode)),
            ("path", Field::Str(&r.path)),
            (
                "prev_sha256",
                r.prev_sha256.as_deref().map_or(Field::Null, Field::Str),
            ),
            ("sha256", Field::Str(&r.sha256)),
            ("tool", Field::Str(&r.tool)),
            ("ts", Field::Str(&r.ts)),
        ];
        let mut map = s.serialize_map(None)?;
        let mut extra = r.extra.iter().peekable();
        for (key, value) in &fixed {
            while let Some((k, v)) = extra.next_if(|(k, _)| k.as_str() < *key) {
                map.serialize_entry(k, v)?;
            }
            // a field of `extra` named like a fixed one gives way to it
            let _ = extra.next_if(|(k, _)| k.as_str() == *key);
            map.serialize_entry(key, value)?;
        }
        for (k, v) in extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The forms a string value takes inside a journal line, quotes included: as serde_json
/// writes it, and (when it is not ASCII) as Python's `json.dumps` writes it by default
/// (`ensure_ascii`), since the original's rows share the journal. Independent of the
/// separator style (`"k":"v"` or `"k": "v"`), so every row whose field equals `value`
/// contains one of them.
pub fn json_string_forms(value: &str) -> Vec<String> {
    let ours = Value::from(value).to_string();
    if value.is_ascii() {
        return vec![ours];
    }
    let mut ascii = String::with_capacity(ours.len() + 16);
    for c in ours.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    vec![ours, ascii]
}

/// A fresh time-ordered journal id (UUID v7: milliseconds, then a counter and random bits
/// from a generator seeded once per thread by the OS, not a `getrandom` call per id).
pub fn new_journal_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// RFC 3339 UTC timestamp with microseconds, as journal rows carry.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The journal of one state directory. Clones share one [`group::CommitQueue`], so the
/// writers of one process that go through [`Journal::commit_row`] share syncs.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    queue: std::sync::Arc<group::CommitQueue>,
}

/// An appended, durable row whose journal lock is still held: the pipeline renames while
/// holding it, then [`Appended::commit`]s, or [`Appended::rollback`]s if the rename failed.
pub struct Appended {
    file: File,
    offset: u64,
}

impl Appended {
    /// Release the lock, keeping the row.
    pub fn commit(self) {
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
    }

    /// Remove the row (the write it describes did not happen) and release the lock.
    pub fn rollback(self) -> io::Result<()> {
        self.file.set_len(self.offset)?;
        self.file.sync_data()?;
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
        Ok(())
    }
}

/// What a line-by-line read of the whole journal found (`doctor`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LineCheck {
    /// Lines that parsed as rows.
    pub rows: usize,
    /// 1-based numbers of complete lines that are not JSON objects (readers skip them).
    pub corrupt: Vec<usize>,
    /// 1-based number of a last line without its newline: an append that never finished,
    /// which [`Journal::repair`] cuts off.
    pub torn_tail: Option<usize>,
    pub bytes: u64,
}

/// What reading the journal found besides rows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines that were not JSON objects (skipped). A filtered read only parses, and so only
    /// counts, the lines that contain the value it looks for.
    pub corrupt_lines: usize,
}

/// First and largest block [`Journal::scan_back`] reads: small first, so a short tail costs
/// little; doubling, so a long scan makes few system calls.
const FIRST_BLOCK: usize = 64 * 1024;
const MAX_BLOCK: usize = 4 * 1024 * 1024;

impl Journal {
    pub fn new(state_dir: &Path) -> Journal {
        Journal::at(state_dir.join(JOURNAL_FILE))
    }

    /// A log in the journal's line format at `path`, read with [`Journal::read_from`] (the
    /// idempotency result log, [`crate::write::idempotency::ResultLog`]).
    pub fn at(path: PathBuf) -> Journal {
        Journal {
            path,
            queue: Default::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn with_queue(
        state_dir: &Path,
        queue: std::sync::Arc<group::CommitQueue>,
    ) -> Journal {
        Journal {
            path: state_dir.join(JOURNAL_FILE),
            queue,
        }
    }

    /// The commit queue this journal's clones share.
    pub fn queue(&self) -> &std::sync::Arc<group::CommitQueue> {
        &self.queue
    }

    /// The commit queue (module doc): append `row`, make it durable, then run `apply` (the
    /// rename) once the journal is unlocked again; a failed `apply` takes the row back by
    /// blanking it in place. Concurrent callers in this process share one `fdatasync` per
    /// batch; none is acknowledged by a sync that began before its row was written (see
    /// [`group`]).
    pub fn commit_row(
        &self,
        row: &JournalRow,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.commit_line(row.to_line(), None, apply)
    }

    /// [`Journal::commit_row`], running `on_written` once the row is in the file and before
    /// the `fdatasync` that covers it starts (see [`group::OnWritten`]).
    pub fn commit_row_then(
        &self,
        row: &JournalRow,
        on_written: group::OnWritten,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.commit_line(row.to_line(), Some(on_written), apply)
    }

    pub(crate) fn commit_line(
        &self,
        line: String,
        on_written: Option<group::OnWritten>,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.queue.submit(self, line, on_written, apply)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_for_append(&self) -> io::Result<File> {
        // Never blocks and never follows a planted symlink or pipe (util::statefile).
        let open = || {
            crate::util::statefile::open_with(
                &self.path,
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::APPEND | rustix::fs::OFlags::CREATE,
                0o644,
            )
        };
        match open() {
            Ok(f) => Ok(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                fs::create_dir_all(dir)?;
                let f = open()?;
                // Make the new directory entry durable.
                File::open(dir)?.sync_all()?;
                Ok(f)
            }
            Err(e) => Err(e),
        }
    }

    /// Cut a torn last line (no trailing newline) off an exclusively locked journal.
    fn cut_torn_tail(file: &File) -> io::Result<u64> {
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(0);
        }
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] == b'\n' {
            return Ok(len);
        }
        // Search backwards for the previous newline.
        let mut end = len;
        let mut buf = vec![0u8; 64 * 1024];
        let keep = loop {
            let start = end.saturating_sub(buf.len() as u64);
            let chunk = &mut buf[..(end - start) as usize];
            file.read_exact_at(chunk, start)?;
            if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
                break start + pos as u64 + 1;
            }
            if start == 0 {
                break 0;
            }
            end = start;
        };
        file.set_len(keep)?;
        file.sync_data()?;
        tracing::warn!(
            cut_bytes = len - keep,
            "journal: cut a torn last line left by an interrupted append"
        );
        Ok(keep)
    }

    /// Append `row` durably and keep the journal locked (see [`Appended`]).
    pub fn append(&self, row: &JournalRow) -> io::Result<Appended> {
        self.append_many(std::slice::from_ref(row))
    }

    /// Append `rows` durably with one `write(2)` (a transaction's rows land together or, after
    /// a crash and the torn-tail repair, not at all) and keep the journal locked.
    pub fn append_many(&self, rows: &[JournalRow]) -> io::Result<Appended> {
        let line: String = rows.iter().map(JournalRow::to_line).collect();
        let mut file = self.open_for_append()?;
        rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
        let offset = Self::cut_torn_tail(&file)?;
        let result = (|| {
            group::write_whole(&mut file, line.as_bytes())?;
            file.sync_data()
        })();
        match result {
            Ok(()) => Ok(Appended { file, offset }),
            Err(e) => {
                // Never leave a partial row behind: the write it describes will not happen.
                let _ = file.set_len(offset);
                let _ = rustix::fs::flock(&file, FlockOperation::Unlock);
                Err(e)
            }
        }
    }

    /// Repair at start: cut a torn last line. A missing journal is fine.
    pub fn repair(&self) -> io::Result<()> {
        let file = match crate::util::statefile::open_read_write(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
        Self::cut_torn_tail(&file)?;
        let _ = rustix::fs::flock(&file, FlockOperation::Unlock);
        Ok(())
    }

    /// The last `n` rows for which `keep` holds, oldest first. Reads backwards from the end.
    pub fn tail(
        &self,
        n: usize,
        keep: impl FnMut(&Map<String, Value>) -> bool,
    ) -> io::Result<(Vec<Map<String, Value>>, ReadStats)> {
        self.tail_containing(n, &[], keep)
    }

    /// Like [`Journal::tail`], parsing only the lines that contain one of `needles` (none:
    /// every line). A row `keep` accepts must contain one of them (see
    /// [`json_string_forms`]); `keep` still decides.
    pub fn tail_containing(
        &self,
        n: usize,
        needles: &[String],
        mut keep: impl FnMut(&Map<String, Value>) -> bool,
    ) -> io::Result<(Vec<Map<String, Value>>, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut out = Vec::new();
        if n == 0 {
            return Ok((out, stats));
        }
        let torn = self.scan_back(needles, |line| {
            match serde_json::from_slice::<Map<String, Value>>(line) {
                Ok(row) => {
                    if keep(&row) {
                        out.push(row);
                    }
                }
                Err(_) => stats.corrupt_lines += 1,
            }
            out.len() < n
        })?;
        if torn {
            // No trailing newline: a torn row being written or left by a crash.
            stats.corrupt_lines += 1;
        }
        out.reverse();
        Ok((out, stats))
    }

    /// Read every line, noting which do not parse; `progress(bytes_read, total)` is called as
    /// it goes. A missing journal is empty.
    pub fn check_lines(&self, mut progress: impl FnMut(u64, u64)) -> io::Result<LineCheck> {
        use std::io::BufRead;
        let mut check = LineCheck::default();
        let file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(check),
            Err(e) => return Err(e),
        };
        let total = file.metadata()?.len();
        let mut reader = io::BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            number += 1;
            check.bytes += n as u64;
            if line.last() != Some(&b'\n') {
                check.torn_tail = Some(number);
            } else if line.iter().all(u8::is_ascii_whitespace) {
                // Blank lines are skipped by every reader and are not damage.
            } else if serde_json::from_slice::<Map<String, Value>>(&line).is_ok() {
                check.rows += 1;
            } else {
                check.corrupt.push(number);
            }
            if number % 4096 == 0 {
                progress(check.bytes, total);
            }
        }
        progress(check.bytes, total);
        Ok(check)
    }

    /// Hand complete lines to `visit`, newest first, until it returns false. With `needles`,
    /// only lines containing one of them (a substring search over raw bytes; nothing else is
    /// parsed or copied), and possibly a few more: several needles that share a long suffix
    /// (a file's relative and absolute path, `"src/a.rs"` and `"/w/src/a.rs"`) are searched
    /// for by that suffix, one SIMD substring search instead of a multi-pattern automaton, so
    /// `visit` must check what it gets. Blank lines are skipped. Returns whether the journal
    /// ends in a torn line (no trailing newline), which is never visited.
    pub fn scan_back(
        &self,
        needles: &[String],
        mut visit: impl FnMut(&[u8]) -> bool,
    ) -> io::Result<bool> {
        fn one(n: &[u8]) -> Option<Needles<'_>> {
            Some(Needles::One(Box::new(memchr::memmem::Finder::new(n))))
        }
        let finder = match needles {
            [] => None,
            // one needle (any ASCII value): memchr's SIMD substring search
            [n] => one(n.as_bytes()),
            _ => match shared_suffix(needles) {
                Some(suffix) => one(suffix),
                None => Some(Needles::Many(
                    AhoCorasick::new(needles).map_err(io::Error::other)?,
                )),
            },
        };
        let file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut pos = file.metadata()?.len();
        let mut torn = false;
        let mut first = true;
        let mut block = FIRST_BLOCK;
        // The head of the later block: a line that starts in an earlier block.
        let mut carry: Vec<u8> = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        while pos > 0 {
            let start = pos.saturating_sub(block as u64);
            block = (block * 2).min(MAX_BLOCK);
            let len = (pos - start) as usize;
            // The buffer only grows (zeroing it once, not per block).
            let need = len + carry.len();
            if buf.len() < need {
                buf.resize(need, 0);
            }
            file.read_exact_at(&mut buf[..len], start)?;
            buf[len..need].copy_from_slice(&carry);
            let data = &buf[..need];
            // Lines that begin before `start` are carried back whole to the next block.
            let from = if start > 0 {
                match memchr::memchr(b'\n', data) {
                    Some(p) => p + 1,
                    None => {
                        carry = data.to_vec();
                        pos = start;
                        continue;
                    }
                }
            } else {
                0
            };
            let mut body = &data[from..];
            if first {
                first = false;
                if let Some(cut) = body.iter().rposition(|&b| b == b'\n') {
                    torn = cut + 1 != body.len();
                    body = &body[..cut + 1];
                } else {
                    torn = !body.is_empty();
                    body = &[];
                }
            }
            if !visit_block(body, finder.as_ref(), &mut visit) {
                return Ok(torn);
            }
            carry.clear();
            carry.extend_from_slice(&data[..from]);
            pos = start;
        }
        Ok(torn)
    }

    /// Every row from byte `offset` to the end, with the offset just past the last full line.
    /// Used to keep in-memory indexes (idempotency keys) current without rereading.
    pub fn read_from(&self, offset: u64) -> io::Result<(Vec<Row>, u64, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0, stats)),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let offset = if offset > len { 0 } else { offset };
        file.seek(SeekFrom::Start(offset))?;
        let mut data = Vec::with_capacity((len - offset) as usize);
        file.read_to_end(&mut data)?;
        let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let mut rows = Vec::new();
        for line in data[..complete].split(|&b| b == b'\n') {
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match serde_json::from_slice::<Map<String, Value>>(line) {
                Ok(r) => rows.push(r),
                Err(_) => stats.corrupt_lines += 1,
            }
        }
        Ok((rows, offset + complete as u64, stats))
    }
}

/// The longest suffix all `needles` share, when it is at least half as long as the shortest
/// of them (a suffix that short would match too many lines to filter well).
fn shared_suffix(needles: &[String]) -> Option<&[u8]> {
    let first = needles.first()?.as_bytes();
    let mut len = first.len();
    for n in &needles[1..] {
        let n = n.as_bytes();
        let common = first
            .iter()
            .rev()
            .zip(n.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        len = len.min(common);
    }
    let shortest = needles.iter().map(String::len).min().unwrap_or(0);
    (len > 0 && len * 2 >= shortest).then(|| &first[first.len() - len..])
}

/// What `scan_back` looks for: one value's string form, or several.
enum Needles<'n> {
    One(Box<memchr::memmem::Finder<'n>>),
    Many(AhoCorasick),
}

impl Needles<'_> {
    /// Where matches start in `hay`, in order.
    fn starts(&self, hay: &[u8]) -> Vec<usize> {
        match self {
            Needles::One(f) => f.find_iter(hay).collect(),
            Needles::Many(ac) => ac.find_iter(hay).map(|m| m.start()).collect(),
        }
    }
}

/// Visit the lines of `body` (complete lines, each ending in a newline) newest first; with
/// `finder`, only those containing a match. Returns false when `visit` asked to stop.
fn visit_block(
    body: &[u8],
    finder: Option<&Needles<'_>>,
    visit: &mut impl FnMut(&[u8]) -> bool,
) -> bool {
    let mut visit_line = |line: &[u8]| {
        if line.iter().all(u8::is_ascii_whitespace) {
            true
        } else {
            visit(line)
        }
    };
    match finder {
        None => {
            let Some(body) = body.strip_suffix(b"\n") else {
                return true;
            };
            body.rsplit(|&b| b == b'\n').all(visit_line)
        }
        Some(finder) => {
            let hits = finder.starts(body);
            let mut line_end = usize::MAX;
            for &h in hits.iter().rev() {
                if h >= line_end {
                    continue; // another match in a line already visited
                }
                let start = memchr::memrchr(b'\n', &body[..h]).map_or(0, |p| p + 1);
                let Some(end) = memchr::memchr(b'\n', &body[h..]).map(|p| h + p) else {
                    continue;
                };
                line_end = start;
                if !visit_line(&body[start..end]) {
                    return false;
                }
            }
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn row(path: &str, i: u64) -> JournalRow {
        JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: path.into(),
            sha256: "00".into(),
            prev_sha256: None,
            bytes: i,
            mode: "create".into(),
            caller: "test".into(),
            tool: "safe_write".into(),
            extra: BTreeMap::new(),
        }
    }

    /// Journal ids are distinct and sort in the order they were made, within a thread and
    /// across threads (each thread's random bits come from its own seeded generator).
    #[test]
    fn journal_ids_are_distinct_and_time_ordered() {
        let made: Vec<Vec<String>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..5000).map(|_| new_journal_id()).collect::<Vec<_>>()))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for ids in &made {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "out of order");
            assert!(ids.iter().all(|id| id.len() == 32));
        }
        let all: std::collections::HashSet<&String> = made.iter().flatten().collect();
        assert_eq!(all.len(), 4 * 5000);
    }

    /// Bytes appended behind the journal's back (a torn row, another writer's line).
    fn append_raw(j: &Journal, bytes: &[u8]) {
        OpenOptions::new()
            .append(true)
            .open(j.path())
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    /// The line as it was made before [`Line`]: every field cloned into a map of `Value`s.
    fn line_through_values(r: &JournalRow) -> String {
        let mut m: BTreeMap<&str, Value> = BTreeMap::new();
        for (k, v) in &r.extra {
            m.insert(k.as_str(), v.clone());
        }
        m.insert("journal_id", Value::from(r.journal_id.clone()));
        m.insert("ts", Value::from(r.ts.clone()));
        m.insert("path", Value::from(r.path.clone()));
        m.insert("sha256", Value::from(r.sha256.clone()));
        m.insert(
            "prev_sha256",
            r.prev_sha256
                .clone()
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        m.insert("bytes", Value::from(r.bytes));
        m.insert("mode", Value::from(r.mode.clone()));
        m.insert("caller", Value::from(r.caller.clone()));
        m.insert("tool", Value::from(r.tool.clone()));
        let mut line = serde_json::to_string(&m).unwrap();
        line.push('\n');
        line
    }

    #[test]
    fn a_line_is_byte_for_byte_what_a_map_of_values_gives() {
        let awkward = "d\u{e9}j\u{e0} \"q\" \\ \n\t\u{1} \u{7f} \u{2028} \u{1f600} </script>";
        let mut rows = vec![row("a", 1), row(awkward, u64::MAX)];
        let mut r = row("src/x.rs", 0);
        r.prev_sha256 = Some("ab".repeat(32));
        r.mode = awkward.into();
        r.caller = String::new();
        r.extra = BTreeMap::from([
            ("session".to_string(), Value::from(awkward)),
            ("tx_id".to_string(), Value::Null),
            ("replacements".to_string(), Value::from(-3)),
            ("ratio".to_string(), serde_json::json!(0.1)),
            (
                "nested".to_string(),
                serde_json::json!({"z": [1, "two", null], "a": {}}),
            ),
            // a field of `extra` named like a fixed one gives way to the fixed one
            ("path".to_string(), Value::from("not this")),
            ("bytes".to_string(), Value::from("nor this")),
            ("aaa".to_string(), Value::Bool(true)),
            ("zzz".to_string(), Value::from(awkward)),
        ]);
        rows.push(r);
        for r in &rows {
            assert_eq!(r.to_line(), line_through_values(r));
        }
        let parsed: Map<String, Value> = serde_json::from_str(&rows[2].to_line()).unwrap();
        assert_eq!(parsed["path"], "src/x.rs");
        assert_eq!(parsed["bytes"], 0);
    }

    #[test]
    fn rows_have_sorted_keys_and_end_with_newline() {
        let line = row("a", 1).to_line();
        assert!(line.ends_with('\n'));
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&line)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let pos = |k: &str| line.find(&format!("\"{k}\"")).unwrap();
        let mut by_position = keys.clone();
        by_position.sort_by_key(|k| pos(k));
        let mut sorted = keys;
        sorted.sort();
        assert_eq!(by_position, sorted);
    }

    #[test]
    fn tail_returns_newest_last_and_honours_filter() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        for i in 0..100 {
            j.append(&row(if i % 2 == 0 { "even" } else { "odd" }, i))
                .unwrap()
                .commit();
        }
        let (rows, _) = j.tail(3, |r| r["path"] == "odd").unwrap();
        let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
        assert_eq!(bytes, vec![95, 97, 99]);
    }

    #[test]
    fn torn_last_line_is_skipped_on_read_and_cut_on_next_append() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        j.append(&row("a", 1)).unwrap().commit();
        append_raw(&j, b"{\"journal_id\":\"tor");
        let (rows, stats) = j.tail(10, |_| true).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(stats.corrupt_lines, 1);
        j.append(&row("b", 2)).unwrap().commit();
        let text = fs::read_to_string(j.path()).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<Value>(l).is_ok())
        );
    }

    #[test]
    fn filtered_tail_finds_rare_rows_across_many_blocks_and_stops_at_n() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        // Enough rows that the scan crosses several blocks (and lines cross block edges).
        let mut lines = String::new();
        for i in 0..20_000u64 {
            let path = if i % 1000 == 7 {
                "/w/rare.txt"
            } else {
                "/w/common.txt"
            };
            lines.push_str(&row(path, i).to_line());
        }
        fs::write(j.path(), lines).unwrap();
        let wanted = json_string_forms("/w/rare.txt");
        let (rows, stats) = j
            .tail_containing(3, &wanted, |r| r["path"] == "/w/rare.txt")
            .unwrap();
        let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
        assert_eq!(bytes, vec![17_007, 18_007, 19_007]);
        assert_eq!(stats.corrupt_lines, 0);
        let (all, _) = j
            .tail_containing(100, &wanted, |r| r["path"] == "/w/rare.txt")
            .unwrap();
        assert_eq!(all.len(), 20);
        // The same answer as the unfiltered read.
        let (slow, _) = j.tail(100, |r| r["path"] == "/w/rare.txt").unwrap();
        assert_eq!(all, slow);
    }

    #[test]
    fn needles_sharing_a_long_suffix_are_searched_by_it_and_others_by_each() {
        let forms = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shared_suffix(&forms(&["\"src/a.rs\"", "\"/w/src/a.rs\""])),
            Some(&b"src/a.rs\""[..])
        );
        // too short a suffix to filter: each needle is searched for
        assert_eq!(
            shared_suffix(&forms(&["\"caf\u{e9}.rs\"", "\"caf\\u00e9.rs\""])),
            None
        );
        assert_eq!(shared_suffix(&forms(&["\"a\"", "\"b\""])), None);
        // Either way every row of the file is found, and only those are kept.
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        for (i, p) in ["src/a.rs", "/w/src/a.rs", "x/src/a.rs", "src/b.rs"]
            .into_iter()
            .enumerate()
        {
            j.append(&row(p, i as u64)).unwrap().commit();
        }
        let wanted = ["src/a.rs", "/w/src/a.rs"];
        let needles: Vec<String> = wanted.iter().flat_map(|p| json_string_forms(p)).collect();
        let (rows, _) = j
            .tail_containing(10, &needles, |r| wanted.iter().any(|w| r["path"] == *w))
            .unwrap();
        let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
        assert_eq!(bytes, [0, 1]);
    }

    #[test]
    fn lines_longer_than_a_block_are_read_whole_filtered_or_not() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let mut big = row("/w/big.txt", 1);
        // longer than the first block and than the largest one: carried across several reads
        big.extra.insert(
            "note".into(),
            Value::from("x".repeat(MAX_BLOCK + FIRST_BLOCK)),
        );
        let mut lines = String::new();
        for i in 0..3000u64 {
            lines.push_str(&row("/w/small.txt", i).to_line());
        }
        lines.push_str(&big.to_line());
        for i in 3000..3100u64 {
            lines.push_str(&row("/w/small.txt", i).to_line());
        }
        fs::write(j.path(), lines).unwrap();
        let wanted = json_string_forms("/w/big.txt");
        let (rows, stats) = j
            .tail_containing(5, &wanted, |r| r["path"] == "/w/big.txt")
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(stats.corrupt_lines, 0);
        assert_eq!(
            rows[0]["note"].as_str().map(str::len),
            Some(MAX_BLOCK + FIRST_BLOCK)
        );
        let (all, stats) = j.tail(200, |_| true).unwrap();
        assert_eq!(stats.corrupt_lines, 0);
        assert_eq!(all.len(), 200);
        assert_eq!(all[99]["path"], "/w/big.txt");
        assert_eq!(all[98]["bytes"], 2999);
        assert_eq!(all[100]["bytes"], 3000);
    }

    #[test]
    fn filtered_tail_finds_rows_written_by_the_python_original() {
        // json.dumps defaults: ", " and ": " separators, non-ASCII escaped as \uXXXX.
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let path = "/w/caf\u{e9} \u{1f600}.md";
        j.append(&row(path, 1)).unwrap().commit();
        let python = "{\"bytes\": 2, \"mode\": \"overwrite\", \
            \"path\": \"/w/caf\\u00e9 \\ud83d\\ude00.md\"}\n";
        append_raw(&j, python.as_bytes());
        j.append(&row("/w/other", 3)).unwrap().commit();
        let (rows, _) = j
            .tail_containing(10, &json_string_forms(path), |r| r["path"] == path)
            .unwrap();
        let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
        assert_eq!(bytes, vec![1, 2]);
    }

    #[test]
    fn filtered_tail_counts_a_torn_last_line() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        j.append(&row("a", 1)).unwrap().commit();
        append_raw(&j, b"{\"path\":\"a\",\"tor");
        let (rows, stats) = j
            .tail_containing(10, &json_string_forms("a"), |r| r["path"] == "a")
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(stats.corrupt_lines, 1);
    }

    #[test]
    fn rollback_removes_the_row() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        j.append(&row("a", 1)).unwrap().commit();
        j.append(&row("b", 2)).unwrap().rollback().unwrap();
        let (rows, _) = j.tail(10, |_| true).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["path"], "a");
    }

    #[test]
    fn corrupt_middle_lines_are_counted_not_fatal() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        j.append(&row("a", 1)).unwrap().commit();
        append_raw(&j, b"not json\n");
        j.append(&row("b", 2)).unwrap().commit();
        let (rows, stats) = j.tail(10, |_| true).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(stats.corrupt_lines, 1);
        let (rows, next, stats) = j.read_from(0).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(stats.corrupt_lines, 1);
        assert_eq!(next, fs::metadata(j.path()).unwrap().len());
    }
}
