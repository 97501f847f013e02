//! The result log, `.resilient_write/idempotency.jsonl`: the first results of keyed calls that
//! no journal row answers for (see [`super::idempotency`]), one line per call,
//! `{idempotency_key, request_sha256, tool, ts, result}`, in the journal's line format.
//!
//! Writers take the log's exclusive lock ([`ResultLog::hold`]) from their lookup to their
//! record, so one key's calls never run side by side in any process.
//!
//! **Compaction** keeps the file bounded. Rows older than the policy's `idempotency.max_age`
//! (default 7 days; [`Expiry`]) are dropped, every younger row is kept byte for byte, and so
//! are rows whose time cannot be read. It runs under the writers' lock, after a record that
//! takes the file past [`ResultLog::compaction_due`] (twice its size after this process's
//! last compaction, at least [`COMPACT_MIN_BYTES`]), and on request (`resilient-write gc`).
//! The kept rows go to a temp file that is fsynced, renamed over the log, and the directory
//! fsynced: a crash at any point leaves the old log or the new one, each holding every live
//! row. A writer that waited for the lock on the replaced file sees that the name now points
//! at another file and takes the new one's lock instead ([`ResultLog::hold`]); readers notice
//! the replacement by the file's identity ([`ResultRead::file`]).
//!
//! A retry of a dropped key finds no first result and runs as a new call, as every call does
//! in the original (which keeps no keys at all); tools that answer from their journal row
//! (`safe_write` and the others of [`super::idempotency`]) keep replaying for as long as the
//! journal holds the row.

use crate::util::fault::fault;
use crate::util::statefile::{Line, LineReader};
use rustix::fs::{FlockOperation, OFlags};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// File name of the result log inside the state directory.
pub const RESULTS_FILE: &str = "idempotency.jsonl";
/// The compaction's temp file, next to the log (one at most: each compaction replaces it).
const COMPACT_TEMP: &str = "idempotency.jsonl.compact";
/// The smallest size at which a record triggers a compaction.
pub const COMPACT_MIN_BYTES: u64 = 1 << 20;
/// Default age after which a first result is dropped.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);

/// How long first results are kept: the policy's `idempotency:` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub max_age: Duration,
}

impl Default for Expiry {
    fn default() -> Self {
        Expiry {
            max_age: DEFAULT_MAX_AGE,
        }
    }
}

impl Expiry {
    /// Parse the policy's raw `idempotency:` section (`None`: the defaults).
    pub fn from_policy(section: Option<&Value>) -> std::result::Result<Expiry, String> {
        let mut e = Expiry::default();
        let Some(map) = section.filter(|s| !s.is_null()) else {
            return Ok(e);
        };
        let map = map
            .as_object()
            .ok_or("idempotency: must be a mapping of max_age")?;
        for (k, v) in map {
            match k.as_str() {
                "max_age" => e.max_age = crate::write::pipeline::retention::parse_age(v)?,
                other => {
                    return Err(format!(
                        "idempotency: unknown key {other:?} (known: max_age)"
                    ));
                }
            }
        }
        Ok(e)
    }
}

/// Which file a path named when it was opened (device and inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// What [`ResultLog::read_from`] found.
#[derive(Debug, Default)]
pub struct ResultRead {
    /// The rows of the complete lines read (lines that are not JSON objects are skipped).
    pub rows: Vec<Map<String, Value>>,
    /// Where reading started: the offset asked for, or 0 when the file is shorter than that.
    pub start: u64,
    /// The offset after the last complete line.
    pub next: u64,
    /// The file read; `None` when there is none yet.
    pub file: Option<FileId>,
}

/// What a compaction did (or, dry, would do).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Rows kept: younger than `max_age`, or of unknown age.
    pub kept: usize,
    /// Rows dropped for their age.
    pub expired: usize,
    /// Lines dropped that no reader uses: not a JSON object with a key, or torn.
    pub unreadable: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// The file was replaced (false when there was nothing to drop, or dry).
    pub rewritten: bool,
}

