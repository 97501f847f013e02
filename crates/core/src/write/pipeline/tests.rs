use super::temp::{WRITEBACK_STEP, write_temp};
use super::*;
use crate::workspace::Workspaces;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

struct Fixture {
    _t: tempfile::TempDir,
    root: PathBuf,
    ws: Workspaces,
    pipeline: Pipeline,
}

fn fixture() -> Fixture {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let ws = Workspaces::new(std::slice::from_ref(&root), &root, None);
    let pipeline = Pipeline::new(Journal::new(&root.join(".resilient_write")));
    Fixture {
        _t: t,
        root,
        ws,
        pipeline,
    }
}

fn who() -> Caller {
    Caller {
        caller: "test".into(),
        tool: "safe_write".into(),
    }
}

fn write(f: &Fixture, path: &str, bytes: &[u8], create_only: bool) -> Result<Outcome> {
    let target = f.ws.resolve(path, true)?;
    let body = bytes.to_vec();
    let (out, ()) = f.pipeline.commit(&target, &who(), |_| {
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(body),
                mode: if create_only { "create" } else { "overwrite" }.into(),
                create_only,
                extra: BTreeMap::new(),
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(out.unwrap())
}

#[test]
fn write_lands_exact_bytes_and_journals_one_row() {
    let f = fixture();
    let bytes = b"\xef\xbb\xbfline1\r\nline2\n";
    let out = write(&f, "a.txt", bytes, true).unwrap();
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), bytes);
    assert_eq!(out.sha256, sha256_hex(bytes));
    let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["sha256"], out.sha256.as_str());
    assert_eq!(rows[0]["prev_sha256"], Value::Null);
}

