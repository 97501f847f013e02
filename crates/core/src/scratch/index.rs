//! The scratch index's protocol (docs/scratch-index.md): `index.jsonl`, one row per deposit,
//! in the original's format. A deposit appends its row ([`append_row`]: one `write(2)` under
//! the scratch directory's lock, `fdatasync`ed, read back, journaled, cut off again on any
//! failure); reads parse every line, skipping and reporting torn or corrupt ones
//! ([`read_index`]) and answer from the live view ([`live_index`]); only `doctor --fix`
//! rewrites the file, as its live view ([`compact_index`]).

use super::{INDEX_FILE, open_scratch};
use crate::envelope::{Failure, Result};
use crate::hash::{is_sha256_hex, sha256_hex};
use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
use crate::state::StateDir;
use crate::store::Store;
use crate::util::dirlock::DirLock;
use crate::util::statefile::{Line, LineReader, MAX_STATE_LINE};
use crate::util::sys::errno_io;
use crate::workspace::Target;
use crate::write::pipeline::{Body, Caller, Decision, Plan};
use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The field of a compacted index row that counts the deposits it stands for (absent: one).
pub const DEPOSITS_FIELD: &str = "deposits";
/// `doctor` suggests compaction when at least this many rows are superseded and they are at
/// least a quarter of the index ([`compaction_worthwhile`]).
pub const COMPACT_MIN_SUPERSEDED: usize = 100;

/// A line of `index.jsonl` that was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

/// Open `index.jsonl` for appending (and the read-back), creating it 0600 when missing,
/// without following a symlink or blocking on a planted pipe. Returns whether it was created.
fn open_index_for_append(dir: &StateDir, shown: &Path) -> io::Result<(File, bool)> {
    let flags =
        OFlags::RDWR | OFlags::APPEND | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let open = |extra: OFlags| {
        rustix::fs::openat(
            &dir.dir,
            INDEX_FILE,
            flags | extra,
            Mode::from_raw_mode(0o600),
        )
    };
    let (fd, created) = match open(OFlags::empty()) {
        Ok(fd) => (fd, false),
        Err(e) if e == rustix::io::Errno::NOENT => match open(OFlags::CREATE | OFlags::EXCL) {
            Ok(fd) => (fd, true),
            // Made meanwhile by a writer that does not take the lock (the original).
            Err(e) if e == rustix::io::Errno::EXIST => (open(OFlags::empty())?, false),
            Err(e) => return Err(errno_io(e)),
        },
        Err(e) => return Err(errno_io(e)),
    };
    Ok((crate::util::statefile::regular(fd, shown)?, created))
}

