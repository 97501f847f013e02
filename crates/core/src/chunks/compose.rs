//! Compose and preview. Compose streams the chunks of a checked [`snapshot`] through the
//! pipeline in constant memory, hashing on a second thread each chunk whose record it cannot
//! trust; preview composes in memory, with the same checks, up to a size limit. [`compose`]
//! is what `chunk_compose` asks for (a keyed retry answered from its journal row, without the
//! session, which cleanup may have removed); [`compose_with`] the streaming compose itself.

use super::admin::remove_session;
use super::records::{check_record, journaled_in, modified_failure, stamp_of};
use super::{ModifiedChunk, errno, open_session, session_failure, snapshot};
use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::journal::recorded::{RecordedRow, lenient};
use crate::policy::active::Classify;
use crate::progress::Progress;
use crate::store::Store;
use crate::write::idempotency::{Answer, Keyed};
use crate::write::intent::{self, Applied, Order, Precondition, WriteMode};
use crate::write::pipeline::{Body, Caller, Decision, Existing, Outcome, Plan};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

/// Options of a compose.
pub struct ComposeOptions {
    pub separator: Vec<u8>,
    /// `None`: the original's behaviour, create or overwrite if the file exists.
    pub mode: Option<WriteMode>,
    pub expected_prev_sha256: Option<String>,
    pub cleanup: bool,
    /// Extra journal fields (idempotency key and request hash).
    pub extra: BTreeMap<String, Value>,
    pub progress: Option<Progress>,
    /// Score the composed chunks (separators included, an append's existing content not) as
    /// they stream, and refuse with blocked/content_filter at this verdict; nothing is
    /// written then.
    pub classify: Option<(crate::classify::Classifier, crate::policy::active::RejectAt)>,
}

/// A compose's outcome.
#[derive(Debug)]
pub struct Composed {
    /// The composed file's path as its journal row records it.
    pub output_path: String,
    pub outcome: Outcome,
    pub chunk_count: u64,
    pub chunk_hashes: Vec<String>,
    pub mode_applied: String,
    pub cleaned_up: bool,
    pub warnings: Vec<String>,
}

/// What the producer found wrong while streaming, reported after the pipeline aborts.
#[derive(Default)]
struct StreamReport {
    hashes: Vec<String>,
    modified: Vec<ModifiedChunk>,
    /// A chunk (by index) whose stamp moved while compose copied it.
    changed_while_composing: Option<u64>,
    /// The classify refusal, when the composed content reached the verdict.
    blocked: Option<Failure>,
}

/// What `chunk_compose` asks for.
pub struct Compose<'a> {
    pub session: &'a str,
    /// The output path as the client gave it.
    pub output_path: &'a str,
    pub separator: Vec<u8>,
    /// `None`: the original's behaviour, create or overwrite if the file exists.
    pub mode: Option<WriteMode>,
    pub expected_prev_sha256: Option<String>,
    pub cleanup: bool,
    pub classify: Classify,
    pub keyed: Keyed<'a>,
}

/// A compose's journal row, as a replay reads it.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
struct ComposeRow {
    #[serde(flatten)]
    row: RecordedRow,
    #[serde(deserialize_with = "lenient")]
    chunk_count: u64,
    #[serde(deserialize_with = "lenient")]
    compose_mode: String,
}

impl ComposeRow {
    /// The outcome the row's call answered with: its chunks' hashes and warnings were that
    /// call's to report, and `cleanup` is the retry's own argument.
    fn composed(self, store: &Store, cleanup: bool) -> Composed {
        let paths = store.workspaces().journal_paths();
        let root = self.row.root.as_deref();
        let output_path = paths.shown(&self.row.path, root).0.into_owned();
        let abs_path = paths.absolute(&self.row.path, root);
        Composed {
            output_path,
            outcome: Outcome::recorded(self.row, abs_path),
            chunk_count: self.chunk_count,
            chunk_hashes: Vec::new(),
            mode_applied: self.compose_mode,
            cleaned_up: cleanup,
            warnings: Vec::new(),
        }
    }
}