#[test]
fn overwrite_keeps_permission_bits() {
    let f = fixture();
    write(&f, "x.sh", b"old", true).unwrap();
    std::fs::set_permissions(f.root.join("x.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    write(&f, "x.sh", b"new", false).unwrap();
    let meta = std::fs::metadata(f.root.join("x.sh")).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o751);
}

#[test]
fn create_only_never_clobbers_a_file_that_appeared() {
    let f = fixture();
    let target = f.ws.resolve("race.txt", true).unwrap();
    let root = f.root.clone();
    let err = f
        .pipeline
        .commit(&target, &who(), |existing| {
            assert!(existing.is_none());
            // Another writer that ignores our lock creates the file now.
            std::fs::write(root.join("race.txt"), b"theirs").unwrap();
            Ok(Decision::Write(
                Plan {
                    body: Body::Bytes(b"ours".to_vec()),
                    mode: "create".into(),
                    create_only: true,
                    extra: BTreeMap::new(),
                    new_file_mode: None,
                },
                (),
            ))
        })
        .unwrap_err();
    assert!(matches!(err, Failure::TargetExists { .. }), "{err:?}");
    assert_eq!(std::fs::read(f.root.join("race.txt")).unwrap(), b"theirs");
    let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
    assert!(
        rows.is_empty(),
        "the row of the refused write was rolled back"
    );
    assert_no_temp_files(&f.root);
}

#[test]
fn hard_linked_target_is_reported() {
    let f = fixture();
    write(&f, "h.txt", b"old", true).unwrap();
    std::fs::hard_link(f.root.join("h.txt"), f.root.join("twin.txt")).unwrap();
    let out = write(&f, "h.txt", b"new", false).unwrap();
    assert_eq!(out.detached_hardlinks, 1);
    assert_eq!(std::fs::read(f.root.join("twin.txt")).unwrap(), b"old");
}

#[test]
fn sweep_removes_temp_files_of_dead_processes_only() {
    let f = fixture();
    let dead = f.root.join(".a.txt.rw-tmp-999999999-1-0000abcd");
    let live = f
        .root
        .join(format!(".b.txt.rw-tmp-{}-1-0000abcd", std::process::id()));
    std::fs::write(&dead, b"x").unwrap();
    std::fs::write(&live, b"x").unwrap();
    let removed = sweep_temp_files(&f.root, 1000);
    assert_eq!(removed, vec![dead.clone()]);
    assert!(live.exists());
}

fn assert_no_temp_files(root: &Path) {
    for e in std::fs::read_dir(root).unwrap().flatten() {
        assert!(
            !e.file_name().to_string_lossy().contains(TEMP_MARKER),
            "left {:?}",
            e.file_name()
        );
    }
}

fn stream(f: &Fixture, path: &str, body: Body) -> Result<Outcome> {
    let target = f.ws.resolve(path, true)?;
    let (out, ()) = f.pipeline.commit_streaming(&target, &who(), |_| {
        Ok(Decision::Write(
            Plan {
                body,
                mode: "compose".into(),
                create_only: false,
                extra: BTreeMap::new(),
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(out.unwrap())
}

fn leftovers(f: &Fixture) -> Vec<String> {
    std::fs::read_dir(&f.root)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| temp_owner_pid(n.as_bytes()).is_some())
        .collect()
}

/// Pieces of every size from 1 byte to past the writer's buffer, so the read-back that
/// trails the writer wakes up at many different points.
fn pieces() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut x = 7u32;
    for k in 0..300usize {
        let len = match k % 5 {
            0 => 1,
            1 => 4095,
            2 => 70_000,
            3 => 300_000,
            _ => 13,
        };
        out.push(
            (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (x >> 16) as u8
                })
                .collect(),
        );
    }
    out
}

#[test]
fn streamed_write_is_read_back_whole_while_it_is_written() {
    let f = fixture();
    let parts = pieces();
    let all: Vec<u8> = parts.concat();
    let producer_parts = parts.clone();
    let out = stream(
        &f,
        "big.bin",
        Body::Stream(Box::new(move |w| {
            for p in &producer_parts {
                w.write_all(p)?;
                w.flush()?;
            }
            Ok(())
        })),
    )
    .unwrap();
    assert_eq!(out.bytes, all.len() as u64);
    assert_eq!(out.sha256, sha256_hex(&all));
    assert_eq!(std::fs::read(f.root.join("big.bin")).unwrap(), all);
    assert!(leftovers(&f).is_empty());
}

#[test]
fn hashed_stream_with_a_wrong_digest_is_corruption_and_lands_nothing() {
    let f = fixture();
    write(&f, "t.bin", b"old", true).unwrap();
    let parts = pieces();
    let right = sha256_hex(&parts.concat());
    let e = stream(
        &f,
        "t.bin",
        Body::HashedStream(Box::new(move |w| {
            for p in &parts {
                w.write_all(p)?;
            }
            // the digest of all but the last byte: the read-back must see the difference
            let all = parts.concat();
            Ok(sha256_hex(&all[..all.len() - 1]))
        })),
    )
    .unwrap_err();
    match e {
        Failure::Corruption { actual, .. } => assert_eq!(actual, right),
        other => panic!("expected write_corruption, got {other:?}"),
    }
    assert_eq!(std::fs::read(f.root.join("t.bin")).unwrap(), b"old");
    assert!(leftovers(&f).is_empty());
}

#[test]
fn hashed_stream_with_the_right_digest_lands() {
    let f = fixture();
    let parts = pieces();
    let all = parts.concat();
    let digest = sha256_hex(&all);
    let out = stream(
        &f,
        "h.bin",
        Body::HashedStream(Box::new(move |w| {
            for p in &parts {
                w.write_all(p)?;
            }
            Ok(digest)
        })),
    )
    .unwrap();
    assert_eq!(out.sha256, sha256_hex(&all));
    assert_eq!(std::fs::read(f.root.join("h.bin")).unwrap(), all);
}

#[test]
fn a_stream_failing_midway_stops_its_read_back_and_lands_nothing() {
    let f = fixture();
    write(&f, "s.bin", b"old", true).unwrap();
    let e = stream(
        &f,
        "s.bin",
        Body::Stream(Box::new(|w| {
            w.write_all(&vec![b'x'; 3 * 1024 * 1024])?;
            w.flush()?;
            Err(io::Error::other("producer gave up"))
        })),
    )
    .unwrap_err();
    assert!(e.to_string().contains("producer gave up"), "{e}");
    assert_eq!(std::fs::read(f.root.join("s.bin")).unwrap(), b"old");
    assert!(leftovers(&f).is_empty());
}

#[test]
fn a_stream_of_several_writeback_steps_lands_whole() {
    let f = fixture();
    let block: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
    let n = (2 * WRITEBACK_STEP / (1 << 20) + 3) as usize;
    let all = block.repeat(n);
    let body = block.clone();
    let out = stream(
        &f,
        "big.bin",
        Body::Stream(Box::new(move |w| {
            for _ in 0..n {
                w.write_all(&body)?;
            }
            Ok(())
        })),
    )
    .unwrap();
    assert_eq!(out.bytes, all.len() as u64);
    assert_eq!(out.sha256, sha256_hex(&all));
    assert!(std::fs::read(f.root.join("big.bin")).unwrap() == all);
    assert!(leftovers(&f).is_empty());
}

// commit_many (many.rs): all-or-nothing before the commit point; after it, what was renamed
// stays and the rows are kept, for recovery to roll forward.

fn plan(bytes: &[u8], create_only: bool) -> Step {
    Step::Write(Plan {
        body: Body::Bytes(bytes.to_vec()),
        mode: if create_only { "create" } else { "overwrite" }.into(),
        create_only,
        extra: BTreeMap::new(),
        new_file_mode: None,
    })
}

fn temp_files(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(TEMP_MARKER))
        .collect()
}

#[test]
fn commit_many_lands_every_file_and_journals_a_row_each() {
    let f = fixture();
    write(&f, "b.txt", b"old b", true).unwrap();
    let (a, b) = (
        f.ws.resolve("a.txt", true).unwrap(),
        f.ws.resolve("b.txt", true).unwrap(),
    );
    let out = f
        .pipeline
        .commit_many(
            &[&a, &b],
            &who(),
            |existing| {
                assert!(existing[0].is_none() && existing[1].is_some());
                Ok(vec![
                    Some(plan(b"new a", true)),
                    Some(plan(b"new b", false)),
                ])
            },
            |staged| {
                assert_eq!(staged.len(), 2);
                // Each staged file names its content's digest (the body in memory is
                // hashed before it is read back, on this path too).
                assert_eq!(staged[0].sha256, sha256_hex(b"new a"));
                assert_eq!(staged[1].sha256, sha256_hex(b"new b"));
                Ok(())
            },
            true,
        )
        .unwrap();
    assert_eq!(out.iter().flatten().count(), 2);
    let digests: Vec<&str> = out.iter().flatten().map(|o| o.sha256.as_str()).collect();
    assert_eq!(digests, [sha256_hex(b"new a"), sha256_hex(b"new b")]);
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"new a");
    assert_eq!(std::fs::read(f.root.join("b.txt")).unwrap(), b"new b");
    let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
    assert_eq!(rows.len(), 3, "one row for the setup, one per file");
    let journaled: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.get("sha256").and_then(serde_json::Value::as_str))
        .collect();
    assert!(
        journaled.contains(&sha256_hex(b"new a").as_str()),
        "{journaled:?}"
    );
    assert!(
        journaled.contains(&sha256_hex(b"new b").as_str()),
        "{journaled:?}"
    );
}

