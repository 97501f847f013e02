//! `scratch_put` as the tool asks for it: a deposit of content as the request carries it
//! (UTF-8 or base64), with an idempotency key whose retry is answered from the journal row of
//! its first call, checked before the content is decoded and again under the index's lock.

use super::{Deposit, Meta, deposit_keyed};
use crate::envelope::Result;
use crate::journal::recorded::lenient;
use crate::store::Store;
use crate::write::content::Content;
use crate::write::idempotency::{Answer, Keyed};
use crate::write::pipeline::Caller;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

// A deposited blob, as `scratch_put` reports it (flattened into its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Blob {
    /// The content address.
    pub sha256: String,
    /// `.resilient_write/scratch/<sha256>.bin`
    pub scratch_path: String,
    pub bytes: u64,
    /// True when the same bytes were already stored (only an index row was added).
    pub dedup: bool,
    /// Journal id of the blob write (absent when deduplicated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_id: Option<String>,
}

/// What `scratch_put` asks for.
pub struct Put<'a> {
    pub content: Content,
    pub label: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub notes: Option<&'a str>,
    pub keyed: Keyed<'a>,
}

/// The fields a keyed deposit adds to its index row's journal row: what its replay answers
/// with.
#[derive(Default, Deserialize)]
#[serde(default)]
pub(super) struct DepositRow {
    #[serde(deserialize_with = "lenient")]
    blob_sha256: String,
    #[serde(deserialize_with = "lenient")]
    blob_bytes: u64,
    #[serde(deserialize_with = "lenient")]
    dedup: bool,
    #[serde(deserialize_with = "lenient")]
    blob_journal_id: Option<String>,
}

impl DepositRow {
    /// The journal fields recording `blob`.
    pub(super) fn fields(blob: &Blob) -> [(String, Value); 4] {
        [
            ("blob_sha256".into(), json!(blob.sha256)),
            ("blob_bytes".into(), json!(blob.bytes)),
            ("dedup".into(), json!(blob.dedup)),
            ("blob_journal_id".into(), json!(blob.journal_id)),
        ]
    }

    /// The deposit the row's call answered with (its warnings were that call's to report).
    fn deposit(self) -> Deposit {
        Deposit {
            blob: Blob {
                scratch_path: super::blob_path(&self.blob_sha256),
                sha256: self.blob_sha256,
                bytes: self.blob_bytes,
                dedup: self.dedup,
                journal_id: self.blob_journal_id,
            },
            warnings: Vec::new(),
        }
    }
}

/// Deposit the content (`scratch_put`), or answer a keyed retry with its first call's
/// deposit. In this order: the replay, the content's decoding against the size cap, then
/// [`deposit_keyed`], which checks the replay again under the index's lock.
pub fn put(store: &Store, who: &Caller, put: Put<'_>) -> Result<Answer<Deposit>> {
    let keyed = put.keyed;
    let replay = || Ok(store.replay::<DepositRow>(keyed)?.map(DepositRow::deposit));
    if let Some(d) = replay()? {
        return Ok(Answer::Replayed(d));
    }
    let encoding = put.content.encoding.label();
    let bytes = put.content.decode(store.config().max_write_bytes)?;
    let meta = Meta {
        label: put.label,
        content_type: put.content_type,
        notes: put.notes,
        encoding,
    };
    deposit_keyed(store, who, &bytes, &meta, keyed.extra(), &replay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::content::ContentEncoding;

    fn keyed_put(store: &Store, content: &str) -> Result<Answer<Deposit>> {
        let who = Caller {
            caller: "test".into(),
            tool: "scratch_put".into(),
        };
        let put = Put {
            content: Content {
                content: content.into(),
                encoding: ContentEncoding::Base64,
            },
            label: Some("l"),
            content_type: None,
            notes: None,
            keyed: Keyed {
                key: Some("k"),
                request_sha256: "req",
            },
        };
        super::put(store, &who, put)
    }

    #[test]
    fn a_keyed_retry_answers_with_the_first_deposit_from_its_row_and_adds_no_index_row() {
        let (_t, store) = crate::testing::temp_store();
        let Answer::Applied(first) = keyed_put(&store, "AAEC").unwrap() else {
            panic!("the first call deposits");
        };
        assert_eq!(first.blob.sha256, crate::hash::sha256_hex(&[0, 1, 2]));
        assert!(first.blob.journal_id.is_some() && !first.blob.dedup);
        let again = keyed_put(&store, "AAEC").unwrap();
        let first = Deposit {
            warnings: Vec::new(),
            ..first
        };
        assert_eq!(again, Answer::Replayed(first));
        assert_eq!(super::super::read_index(&store).unwrap().0.len(), 1);
    }

    #[test]
    fn invalid_base64_is_refused_and_deposits_nothing() {
        let (_t, store) = crate::testing::temp_store();
        let e = keyed_put(&store, "not base64!").unwrap_err();
        assert!(
            matches!(&e, crate::envelope::Failure::Encoding { field, .. } if field == "content"),
            "{e:?}"
        );
        assert!(super::super::read_index(&store).unwrap().0.is_empty());
    }
}