/// Compose a session into a file (`chunk_compose`), or answer a keyed retry with its first
/// call's outcome. In this order: the session name, the replay (which needs no session:
/// cleanup may have removed it), the output path, the classifier when asked for, then
/// [`compose_with`], which checks the replay again under the pipeline's lock.
pub fn compose(store: &Store, who: &Caller, c: Compose<'_>) -> Result<Answer<Composed>> {
    super::validate_session(c.session)?;
    let (keyed, cleanup) = (c.keyed, c.cleanup);
    let replay = || {
        Ok(store
            .replay::<ComposeRow>(keyed)?
            .map(|r| r.composed(store, cleanup)))
    };
    if let Some(done) = replay()? {
        return Ok(Answer::Replayed(done));
    }
    let target = store.workspaces().resolve(c.output_path, true)?;
    let opts = ComposeOptions {
        separator: c.separator,
        mode: c.mode,
        expected_prev_sha256: c.expected_prev_sha256,
        cleanup,
        extra: keyed.extra(),
        progress: crate::progress::current(),
        classify: match c.classify.classify {
            true => Some((
                store.policy().classifier()?.clone(),
                c.classify.classify_reject_at,
            )),
            false => None,
        },
    };
    Ok(
        match compose_with(store, who, c.session, &target, opts, |_| replay())? {
            Ok(done) => Answer::Applied(done),
            Err(done) => Answer::Replayed(done),
        },
    )
}