#[test]
fn commit_many_failing_before_the_commit_point_changes_nothing() {
    let f = fixture();
    write(&f, "b.txt", b"old b", true).unwrap();
    let (a, b) = (
        f.ws.resolve("a.txt", true).unwrap(),
        f.ws.resolve("b.txt", true).unwrap(),
    );
    let err = f
        .pipeline
        .commit_many(
            &[&a, &b],
            &who(),
            |_| {
                Ok(vec![
                    Some(plan(b"new a", true)),
                    Some(plan(b"new b", false)),
                ])
            },
            |_| Err(Failure::Internal("commit record not written".into())),
            true,
        )
        .unwrap_err();
    assert!(matches!(err, Failure::Internal(_)), "{err:?}");
    assert!(!f.root.join("a.txt").exists());
    assert_eq!(std::fs::read(f.root.join("b.txt")).unwrap(), b"old b");
    assert_eq!(temp_files(&f.root), Vec::<String>::new());
    let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
    assert_eq!(
        rows.len(),
        1,
        "no row for a transaction that did not commit"
    );
}

#[test]
fn commit_many_failing_after_the_commit_point_keeps_what_was_renamed_and_the_rows() {
    let f = fixture();
    let (a, b) = (
        f.ws.resolve("a.txt", true).unwrap(),
        f.ws.resolve("b.txt", true).unwrap(),
    );
    let root = f.root.clone();
    let err = f
        .pipeline
        .commit_many(
            &[&a, &b],
            &who(),
            |_| {
                // A writer that ignores the lock creates b.txt after the decision: the
                // create-only rename of b.txt must refuse to replace it.
                std::fs::write(root.join("b.txt"), b"theirs").unwrap();
                Ok(vec![Some(plan(b"new a", true)), Some(plan(b"new b", true))])
            },
            |_| Ok(()),
            true,
        )
        .unwrap_err();
    assert!(matches!(err, Failure::TargetExists { .. }), "{err:?}");
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"new a");
    assert_eq!(std::fs::read(f.root.join("b.txt")).unwrap(), b"theirs");
    assert_eq!(temp_files(&f.root), Vec::<String>::new());
    let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
    assert_eq!(
        rows.len(),
        2,
        "rows past the commit point stay for recovery"
    );
}

