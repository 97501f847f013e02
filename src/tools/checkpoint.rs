//! `checkpoint`, `checkpoint_read`, `checkpoint_list`, `checkpoint_cleanup`: the I/O around
//! [`crate::checkpoint`]. Every checkpoint file is written through the pipeline (into the
//! state directory, via [`crate::state::target`]); one over 1 MB is streamed into its temp
//! file instead of being built in memory first (`chunked: true`).

use super::{ToolSpec, parse_args, schema, to_value};
use crate::checkpoint::{
    CHECKPOINT_DIR, CHUNK_THRESHOLD, Checkpoint, Fate, Format, Ttl, check_name, fate,
};
use crate::dispatch::Service;
use crate::envelope::{Failure, Result};
use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
use crate::pipeline::{Body, Caller, Decision, Plan};
use crate::write::intent;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn session() -> String {
    "session".into()
}

fn yes() -> bool {
    true
}

/// Arguments of `checkpoint`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointArgs {
    /// `^[A-Za-z0-9_-]{1,64}$`; saving again under the same name replaces it.
    pub name: String,
    /// Any JSON value (json, yaml); a string for markdown.
    pub data: Value,
    /// json (default), yaml or markdown.
    #[serde(default)]
    pub format: Format,
    /// session (default: removed by cleanup with include_session), permanent (never
    /// removed), or an ISO-8601 duration since the last update (PT30M, P1D, P1W, P1DT12H).
    #[serde(default = "session")]
    pub ttl: String,
}

/// Arguments of `checkpoint_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointReadArgs {
    pub name: String,
}

/// Arguments of `checkpoint_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointListArgs {}

/// Arguments of `checkpoint_cleanup`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointCleanupArgs {
    /// Also remove ttl=session checkpoints (default true). Expired ones always go;
    /// permanent ones never do.
    #[serde(default = "yes")]
    pub include_session: bool,
}

/// Result of `checkpoint`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointResult {
    pub ok: bool,
    pub name: String,
    pub format: Format,
    pub ttl: String,
    /// Absolute path of the checkpoint file.
    pub path: String,
    /// Same as path (the original's name).
    pub checkpoint_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    pub created_at: String,
    pub updated_at: String,
    /// True when the content (over 1 MB) was streamed into the file.
    pub chunked: bool,
}

/// Result of `checkpoint_read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointReadResult {
    pub ok: bool,
    pub name: String,
    pub format: Format,
    pub ttl: String,
    pub data: Value,
    pub created_at: String,
    pub updated_at: String,
    pub sha256: String,
    pub bytes: u64,
}

/// One checkpoint in `checkpoint_list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointEntry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub checkpoint_path: String,
    pub sha256: String,
    /// Set when the file cannot be parsed (with why in `reason`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corrupt: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Result of `checkpoint_list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointListResult {
    pub ok: bool,
    /// Sorted by name.
    pub checkpoints: Vec<CheckpointEntry>,
    pub count: usize,
}

/// One removed checkpoint.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    pub name: String,
    pub ttl: String,
    /// session_cleanup or expired.
    pub reason: String,
}

/// One checkpoint cleanup could not judge (kept).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CorruptEntry {
    pub name: String,
    pub checkpoint_path: String,
    pub reason: String,
}

/// Result of `checkpoint_cleanup`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointCleanupResult {
    pub ok: bool,
    pub removed: Vec<Removed>,
    /// How many readable checkpoints remain.
    pub kept: usize,
    /// Checkpoints whose file cannot be parsed: reported and kept, never silently deleted.
    pub corrupt: Vec<CorruptEntry>,
}

pub const CHECKPOINT: ToolSpec = ToolSpec {
    name: "checkpoint",
    title: "Save a checkpoint",
    description: "Save intermediate data under a name (^[A-Za-z0-9_-]{1,64}$) in \
        .resilient_write/checkpoints/<name>.json|yaml|md, atomically and journaled; saving \
        again replaces it (created_at is kept). format: json (default), yaml, markdown (data \
        must be a string). ttl: session (default, removed by checkpoint_cleanup), permanent, \
        or an ISO-8601 duration such as PT30M or P1D. Over 1 MB the file is streamed \
        (chunked: true).",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<CheckpointArgs>,
    output_schema: schema::<CheckpointResult>,
    run: run_checkpoint,
};

