//! Manifest integrity: how a session's records (manifest plus records log) compare with its
//! chunk files ([`manifest_drift`], for `doctor`), bringing the manifest back in step
//! ([`rebuild_manifest`]), and folding the records log into the manifest after a write.

use super::{
    ChunkRecord, ChunkSession, Listing, MANIFEST_FILE, Manifest, RECORDS_FILE, open_session,
};
use crate::envelope::{Failure, Result};
use crate::store::Store;
use crate::write::pipeline::{Body, Caller, Decision, Plan};
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
pub fn manifest_drift(store: &Store, name: &str) -> Result<Option<(ManifestDrift, Listing)>> {
    let Some(session) = open_session(store, name, false, false)? else {
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
pub fn rebuild_manifest(store: &Store, who: &Caller, name: &str) -> Result<bool> {
    let Some(session) = open_session(store, name, false, true)? else {
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
    store_manifest(store, who, &session, &manifest)?;
    Ok(true)
}

/// Rewrite the manifest with every record (manifest, log, and the chunk just written) for
/// the chunk files that exist, hashing any chunk nobody recorded (written by the original,
/// or before a crash cut its record), then empty the log. A crash between the two leaves
/// log lines the manifest already holds, which fold again harmlessly.
pub(super) fn fold_manifest(
    store: &Store,
    who: &Caller,
    session: &ChunkSession,
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
    store_manifest(store, who, session, &manifest)
}

/// Write the manifest (which now holds every record), then empty the records log.
fn store_manifest(store: &Store, who: &Caller, session: &ChunkSession, m: &Manifest) -> Result<()> {
    write_manifest(store, who, session, m)?;
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

fn write_manifest(store: &Store, who: &Caller, session: &ChunkSession, m: &Manifest) -> Result<()> {
    // Through a Value so that keys come out sorted, as the original writes them.
    let value = serde_json::to_value(m)
        .map_err(|e| Failure::Internal(format!("serialising manifest: {e}")))?;
    let mut body = serde_json::to_vec_pretty(&value)
        .map_err(|e| Failure::Internal(format!("serialising manifest: {e}")))?;
    body.push(b'\n');
    let target = session.dir.target(MANIFEST_FILE)?;
    let mut extra = BTreeMap::new();
    extra.insert("session".to_string(), json!(session.name));
    store.pipeline().commit(&target, who, |_| {
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode: "manifest".into(),
                create_only: false,
                extra,
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{put, service, session_dir, who};
    use super::super::{part_name, status};
    use super::*;
    use crate::hash::sha256_hex;

    fn manifest_of(store: &Store, name: &str) -> Manifest {
        let s = open_session(store, name, false, false).unwrap().unwrap();
        s.manifest().unwrap().manifest().cloned().unwrap()
    }

    #[test]
    fn needs_rebuild_when_records_and_files_disagree_or_the_manifest_is_lost() {
        let clean = ManifestDrift {
            manifest: "ok".into(),
            ..ManifestDrift::default()
        };
        assert!(!clean.needs_rebuild(true));
        let missing = ManifestDrift {
            manifest: "missing".into(),
            ..ManifestDrift::default()
        };
        // A lost manifest of an empty session has nothing to rebuild from.
        assert!(missing.needs_rebuild(true));
        assert!(!missing.needs_rebuild(false));
        let unrecorded = ManifestDrift {
            unrecorded: vec![3],
            ..clean.clone()
        };
        assert!(unrecorded.needs_rebuild(true));
        let stale = ManifestDrift {
            stale_records: vec![2],
            ..clean
        };
        assert!(stale.needs_rebuild(true));
    }

    #[test]
    fn manifest_drift_of_a_session_in_step_is_clean() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let (drift, listing) = manifest_drift(&store, "s").unwrap().unwrap();
        assert_eq!(drift.manifest, "ok");
        assert!(!drift.needs_rebuild(true));
        assert_eq!(listing.indices(), vec![1, 2]);
        assert!(manifest_drift(&store, "none").unwrap().is_none());
    }

    #[test]
    fn manifest_drift_reports_unrecorded_chunks_and_stale_records() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let dir = session_dir(&store, "s");
        std::fs::remove_file(dir.join(part_name(2))).unwrap();
        std::fs::write(dir.join(part_name(3)), b"three, by another tool").unwrap();
        let (drift, _) = manifest_drift(&store, "s").unwrap().unwrap();
        assert_eq!(drift.unrecorded, vec![3]);
        assert_eq!(drift.stale_records, vec![2]);
        assert!(drift.needs_rebuild(true));
    }

    #[test]
    fn manifest_drift_reports_a_missing_or_corrupt_manifest() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        let path = session_dir(&store, "s").join(MANIFEST_FILE);
        std::fs::write(&path, b"[1, 2").unwrap();
        let (drift, _) = manifest_drift(&store, "s").unwrap().unwrap();
        assert_eq!(drift.manifest, "corrupt");
        assert!(drift.needs_rebuild(true));
        std::fs::remove_file(&path).unwrap();
        let (drift, _) = manifest_drift(&store, "s").unwrap().unwrap();
        assert_eq!(drift.manifest, "missing");
        // Drift only reads: nothing was written back.
        assert!(!path.exists());
    }

    #[test]
    fn rebuild_manifest_drops_stale_records_hashes_unrecorded_chunks_and_empties_the_log() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let dir = session_dir(&store, "s");
        assert!(std::fs::metadata(dir.join(RECORDS_FILE)).unwrap().len() > 0);
        std::fs::remove_file(dir.join(part_name(2))).unwrap();
        std::fs::write(dir.join(part_name(3)), b"three").unwrap();
        assert!(rebuild_manifest(&store, &who(), "s").unwrap());
        let m = manifest_of(&store, "s");
        assert_eq!(m.chunks.keys().copied().collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(m.chunks[&1].sha256, sha256_hex(b"one"));
        assert_eq!(m.chunks[&3].sha256, sha256_hex(b"three"));
        assert_eq!(m.chunks[&3].bytes, 5);
        assert_eq!(m.session.as_deref(), Some("s"));
        assert_eq!(std::fs::metadata(dir.join(RECORDS_FILE)).unwrap().len(), 0);
        let (drift, _) = manifest_drift(&store, "s").unwrap().unwrap();
        assert!(!drift.needs_rebuild(true));
        // In step now: a second rebuild writes nothing.
        assert!(!rebuild_manifest(&store, &who(), "s").unwrap());
    }

    #[test]
    fn rebuild_manifest_restores_a_lost_manifest_from_the_files_and_the_log() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let path = session_dir(&store, "s").join(MANIFEST_FILE);
        std::fs::remove_file(&path).unwrap();
        assert!(rebuild_manifest(&store, &who(), "s").unwrap());
        let m = manifest_of(&store, "s");
        assert_eq!(m.chunks[&1].sha256, sha256_hex(b"one"));
        assert_eq!(m.chunks[&2].sha256, sha256_hex(b"two"));
        assert!(m.created_at.is_some() && m.updated_at.is_some());
    }

    #[test]
    fn rebuild_manifest_keeps_records_so_a_hand_edit_is_still_reported() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        let dir = session_dir(&store, "s");
        std::fs::write(dir.join(part_name(1)), b"ONE").unwrap();
        std::fs::write(dir.join(part_name(2)), b"two").unwrap();
        assert!(rebuild_manifest(&store, &who(), "s").unwrap());
        assert_eq!(
            manifest_of(&store, "s").chunks[&1].sha256,
            sha256_hex(b"one")
        );
        let s = status(&store, "s", true).unwrap();
        assert_eq!(s.modified_chunks.len(), 1);
        assert_eq!(s.modified_chunks[0].index, 1);
    }

    #[test]
    fn rebuild_manifest_of_an_empty_or_unknown_session_writes_nothing() {
        let (_t, store) = service();
        assert!(!rebuild_manifest(&store, &who(), "none").unwrap());
        drop(open_session(&store, "empty", true, true).unwrap());
        assert!(!rebuild_manifest(&store, &who(), "empty").unwrap());
        assert!(!session_dir(&store, "empty").join(MANIFEST_FILE).exists());
    }

    #[test]
    fn the_manifest_is_written_with_sorted_keys_and_a_trailing_newline() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        let text = std::fs::read_to_string(session_dir(&store, "s").join(MANIFEST_FILE)).unwrap();
        assert!(text.ends_with("}\n"));
        let keys: Vec<usize> = ["chunks", "created_at", "session", "updated_at"]
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{text}");
    }
}
