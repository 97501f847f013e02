//! L4: the content-addressed scratchpad. Raw material that must exist but does not belong in
//! the workspace (captured credentials, PII fixtures, binary blobs, the originals of redacted
//! secrets) is kept as `.resilient_write/scratch/<sha256>.bin`, with one row per deposit in
//! `scratch/index.jsonl` {sha256, label, content_type, bytes, encoding, notes, created_at}
//! (the original's format), so several labels alias one blob.
//!
//! Guarantees:
//! - Blobs and index rows are written through the write pipeline (atomic, verified,
//!   journaled); the journal records hashes and sizes, never content or labels.
//! - The same bytes are stored once (deduplicated); a blob found tampered with is repaired by
//!   the next deposit of its true content.
//! - New files are created 0600 and the directory 0700 (a more open existing directory is
//!   tightened): the scratchpad holds secrets.
//! - Reads re-hash the blob: content that no longer matches its address is `write_corruption`.
//! - A torn or corrupt line of `index.jsonl` is skipped and reported, never fatal.
//! - `RW_SCRATCH_DISABLE_GET` (any non-empty value) makes the scratchpad write-only.

use crate::envelope::{Failure, Result};
use crate::hash::{is_sha256_hex, sha256_hex};
use crate::pipeline::{Body, Caller, Decision, Plan, read_existing};
use crate::state::{StateDir, open_subdir};
use crate::store::Store;
use crate::util::statefile::{Line, LineReader, MAX_STATE_LINE};
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCRATCH_DIR: &str = "scratch";
pub const INDEX_FILE: &str = "index.jsonl";
pub const DISABLE_GET_ENV: &str = "RW_SCRATCH_DISABLE_GET";

/// Metadata of a deposit, as recorded in the index.
#[derive(Debug, Clone, Default)]
pub struct Meta<'a> {
    pub label: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub notes: Option<&'a str>,
    /// How the content was sent: "utf-8" or "base64".
    pub encoding: &'a str,
}

/// A completed deposit.
#[derive(Debug, Clone)]
pub struct Deposit {
    pub sha256: String,
    /// `.resilient_write/scratch/<sha256>.bin`
    pub scratch_path: String,
    pub bytes: u64,
    /// The blob was already stored: only an index row was added.
    pub dedup: bool,
    /// Journal id of the blob write (absent when deduplicated).
    pub journal_id: Option<String>,
    /// The index row written.
    pub entry: Map<String, Value>,
    pub warnings: Vec<String>,
}

/// A line of `index.jsonl` that was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

/// Display path of a blob.
pub fn blob_path(sha256: &str) -> String {
    format!(
        "{}/{SCRATCH_DIR}/{sha256}.bin",
        crate::layout::STATE_DIR_NAME
    )
}

fn open_scratch(svc: &Store, create: bool) -> Result<Option<StateDir>> {
    open_subdir(svc.state_dir(), &[SCRATCH_DIR], 0o700, create)
}

/// Deposit `bytes` with the given metadata, as tool `scratch_put` would: the library entry
/// point for other layers (e.g. `redact` depositing originals).
pub fn deposit(
    svc: &Store,
    bytes: &[u8],
    label: Option<&str>,
    content_type: Option<&str>,
    notes: Option<&str>,
) -> Result<Deposit> {
    let encoding = if std::str::from_utf8(bytes).is_ok() {
        "utf-8"
    } else {
        "base64"
    };
    let who = Caller {
        caller: svc.caller(),
        tool: "scratch_put".into(),
    };
    deposit_as(
        svc,
        &who,
        bytes,
        &Meta {
            label,
            content_type,
            notes,
            encoding,
        },
    )
}

/// Deposit `bytes`, journaled as `who`.
pub fn deposit_as(svc: &Store, who: &Caller, bytes: &[u8], meta: &Meta) -> Result<Deposit> {
    deposit_keyed(svc, who, bytes, meta, BTreeMap::new(), &|| Ok(None))?
        .map_err(|_| Failure::Internal("a deposit without a key was replayed".into()))
}

