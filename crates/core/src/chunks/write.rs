//! Chunk writes (`chunk_write`, and `chunk_append` with no index): the chunk goes through
//! the pipeline under the session lock, then its record goes to the records log, or the
//! manifest is rewritten when it must change or the log has outgrown it. [`put`] is the
//! tools' entry point: it decides, in order, the arguments, an idempotent replay, the
//! content's decoding and its L0 check before [`write_chunk`] writes.

use super::integrity::fold_manifest;
use super::records::stamp_of;
use super::session::validate_index;
use super::{
    ChunkRecord, MAX_INDEX, open_session, part_name, session_display, session_failure,
    validate_session,
};
use crate::envelope::{Failure, Result};
use crate::journal::recorded::lenient;
use crate::policy::active::Classify;
use crate::store::Store;
use crate::write::content::Content;
use crate::write::idempotency::{Answer, Keyed};
use crate::write::pipeline::{Body, Caller, Decision, Plan};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The records log is folded into the manifest once it outgrows the manifest (so appends
/// cost O(1) amortised) or this many bytes, whichever is larger.
const FOLD_AT_BYTES: u64 = 4096;

// A chunk write's outcome, as `chunk_write` and `chunk_append` report it (flattened into
// their result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChunkWritten {
    pub index: u64,
    /// `.resilient_write/chunks/<session>/part-NNN.txt`
    pub chunk_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    /// The session's total_expected after this write, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_expected: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A chunk write's journal fields (an idempotency key) and its replay check.
pub struct ChunkWriteOptions<'a> {
    /// Added to the chunk's journal row (with `total_expected` when it has any field).
    pub extra: BTreeMap<String, Value>,
    /// Run under the session lock before writing: the outcome of an earlier call this one
    /// repeats, to answer with instead of writing (so two retries racing each other still
    /// write once).
    pub replay: &'a dyn Fn() -> Result<Option<ChunkWritten>>,
}

/// What `chunk_write` and `chunk_append` ask for.
pub struct ChunkPut<'a> {
    pub session: &'a str,
    /// The chunk's index as given (`None`: the next one, an append).
    pub index: Option<i64>,
    pub total_expected: Option<i64>,
    pub content: Content,
    pub classify: Classify,
    pub keyed: Keyed<'a>,
}

/// A chunk's journal row, as a replay reads it.
#[derive(Default, Deserialize)]
#[serde(default)]
struct ChunkRow {
    #[serde(flatten)]
    row: crate::journal::recorded::RecordedRow,
    #[serde(deserialize_with = "lenient")]
    chunk_index: u64,
    #[serde(deserialize_with = "lenient")]
    total_expected: Option<u64>,
}

impl ChunkRow {
    /// The outcome the row's call answered with (its warnings were that call's to report).
    fn written(self, session: &str) -> ChunkWritten {
        ChunkWritten {
            index: self.chunk_index,
            chunk_path: format!(
                "{}/{}",
                session_display(session),
                part_name(self.chunk_index)
            ),
            sha256: self.row.sha256,
            bytes: self.row.bytes,
            journal_id: self.row.journal_id,
            total_expected: self.total_expected,
            warnings: Vec::new(),
        }
    }
}

/// An index argument (`index`, `total_expected`) of 0 or below is refused with the session
/// named; [`write_chunk`] checks the upper bound.
fn index_arg(session: &str, field: &str, v: Option<i64>) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as u64)),
        Some(n) => Err(Failure::ChunkArgument {
            session: session.into(),
            reason: "index_out_of_range",
            message: format!("{field} must be between 1 and {MAX_INDEX}, got {n}"),
        }),
    }
}