/// Compose `session` into `target` through the pipeline, streaming. `check` runs under the
/// pipeline's lock before anything is written (idempotency replay, expected hash); it may
/// return a value that makes compose write nothing and return it instead.
pub fn compose_with<R>(
    store: &Store,
    who: &Caller,
    session_name: &str,
    target: &crate::workspace::Target,
    opts: ComposeOptions,
    check: impl FnOnce(Option<&Existing>) -> Result<Option<R>>,
) -> Result<std::result::Result<Composed, R>> {
    let session = open_session(store, session_name, false, true)?.ok_or_else(|| {
        session_failure(
            session_name,
            "session_not_found",
            "no such session".into(),
            json!({}),
        )
    })?;
    let snap = snapshot(&session)?;
    let count = snap.names.len() as u64;
    let seps = opts.separator.len() as u64 * count.saturating_sub(1);
    let total: u64 = snap.sizes.iter().sum::<u64>() + seps;
    let report = Arc::new(Mutex::new(StreamReport::default()));
    let shown = target.display.clone();
    let mode = opts.mode;
    let expected = opts.expected_prev_sha256.clone();
    let session_dir = session
        .dir
        .dir
        .try_clone()
        .map_err(|e| Failure::io("open session", &session.dir.path, e))?;
    let out_dir = target
        .dir
        .try_clone()
        .map_err(|e| Failure::io("open output directory", &shown, e))?;
    let out_name = target.name.clone();
    let names = snap.names.clone();
    let records = snap.records.clone();
    let separator = opts.separator.clone();
    let progress = opts.progress.clone();
    let classify = opts.classify;
    let rep = report.clone();
    let journal = store.pipeline().journal().clone();
    let session_path = session.dir.path.clone();
    let session_shown = session.dir.display.clone();
    let mut extra = opts.extra;
    extra.insert("session".into(), json!(session_name));
    extra.insert("chunk_count".into(), json!(count));
    let pruned = store.pipeline().make_room_for(target, total, &mut extra);

    let committed = store.pipeline().commit_streaming(target, who, |existing| {
        if let Some(r) = check(existing)? {
            return Ok(Decision::Skip(Err(r)));
        }
        // Compose streams: the decision reads the target's hash, never its bytes.
        let applied = Precondition {
            shown: &shown,
            mode,
            expected: expected.as_deref(),
            order: Order::ModeFirst,
        }
        .check(existing)?;
        let prefix_len = if applied == Applied::Append {
            rustix::fs::statat(&out_dir, &out_name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| st.st_size.max(0) as u64)
                .map_err(|e| Failure::io("stat", &shown, errno(e)))?
        } else {
            0
        };
        extra.insert("compose_mode".into(), json!(applied.label()));
        let total = total + prefix_len;
        let producer = move |w: &mut dyn Write| -> io::Result<String> {
            let mut done = 0u64;
            let tick = |done: u64| {
                if let Some(p) = &progress {
                    p(done, total);
                }
            };
            tick(0);
            let mut rep = rep.lock().unwrap_or_else(|p| p.into_inner());
            let mut scorer = classify
                .as_ref()
                .map(|(c, _)| crate::classify::stream::StreamScorer::new(c));
            let mut last_tick = 0u64;
            // This thread reads and writes; a second one hashes the output (the digest the
            // pipeline's read-back is compared with) and each chunk whose record it cannot
            // trust. Buffers go round a small pool, so memory stays constant.
            let (digest, hashes) = std::thread::scope(|scope| {
                let (to_hasher, for_hasher) = std::sync::mpsc::sync_channel::<Block>(POOL);
                let (recycle, pool) = std::sync::mpsc::channel::<Vec<u8>>();
                for _ in 0..POOL {
                    let _ = recycle.send(vec![0u8; BLOCK]);
                }
                let give_back = recycle.clone();
                let sep = separator.clone();
                let hasher = scope.spawn(move || hash_blocks(for_hasher, recycle, &sep));
                // Copies `f` to the output through the pool: what the streaming loop of
                // every input (the existing file of an append, each chunk) shares.
                let mut copy = |w: &mut dyn Write,
                                f: &mut File,
                                done: &mut u64,
                                scorer: Option<&mut crate::classify::stream::StreamScorer>|
                 -> io::Result<()> {
                    let mut scorer = scorer;
                    loop {
                        let mut buf = pool.recv().map_err(|_| hasher_gone())?;
                        let n = loop {
                            match f.read(&mut buf) {
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                                other => break other?,
                            }
                        };
                        if n == 0 {
                            let _ = give_back.send(buf);
                            return Ok(());
                        }
                        w.write_all(&buf[..n])?;
                        if let Some(s) = scorer.as_deref_mut() {
                            s.feed(&buf[..n]);
                        }
                        to_hasher
                            .send(Block::Data(buf, n))
                            .map_err(|_| hasher_gone())?;
                        *done += n as u64;
                        if *done - last_tick >= 8 * 1024 * 1024 {
                            last_tick = *done;
                            tick(*done);
                        }
                    }
                };
                let streamed = (|| -> io::Result<()> {
                    if prefix_len > 0 {
                        // Append: the existing content first, streamed like a chunk but not
                        // scored (it is already on disk).
                        let fd = rustix::fs::openat(
                            &out_dir,
                            &out_name,
                            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .map_err(errno)?;
                        let mut f =
                            crate::util::statefile::regular(fd, std::path::Path::new(&out_name))?;
                        copy(&mut *w, &mut f, &mut done, None)?;
                    }
                    for (k, name) in names.iter().enumerate() {
                        if k > 0 {
                            w.write_all(&separator)?;
                            if let Some(s) = scorer.as_mut() {
                                s.feed(&separator);
                            }
                            to_hasher
                                .send(Block::Separator)
                                .map_err(|_| hasher_gone())?;
                            done += separator.len() as u64;
                        }
                        let fd = rustix::fs::openat(
                            &session_dir,
                            name.as_str(),
                            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .map_err(errno)?;
                        // A chunk whose stamp and size are those of its record is the
                        // recorded content (see `ChunkRecord::stamp`): its own hash is not
                        // recomputed. The stamp is taken again after the copy, so a change
                        // while it was read is caught too.
                        let st = rustix::fs::fstat(&fd).map_err(errno)?;
                        if rustix::fs::FileType::from_raw_mode(st.st_mode)
                            != rustix::fs::FileType::RegularFile
                        {
                            return Err(crate::util::statefile::not_regular(
                                std::path::Path::new(name.as_str()),
                                rustix::fs::FileType::from_raw_mode(st.st_mode),
                            ));
                        }
                        let stamp = stamp_of(&st);
                        let trusted = records[k].as_ref().is_some_and(|r| {
                            r.stamp.as_deref() == Some(stamp.as_str())
                                && r.bytes == st.st_size.max(0) as u64
                        });
                        let mut f = File::from(fd);
                        to_hasher
                            .send(Block::Begin { hash: !trusted })
                            .map_err(|_| hasher_gone())?;
                        copy(&mut *w, &mut f, &mut done, scorer.as_mut())?;
                        to_hasher.send(Block::End).map_err(|_| hasher_gone())?;
                        let after = rustix::fs::fstat(&f).map_err(errno)?;
                        if trusted
                            && (stamp_of(&after) != stamp
                                || crate::write::pipeline::fault("compose_chunk_changed"))
                        {
                            return Err(io::Error::other(ChangedWhileComposing(k as u64 + 1)));
                        }
                    }
                    Ok(())
                })();
                drop(to_hasher);
                let hashed = hasher.join().map_err(|_| hasher_gone());
                streamed.and(hashed)
            })
            .inspect_err(|e| {
                if let Some(ChangedWhileComposing(index)) = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<ChangedWhileComposing>())
                {
                    rep.changed_while_composing = Some(*index);
                }
            })?;
            for (k, computed) in hashes.into_iter().enumerate() {
                let recorded = records[k].as_ref();
                let actual = match (computed, recorded) {
                    (Some(h), _) => h,
                    (None, Some(r)) => r.sha256.clone(),
                    (None, None) => {
                        return Err(io::Error::other("a chunk without a record was not hashed"));
                    }
                };
                if let Some(rec) = recorded
                    && rec.sha256 != actual
                    && !journaled_in(
                        &journal,
                        &session_path.join(&names[k]),
                        &format!("{session_shown}/{}", names[k]),
                        &actual,
                    )
                {
                    rep.modified.push(ModifiedChunk {
                        index: k as u64 + 1,
                        recorded_sha256: rec.sha256.clone(),
                        actual_sha256: actual.clone(),
                    });
                }
                rep.hashes.push(actual);
            }
            tick(done);
            if !rep.modified.is_empty() {
                // The pipeline drops the temp file: nothing is renamed into place.
                return Err(io::Error::other("chunks modified since they were written"));
            }
            if let (Some(s), Some((_, at))) = (scorer, classify.as_ref()) {
                let r = s.finish();
                if r.verdict >= at.verdict() {
                    rep.blocked = Some(crate::policy::active::blocked(
                        r.score,
                        r.verdict,
                        &r.findings,
                    ));
                    return Err(io::Error::other("the composed content is blocked"));
                }
            }
            Ok(digest)
        };
        Ok(Decision::Write(
            Plan {
                body: Body::HashedStream(Box::new(producer)),
                mode: "compose".into(),
                create_only: applied.create_only(),
                extra,
                new_file_mode: None,
            },
            Ok(applied.label().to_string()),
        ))
    });

    let mut rep = std::mem::take(&mut *report.lock().unwrap_or_else(|p| p.into_inner()));
    let (outcome, applied) = match committed {
        Ok((_, Err(r))) => return Ok(Err(r)),
        Ok((Some(o), Ok(applied))) => (o, applied),
        Ok((None, Ok(_))) => return Err(Failure::Internal("compose wrote nothing".into())),
        Err(_) if !rep.modified.is_empty() => {
            return Err(modified_failure(session_name, &rep.modified));
        }
        Err(_) if rep.changed_while_composing.is_some() => {
            let index = rep.changed_while_composing.unwrap_or(0);
            return Err(session_failure(
                session_name,
                "chunk_modified",
                format!(
                    "chunk {index} changed while compose read it (written outside \
                     resilient-write); nothing was written; compose again"
                ),
                json!({ "changed_while_composing": index }),
            ));
        }
        Err(e) => return Err(rep.blocked.take().unwrap_or(e)),
    };
    let mut warnings = outcome.warnings.clone();
    warnings.extend(pruned);
    let mut cleaned_up = false;
    if opts.cleanup {
        match remove_session(&session) {
            Ok(_) => cleaned_up = true,
            Err(e) => warnings.push(format!("cleanup failed, the session is kept: {e}")),
        }
    }
    Ok(Ok(Composed {
        output_path: target.row_path.path.clone(),
        outcome,
        chunk_count: count,
        chunk_hashes: rep.hashes,
        mode_applied: applied,
        cleaned_up,
        warnings,
    }))
}

/// Read size and count of the buffers compose passes to its hashing thread.
const BLOCK: usize = 1024 * 1024;
const POOL: usize = 4;

/// What compose hands its hashing thread, in output order.
enum Block {
    /// A buffer and how much of it is output (of the open chunk, if one is).
    Data(Vec<u8>, usize),
    /// The separator, written between two chunks.
    Separator,
    /// A chunk starts; `hash`: its own digest is wanted (its record cannot be trusted).
    Begin { hash: bool },
    /// The chunk ends.
    End,
}

/// A chunk changed (its stamp moved) while compose copied it.
#[derive(Debug)]
struct ChangedWhileComposing(u64);

impl std::fmt::Display for ChangedWhileComposing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "chunk {} changed while it was composed", self.0)
    }
}