/// Append one row to the index, under the scratch directory's lock (a deposit's step 2):
/// `replay` (an idempotency key already answered: its answer, nothing written), then `line`
/// (one index row,
/// newline-terminated) appended with one `write(2)`, `fdatasync`ed and read back, then its
/// journal row (the row's `sha256` and `bytes` describe the appended row, `index_offset` where
/// it starts). A row that could not be written whole, read back or journaled is cut off again
/// before the failure is returned: nothing is left that was not acknowledged, and no earlier
/// byte is ever rewritten. After a torn last line (a crash of a writer), the row starts on a
/// new line so the fragment stays a line of its own, skipped on read.
pub(super) fn append_row<T>(
    store: &Store,
    dir: &StateDir,
    target: &Target,
    who: &Caller,
    line: &[u8],
    mut extra: BTreeMap<String, Value>,
    replay: &dyn Fn() -> Result<Option<T>>,
) -> Result<Option<T>> {
    let shown = dir.path.join(INDEX_FILE);
    // The pipeline's lock on this directory: no blob or index write, compaction or other
    // deposit meanwhile, in this process or another.
    let _lock = DirLock::take(dir.dir.as_fd())
        .map_err(|e| Failure::io("lock scratch directory", &dir.path, e))?;
    if let Some(d) = replay()? {
        return Ok(Some(d));
    }
    let shown = shown.as_path();
    let fail = |op: &'static str| move |e: io::Error| Failure::io(op, shown, e);
    let (mut file, created) =
        open_index_for_append(dir, shown).map_err(fail("open scratch index"))?;
    let st = rustix::fs::fstat(&file).map_err(|e| fail("stat scratch index")(errno_io(e)))?;
    if st.st_mode & 0o077 != 0 {
        // An index the original left 0644: owner-only, as a rewrite would leave it.
        rustix::fs::fchmod(&file, Mode::from_raw_mode(st.st_mode & 0o600))
            .map_err(|e| fail("make scratch index owner-only")(errno_io(e)))?;
    }
    let offset = u64::try_from(st.st_size).unwrap_or(0);
    let mut record = Vec::with_capacity(line.len() + 1);
    if offset > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, offset - 1)
            .map_err(fail("read scratch index"))?;
        if last[0] != b'\n' {
            record.push(b'\n');
        }
    }
    record.extend_from_slice(line);
    // Cut the file back to `offset` (durably) and return `failure`.
    let cut_back = |file: &File, failure: Failure| -> Failure {
        let _ = file.set_len(offset);
        let _ = file.sync_data();
        failure
    };
    let appended = (|| {
        crate::journal::group::write_whole(&mut file, &record)?;
        // fdatasync also makes the new size durable (needed to read the row back).
        file.sync_data()?;
        let mut back = vec![0u8; record.len()];
        file.read_exact_at(&mut back, offset)?;
        if back != record {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the appended index row read back differently",
            ));
        }
        if created {
            rustix::fs::fsync(&dir.dir).map_err(errno_io)?;
            for d in &dir.created {
                rustix::fs::fsync(d).map_err(errno_io)?;
            }
        }
        Ok(())
    })();
    if let Err(e) = appended {
        return Err(cut_back(&file, fail("append scratch index row")(e)));
    }

    let starts = offset + (record.len() - line.len()) as u64;
    extra.insert("index_offset".into(), json!(starts));
    if let Some(root) = &target.row_path.root {
        extra.insert("root".into(), json!(root));
    }
    let row = JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: target.row_path.path.clone(),
        sha256: sha256_hex(line),
        prev_sha256: None,
        bytes: line.len() as u64,
        mode: if offset == 0 { "create" } else { "append" }.into(),
        caller: who.caller.clone(),
        tool: who.tool.clone(),
        extra,
    };
    let journal = store.pipeline().journal();
    if let Err(e) = journal.commit_row(&row, Box::new(|| Ok(()))) {
        let e = match e {
            crate::journal::group::CommitError::Append(e)
            | crate::journal::group::CommitError::Apply(e) => e,
        };
        return Err(cut_back(
            &file,
            Failure::io("append journal row", journal.path(), e),
        ));
    }
    Ok(None)
}

/// One parsed row of `index.jsonl`.
pub type IndexRow = Map<String, Value>;

/// The rows of an index (in file order) and the lines skipped as torn or corrupt.
fn parse_index<R: Read>(reader: R) -> io::Result<(Vec<IndexRow>, Vec<SkippedLine>)> {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut lines = LineReader::new(reader, MAX_STATE_LINE);
    while let Some(line) = lines.next_line()? {
        let at = usize::try_from(lines.line).unwrap_or(usize::MAX);
        let (raw, complete) = match line {
            Line::Text { bytes, complete } => (bytes, complete),
            Line::TooLong { len } => {
                skipped.push(SkippedLine {
                    line: at,
                    reason: format!(
                        "line of {len} bytes is longer than {MAX_STATE_LINE}: not read"
                    ),
                });
                continue;
            }
        };
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&raw) {
            Ok(Value::Object(m))
                if m.get("sha256")
                    .and_then(Value::as_str)
                    .is_some_and(is_sha256_hex) =>
            {
                rows.push(m);
            }
            Ok(_) => skipped.push(SkippedLine {
                line: at,
                reason: "not an index row (an object with a sha256)".into(),
            }),
            Err(e) => skipped.push(SkippedLine {
                line: at,
                reason: if complete {
                    format!("corrupt line: {e}")
                } else {
                    format!("torn last line (an interrupted write?): {e}")
                },
            }),
        }
    }
    Ok((rows, skipped))
}