pub const CHECKPOINT_READ: ToolSpec = ToolSpec {
    name: "checkpoint_read",
    title: "Read a checkpoint",
    description: "Read a checkpoint saved with rw_checkpoint: data, format, ttl, created_at, \
        updated_at, sha256, bytes. A corrupt file is a write_corruption envelope. Read-only.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<CheckpointReadArgs>,
    output_schema: schema::<CheckpointReadResult>,
    run: run_checkpoint_read,
};

pub const CHECKPOINT_LIST: ToolSpec = ToolSpec {
    name: "checkpoint_list",
    title: "List checkpoints",
    description: "List saved checkpoints, sorted by name: name, format, ttl, bytes, \
        created_at, updated_at, sha256 (corrupt files are flagged). Read-only.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<CheckpointListArgs>,
    output_schema: schema::<CheckpointListResult>,
    run: run_checkpoint_list,
};

pub const CHECKPOINT_CLEANUP: ToolSpec = ToolSpec {
    name: "checkpoint_cleanup",
    title: "Remove expired checkpoints",
    description: "Delete checkpoints by TTL: expired durations always, ttl=session ones when \
        include_session (default true), permanent ones never. Corrupt files are reported in \
        `corrupt` and kept. Returns removed[{name, ttl, reason}] and kept.",
    read_only: false,
    destructive: true,
    idempotent: true,
    input_schema: schema::<CheckpointCleanupArgs>,
    output_schema: schema::<CheckpointCleanupResult>,
    run: run_checkpoint_cleanup,
};

fn dir_path(svc: &Service) -> PathBuf {
    svc.state_dir().join(CHECKPOINT_DIR)
}