/// The result log of one state directory. Clones share the compaction trigger.
#[derive(Debug, Clone)]
pub struct ResultLog {
    path: PathBuf,
    expiry: Expiry,
    /// Size past which the next record compacts (twice the size after the last compaction).
    due_at: Arc<AtomicU64>,
}

/// The result log locked exclusively; the lock goes with the descriptor when this drops.
pub struct HeldResultLog {
    file: File,
}

impl ResultLog {
    pub fn new(state_dir: &Path) -> ResultLog {
        ResultLog {
            path: state_dir.join(RESULTS_FILE),
            expiry: Expiry::default(),
            due_at: Arc::new(AtomicU64::new(COMPACT_MIN_BYTES)),
        }
    }

    /// The same log with first results kept for `expiry`.
    pub fn with_expiry(mut self, expiry: Expiry) -> ResultLog {
        self.expiry = expiry;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn expiry(&self) -> Expiry {
        self.expiry
    }

    /// The size past which a record compacts the log.
    pub fn compaction_due(&self) -> u64 {
        self.due_at.load(Ordering::Relaxed)
    }

    /// Lock the log until the returned guard drops (creating it, and the state directory,
    /// when missing). The lock taken is always that of the file the name points at once it
    /// is held: a compaction that replaced the file while this call waited sends it to the
    /// new one (rows appended to the replaced file would be lost).
    pub fn hold(&self) -> io::Result<HeldResultLog> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        for _ in 0..64 {
            // Never blocks and must be a regular file: a pipe planted here is a typed error.
            let file = crate::util::statefile::open_with(
                &self.path,
                OFlags::RDWR | OFlags::APPEND | OFlags::CREATE,
                0o600,
            )?;
            rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
            let held = FileId::of(&file.metadata()?);
            match std::fs::symlink_metadata(&self.path) {
                Ok(now) if FileId::of(&now) == held => return Ok(HeldResultLog { file }),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(format!(
            "{} was replaced 64 times while waiting for its lock",
            self.path.display()
        )))
    }

    /// The rows of the complete lines from `offset` on, and which file they came from.
    pub fn read_from(&self, offset: u64) -> io::Result<ResultRead> {
        let file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ResultRead::default()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let start = if offset > meta.len() { 0 } else { offset };
        let (lines, next) = complete_lines(&file, start)?;
        Ok(ResultRead {
            rows: lines.into_iter().filter_map(|(_, row)| row).collect(),
            start,
            next,
            file: Some(FileId::of(&meta)),
        })
    }

    /// Append `row` under `held`, then compact when the log has grown past
    /// [`ResultLog::compaction_due`]. A failed compaction is logged, not returned: the row
    /// is recorded.
    pub fn record(&self, mut held: HeldResultLog, row: &Value) -> io::Result<()> {
        held.append(row)?;
        let len = held.file.metadata()?.len();
        if len <= self.compaction_due() {
            return Ok(());
        }
        match self.compact_held(held, false) {
            Ok(c) => tracing::info!(
                kept = c.kept,
                expired = c.expired,
                bytes_before = c.bytes_before,
                bytes_after = c.bytes_after,
                "compacted {}",
                self.path.display()
            ),
            Err(e) => tracing::warn!(
                error = %e,
                "could not compact {}; every row is kept",
                self.path.display()
            ),
        }
        Ok(())
    }

    /// Drop the rows older than `max_age` now, whatever the log's size (`gc`); `dry_run`
    /// counts them and changes nothing.
    pub fn compact(&self, dry_run: bool) -> io::Result<Compacted> {
        if !self.path.exists() {
            return Ok(Compacted::default());
        }
        let held = self.hold()?;
        self.compact_held(held, dry_run)
    }

    /// Compact the log `held` locks (see the module documentation). The lock is released
    /// when this returns, after the new file is in place.
    fn compact_held(&self, held: HeldResultLog, dry_run: bool) -> io::Result<Compacted> {
        let file = &held.file;
        let bytes_before = file.metadata()?.len();
        let (lines, complete) = complete_lines(file, 0)?;
        let mut report = Compacted {
            bytes_before,
            ..Compacted::default()
        };
        let now = chrono::Utc::now();
        let mut kept = Vec::with_capacity(bytes_before as usize);
        let mut read_lines = 0;
        for (line, row) in &lines {
            read_lines += 1;
            let Some(row) = row.as_ref().filter(|r| r.contains_key("idempotency_key")) else {
                continue;
            };
            if self.expired(row, now) {
                report.expired += 1;
                continue;
            }
            report.kept += 1;
            kept.extend_from_slice(line);
            kept.push(b'\n');
        }
        let torn = usize::from(complete < bytes_before);
        report.unreadable = read_lines - report.kept - report.expired + torn;
        report.bytes_after = kept.len() as u64;
        if dry_run {
            return Ok(report);
        }
        // Next time when the file has doubled, even if nothing was dropped now: each
        // compaction reads the whole file, so it must not run at every record.
        self.due_at.store(
            report.bytes_after.saturating_mul(2).max(COMPACT_MIN_BYTES),
            Ordering::Relaxed,
        );
        if report.bytes_after != bytes_before {
            self.replace(&kept)?;
            report.rewritten = true;
        }
        drop(held);
        Ok(report)
    }

    fn expired(&self, row: &Map<String, Value>, now: chrono::DateTime<chrono::Utc>) -> bool {
        let Some(ts) = row
            .get("ts")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        else {
            return false;
        };
        (now - ts.with_timezone(&chrono::Utc))
            .to_std()
            .is_ok_and(|age| age > self.expiry.max_age)
    }

    /// Put `content` in place of the log: temp file, fsync, rename, directory fsync.
    fn replace(&self, content: &[u8]) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let temp = dir.join(COMPACT_TEMP);
        // A crashed compaction's temp file: ours to replace (only the lock holder writes it).
        match std::fs::remove_file(&temp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let written = crate::util::statefile::open_with(
            &temp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            0o600,
        )
        .and_then(|mut out| {
            if fault("idempotency_compact_crash_mid_temp") {
                out.write_all(&content[..content.len() / 2])?;
                std::process::abort();
            }
            out.write_all(content)?;
            out.sync_all()
        });
        if fault("idempotency_compact_crash_before_rename") {
            std::process::abort();
        }
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, &self.path)) {
            // The log is as it was; the temp file goes (a full disk is a likely cause).
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        if fault("idempotency_compact_crash_after_rename") {
            std::process::abort();
        }
        File::open(dir)?.sync_all()
    }
}