/// [`deposit_as`] with an idempotency key's journal fields (`extra`, added to the index row's
/// journal row with the blob's address, size, dedup and journal id) and its `replay` check,
/// run under the index's lock: `Err(row)` when the call repeats the journaled call `row`
/// (the blob write before it is content-addressed, so a replay adds nothing).
pub fn deposit_keyed(
    svc: &Store,
    who: &Caller,
    bytes: &[u8],
    meta: &Meta,
    mut extra: BTreeMap<String, Value>,
    replay: &dyn Fn() -> Result<Option<Map<String, Value>>>,
) -> Result<std::result::Result<Deposit, Map<String, Value>>> {
    let sha256 = sha256_hex(bytes);
    let dir = open_scratch(svc, true)?
        .ok_or_else(|| Failure::Internal("scratch directory vanished".into()))?;
    let mut warnings = Vec::new();
    if let Ok(st) = rustix::fs::fstat(&dir.dir)
        && st.st_mode & 0o077 != 0
    {
        match rustix::fs::fchmod(&dir.dir, rustix::fs::Mode::from_raw_mode(0o700)) {
            Ok(()) => warnings.push(format!(
                "{} was readable by others (mode {:o}); tightened to 0700",
                dir.display,
                st.st_mode & 0o777
            )),
            Err(e) => warnings.push(format!(
                "{} is readable by others (mode {:o}) and could not be tightened: {e}",
                dir.display,
                st.st_mode & 0o777
            )),
        }
    }

    // 1. The blob, unless an intact copy is already there.
    let name = format!("{sha256}.bin");
    let target = dir.target(&name)?;
    let body = bytes.to_vec();
    let address = sha256.clone();
    let mut blob_extra = BTreeMap::new();
    blob_extra.insert("scratch".to_string(), json!(true));
    // (repaired, an intact blob readable by others: the original creates them 0644)
    let (outcome, (repaired, loose)) =
        svc.pipeline()
            .commit(&target, who, |existing| match existing {
                Some(e) if e.sha256 == address => Ok(Decision::Skip((false, e.mode & 0o077 != 0))),
                _ => Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(body),
                        mode_label: crate::pipeline::mode_over(existing, "overwrite"),
                        create_only: existing.is_none(),
                        extra: blob_extra,
                        new_file_mode: Some(0o600),
                    },
                    (existing.is_some(), false),
                )),
            })?;
    if loose {
        let tightened = rustix::fs::openat(
            &dir.dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .and_then(|fd| rustix::fs::fchmod(&fd, rustix::fs::Mode::from_raw_mode(0o600)));
        if let Err(e) = tightened {
            warnings.push(format!(
                "{} is readable by others and could not be made owner-only: {e}",
                blob_path(&sha256)
            ));
        }
    }
    if repaired {
        warnings.push(format!(
            "{} did not match its address (tampered with); restored",
            blob_path(&sha256)
        ));
    }
    let dedup = outcome.is_none();

    // 2. One index row per deposit, appended (torn tail terminated first).
    let mut entry = Map::new();
    entry.insert("sha256".into(), json!(sha256));
    entry.insert("label".into(), json!(meta.label));
    entry.insert("content_type".into(), json!(meta.content_type));
    entry.insert("bytes".into(), json!(bytes.len()));
    entry.insert("encoding".into(), json!(meta.encoding));
    entry.insert("notes".into(), json!(meta.notes));
    entry.insert("created_at".into(), json!(crate::journal::now_rfc3339()));
    // serde_json's Map is sorted: compact and sorted, like the original's json.dumps.
    let mut line = serde_json::to_vec(&entry)
        .map_err(|e| Failure::Internal(format!("serialising index row: {e}")))?;
    line.push(b'\n');
    let index_target = dir.target(INDEX_FILE)?;
    let journal_id = outcome.as_ref().map(|o| o.journal_id.clone());
    if !extra.is_empty() {
        extra.insert("blob_sha256".into(), json!(sha256));
        extra.insert("blob_bytes".into(), json!(bytes.len()));
        extra.insert("dedup".into(), json!(dedup));
        extra.insert("blob_journal_id".into(), json!(journal_id));
    }
    extra.insert("scratch".to_string(), json!(true));
    let (_, replayed) = svc.pipeline().commit(&index_target, who, |existing| {
        if let Some(row) = replay()? {
            return Ok(Decision::Skip(Some(row)));
        }
        let mut body = existing.map(|e| e.bytes.clone()).unwrap_or_default();
        if body.last().is_some_and(|&b| b != b'\n') {
            body.push(b'\n');
        }
        body.extend_from_slice(&line);
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode_label: crate::pipeline::mode_over(existing, "append"),
                create_only: existing.is_none(),
                extra,
                new_file_mode: Some(0o600),
            },
            None,
        ))
    })?;
    if let Some(row) = replayed {
        return Ok(Err(row));
    }
    if let Some(o) = &outcome {
        warnings.extend(o.warnings.iter().cloned());
    }
    Ok(Ok(Deposit {
        scratch_path: blob_path(&sha256),
        sha256,
        bytes: bytes.len() as u64,
        dedup,
        journal_id,
        entry,
        warnings,
    }))
}

/// One parsed row of `index.jsonl`.
pub type IndexRow = Map<String, Value>;

