//! The audit journal: `.resilient_write/journal.jsonl`, one JSON object per line, sorted keys.
//!
//! Guarantees:
//! - A row is appended with a single `write(2)` on an `O_APPEND` descriptor while holding an
//!   exclusive `flock` on the journal, so rows of concurrent processes never interleave.
//! - A row is `fdatasync`ed before [`Journal::append`] returns, so a write the server
//!   acknowledges never loses its row on power loss.
//! - A torn last line (a process killed mid-append) is cut off, under the lock, before the next
//!   append and at start; readers skip it (and count corrupt lines) instead of failing.
//! - Content is never copied into the journal: rows carry hashes, sizes and names only.
//! - [`Journal::tail`] reads backwards from the end in blocks, so it costs what it returns, not
//!   the size of the journal.
//!
//! The pipeline appends a row *before* renaming the temp file over the target and keeps the
//! journal locked until the rename is done; if the rename fails the row is truncated away (see
//! `pipeline.rs` and docs/ARCHITECTURE.md for why this order).

use rustix::fs::FlockOperation;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// File name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// A parsed journal row.
pub type Row = Map<String, Value>;

/// One journal row. Serialised with sorted keys (it goes through a `BTreeMap`).
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
    /// The row as one line of JSON with sorted keys, newline-terminated.
    pub fn to_line(&self) -> String {
        let mut m: BTreeMap<&str, Value> = BTreeMap::new();
        for (k, v) in &self.extra {
            m.insert(k.as_str(), v.clone());
        }
        m.insert("journal_id", Value::from(self.journal_id.clone()));
        m.insert("ts", Value::from(self.ts.clone()));
        m.insert("path", Value::from(self.path.clone()));
        m.insert("sha256", Value::from(self.sha256.clone()));
        m.insert(
            "prev_sha256",
            self.prev_sha256
                .clone()
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        m.insert("bytes", Value::from(self.bytes));
        m.insert("mode", Value::from(self.mode.clone()));
        m.insert("caller", Value::from(self.caller.clone()));
        m.insert("tool", Value::from(self.tool.clone()));
        // A BTreeMap of Values serialises infallibly.
        let mut line = serde_json::to_string(&m).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// A fresh time-ordered journal id.
pub fn new_journal_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// RFC 3339 UTC timestamp with microseconds, as journal rows carry.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The journal of one state directory.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
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
    /// Lines that were not JSON objects (skipped).
    pub corrupt_lines: usize,
}

impl Journal {
    pub fn new(state_dir: &Path) -> Journal {
        Journal {
            path: state_dir.join(JOURNAL_FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_for_append(&self) -> io::Result<File> {
        let open = || {
            OpenOptions::new()
                .append(true)
                .read(true)
                .create(true)
                .mode(0o644)
                .open(&self.path)
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
            let n = file.write(line.as_bytes())?;
            if n != line.len() {
                // A short write: the disk (or a quota) filled up in the middle of the row.
                // Writing the rest tells why (ENOSPC, EDQUOT, EFBIG), so the envelope says
                // quota_exceeded; the row is cut off below either way.
                return Err(match file.write(&line.as_bytes()[n..]) {
                    Err(e) => e,
                    Ok(_) => io::Error::new(
                        io::ErrorKind::WriteZero,
                        "short write appending a journal row",
                    ),
                });
            }
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
        let file = match OpenOptions::new().read(true).write(true).open(&self.path) {
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
        mut keep: impl FnMut(&Map<String, Value>) -> bool,
    ) -> io::Result<(Vec<Map<String, Value>>, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut out = Vec::new();
        if n == 0 {
            return Ok((out, stats));
        }
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, stats)),
            Err(e) => return Err(e),
        };
        let mut pos = file.seek(SeekFrom::End(0))?;
        let mut carry: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut first = true;
        'outer: while pos > 0 {
            let start = pos.saturating_sub(buf.len() as u64);
            let len = (pos - start) as usize;
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut buf[..len])?;
            let mut block = buf[..len].to_vec();
            block.extend_from_slice(&carry);
            // Lines fully inside `block` except possibly the first (which may continue
            // further back): split at newlines, walk from the end.
            let mut lines: Vec<&[u8]> = block.split(|&b| b == b'\n').collect();
            let head = if start > 0 {
                lines.remove(0).to_vec()
            } else {
                Vec::new()
            };
            while let Some(line) = lines.pop() {
                if first {
                    first = false;
                    if line.is_empty() {
                        continue; // the trailing newline
                    }
                    // No trailing newline: a torn row being written or left by a crash.
                    stats.corrupt_lines += 1;
                    continue;
                }
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                match serde_json::from_slice::<Map<String, Value>>(line) {
                    Ok(row) => {
                        if keep(&row) {
                            out.push(row);
                            if out.len() == n {
                                break 'outer;
                            }
                        }
                    }
                    Err(_) => stats.corrupt_lines += 1,
                }
            }
            carry = head;
            pos = start;
        }
        out.reverse();
        Ok((out, stats))
    }

    /// Read every line, noting which do not parse; `progress(bytes_read, total)` is called as
    /// it goes. A missing journal is empty.
    pub fn check_lines(&self, mut progress: impl FnMut(u64, u64)) -> io::Result<LineCheck> {
        use std::io::BufRead;
        let mut check = LineCheck::default();
        let file = match File::open(&self.path) {
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

    /// Every row from byte `offset` to the end, with the offset just past the last full line.
    /// Used to keep in-memory indexes (idempotency keys) current without rereading.
    pub fn read_from(&self, offset: u64) -> io::Result<(Vec<Row>, u64, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut file = match File::open(&self.path) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut f = OpenOptions::new().append(true).open(j.path()).unwrap();
        f.write_all(b"{\"journal_id\":\"tor").unwrap();
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
        OpenOptions::new()
            .append(true)
            .open(j.path())
            .unwrap()
            .write_all(b"not json\n")
            .unwrap();
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