/// A line of the log and its row, when it is a JSON object.
type ParsedLine = (Vec<u8>, Option<Map<String, Value>>);

/// No cap on a line's length, unlike the other state files: a first result may be large (a
/// transaction's files), and a row the reader skipped would not replay.
const MAX_LINE: usize = usize::MAX;

/// The complete lines of `file` from `offset` on, each with its row when it is a JSON object,
/// and the offset after the last one.
fn complete_lines(file: &File, offset: u64) -> io::Result<(Vec<ParsedLine>, u64)> {
    let mut reader = file;
    reader.seek(SeekFrom::Start(offset))?;
    let mut lines = LineReader::new(reader, MAX_LINE);
    let mut out = Vec::new();
    let mut next = offset;
    while let Some(line) = lines.next_line()? {
        match line {
            Line::Text {
                complete: false, ..
            } => break,
            Line::Text { bytes, .. } => {
                next += bytes.len() as u64 + 1;
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let row = serde_json::from_slice::<Map<String, Value>>(&bytes).ok();
                out.push((bytes, row));
            }
            Line::TooLong { len } => {
                next += len + 1;
                out.push((Vec::new(), None));
            }
        }
    }
    Ok((out, next))
}

impl HeldResultLog {
    /// Append `row` as one line with one `write(2)` and `fdatasync` it. A torn last line (a
    /// crash mid-append) is closed with a newline first: readers skip it as one corrupt line
    /// and this row stays whole.
    pub fn append(&mut self, row: &Value) -> io::Result<()> {
        let mut line = String::new();
        let len = self.file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            self.file.read_exact_at(&mut last, len - 1)?;
            if last[0] != b'\n' {
                line.push('\n');
            }
        }
        line.push_str(&row.to_string());
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }
}

