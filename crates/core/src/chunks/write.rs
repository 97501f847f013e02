//! Chunk writes (`chunk_write`, and `chunk_append` with no index): the chunk goes through
//! the pipeline under the session lock, then its record goes to the records log, or the
//! manifest is rewritten when it must change or the log has outgrown it.

use super::integrity::fold_manifest;
use super::records::stamp_of;
use super::session::validate_index;
use super::{ChunkRecord, open_session, part_name, session_failure, validate_session};
use crate::envelope::{Failure, Result};
use crate::pipeline::{Body, Caller, Decision, Plan};
use crate::store::Store;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The records log is folded into the manifest once it outgrows the manifest (so appends
/// cost O(1) amortised) or this many bytes, whichever is larger.
const FOLD_AT_BYTES: u64 = 4096;

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