/// The file holding checkpoint `name`, if any: its format by extension and its bytes. When
/// several formats exist (should not happen: saving removes the others), json wins.
fn find(svc: &Service, name: &str) -> Result<Option<(PathBuf, Format, Vec<u8>)>> {
    for f in Format::ALL {
        let p = dir_path(svc).join(format!("{name}.{}", f.extension()));
        match read_nofollow(&p) {
            Ok(b) => return Ok(Some((p, f, b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Failure::io("read checkpoint", &p, e)),
        }
    }
    Ok(None)
}

fn read_nofollow(p: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(p)?;
    let mut v = Vec::new();
    f.read_to_end(&mut v)?;
    Ok(v)
}

fn run_checkpoint(svc: &Service, raw: Value) -> Result<Value> {
    let args: CheckpointArgs = parse_args(raw)?;
    check_name(&args.name)?;
    let ttl = Ttl::parse(&args.ttl)?;
    if args.format == Format::Markdown && !args.data.is_string() {
        return Err(Failure::InvalidDocument {
            what: "checkpoint".into(),
            message: "format markdown needs data to be a string".into(),
            line: None,
            field: Some("data".into()),
            missing_fields: Vec::new(),
        });
    }
    let now = now_rfc3339();
    let previous = find(svc, &args.name)?;
    let created_at = previous
        .as_ref()
        .and_then(|(_, f, b)| Checkpoint::parse(b, &args.name, *f).ok())
        .map(|c| c.created_at)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| now.clone());
    let cp = Checkpoint {
        name: args.name.clone(),
        format: args.format,
        ttl: ttl.label().to_string(),
        created_at: created_at.clone(),
        updated_at: now.clone(),
        data: args.data,
    };
    let size = cp
        .encoded_len()
        .map_err(|e| Failure::Internal(format!("encoding checkpoint: {e}")))?;
    let limit = svc.config().max_write_bytes;
    intent::within_limit("checkpoint", size, limit)?;
    let chunked = size > CHUNK_THRESHOLD;
    let body = if chunked {
        Body::Stream(Box::new(move |w| cp.write_to(w)))
    } else {
        let mut buf = Vec::with_capacity(size as usize);
        cp.write_to(&mut buf)
            .map_err(|e| Failure::Internal(format!("encoding checkpoint: {e}")))?;
        Body::Bytes(buf)
    };
    let file = format!("{}.{}", args.name, args.format.extension());
    let target = crate::state::target(svc.state_dir(), CHECKPOINT_DIR, &file)?;
    let who = Caller {
        caller: svc.caller(),
        tool: "checkpoint".into(),
    };
    let mut extra = BTreeMap::new();
    extra.insert("checkpoint".into(), Value::from(args.name.clone()));
    let (outcome, ()) = svc.pipeline().commit(&target, &who, |existing| {
        Ok(Decision::Write(
            Plan {
                body,
                mode_label: crate::pipeline::mode_over(existing, "overwrite"),
                create_only: false,
                extra,
                new_file_mode: Some(0o600),
            },
            (),
        ))
    })?;
    let Some(o) = outcome else {
        return Err(Failure::Internal("checkpoint write was not applied".into()));
    };
    // The same name saved in another format before: that file is now stale.
    for f in Format::ALL {
        if f != args.format {
            let p = dir_path(svc).join(format!("{}.{}", args.name, f.extension()));
            if let Ok(old) = read_nofollow(&p) {
                remove_journaled(svc, &p, &old, "checkpoint", &args.name, "format_changed")?;
            }
        }
    }
    let path = o.abs_path.display().to_string();
    to_value(&CheckpointResult {
        ok: true,
        name: args.name,
        format: args.format,
        ttl: ttl.label().to_string(),
        checkpoint_path: path.clone(),
        path,
        sha256: o.sha256,
        bytes: o.bytes,
        journal_id: o.journal_id,
        created_at,
        updated_at: now,
        chunked,
    })
}

fn run_checkpoint_read(svc: &Service, raw: Value) -> Result<Value> {
    let args: CheckpointReadArgs = parse_args(raw)?;
    check_name(&args.name)?;
    let Some((path, format, bytes)) = find(svc, &args.name)? else {
        return Err(intent::missing(format!(
            ".resilient_write/{CHECKPOINT_DIR}/{}",
            args.name
        )));
    };
    let cp =
        Checkpoint::parse(&bytes, &args.name, format).map_err(|reason| Failure::CorruptState {
            path: path.display().to_string(),
            reason,
        })?;
    to_value(&CheckpointReadResult {
        ok: true,
        name: cp.name,
        format: cp.format,
        ttl: cp.ttl,
        data: cp.data,
        created_at: cp.created_at,
        updated_at: cp.updated_at,
        sha256: crate::hash::sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    })
}

/// Remove a checkpoint file the way the pipeline writes one: its content goes to the object
/// store first (so `restore` can bring it back by hash), a `delete` journal row naming that
/// hash as `prev_sha256` is made durable, then the file is unlinked and its directory
/// fsynced; if the unlink fails the row is taken back. `Ok(false)` when the file was already
/// gone.
fn remove_journaled(
    svc: &Service,
    path: &std::path::Path,
    bytes: &[u8],
    tool: &str,
    name: &str,
    reason: &str,
) -> Result<bool> {
    let sha = crate::hash::sha256_hex(bytes);
    if let Some(objects) = svc.pipeline().objects() {
        objects
            .put(bytes, &sha)
            .map_err(|e| Failure::io("keep the removed checkpoint", path, e))?;
    }
    let mut extra = BTreeMap::new();
    extra.insert("checkpoint".into(), Value::from(name));
    extra.insert("reason".into(), Value::from(reason));
    let row = JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: path.display().to_string(),
        sha256: String::new(),
        prev_sha256: Some(sha),
        bytes: 0,
        mode: "delete".into(),
        caller: svc.caller(),
        tool: tool.into(),
        extra,
    };
    let journal = svc.pipeline().journal();
    let appended = journal
        .append(&row)
        .map_err(|e| Failure::io("append journal", journal.path(), e))?;
    match std::fs::remove_file(path) {
        Ok(()) => {
            appended.commit();
            // The row is durable already; the unlink becomes durable here.
            if let Some(dir) = path.parent() {
                let _ = crate::pipeline::fsync_dir(dir);
            }
            Ok(true)
        }
        Err(e) => {
            let gone = e.kind() == std::io::ErrorKind::NotFound;
            appended
                .rollback()
                .map_err(|e| Failure::io("roll back journal row", journal.path(), e))?;
            if gone {
                Ok(false)
            } else {
                Err(Failure::io("remove checkpoint", path, e))
            }
        }
    }
}

/// A checkpoint file found on disk: name, format, path, and its bytes (or why not).
type ScannedCheckpoint = (String, Format, PathBuf, std::io::Result<Vec<u8>>);