/// The index rows (in file order) and the lines skipped as torn or corrupt.
pub fn read_index(store: &Store) -> Result<(Vec<IndexRow>, Vec<SkippedLine>)> {
    let Some(dir) = open_scratch(store, false)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let shown = dir.path.join(INDEX_FILE);
    let file = match crate::util::statefile::open_read_at(&dir.dir, Path::new(INDEX_FILE), &shown) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(e) => return Err(Failure::io("read scratch index", &shown, e)),
    };
    parse_index(file).map_err(|e| Failure::io("read scratch index", &shown, e))
}

/// How many deposits an index row stands for: its `deposits` field (a compacted row that
/// folded several), else one.
pub fn row_deposits(row: &IndexRow) -> u64 {
    row.get(DEPOSITS_FIELD)
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// The live view of the index: for each key (sha256, label), its latest row, which supersedes
/// the earlier ones, with `deposits` set to how many deposits the key has had when more than
/// one; in the order of each key's latest row. So the latest row matching any query by
/// sha256, label or both is the same in `rows` and in the live view, and the live view of a
/// live view is itself: what [`compact_index`] writes. (The scratchpad has no delete, so there
/// are no tombstones.)
pub fn live_index(rows: &[IndexRow]) -> Vec<IndexRow> {
    let mut latest: HashMap<(&str, String), (usize, u64)> = HashMap::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let sha = r.get("sha256").and_then(Value::as_str).unwrap_or_default();
        let label = r
            .get("label")
            .map_or_else(|| "null".into(), Value::to_string);
        let e = latest.entry((sha, label)).or_insert((i, 0));
        e.0 = i;
        e.1 = e.1.saturating_add(row_deposits(r));
    }
    let mut keep: Vec<(usize, u64)> = latest.into_values().collect();
    keep.sort_unstable();
    keep.into_iter()
        .map(|(i, n)| {
            let mut r = rows[i].clone();
            if n > 1 {
                r.insert(DEPOSITS_FIELD.into(), json!(n));
            } else {
                r.remove(DEPOSITS_FIELD);
            }
            r
        })
        .collect()
}

/// Whether compacting an index of `rows` rows whose live view has `live` rows is worth
/// suggesting: at least [`COMPACT_MIN_SUPERSEDED`] superseded rows, a quarter of the file.
pub fn compaction_worthwhile(rows: usize, live: usize) -> bool {
    let superseded = rows.saturating_sub(live);
    superseded >= COMPACT_MIN_SUPERSEDED && superseded.saturating_mul(4) >= rows
}

/// What [`compact_index`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Rows read (readable lines).
    pub rows_before: usize,
    /// Rows written: one per live key.
    pub rows_after: usize,
    /// Torn or corrupt lines dropped.
    pub dropped_lines: usize,
    /// Whether the file was rewritten (false: it already was its live view).
    pub rewritten: bool,
}

