//! A deposit: the blob, written through the write pipeline unless an intact copy is there
//! (content-addressed, so the same bytes are stored once and a tampered copy is restored),
//! then its row appended to the index ([`super::index`]); the directory, blob and index
//! tightened to owner-only on the way.

use super::index::append_row;
use super::put::DepositRow;
use super::{Blob, INDEX_FILE, blob_path, open_scratch};
use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::store::Store;
use crate::write::idempotency::Answer;
use crate::write::pipeline::{Body, Caller, Decision, Plan};
use rustix::fs::OFlags;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Metadata of a deposit, as recorded in the index.
#[derive(Debug, Clone, Default)]
pub struct Meta<'a> {
    pub label: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub notes: Option<&'a str>,
    /// How the content was sent: "utf-8" or "base64".
    pub encoding: &'a str,
}

/// A completed deposit: the blob, and what is worth telling about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Deposit {
    pub blob: Blob,
    pub warnings: Vec<String>,
}

/// Deposit `bytes` with the given metadata, as tool `scratch_put` would: the library entry
/// point for other layers (e.g. `redact` depositing originals).
pub fn deposit(
    store: &Store,
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
        caller: store.caller(),
        tool: "scratch_put".into(),
    };
    deposit_as(
        store,
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
pub fn deposit_as(store: &Store, who: &Caller, bytes: &[u8], meta: &Meta) -> Result<Deposit> {
    match deposit_keyed(store, who, bytes, meta, BTreeMap::new(), &|| Ok(None))? {
        Answer::Applied(d) => Ok(d),
        Answer::Replayed(_) => Err(Failure::Internal(
            "a deposit without a key was replayed".into(),
        )),
    }
}

/// [`deposit_as`] with an idempotency key's journal fields (`extra`, added to the index row's
/// journal row with the blob's address, size, dedup and journal id) and its `replay` check,
/// run under the index's lock: a replay when the call repeats an earlier one (the blob write
/// before it is content-addressed, so a replay adds nothing).
pub fn deposit_keyed(
    store: &Store,
    who: &Caller,
    bytes: &[u8],
    meta: &Meta,
    mut extra: BTreeMap<String, Value>,
    replay: &dyn Fn() -> Result<Option<Deposit>>,
) -> Result<Answer<Deposit>> {
    let sha256 = sha256_hex(bytes);
    let dir = open_scratch(store, true)?
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
        store
            .pipeline()
            .commit(&target, who, |existing| match existing {
                Some(e) if e.sha256 == address => Ok(Decision::Skip((false, e.mode & 0o077 != 0))),
                _ => Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(body),
                        mode: crate::write::pipeline::mode_over(existing, "overwrite"),
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

    // 2. One index row per deposit, appended (see `index::append_row`).
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
    let blob = Blob {
        scratch_path: blob_path(&sha256),
        sha256,
        bytes: bytes.len() as u64,
        dedup,
        journal_id,
    };
    if !extra.is_empty() {
        extra.extend(DepositRow::fields(&blob));
    }
    extra.insert("scratch".to_string(), json!(true));
    // A deposit is a record: history yields room for its index row (the row is cut off
    // again when it fails, so the step can run twice).
    let replayed = store.pipeline().with_state_room(line.len() as u64, || {
        append_row(
            store,
            &dir,
            &index_target,
            who,
            &line,
            extra.clone(),
            replay,
        )
    })?;
    if let Some(d) = replayed {
        return Ok(Answer::Replayed(d));
    }
    if let Some(o) = &outcome {
        warnings.extend(o.warnings.iter().cloned());
    }
    Ok(Answer::Applied(Deposit { blob, warnings }))
}

/// Keep the original of a `redact` placeholder found by `rule`: a blob with an index row
/// labelled `redact:<rule>`. Returns its SHA-256.
pub fn deposit_redacted(store: &Store, original: &str, rule: &str) -> Result<String> {
    let d = deposit(
        store,
        original.as_bytes(),
        Some(&format!("redact:{rule}")),
        Some("text/plain"),
        Some("original of a redact placeholder"),
    )?;
    Ok(d.blob.sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::{get, read_index};

    #[test]
    fn deposit_is_a_library_call_that_stores_and_indexes_binary_originals() {
        let (_t, store) = crate::testing::temp_store();
        let original = b"\xffnot utf-8 original".to_vec();
        let d = deposit(
            &store,
            &original,
            Some("redacted:api_key"),
            None,
            Some("from redact"),
        )
        .unwrap();
        assert_eq!(d.blob.sha256, sha256_hex(&original));
        assert!(!d.blob.dedup);
        assert_eq!(get(&store, &d.blob.sha256).unwrap(), original);
        let again = deposit(&store, &original, Some("second"), None, None).unwrap();
        assert!(again.blob.dedup);
        let (rows, skipped) = read_index(&store).unwrap();
        assert_eq!(rows[0]["encoding"], "base64");
        assert_eq!(rows.len(), 2);
        assert!(skipped.is_empty());
    }
}