impl std::error::Error for ChangedWhileComposing {}

/// The hashing thread of compose: the SHA-256 of the whole output, and of each chunk that
/// asked for it (`None` for the others), in order; buffers go back to the pool once hashed.
fn hash_blocks(
    blocks: std::sync::mpsc::Receiver<Block>,
    recycle: std::sync::mpsc::Sender<Vec<u8>>,
    separator: &[u8],
) -> (String, Vec<Option<String>>) {
    let mut output = Sha256::new();
    let mut chunk: Option<Sha256> = None;
    let mut hashes = Vec::new();
    for block in blocks {
        match block {
            Block::Data(buf, n) => {
                output.update(&buf[..n]);
                if let Some(h) = chunk.as_mut() {
                    h.update(&buf[..n]);
                }
                let _ = recycle.send(buf);
            }
            Block::Separator => output.update(separator),
            Block::Begin { hash } => chunk = hash.then(Sha256::new),
            Block::End => hashes.push(chunk.take().map(|h| hex::encode(h.finalize()))),
        }
    }
    (hex::encode(output.finalize()), hashes)
}

fn hasher_gone() -> io::Error {
    io::Error::other("the hashing thread of compose stopped")
}

/// A preview: the composed content in memory, checked like a compose.
pub struct Preview {
    pub content: Vec<u8>,
    pub chunk_hashes: Vec<String>,
}

