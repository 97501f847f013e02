//! Manifest integrity: how a session's records (manifest plus records log) compare with its
//! chunk files ([`manifest_drift`], for `doctor`), bringing the manifest back in step
//! ([`rebuild_manifest`]), and folding the records log into the manifest after a write.

use super::{ChunkRecord, Listing, MANIFEST_FILE, Manifest, RECORDS_FILE, Session, open_session};
use crate::envelope::{Failure, Result};
use crate::pipeline::{Body, Caller, Decision, Plan};
use crate::store::Store;
use rustix::fs::OFlags;
use serde_json::json;
use std::collections::BTreeMap;

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
pub(super) fn fold_manifest(
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
