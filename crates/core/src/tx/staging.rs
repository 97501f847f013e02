//! What `tx_write` and `tx_replace` stage: the same preconditions, edits, L0 check and size
//! limit as `safe_write` and `safe_replace` ([`crate::write::intent`]), decided against the
//! file as the transaction sees it (content staged earlier in it, else the disk).

use super::{NewContent, StagedOp, stage};
use crate::edit::{Edit, apply_edits};
use crate::envelope::{Failure, Result};
use crate::policy::active::RejectAt;
use crate::store::Store;
use crate::write::intent::{self, Order, Precondition, WriteMode};

/// Stage `bytes` for `path` by `mode` (`tx_write`). Returns the staged entry and the number
/// of files staged in the transaction.
pub fn stage_write(
    store: &Store,
    tx_id: &str,
    path: &str,
    bytes: Vec<u8>,
    mode: WriteMode,
    expected_prev_sha256: Option<&str>,
) -> Result<(StagedOp, usize)> {
    let limit = store.config().max_write_bytes;
    stage(store, tx_id, path, "tx_write", |cur| {
        let existing = cur.existing.as_ref();
        // tx_write has always checked the hash first (see `Order`).
        let applied = Precondition {
            shown: path,
            mode: Some(mode),
            expected: expected_prev_sha256,
            order: Order::HashFirst,
        }
        .check(existing)?;
        let bytes = intent::body(applied, existing, bytes);
        intent::within_limit("resulting file", bytes.len() as u64, limit)?;
        Ok(NewContent {
            bytes,
            mode: applied.label().into(),
            replacements: None,
        })
    })
}

/// Stage `edits` of `path`'s text, all or nothing (`tx_replace`); with `classify`, refuse
/// at `reject_at` what the edit introduces.
pub fn stage_replace(
    store: &Store,
    tx_id: &str,
    path: &str,
    edits: &[Edit],
    expected_prev_sha256: Option<&str>,
    classify: bool,
    reject_at: RejectAt,
) -> Result<(StagedOp, usize)> {
    let limit = store.config().max_write_bytes;
    stage(store, tx_id, path, "tx_replace", |cur| {
        let existing =
            intent::existing_for_edit(path, expected_prev_sha256, cur.existing.as_ref())?;
        let text = std::str::from_utf8(&existing.bytes).map_err(|e| Failure::Encoding {
            field: "path".into(),
            reason: format!("the file is not valid UTF-8 ({e}); tx_replace edits text files"),
        })?;
        let (new_text, n) = apply_edits(text, edits, path)?;
        store
            .policy()
            .preflight_edit(text, &new_text, classify, reject_at)?;
        intent::within_limit("resulting file", new_text.len() as u64, limit)?;
        Ok(NewContent {
            bytes: new_text.into_bytes(),
            mode: if cur.staged { "overwrite" } else { "replace" }.into(),
            replacements: Some(n),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::begin;

    #[test]
    fn a_write_then_a_replace_of_the_same_file_stage_against_the_staged_content() {
        let (_t, s) = crate::testing::temp_store();
        let m = begin(&s, None, None).unwrap();
        let (op, n) = stage_write(
            &s,
            &m.tx_id,
            "a.txt",
            b"one two".to_vec(),
            WriteMode::Create,
            None,
        )
        .unwrap();
        assert_eq!((op.mode.as_str(), n), ("create", 1));
        let edits = [Edit {
            old_string: "two".into(),
            new_string: "2".into(),
            count: 1,
        }];
        let (op, n) =
            stage_replace(&s, &m.tx_id, "a.txt", &edits, None, false, RejectAt::High).unwrap();
        assert_eq!(n, 1, "the same file is staged once");
        assert_eq!(op.sha256, crate::hash::sha256_hex(b"one 2"));
        // create over content staged earlier is refused, as over a file on disk
        let e = stage_write(
            &s,
            &m.tx_id,
            "a.txt",
            b"x".to_vec(),
            WriteMode::Create,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Failure::TargetExists { .. }), "{e:?}");
    }

    #[test]
    fn a_stale_hash_wins_over_create_in_a_transaction() {
        let (t, s) = crate::testing::temp_store();
        std::fs::write(t.path().join("a.txt"), b"disk").unwrap();
        let m = begin(&s, None, None).unwrap();
        let wrong = "0".repeat(64);
        let e = stage_write(
            &s,
            &m.tx_id,
            "a.txt",
            b"x".to_vec(),
            WriteMode::Create,
            Some(&wrong),
        )
        .unwrap_err();
        assert!(matches!(e, Failure::StaleHash { .. }), "{e:?}");
        let e = stage_replace(
            &s,
            &m.tx_id,
            "missing.txt",
            &[],
            None,
            false,
            RejectAt::High,
        )
        .unwrap_err();
        assert!(matches!(e, Failure::TargetMissing { .. }), "{e:?}");
    }
}