/// A fixture whose journal records, at each sync, how many deferred syncs (the temp file's,
/// the pre-image link's) this thread had started.
fn counting_fixture() -> (Fixture, std::sync::Arc<std::sync::Mutex<Vec<u64>>>) {
    use crate::journal::group::CommitQueue;
    use crate::util::workers::STARTED;
    let at_journal_sync = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&at_journal_sync);
    let queue = CommitQueue::with_sync(Box::new(move |f: &File| {
        seen.lock().unwrap().push(STARTED.with(|n| n.get()));
        f.sync_data()
    }));
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let ws = Workspaces::new(std::slice::from_ref(&root), &root, None);
    let state = root.join(".resilient_write");
    let journal = Journal::with_queue(&state, std::sync::Arc::new(queue));
    let pipeline = Pipeline::new(journal).with_objects(ObjectStore::new(&state));
    let f = Fixture {
        _t: t,
        root,
        ws,
        pipeline,
    };
    (f, at_journal_sync)
}

fn started() -> u64 {
    crate::util::workers::STARTED.with(|n| n.get())
}

/// A body held in memory has its temp file's fsync started once its journal row is in the
/// file, right before the row's own sync: not when the file is written (the file's commit
/// then left the row for a commit of its own, three a create instead of two). No deferred
/// sync has started after the write and read-back; one has when the journal's sync begins;
/// the file is still durable before the rename, which waits for it.
#[test]
fn the_temp_files_fsync_starts_after_its_row_is_written_beside_the_rows_sync() {
    let (f, at_journal_sync) = counting_fixture();

    // Written, hashed and read back: no fsync started yet.
    let target = f.ws.resolve("staged.txt", true).unwrap();
    let before = started();
    let written = write_temp(&target, None, Body::Bytes(b"staged\n".to_vec()), None).unwrap();
    let (staged, pending) = written.verify_then_sync().unwrap();
    assert_eq!(
        started(),
        before,
        "the fsync started before the row was written"
    );
    pending.start();
    assert_eq!(started(), before + 1);
    pending.finish().unwrap();
    drop(staged);

    // Through the pipeline: the journal's sync (on this thread, the queue's only writer)
    // finds the temp file's fsync started, and the write lands.
    let before = started();
    write(&f, "a.txt", b"new\n", true).unwrap();
    assert_eq!(*at_journal_sync.lock().unwrap(), [before + 1]);
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"new\n");
}

/// An overwrite's new pre-image link is made durable beside the temp file and the row: its
/// sync has not started when the link is made, and has (with the temp file's fsync) when
/// the journal's sync begins. A link synced as soon as it was made took a journal commit of
/// its own, before the row's.
#[test]
fn the_pre_image_links_sync_starts_beside_the_rows_sync() {
    let (f, at_journal_sync) = counting_fixture();
    write(&f, "a.txt", b"old\n", true).unwrap();

    // The link alone: made, its sync not started.
    let target = f.ws.resolve("a.txt", true).unwrap();
    let existing = read_target(&target, false).unwrap();
    let before = started();
    let kept = f.pipeline.preserve(&target, existing.as_ref());
    assert!(kept.linked.is_some(), "the pre-image was not linked");
    assert_eq!(
        started(),
        before,
        "the link's sync started before the row was written"
    );
    f.pipeline.settle(&kept, false);

    at_journal_sync.lock().unwrap().clear();
    let before = started();
    write(&f, "a.txt", b"new\n", false).unwrap();
    assert_eq!(*at_journal_sync.lock().unwrap(), [before + 2]);
    let old = sha256_hex(b"old\n");
    let object = f
        .root
        .join(format!(".resilient_write/objects/{}/{old}", &old[..2]));
    assert_eq!(std::fs::read(object).unwrap(), b"old\n");
}

fn writebacks() -> u64 {
    super::temp::WRITEBACKS.with(|n| n.get())
}

/// Every body held in memory, a 1 KB one too, starts its writeback when it is written,
/// before it is read back and before its row is written: ext4 then allocates its blocks in
/// the transaction the row's sync commits. Started only from 64 KiB, a 1 KB create took
/// 2.2 journal commits against the floor's 2 (`scripts/commits-per-write.py`). An empty
/// body has nothing to write back.
#[test]
fn a_small_body_starts_its_writeback_before_it_is_read_back() {
    let (f, _) = counting_fixture();
    let target = f.ws.resolve("small.txt", true).unwrap();
    let body = vec![b'x'; 1024];
    let before = writebacks();
    let written = write_temp(&target, None, Body::Bytes(body), None).unwrap();
    assert_eq!(writebacks(), before, "started before the body was written");
    let (staged, pending) = written.verify_then_sync().unwrap();
    assert_eq!(
        writebacks(),
        before + 1,
        "a 1 KB body's writeback not started"
    );
    pending.start();
    pending.finish().unwrap();
    drop(staged);

    let before = writebacks();
    write(&f, "empty.txt", b"", true).unwrap();
    assert_eq!(
        writebacks(),
        before,
        "an empty body has nothing to write back"
    );
    write(&f, "one.txt", b"1", true).unwrap();
    assert_eq!(writebacks(), before + 1);
}