/// Every checkpoint file, sorted by name: (name, format, path, bytes or the read error).
fn scan(svc: &Service) -> Result<Vec<ScannedCheckpoint>> {
    let dir = dir_path(svc);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Failure::io("list checkpoints", &dir, e)),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if !ft.is_file() {
            continue;
        }
        let file = e.file_name().to_string_lossy().into_owned();
        let Some((name, format)) = Format::from_file_name(&file) else {
            continue;
        };
        let p = e.path();
        let bytes = read_nofollow(&p);
        out.push((name, format, p, bytes));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
    Ok(out)
}

fn run_checkpoint_list(svc: &Service, raw: Value) -> Result<Value> {
    let _: CheckpointListArgs = parse_args(raw)?;
    to_value(&list(svc)?)
}

/// Every checkpoint, sorted by name, corrupt ones flagged (shared with the MCP resources).
pub fn list(svc: &Service) -> Result<CheckpointListResult> {
    let mut checkpoints = Vec::new();
    for (name, format, path, bytes) in scan(svc)? {
        let checkpoint_path = path.display().to_string();
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                checkpoints.push(CheckpointEntry {
                    name,
                    format: None,
                    ttl: None,
                    bytes: 0,
                    created_at: None,
                    updated_at: None,
                    checkpoint_path,
                    sha256: String::new(),
                    corrupt: true,
                    reason: Some(format!("unreadable: {e}")),
                });
                continue;
            }
        };
        let sha256 = crate::hash::sha256_hex(&bytes);
        let entry = match Checkpoint::parse(&bytes, &name, format) {
            Ok(cp) => CheckpointEntry {
                name,
                format: Some(cp.format),
                ttl: Some(cp.ttl),
                bytes: bytes.len() as u64,
                created_at: Some(cp.created_at),
                updated_at: Some(cp.updated_at),
                checkpoint_path,
                sha256,
                corrupt: false,
                reason: None,
            },
            Err(reason) => CheckpointEntry {
                name,
                format: None,
                ttl: None,
                bytes: bytes.len() as u64,
                created_at: None,
                updated_at: None,
                checkpoint_path,
                sha256,
                corrupt: true,
                reason: Some(reason),
            },
        };
        checkpoints.push(entry);
    }
    Ok(CheckpointListResult {
        ok: true,
        count: checkpoints.len(),
        checkpoints,
    })
}

/// The stored file of checkpoint `name` as it is on disk: its format and bytes. `None` when
/// there is no such checkpoint; an invalid name is `invalid_path`.
pub fn stored(svc: &Service, name: &str) -> Result<Option<(Format, Vec<u8>)>> {
    check_name(name)?;
    Ok(find(svc, name)?.map(|(_, format, bytes)| (format, bytes)))
}

fn run_checkpoint_cleanup(svc: &Service, raw: Value) -> Result<Value> {
    let args: CheckpointCleanupArgs = parse_args(raw)?;
    let now = chrono::Utc::now();
    let mut removed = Vec::new();
    let mut corrupt = Vec::new();
    let mut kept = 0;
    for (name, format, path, bytes) in scan(svc)? {
        let checkpoint_path = path.display().to_string();
        let parsed = bytes
            .map_err(|e| format!("unreadable: {e}"))
            .and_then(|b| Checkpoint::parse(&b, &name, format));
        let cp = match parsed {
            Ok(cp) => cp,
            Err(reason) => {
                corrupt.push(CorruptEntry {
                    name,
                    checkpoint_path,
                    reason,
                });
                continue;
            }
        };
        match fate(&cp, args.include_session, now) {
            Fate::Keep => kept += 1,
            Fate::Corrupt(reason) => corrupt.push(CorruptEntry {
                name,
                checkpoint_path,
                reason,
            }),
            Fate::Remove(reason) => {
                let bytes = read_nofollow(&path).unwrap_or_default();
                if remove_journaled(svc, &path, &bytes, "checkpoint_cleanup", &name, reason)? {
                    removed.push(Removed {
                        name,
                        ttl: cp.ttl,
                        reason: reason.into(),
                    });
                }
            }
        }
    }
    to_value(&CheckpointCleanupResult {
        ok: true,
        removed,
        kept,
        corrupt,
    })
}