/// The index rows (with their line numbers) and the lines skipped as torn or corrupt.
pub fn read_index(svc: &Store) -> Result<(Vec<IndexRow>, Vec<SkippedLine>)> {
    let Some(dir) = open_scratch(svc, false)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let shown = dir.path.join(INDEX_FILE);
    let file = match crate::util::statefile::open_read_at(&dir.dir, Path::new(INDEX_FILE), &shown) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(e) => return Err(Failure::io("read scratch index", &shown, e)),
    };
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut lines = LineReader::new(file, MAX_STATE_LINE);
    while let Some(line) = lines
        .next_line()
        .map_err(|e| Failure::io("read scratch index", &shown, e))?
    {
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

/// Rewrite `index.jsonl` without the lines [`read_index`] skips (torn or corrupt), through
/// the pipeline and under its lock, so a concurrent deposit is never lost. Blobs are not
/// touched. Returns how many lines were dropped.
pub fn drop_unreadable_index_lines(svc: &Store, who: &Caller) -> Result<usize> {
    let Some(dir) = open_scratch(svc, false)? else {
        return Ok(0);
    };
    let target = dir.target(INDEX_FILE)?;
    let mut extra = BTreeMap::new();
    extra.insert("scratch".to_string(), json!(true));
    let (_, dropped) = svc.pipeline().commit(&target, who, |existing| {
        let Some(existing) = existing else {
            return Ok(Decision::Skip(0));
        };
        let mut body = Vec::with_capacity(existing.bytes.len());
        let mut dropped = 0;
        for raw in existing.bytes.split(|&b| b == b'\n') {
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let readable = matches!(
                serde_json::from_slice::<Value>(raw),
                Ok(Value::Object(m)) if m.get("sha256").and_then(Value::as_str).is_some_and(is_sha256_hex)
            );
            if readable {
                body.extend_from_slice(raw);
                body.push(b'\n');
            } else {
                dropped += 1;
            }
        }
        if dropped == 0 {
            return Ok(Decision::Skip(0));
        }
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode_label: "overwrite".into(),
                create_only: false,
                extra,
                new_file_mode: Some(0o600),
            },
            dropped,
        ))
    })?;
    Ok(dropped)
}

/// Parse a hash argument: 64 hex digits, compared in lowercase.
pub fn parse_sha256(v: &str) -> Result<String> {
    if is_sha256_hex(v) {
        Ok(v.to_ascii_lowercase())
    } else {
        Err(Failure::Encoding {
            field: "sha256".into(),
            reason: format!(
                "must be 64 hex digits (a SHA-256), got {} characters",
                v.chars().count()
            ),
        })
    }
}

/// Whether the blob for `sha256` exists.
pub fn blob_exists(svc: &Store, sha256: &str) -> bool {
    open_scratch(svc, false).ok().flatten().is_some_and(|d| {
        rustix::fs::statat(
            &d.dir,
            format!("{sha256}.bin").as_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .is_ok()
    })
}

/// Keep the original of a `redact` placeholder found by `rule`: a blob with an index row
/// labelled `redact:<rule>`. Returns its SHA-256.
pub fn deposit_redacted(svc: &Store, original: &str, rule: &str) -> Result<String> {
    let d = deposit(
        svc,
        original.as_bytes(),
        Some(&format!("redact:{rule}")),
        Some("text/plain"),
        Some("original of a redact placeholder"),
    )?;
    Ok(d.sha256)
}

/// Read and verify a blob. `RW_SCRATCH_DISABLE_GET` refuses.
pub fn get(svc: &Store, sha256: &str) -> Result<Vec<u8>> {
    if svc.config().scratch_get_disabled {
        return Err(Failure::ScratchGetDisabled);
    }
    let not_found = || Failure::ScratchNotFound {
        sha256: Some(sha256.into()),
        label: None,
    };
    let dir = open_scratch(svc, false)?.ok_or_else(not_found)?;
    let name = format!("{sha256}.bin");
    let found = read_existing(&dir.dir, std::ffi::OsStr::new(&name))
        .map_err(|e| Failure::io("read scratch blob", dir.path.join(&name), e))?
        .ok_or_else(not_found)?;
    if found.sha256 != sha256 {
        return Err(Failure::Corruption {
            path: blob_path(sha256),
            expected: sha256.into(),
            actual: found.sha256,
        });
    }
    Ok(found.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;

    #[test]
    fn deposit_is_a_library_call_that_stores_and_indexes_binary_originals() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut config = Config::new(root.clone());
        config.sweep_on_start = false;
        let svc = Store::open(config);
        let original = b"\xffnot utf-8 original".to_vec();
        let d = deposit(
            &svc,
            &original,
            Some("redacted:api_key"),
            None,
            Some("from redact"),
        )
        .unwrap();
        assert_eq!(d.sha256, sha256_hex(&original));
        assert!(!d.dedup);
        assert_eq!(d.entry["encoding"], "base64");
        assert_eq!(get(&svc, &d.sha256).unwrap(), original);
        let again = deposit(&svc, &original, Some("second"), None, None).unwrap();
        assert!(again.dedup);
        let (rows, skipped) = read_index(&svc).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(skipped.is_empty());
    }
}