/// The result-log row of a call's first result.
pub fn result_row(key: &str, request_sha256: &str, tool: &str, result: &Value) -> Value {
    serde_json::json!({
        "idempotency_key": key,
        "request_sha256": request_sha256,
        "tool": tool,
        "ts": crate::journal::now_rfc3339(),
        "result": result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(key: &str, age: Duration, pad: usize) -> Value {
        let ts = chrono::Utc::now() - chrono::Duration::from_std(age).unwrap();
        json!({"idempotency_key": key, "request_sha256": "r", "tool": "tx_begin",
               "ts": ts.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
               "result": {"pad": "x".repeat(pad)}})
    }

    const DAY: Duration = Duration::from_secs(86_400);

    fn keys(log: &ResultLog) -> Vec<String> {
        log.read_from(0)
            .unwrap()
            .rows
            .iter()
            .map(|r| r["idempotency_key"].as_str().unwrap().to_string())
            .collect()
    }

    fn append(log: &ResultLog, row: &Value) {
        log.hold().unwrap().append(row).unwrap();
    }

    #[test]
    fn the_result_log_lock_excludes_a_second_holder_until_released() {
        let t = tempfile::tempdir().unwrap();
        let results = ResultLog::new(t.path());
        let held = results.hold().unwrap();
        let other = std::fs::File::open(results.path()).unwrap();
        assert!(
            rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).is_err(),
            "a second holder got the lock"
        );
        drop(held);
        assert!(rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).is_ok());
    }

    #[test]
    fn compaction_drops_rows_past_max_age_and_keeps_the_others_byte_for_byte() {
        let t = tempfile::tempdir().unwrap();
        let log = ResultLog::new(t.path());
        append(&log, &at("old", 8 * DAY, 10));
        append(&log, &at("live", 6 * DAY, 10));
        append(&log, &at("older", 30 * DAY, 10));
        append(&log, &json!({"idempotency_key": "undated", "result": {}}));
        append(&log, &json!({"no_key": true}));
        append(&log, &at("new", Duration::ZERO, 10));
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap();
        raw.write_all(b"not json\n{\"idempotency_key\": \"torn")
            .unwrap();
        let before = std::fs::read_to_string(log.path()).unwrap();
        let dry = log.compact(true).unwrap();
        assert_eq!(
            (dry.kept, dry.expired, dry.unreadable),
            (3, 2, 3),
            "{dry:?}"
        );
        assert!(!dry.rewritten);
        assert_eq!(std::fs::read_to_string(log.path()).unwrap(), before);
        let done = log.compact(false).unwrap();
        assert!(
            done.rewritten && done.bytes_after < done.bytes_before,
            "{done:?}"
        );
        assert_eq!(keys(&log), ["live", "undated", "new"]);
        let after = std::fs::read_to_string(log.path()).unwrap();
        let kept: Vec<&str> = before
            .lines()
            .filter(|l| {
                ["\"live\"", "\"undated\"", "\"new\""]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .collect();
        assert_eq!(after, format!("{}\n", kept.join("\n")));
        assert_eq!(done.bytes_after, after.len() as u64);
        assert!(!t.path().join(COMPACT_TEMP).exists());
        // Nothing left to drop: the file is left as it is.
        let again = log.compact(false).unwrap();
        assert!(!again.rewritten && again.expired == 0, "{again:?}");
    }

    #[test]
    fn max_age_comes_from_the_policy() {
        let log = ResultLog::new(Path::new("/nonexistent"))
            .with_expiry(Expiry::from_policy(Some(&json!({"max_age": "1d"}))).unwrap());
        assert_eq!(log.expiry().max_age, DAY);
        let row = at("k", 2 * DAY, 0);
        assert!(log.expired(row.as_object().unwrap(), chrono::Utc::now()));
        assert_eq!(Expiry::from_policy(None).unwrap().max_age, 7 * DAY);
        assert_eq!(
            Expiry::from_policy(Some(&Value::Null)).unwrap(),
            Expiry::default()
        );
        assert_eq!(
            Expiry::from_policy(Some(&json!({"max_age": 60})))
                .unwrap()
                .max_age,
            Duration::from_secs(60)
        );
        for bad in [json!({"max_age": "7 days"}), json!({"ttl": 1}), json!([1])] {
            assert!(Expiry::from_policy(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_record_past_the_trigger_compacts_and_the_next_trigger_is_twice_the_size() {
        let t = tempfile::tempdir().unwrap();
        let log = ResultLog::new(t.path());
        // Just under the trigger: old rows and one live row.
        let pad = 4000;
        let n = COMPACT_MIN_BYTES as usize / (pad + 150);
        for i in 0..n {
            append(&log, &at(&format!("old{i}"), 10 * DAY, pad));
        }
        append(&log, &at("live", DAY, 10));
        assert!(std::fs::metadata(log.path()).unwrap().len() <= COMPACT_MIN_BYTES);
        assert_eq!(keys(&log).len(), n + 1, "no compaction below the trigger");
        // The record that crosses it compacts.
        log.record(log.hold().unwrap(), &at("first", Duration::ZERO, 5 * pad))
            .unwrap();
        assert_eq!(keys(&log), ["live", "first"]);
        assert_eq!(log.compaction_due(), COMPACT_MIN_BYTES);
        // Only live rows past the trigger: kept, and the next compaction waits for twice that.
        let all_live = ResultLog::new(&t.path().join("b"));
        for i in 0..n + 10 {
            append(&all_live, &at(&format!("k{i}"), DAY, pad));
        }
        all_live
            .record(all_live.hold().unwrap(), &at("last", DAY, pad))
            .unwrap();
        let size = std::fs::metadata(all_live.path()).unwrap().len();
        assert_eq!(keys(&all_live).len(), n + 11);
        assert_eq!(all_live.compaction_due(), 2 * size);
    }

    #[test]
    fn a_writer_that_waited_on_the_replaced_file_appends_to_the_new_one() {
        let t = tempfile::tempdir().unwrap();
        let log = ResultLog::new(t.path());
        append(&log, &at("old", 30 * DAY, 10));
        append(&log, &at("live", DAY, 10));
        let held = log.hold().unwrap();
        let waiter = {
            let log = log.clone();
            std::thread::spawn(move || append(&log, &at("late", Duration::ZERO, 10)))
        };
        // The waiter opened the old file and waits for its lock.
        std::thread::sleep(Duration::from_millis(200));
        let c = log.compact_held(held, false).unwrap();
        assert!(c.rewritten);
        waiter.join().unwrap();
        assert_eq!(keys(&log), ["live", "late"]);
    }

    #[test]
    fn a_crashed_compactions_temp_file_is_replaced_by_the_next() {
        let t = tempfile::tempdir().unwrap();
        let log = ResultLog::new(t.path());
        append(&log, &at("old", 30 * DAY, 10));
        append(&log, &at("live", DAY, 10));
        std::fs::write(t.path().join(COMPACT_TEMP), "half a compaction").unwrap();
        assert!(log.compact(false).unwrap().rewritten);
        assert_eq!(keys(&log), ["live"]);
        assert!(!t.path().join(COMPACT_TEMP).exists());
    }
}