/// Rewrite `index.jsonl` as its live view ([`live_index`]): one row per (sha256, label), the
/// torn and corrupt lines dropped. Through the pipeline (temp file, fsync, read-back, journal,
/// rename, directory fsync) and under its lock, which deposits take too, so a concurrent
/// deposit is never lost. Blobs are not touched. Only `doctor --fix` calls it: deposits only
/// ever append.
pub fn compact_index(store: &Store, who: &Caller) -> Result<Compacted> {
    let Some(dir) = open_scratch(store, false)? else {
        return Ok(Compacted::default());
    };
    let target = dir.target(INDEX_FILE)?;
    let mut extra = BTreeMap::new();
    extra.insert("scratch".to_string(), json!(true));
    extra.insert("compacted".to_string(), json!(true));
    let (_, done) = store.pipeline().commit(&target, who, |existing| {
        let Some(existing) = existing else {
            return Ok(Decision::Skip(Compacted::default()));
        };
        let (rows, skipped) = parse_index(existing.bytes.as_slice())
            .map_err(|e| Failure::io("read scratch index", &target.display, e))?;
        let live = live_index(&rows);
        let mut body = Vec::with_capacity(existing.bytes.len());
        for r in &live {
            serde_json::to_writer(&mut body, r)
                .map_err(|e| Failure::Internal(format!("serialising index row: {e}")))?;
            body.push(b'\n');
        }
        let mut done = Compacted {
            rows_before: rows.len(),
            rows_after: live.len(),
            dropped_lines: skipped.len(),
            rewritten: false,
        };
        if body == existing.bytes {
            return Ok(Decision::Skip(done));
        }
        done.rewritten = true;
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode: "overwrite".into(),
                create_only: false,
                extra,
                new_file_mode: Some(0o600),
            },
            done,
        ))
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::deposit;
    use crate::store::Config;
    use std::os::unix::fs::MetadataExt;

    /// A store over a fresh workspace, and the workspace's root.
    fn fresh() -> (tempfile::TempDir, std::path::PathBuf, std::sync::Arc<Store>) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut config = Config::new(root.clone());
        config.sweep_on_start = false;
        (t, root, Store::open(config))
    }

    fn index_path(root: &Path) -> std::path::PathBuf {
        root.join(".resilient_write/scratch/index.jsonl")
    }

    fn doctor() -> Caller {
        Caller {
            caller: "test".into(),
            tool: "doctor".into(),
        }
    }

    fn row(sha: u8, label: Option<&str>, at: &str) -> IndexRow {
        let mut m = Map::new();
        m.insert("sha256".into(), json!(format!("{sha:02x}").repeat(32)));
        m.insert("label".into(), json!(label));
        m.insert("created_at".into(), json!(at));
        m
    }

    #[test]
    fn a_deposit_appends_one_row_and_never_rewrites_earlier_bytes() {
        let (_t, root, store) = fresh();
        deposit(&store, b"first", Some("a"), None, None).unwrap();
        let index = index_path(&root);
        let inode = std::fs::metadata(&index).unwrap().ino();
        let mut before = std::fs::read(&index).unwrap();
        for k in 0..5 {
            let content = format!("deposit {k}");
            deposit(&store, content.as_bytes(), Some("b"), None, None).unwrap();
            let after = std::fs::read(&index).unwrap();
            assert!(
                after.starts_with(&before),
                "deposit {k} rewrote earlier bytes"
            );
            let added = &after[before.len()..];
            assert_eq!(added.iter().filter(|&&b| b == b'\n').count(), 1);
            assert!(added.ends_with(b"\n"));
            let row: IndexRow = serde_json::from_slice(added).unwrap();
            assert_eq!(row["sha256"], json!(sha256_hex(content.as_bytes())));
            // Appended in place: the same file, not a replacement renamed over it.
            assert_eq!(std::fs::metadata(&index).unwrap().ino(), inode);
            before = after;
        }
        // Each append is journaled with the appended row's hash, size and offset.
        let rows: Vec<Value> = std::fs::read_to_string(root.join(".resilient_write/journal.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|r: &Value| r["path"].as_str().unwrap().ends_with("index.jsonl"))
            .collect();
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[0]["mode"], "create");
        assert_eq!(rows[5]["mode"], "append");
        let off = rows[5]["index_offset"].as_u64().unwrap() as usize;
        let last = &before[off..];
        assert_eq!(rows[5]["sha256"], json!(sha256_hex(last)));
        assert_eq!(rows[5]["bytes"], json!(last.len()));
    }

    #[test]
    fn a_torn_tail_is_skipped_and_the_next_deposit_starts_on_its_own_line() {
        let (_t, root, store) = fresh();
        deposit(&store, b"kept", Some("kept"), None, None).unwrap();
        let index = index_path(&root);
        let mut torn = std::fs::read(&index).unwrap();
        torn.extend_from_slice(br#"{"bytes":4,"label":"torn","sha256":"ab"#);
        std::fs::write(&index, &torn).unwrap();
        let (rows, skipped) = read_index(&store).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].reason.contains("torn last line"), "{skipped:?}");

        deposit(&store, b"after", Some("after"), None, None).unwrap();
        let now = std::fs::read(&index).unwrap();
        assert!(now.starts_with(&torn), "the earlier bytes were rewritten");
        let (rows, skipped) = read_index(&store).unwrap();
        let labels: Vec<&Value> = rows.iter().map(|r| &r["label"]).collect();
        assert_eq!(labels, [&json!("kept"), &json!("after")]);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].reason.contains("corrupt line"), "{skipped:?}");
    }

    #[test]
    fn later_rows_supersede_earlier_ones_of_the_same_sha256_and_label() {
        let rows = vec![
            row(1, Some("a"), "t1"),
            row(1, Some("b"), "t2"),
            row(2, Some("a"), "t3"),
            row(1, Some("a"), "t4"),
            row(1, None, "t5"),
            row(1, None, "t6"),
        ];
        let live = live_index(&rows);
        let seen: Vec<(u8, Value, Value, u64)> = live
            .iter()
            .map(|r| {
                let sha = u8::from_str_radix(&r["sha256"].as_str().unwrap()[..2], 16).unwrap();
                (
                    sha,
                    r["label"].clone(),
                    r["created_at"].clone(),
                    row_deposits(r),
                )
            })
            .collect();
        // In the order of each key's latest row; the latest row wins and counts the others.
        assert_eq!(
            seen,
            [
                (1, json!("b"), json!("t2"), 1),
                (2, json!("a"), json!("t3"), 1),
                (1, json!("a"), json!("t4"), 2),
                (1, Value::Null, json!("t6"), 2),
            ]
        );
        assert!(!live[0].contains_key(DEPOSITS_FIELD));
        assert_eq!(live[2][DEPOSITS_FIELD], json!(2));
        // The live view of a live view is itself; a compacted row keeps counting.
        assert_eq!(live_index(&live), live);
        let mut more = live.clone();
        more.push(row(1, Some("a"), "t7"));
        let again = live_index(&more);
        assert_eq!(again.last().unwrap()[DEPOSITS_FIELD], json!(3));
        assert_eq!(again.last().unwrap()["created_at"], json!("t7"));
    }

    #[test]
    fn compaction_writes_the_live_view_and_lookups_see_the_same() {
        let (_t, root, store) = fresh();
        for k in 0..30 {
            let content = format!("blob {}", k % 3);
            deposit(
                &store,
                content.as_bytes(),
                Some(&format!("l{}", k % 4)),
                None,
                None,
            )
            .unwrap();
        }
        let index = index_path(&root);
        let mut damaged = std::fs::read(&index).unwrap();
        damaged.extend_from_slice(b"not json\n{\"sha256\": \"to");
        std::fs::write(&index, &damaged).unwrap();
        let (rows, skipped) = read_index(&store).unwrap();
        assert_eq!((rows.len(), skipped.len()), (30, 2));
        let live = live_index(&rows);
        assert_eq!(live.len(), 12);

        let done = compact_index(&store, &doctor()).unwrap();
        assert_eq!(
            done,
            Compacted {
                rows_before: 30,
                rows_after: 12,
                dropped_lines: 2,
                rewritten: true
            }
        );
        let (after, skipped) = read_index(&store).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(after, live);
        assert_eq!(live_index(&after), live_index(&rows));
        let total: u64 = after.iter().map(row_deposits).sum();
        assert_eq!(total, 30);
        // Owner-only, one line per row, and a second compaction has nothing to do.
        let meta = std::fs::metadata(&index).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        let again = compact_index(&store, &doctor()).unwrap();
        assert!(!again.rewritten);
        // Deposits append to the compacted file.
        let before = std::fs::read(&index).unwrap();
        deposit(&store, b"blob 0", Some("l0"), None, None).unwrap();
        assert!(std::fs::read(&index).unwrap().starts_with(&before));
        assert!(compaction_worthwhile(400, 300));
        assert!(!compaction_worthwhile(400, 301));
        assert!(!compaction_worthwhile(150, 51));
    }

    #[test]
    fn a_deposit_whose_journal_row_fails_leaves_the_index_as_it_was() {
        let (_t, root, store) = fresh();
        deposit(&store, b"first", Some("a"), None, None).unwrap();
        let index = index_path(&root);
        let before = std::fs::read(&index).unwrap();
        // A journal that cannot be appended to: the row is cut off again.
        let journal = root.join(".resilient_write/journal.jsonl");
        std::fs::remove_file(&journal).unwrap();
        std::fs::create_dir(&journal).unwrap();
        let err = deposit(&store, b"first", Some("b"), None, None).unwrap_err();
        assert!(err.to_string().contains("journal"), "{err}");
        assert_eq!(std::fs::read(&index).unwrap(), before);
    }
}