/// Compose `session` in memory (at most `limit` bytes), with every check of a compose.
pub fn preview(store: &Store, name: &str, separator: &[u8], limit: u64) -> Result<Preview> {
    let session = open_session(store, name, false, false)?.ok_or_else(|| {
        session_failure(
            name,
            "session_not_found",
            "no such session".into(),
            json!({}),
        )
    })?;
    let snap = snapshot(&session)?;
    let seps = separator.len() as u64 * (snap.names.len() as u64).saturating_sub(1);
    let total = snap.sizes.iter().sum::<u64>() + seps;
    intent::within_limit("previewed content", total, limit)?;
    let mut content = Vec::with_capacity(total as usize);
    let mut hashes = Vec::with_capacity(snap.names.len());
    let mut modified = Vec::new();
    for (k, part) in snap.names.iter().enumerate() {
        if k > 0 {
            content.extend_from_slice(separator);
        }
        let path = session.dir.path.join(part);
        let start = content.len();
        session
            .open_part(part)
            .and_then(|mut f| f.read_to_end(&mut content))
            .map_err(|e| Failure::io("read chunk", &path, e))?;
        let actual = sha256_hex(&content[start..]);
        if let Some(x) = check_record(
            store,
            &session,
            k as u64 + 1,
            part,
            snap.records[k].as_ref(),
            &actual,
        ) {
            modified.push(x);
        }
        hashes.push(actual);
    }
    if !modified.is_empty() {
        return Err(modified_failure(name, &modified));
    }
    Ok(Preview {
        content,
        chunk_hashes: hashes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{put, put_total, refusal, replace_by_hand, service, session_dir};
    use super::super::{MANIFEST_FILE, RECORDS_FILE, part_name};
    use super::*;

    fn options(separator: &[u8]) -> ComposeOptions {
        ComposeOptions {
            separator: separator.to_vec(),
            mode: None,
            expected_prev_sha256: None,
            cleanup: false,
            extra: BTreeMap::new(),
            progress: None,
            classify: None,
        }
    }

    fn compose_to(
        store: &Store,
        session: &str,
        out: &str,
        opts: ComposeOptions,
    ) -> Result<Composed> {
        let target = store.workspaces().resolve(out, true)?;
        let who = Caller {
            caller: "test".into(),
            tool: "chunk_compose".into(),
        };
        Ok(compose_with(store, &who, session, &target, opts, |_| Ok(None::<()>))?.unwrap())
    }

    fn read_out(t: &tempfile::TempDir, out: &str) -> Option<Vec<u8>> {
        std::fs::read(t.path().join(out)).ok()
    }

    #[test]
    fn compose_joins_the_chunks_in_index_order_with_the_separator() {
        let (t, store) = service();
        put(&store, "s", Some(2), b"two");
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(3), b"three");
        let c = compose_to(&store, "s", "out.txt", options(b"\n--\n")).unwrap();
        let expected = b"one\n--\ntwo\n--\nthree";
        assert_eq!(read_out(&t, "out.txt").unwrap(), expected);
        assert_eq!(c.chunk_count, 3);
        assert_eq!(c.outcome.sha256, sha256_hex(expected));
        assert_eq!(c.outcome.bytes, expected.len() as u64);
        let hashes: Vec<String> = [&b"one"[..], b"two", b"three"]
            .iter()
            .map(|b| sha256_hex(b))
            .collect();
        assert_eq!(c.chunk_hashes, hashes);
        assert!(!c.cleaned_up);
        assert!(session_dir(&store, "s").exists());
    }

    #[test]
    fn compose_refuses_a_chunk_modified_by_hand_and_writes_nothing() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        std::fs::write(session_dir(&store, "s").join(part_name(2)), b"TWO, edited").unwrap();
        let e = compose_to(&store, "s", "out.txt", options(b"\n"))
            .err()
            .unwrap();
        let (reason, details) = refusal(e);
        assert_eq!(reason, "chunk_modified");
        assert_eq!(details["have"], serde_json::json!([2]));
        assert_eq!(
            details["modified"][0]["recorded_sha256"],
            sha256_hex(b"two")
        );
        assert_eq!(
            details["modified"][0]["actual_sha256"],
            sha256_hex(b"TWO, edited")
        );
        assert_eq!(read_out(&t, "out.txt"), None);
    }

    #[test]
    fn compose_refuses_a_chunk_replaced_by_hand_with_content_of_the_same_size() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"abc");
        std::fs::write(t.path().join("out.txt"), b"before").unwrap();
        replace_by_hand(&session_dir(&store, "s").join(part_name(1)), b"xyz");
        let (reason, _) = refusal(
            compose_to(&store, "s", "out.txt", options(b""))
                .err()
                .unwrap(),
        );
        assert_eq!(reason, "chunk_modified");
        // The existing output is left as it was.
        assert_eq!(read_out(&t, "out.txt").unwrap(), b"before");
    }

    #[test]
    fn compose_trusts_a_record_whose_stamp_matches_and_rehashes_a_chunk_whose_stamp_moved() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"abc");
        let dir = session_dir(&store, "s");
        // A record with the chunk's stamp but another hash: compose does not read the chunk
        // for its own hash, so it answers with the recorded one.
        let path = dir.join(MANIFEST_FILE);
        let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let recorded = sha256_hex(b"recorded");
        m["chunks"]["1"]["sha256"] = json!(recorded);
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        let c = compose_to(&store, "s", "a.txt", options(b"")).unwrap();
        assert_eq!(c.chunk_hashes, vec![recorded]);
        // The same content in a new file: the stamp moved, the chunk is hashed (and its
        // latest journaled write vouches for what it holds).
        replace_by_hand(&dir.join(part_name(1)), b"abc");
        let c = compose_to(&store, "s", "b.txt", options(b"")).unwrap();
        assert_eq!(c.chunk_hashes, vec![sha256_hex(b"abc")]);
    }

    #[test]
    fn compose_accepts_a_chunk_whose_lost_record_its_latest_journaled_write_vouches_for() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"old");
        put(&store, "s", Some(1), b"new");
        std::fs::write(session_dir(&store, "s").join(RECORDS_FILE), b"").unwrap();
        let c = compose_to(&store, "s", "out.txt", options(b"")).unwrap();
        assert_eq!(read_out(&t, "out.txt").unwrap(), b"new");
        assert_eq!(c.chunk_hashes, vec![sha256_hex(b"new")]);
    }

    #[test]
    fn compose_refuses_a_missing_session_a_gap_and_a_short_count() {
        let (t, store) = service();
        let (reason, _) = refusal(
            compose_to(&store, "none", "o.txt", options(b""))
                .err()
                .unwrap(),
        );
        assert_eq!(reason, "session_not_found");
        put(&store, "gap", Some(1), b"a");
        put(&store, "gap", Some(3), b"c");
        let (reason, details) = refusal(
            compose_to(&store, "gap", "o.txt", options(b""))
                .err()
                .unwrap(),
        );
        assert_eq!(reason, "non_contiguous_chunks");
        assert_eq!(details["missing"], json!([2]));
        put_total(&store, "short", Some(1), b"a", Some(2));
        let (reason, _) = refusal(
            compose_to(&store, "short", "o.txt", options(b""))
                .err()
                .unwrap(),
        );
        assert_eq!(reason, "chunk_count_mismatch");
        assert_eq!(read_out(&t, "o.txt"), None);
    }

    #[test]
    fn compose_with_cleanup_removes_the_session() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"a");
        put(&store, "s", Some(2), b"b");
        let mut opts = options(b"+");
        opts.cleanup = true;
        let c = compose_to(&store, "s", "out.txt", opts).unwrap();
        assert!(c.cleaned_up);
        assert!(!session_dir(&store, "s").exists());
        assert_eq!(read_out(&t, "out.txt").unwrap(), b"a+b");
    }

    #[test]
    fn compose_appends_after_the_existing_content_in_append_mode() {
        let (t, store) = service();
        std::fs::write(t.path().join("out.txt"), b"head;").unwrap();
        put(&store, "s", Some(1), b"a");
        put(&store, "s", Some(2), b"b");
        let mut opts = options(b",");
        opts.mode = Some(WriteMode::Append);
        let c = compose_to(&store, "s", "out.txt", opts).unwrap();
        assert_eq!(read_out(&t, "out.txt").unwrap(), b"head;a,b");
        assert_eq!(c.outcome.sha256, sha256_hex(b"head;a,b"));
    }

    #[test]
    fn compose_check_can_answer_instead_of_writing() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"a");
        let target = store.workspaces().resolve("out.txt", true).unwrap();
        let who = Caller {
            caller: "test".into(),
            tool: "chunk_compose".into(),
        };
        let r = compose_with(&store, &who, "s", &target, options(b""), |_| Ok(Some(7))).unwrap();
        assert!(matches!(r, Err(7)));
        assert_eq!(read_out(&t, "out.txt"), None);
    }

    #[test]
    fn hash_blocks_hashes_the_output_and_only_the_chunks_that_ask() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Block>(16);
        let (recycle, pool) = std::sync::mpsc::channel::<Vec<u8>>();
        let data = |s: &[u8]| {
            let mut v = s.to_vec();
            v.extend_from_slice(b"unused tail");
            Block::Data(v, s.len())
        };
        for block in [
            Block::Begin { hash: true },
            data(b"one"),
            Block::End,
            Block::Separator,
            Block::Begin { hash: false },
            data(b"two"),
            Block::End,
        ] {
            tx.send(block).unwrap();
        }
        drop(tx);
        let (output, chunks) = hash_blocks(rx, recycle, b"/");
        assert_eq!(output, sha256_hex(b"one/two"));
        assert_eq!(chunks, vec![Some(sha256_hex(b"one")), None]);
        // Both buffers went back to the pool.
        assert_eq!(pool.try_iter().count(), 2);
    }

    #[test]
    fn preview_returns_the_composed_content_with_the_chunk_hashes() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let p = preview(&store, "s", b" | ", 1024).unwrap();
        assert_eq!(p.content, b"one | two");
        assert_eq!(p.chunk_hashes, vec![sha256_hex(b"one"), sha256_hex(b"two")]);
    }

    #[test]
    fn preview_refuses_a_modified_chunk_and_content_over_the_limit() {
        let (_t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        assert!(preview(&store, "s", b"", 5).is_err());
        std::fs::write(session_dir(&store, "s").join(part_name(1)), b"ONE").unwrap();
        let (reason, details) = refusal(preview(&store, "s", b"", 1024).err().unwrap());
        assert_eq!(reason, "chunk_modified");
        assert_eq!(details["have"], json!([1]));
    }

    fn keyed_compose(store: &Store, session: &str, cleanup: bool) -> Result<Answer<Composed>> {
        let who = Caller {
            caller: "test".into(),
            tool: "chunk_compose".into(),
        };
        let c = Compose {
            session,
            output_path: "out.txt",
            separator: b"+".to_vec(),
            mode: None,
            expected_prev_sha256: None,
            cleanup,
            classify: Classify::default(),
            keyed: Keyed {
                key: Some("k"),
                request_sha256: "req",
            },
        };
        compose(store, &who, c)
    }

    #[test]
    fn a_keyed_retry_after_cleanup_answers_from_the_journal_row_without_the_session() {
        let (t, store) = service();
        put(&store, "s", Some(1), b"one");
        put(&store, "s", Some(2), b"two");
        let Answer::Applied(first) = keyed_compose(&store, "s", true).unwrap() else {
            panic!("the first call composes");
        };
        assert!(first.cleaned_up && !session_dir(&store, "s").exists());
        let (rows, _, _) = store.pipeline().journal().read_from(0).unwrap();
        let Answer::Replayed(again) = keyed_compose(&store, "s", true).unwrap() else {
            panic!("the retry replays");
        };
        assert_eq!(store.pipeline().journal().read_from(0).unwrap().0, rows);
        assert_eq!(again.output_path, "out.txt");
        assert_eq!(
            again.outcome.abs_path,
            t.path().canonicalize().unwrap().join("out.txt")
        );
        assert_eq!(again.outcome.sha256, sha256_hex(b"one+two"));
        assert_eq!(
            (again.outcome.journal_id, again.outcome.wrote_at),
            (first.outcome.journal_id, first.outcome.wrote_at)
        );
        assert_eq!(
            (again.chunk_count, again.mode_applied),
            (2, "create".to_string())
        );
        assert!(again.cleaned_up && again.chunk_hashes.is_empty());
        // The session name is checked first, replay or not.
        let e = keyed_compose(&store, "no/slash", true).unwrap_err();
        assert!(matches!(e, Failure::ChunkArgument { .. }), "{e:?}");
    }
}