/// Write a chunk (`chunk_write`, or with no index `chunk_append`), or answer a keyed retry
/// with its first call's outcome. In this order: the session name and index, the replay, then
/// `total_expected`, the content's decoding against the size cap and its L0 check, then
/// [`write_chunk`], which checks the replay again under the session lock (so two retries
/// racing each other still write once).
pub fn put(store: &Store, who: &Caller, put: ChunkPut<'_>) -> Result<Answer<ChunkWritten>> {
    let ChunkPut {
        session,
        index,
        total_expected,
        content,
        classify,
        keyed,
    } = put;
    validate_session(session)?;
    let index = index_arg(session, "index", index)?;
    let replay = || Ok(store.replay::<ChunkRow>(keyed)?.map(|r| r.written(session)));
    if let Some(w) = replay()? {
        return Ok(Answer::Replayed(w));
    }
    let total = index_arg(session, "total_expected", total_expected)?;
    let bytes = content.decode(store.config().max_write_bytes)?;
    store
        .policy()
        .preflight_bytes(&bytes, classify.classify, classify.classify_reject_at)?;
    let opts = ChunkWriteOptions {
        extra: keyed.extra(),
        replay: &replay,
    };
    write_chunk(store, who, session, index, bytes, total, opts)
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
/// an append), updating the manifest. Holds the session lock throughout. A replay (the call
/// repeats an earlier one, [`ChunkWriteOptions::replay`]) writes nothing.
pub fn write_chunk(
    store: &Store,
    who: &Caller,
    session_name: &str,
    index: Option<u64>,
    content: Vec<u8>,
    total_expected: Option<u64>,
    opts: ChunkWriteOptions,
) -> Result<Answer<ChunkWritten>> {
    validate_session(session_name)?;
    if let Some(i) = index {
        validate_index(session_name, "index", i)?;
    }
    if let Some(t) = total_expected {
        validate_index(session_name, "total_expected", t)?;
    }
    let session = open_session(store, session_name, true, true)?
        .ok_or_else(|| Failure::Internal("session directory vanished".into()))?;
    if let Some(w) = (opts.replay)()? {
        return Ok(Answer::Replayed(w));
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
    let (outcome, ()) = store.pipeline().commit(&target, who, |existing| {
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(content),
                mode: crate::write::pipeline::mode_over(existing, "overwrite"),
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
            store,
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
    Ok(Answer::Applied(ChunkWritten {
        index,
        chunk_path: session.display(&name),
        sha256: outcome.sha256,
        bytes: outcome.bytes,
        journal_id: outcome.journal_id,
        total_expected: effective_total,
        warnings,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{argument_refusal, put, put_total, refusal, service, session_dir};
    use super::super::{MANIFEST_FILE, MAX_INDEX, Manifest, RECORDS_FILE};
    use super::*;
    use crate::hash::sha256_hex;
    use std::path::Path;

    fn manifest_of(store: &Store, name: &str) -> Manifest {
        let s = open_session(store, name, false, false).unwrap().unwrap();
        s.manifest().unwrap().manifest().cloned().unwrap()
    }

    fn size(p: &Path) -> u64 {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }

    fn try_write(
        store: &Store,
        session: &str,
        index: Option<u64>,
        total_expected: Option<u64>,
    ) -> Result<Answer<ChunkWritten>> {
        write_chunk(
            store,
            &super::super::testing::who(),
            session,
            index,
            b"x".to_vec(),
            total_expected,
            ChunkWriteOptions::default(),
        )
    }

    #[test]
    fn append_writes_the_chunk_after_the_highest_present() {
        let (t, store) = service();
        assert_eq!(put(&store, "s", None, b"a").index, 1);
        assert_eq!(put(&store, "s", Some(5), b"e").index, 5);
        let w = put(&store, "s", None, b"f");
        assert_eq!(w.index, 6);
        assert_eq!(w.chunk_path, ".resilient_write/chunks/s/part-006.txt");
        assert_eq!(w.sha256, sha256_hex(b"f"));
        assert_eq!(w.bytes, 1);
        assert!(!w.journal_id.is_empty());
        let path = t.path().join(&w.chunk_path);
        assert_eq!(std::fs::read(path).unwrap(), b"f");
    }

    #[test]
    fn the_first_write_creates_the_manifest_with_the_chunk_record() {
        let (_t, store) = service();
        let w = put(&store, "s", Some(1), b"one");
        let m = manifest_of(&store, "s");
        assert_eq!(m.session.as_deref(), Some("s"));
        assert_eq!(m.chunks[&1].sha256, w.sha256);
        assert!(m.chunks[&1].stamp.is_some());
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);
        assert_eq!(size(&session_dir(&store, "s").join(RECORDS_FILE)), 0);
    }

    #[test]
    fn the_records_log_is_folded_into_the_manifest_once_it_reaches_fold_at_bytes() {
        let (_t, store) = service();
        put(&store, "s", None, b"chunk 1");
        let dir = session_dir(&store, "s");
        let log = dir.join(RECORDS_FILE);
        let mut folded_at = None;
        for k in 2..=500u64 {
            let log_before = size(&log);
            let manifest_before = size(&dir.join(MANIFEST_FILE));
            let w = put(&store, "s", None, format!("chunk {k}").as_bytes());
            assert_eq!(w.index, k);
            let m = manifest_of(&store, "s");
            if log_before >= manifest_before.max(FOLD_AT_BYTES) {
                assert_eq!(size(&log), 0, "write {k} should have emptied the log");
                assert_eq!(m.chunks.len() as u64, k, "write {k} should have folded");
                folded_at = Some(k);
                break;
            }
            assert!(size(&log) > log_before, "write {k} should go to the log");
            assert!(!m.chunks.contains_key(&k), "write {k} folded too early");
        }
        let k = folded_at.expect("the records log was never folded");
        assert!(k > 2);
    }

    #[test]
    fn a_new_total_expected_is_written_to_the_manifest_at_once() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        let w = put_total(&store, "s", Some(2), b"b", Some(4));
        assert_eq!(w.total_expected, Some(4));
        let m = manifest_of(&store, "s");
        assert_eq!(m.total_expected, Some(4));
        assert_eq!(m.chunks.len(), 2);
        assert_eq!(size(&session_dir(&store, "s").join(RECORDS_FILE)), 0);
        // Later writes inherit the recorded total.
        assert_eq!(put(&store, "s", Some(3), b"c").total_expected, Some(4));
    }

    #[test]
    fn write_refuses_a_total_expected_below_the_chunks_present() {
        let (_t, store) = service();
        for i in 1..=3 {
            put(&store, "s", Some(i), b"x");
        }
        let e = try_write(&store, "s", Some(1), Some(2)).err().unwrap();
        let (reason, details) = refusal(e);
        assert_eq!(reason, "total_expected_below_existing");
        assert_eq!(details["have"], json!([1, 2, 3]));
    }

    #[test]
    fn write_refuses_an_index_beyond_the_recorded_total_expected() {
        let (_t, store) = service();
        put_total(&store, "s", Some(1), b"a", Some(2));
        put(&store, "s", Some(2), b"b");
        let (reason, details) = refusal(try_write(&store, "s", None, None).err().unwrap());
        assert_eq!(reason, "index_exceeds_total_expected");
        assert_eq!(details["index"], 3);
        assert!(!session_dir(&store, "s").join(part_name(3)).exists());
    }

    #[test]
    fn write_refuses_out_of_range_indices_and_invalid_session_names_before_creating_anything() {
        let (_t, store) = service();
        let e = try_write(&store, "s", Some(0), None).err().unwrap();
        assert_eq!(argument_refusal(e), "index_out_of_range");
        let e = try_write(&store, "s", Some(MAX_INDEX + 1), None)
            .err()
            .unwrap();
        assert_eq!(argument_refusal(e), "index_out_of_range");
        let e = try_write(&store, "s", Some(1), Some(0)).err().unwrap();
        assert_eq!(argument_refusal(e), "index_out_of_range");
        assert!(!session_dir(&store, "s").exists());
        let e = try_write(&store, "no/slash", Some(1), None).err().unwrap();
        assert_eq!(argument_refusal(e), "invalid_session_name");
    }

    #[test]
    fn a_corrupt_manifest_is_rebuilt_at_the_next_write_with_a_warning() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        std::fs::write(session_dir(&store, "s").join(MANIFEST_FILE), b"{ torn").unwrap();
        let w = put(&store, "s", Some(2), b"two");
        assert!(
            w.warnings
                .iter()
                .any(|m| m.contains("manifest.json was corrupt")),
            "{:?}",
            w.warnings
        );
        let m = manifest_of(&store, "s");
        assert_eq!(m.chunks[&1].sha256, sha256_hex(b"one"));
        assert_eq!(m.chunks[&2].sha256, sha256_hex(b"two"));
    }

    #[test]
    fn a_missing_manifest_is_rebuilt_at_the_next_write_with_a_warning() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        std::fs::remove_file(session_dir(&store, "s").join(MANIFEST_FILE)).unwrap();
        let w = put(&store, "s", Some(2), b"two");
        assert!(
            w.warnings
                .iter()
                .any(|m| m.contains("manifest.json was missing")),
            "{:?}",
            w.warnings
        );
        assert_eq!(manifest_of(&store, "s").chunks.len(), 2);
    }

    #[test]
    fn replacing_an_earlier_chunk_warns_that_later_chunks_exist() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"a");
        put(&store, "s", Some(2), b"b");
        let w = put(&store, "s", Some(1), b"a again");
        assert!(
            w.warnings.iter().any(|m| m.contains("replaced chunk 1")),
            "{:?}",
            w.warnings
        );
        assert!(put(&store, "s", Some(2), b"b again").warnings.is_empty());
    }

    #[test]
    fn a_call_that_replays_an_earlier_one_writes_nothing() {
        let (_t, store) = service();
        let earlier = ChunkWritten {
            index: 1,
            chunk_path: "earlier".into(),
            sha256: sha256_hex(b"y"),
            bytes: 1,
            journal_id: "earlier".into(),
            total_expected: None,
            warnings: Vec::new(),
        };
        let answer = earlier.clone();
        let replay = move || Ok(Some(answer.clone()));
        let opts = ChunkWriteOptions {
            extra: BTreeMap::new(),
            replay: &replay,
        };
        let who = super::super::testing::who();
        let r = write_chunk(&store, &who, "s", Some(1), b"x".to_vec(), None, opts).unwrap();
        assert_eq!(r, Answer::Replayed(earlier));
        assert!(!session_dir(&store, "s").join(part_name(1)).exists());
    }

    fn keyed_put(store: &Store, index: Option<i64>, content: &str) -> Result<Answer<ChunkWritten>> {
        super::put(
            store,
            &super::super::testing::who(),
            ChunkPut {
                session: "s",
                index,
                total_expected: Some(3),
                content: Content {
                    content: content.into(),
                    encoding: Default::default(),
                },
                classify: Classify::default(),
                keyed: Keyed {
                    key: Some("k"),
                    request_sha256: "req",
                },
            },
        )
    }

    fn journal_rows(store: &Store) -> usize {
        let (rows, _, _) = store.pipeline().journal().read_from(0).unwrap();
        rows.len()
    }

    #[test]
    fn a_keyed_retry_answers_with_the_first_outcome_from_its_row_and_writes_nothing() {
        let (_t, store) = service();
        let Answer::Applied(first) = keyed_put(&store, None, "one").unwrap() else {
            panic!("the first call writes");
        };
        let rows = journal_rows(&store);
        let again = keyed_put(&store, None, "one").unwrap();
        assert_eq!(journal_rows(&store), rows);
        let expected = ChunkWritten {
            warnings: Vec::new(),
            ..first
        };
        assert_eq!(again, Answer::Replayed(expected));
        assert!(!session_dir(&store, "s").join(part_name(2)).exists());
    }

    #[test]
    fn the_replay_is_decided_before_the_content_is_decoded_or_checked() {
        let (t, store) = service();
        keyed_put(&store, Some(1), "four").unwrap();
        // The same state, now with a size cap the content exceeds: the retry still replays
        // (it applies nothing), where a new call is refused.
        let mut config = crate::store::Config::new(t.path().to_path_buf());
        config.max_write_bytes = 2;
        config.sweep_on_start = false;
        let small = Store::open(config);
        assert!(keyed_put(&small, Some(1), "four").unwrap().replayed());
        let fresh = super::put(
            &small,
            &super::super::testing::who(),
            ChunkPut {
                session: "s",
                index: Some(2),
                total_expected: None,
                content: Content {
                    content: "four".into(),
                    encoding: Default::default(),
                },
                classify: Classify::default(),
                keyed: Keyed {
                    key: None,
                    request_sha256: "",
                },
            },
        );
        assert!(matches!(fresh, Err(Failure::TooLarge { .. })), "{fresh:?}");
        // An index below 1 is refused before anything else, replay included.
        let e = keyed_put(&store, Some(0), "four").unwrap_err();
        assert_eq!(argument_refusal(e), "index_out_of_range");
    }
}
