//! [`Pipeline::commit_many`]: the protocol for several targets at once, all or nothing, for
//! transactions (`tx`). A target is written ([`Step::Write`]) or removed ([`Step::Remove`]:
//! `restore --session` takes back the files an agent session created); a removal keeps the
//! file's content as a pre-image and is journaled like a write (`sha256` empty, `bytes` 0),
//! so it is undoable like one.

use super::PRUNED_FIELD;
use super::keep::Kept;
use super::retention::NOT_KEPT_FIELD;
use super::room::{Holds, pruned_field, pruned_warning};
use super::temp::{Staged, Written};
use super::{
    Body, Caller, Existing, Outcome, Pipeline, Plan, check_writable, fault, hardlink_warning,
    journal_row, read_target, rename_failure, rename_into_place,
};
use crate::envelope::{Failure, Result};
use crate::journal::JournalRow;
use crate::objects::Dropped;
use crate::util::dirlock::DirLocks;
use crate::util::sys::errno_io;
use crate::workspace::Target;
use rustix::fd::AsFd;
use rustix::fs::AtFlags;
use serde_json::Value;
use std::collections::BTreeMap;

/// What [`Pipeline::commit_many`] does to one target.
pub enum Step {
    /// Write the plan's content.
    Write(Plan),
    /// Remove the file. Its content is kept in the object store as the pre-image, and its
    /// journal row (`sha256` empty, `bytes` 0, `prev_sha256` the removed content) carries
    /// `mode` and `extra`. A target already absent is left alone (no row).
    Remove {
        mode: String,
        extra: BTreeMap<String, Value>,
    },
}

/// A target past step 3: its temp file staged, or its removal decided.
enum Applied<'a> {
    Written(Staged<'a>),
    Removed,
}

/// One target that changes, from step 3 on.
struct Entry<'a> {
    index: usize,
    applied: Applied<'a>,
    mode: String,
    extra: BTreeMap<String, Value>,
    create_only: bool,
}

impl Entry<'_> {
    fn digest(&self) -> (&str, u64) {
        match &self.applied {
            Applied::Written(s) => (s.sha256.as_str(), s.bytes),
            Applied::Removed => ("", 0),
        }
    }
}

/// What [`Pipeline::commit_many`] staged for one target, shown to its commit-point callback.
#[derive(Debug, Clone)]
pub struct StagedFile {
    /// Index of the target in the caller's list.
    pub index: usize,
    pub sha256: String,
    pub bytes: u64,
    pub prev_sha256: Option<String>,
}

impl Pipeline {
    /// The protocol for several targets at once, all or nothing (transactions):
    ///
    /// 1. Lock every distinct parent directory, in (device, inode) order so two multi-file
    ///    commits never deadlock (single-file commits lock one directory, so they cannot
    ///    take part in a cycle).
    /// 2. Read every target and let `decide` check all preconditions at once: it returns one
    ///    [`Step`] per target (`None`: leave it untouched) or fails the whole commit.
    /// 3. Stage every temp file (all written, then all fsynced back to back, then all read
    ///    back) and keep every pre-image (also of the files to remove).
    /// 4. `commit_point` runs with everything staged: the caller makes its commit record
    ///    durable there. Before it returns, nothing is applied; after, the caller's recovery
    ///    must roll forward.
    /// 5. Journal one row per written target with one durable append (skipped when
    ///    `journal_rows` is false: recovery of a transaction whose rows already landed).
    /// 6. Rename every temp file into place (unlink each file to remove), then fsync each
    ///    touched directory once.
    ///
    /// A failure after the commit point returns the error with the commit record in place:
    /// the caller's recovery finishes the renames.
    pub fn commit_many(
        &self,
        targets: &[&Target],
        who: &Caller,
        decide: impl FnOnce(&[Option<Existing>]) -> Result<Vec<Option<Step>>>,
        commit_point: impl FnOnce(&[StagedFile]) -> Result<()>,
        journal_rows: bool,
    ) -> Result<Vec<Option<Outcome>>> {
        // 1. Locks, one per distinct directory, in a stable order.
        let locks = DirLocks::take(targets.iter().map(|t| t.dir.as_fd()))
            .map_err(|e| Failure::io(e.op, &targets[e.index].display, e.error))?;

        // 2. Every precondition before anything is written.
        let existing = targets
            .iter()
            .map(|t| read_target(t, true))
            .collect::<Result<Vec<_>>>()?;
        let plans = decide(&existing)?;
        if plans.len() != targets.len() {
            return Err(Failure::Internal("one plan per target expected".into()));
        }

        // 3. Stage and preserve: every temp file written first, then all fsynced back to
        // back (the filesystem folds them into few journal commits), then all read back.
        // Progress (when the client asked for it): one step per file written, one per file
        // renamed, reported about twenty times in all.
        let progress = crate::progress::current();
        let steps = 2 * plans.iter().flatten().count() as u64;
        let every = (steps / 20).max(1);
        let tick = |done: u64| {
            if let Some(p) = &progress
                && (done.is_multiple_of(every) || done == steps)
            {
                p(done, steps);
            }
        };
        let mut written: Vec<(usize, Written, Plan)> = Vec::new();
        let mut removals: Vec<Entry> = Vec::new();
        let mut pruned = Dropped::default();
        for (i, step) in plans.into_iter().enumerate() {
            let mut plan = match step {
                None => continue,
                // Nothing there: nothing to remove, and no row.
                Some(Step::Remove { .. }) if existing[i].is_none() => continue,
                Some(Step::Remove { mode, extra }) => {
                    removals.push(Entry {
                        index: i,
                        applied: Applied::Removed,
                        mode,
                        extra,
                        create_only: false,
                    });
                    continue;
                }
                Some(Step::Write(plan)) => plan,
            };
            let t = targets[i];
            check_writable(t, existing[i].as_ref())?;
            let body = std::mem::replace(&mut plan.body, Body::Bytes(Vec::new()));
            let w = self.write_temp_making_room(
                t,
                existing[i].as_ref(),
                body,
                plan.new_file_mode,
                &mut pruned,
            )?;
            written.push((i, w, plan));
            tick(written.len() as u64);
        }
        for (_, w, _) in &written {
            w.sync()?;
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(written.len() + removals.len());
        for (i, mut w, plan) in written {
            let actual = w.read_back()?;
            entries.push(Entry {
                index: i,
                applied: Applied::Written(w.verify(actual)?),
                mode: plan.mode,
                extra: plan.extra,
                create_only: plan.create_only,
            });
        }
        entries.extend(removals);
        let mut kept: Vec<Kept> = entries
            .iter()
            .map(|e| self.preserve(targets[e.index], existing[e.index].as_ref()))
            .collect();
        for k in &mut kept {
            self.sync_kept(k);
            pruned.extend(std::mem::take(&mut k.pruned));
        }
        let settle_all = |from: usize, applied: bool| {
            for k in &kept[from..] {
                self.settle(k, applied);
            }
        };
        for (e, k) in entries.iter_mut().zip(&kept) {
            if let Some(reason) = &k.not_kept {
                e.extra
                    .insert(NOT_KEPT_FIELD.into(), Value::from(reason.clone()));
            }
        }
        let grew = kept.iter().map(|k| k.added).sum();
        if let Some(first) = locks.dirs().next() {
            let (more, _) = self.hold_floor(first, 0, grew);
            pruned.extend(more);
        }

        // 4. The commit point.
        let shown: Vec<StagedFile> = entries
            .iter()
            .map(|e| {
                let (sha256, bytes) = e.digest();
                StagedFile {
                    index: e.index,
                    sha256: sha256.to_string(),
                    bytes,
                    prev_sha256: existing[e.index].as_ref().map(|x| x.sha256.clone()),
                }
            })
            .collect();
        if let Err(e) = commit_point(&shown) {
            settle_all(0, false);
            return Err(e);
        }
        if fault("tx_crash_after_commit_record") {
            std::process::abort();
        }

        // 5. One durable append for every row; once more after history made room if the
        // state's filesystem is full.
        let rows = |pruned: &Dropped, entries: &[Entry]| -> Vec<JournalRow> {
            entries
                .iter()
                .map(|e| {
                    let mut extra = e.extra.clone();
                    if let Some(p) = pruned_field(pruned) {
                        extra.insert(PRUNED_FIELD.into(), p);
                    }
                    journal_row(
                        targets[e.index],
                        who,
                        e.digest(),
                        existing[e.index].as_ref(),
                        &e.mode,
                        extra,
                    )
                })
                .collect()
        };
        let mut rows = rows(&pruned, &entries);
        let appended = if journal_rows && !rows.is_empty() {
            let append = |rows: &[JournalRow]| {
                self.journal
                    .append_many(rows)
                    .map_err(|e| Failure::io("append journal rows", self.journal.path(), e))
            };
            let need: u64 = rows.iter().map(|r| r.to_line().len() as u64).sum();
            let first = match append(&rows) {
                Err(f) if f.is_no_space() => {
                    let more = self.yield_room(need);
                    if more.is_empty() {
                        Err(self.disk_full(f, Holds::State, need, &pruned))
                    } else {
                        pruned.extend(more);
                        rows = rows_again(&rows, &pruned);
                        append(&rows).map_err(|f| self.disk_full(f, Holds::State, need, &pruned))
                    }
                }
                other => other,
            };
            Some(first.inspect_err(|_| settle_all(0, false))?)
        } else {
            None
        };
        if fault("tx_crash_after_journal") {
            std::process::abort();
        }

        // 6. Renames (and removals), then one fsync per touched directory.
        let mut outcomes: Vec<Option<Outcome>> = (0..targets.len()).map(|_| None).collect();
        let mut renamed_dirs: Vec<usize> = Vec::new();
        for (n, (e, row)) in entries.iter_mut().zip(&rows).enumerate() {
            let t = targets[e.index];
            if n == 1 && fault("tx_crash_mid_renames") {
                std::process::abort();
            }
            let applied = match &e.applied {
                Applied::Written(s) => rename_into_place(t, &s.guard.name, e.create_only),
                Applied::Removed => remove_in_place(t),
            };
            if let Err(err) = applied {
                if let Some(a) = appended {
                    a.commit();
                }
                settle_all(n, false);
                return Err(rename_failure(t, err));
            }
            let mut warnings = match &mut e.applied {
                Applied::Written(s) => {
                    s.guard.armed = false;
                    std::mem::take(&mut s.warnings)
                }
                Applied::Removed => Vec::new(),
            };
            self.settle(&kept[n], true);
            renamed_dirs.push(e.index);
            tick(steps / 2 + n as u64 + 1);
            if n == 0 {
                warnings.extend(pruned_warning(&pruned));
            }
            let prev = existing[e.index].as_ref();
            let detached_hardlinks = hardlink_warning(self.objects.as_ref(), prev, &mut warnings);
            warnings.extend(kept[n].warning());
            let (sha256, bytes) = e.digest();
            outcomes[e.index] = Some(Outcome {
                abs_path: t.abs_path.clone(),
                sha256: sha256.to_string(),
                bytes,
                prev_sha256: prev.map(|x| x.sha256.clone()),
                journal_id: row.journal_id.clone(),
                wrote_at: row.ts.clone(),
                mode: e.mode.clone(),
                detached_hardlinks,
                warnings,
            });
        }
        if let Some(a) = appended {
            a.commit();
        }
        let mut fsync_failed = None;
        for dir in locks.dirs() {
            if let Err(e) = rustix::fs::fsync(dir) {
                fsync_failed = Some(format!("fsync of a parent directory failed: {e}"));
            }
        }
        for i in renamed_dirs {
            for d in &targets[i].created_dirs {
                if let Err(e) = rustix::fs::fsync(d) {
                    fsync_failed = Some(format!("fsync of a created directory failed: {e}"));
                }
            }
        }
        if let Some(w) = fsync_failed {
            for o in outcomes.iter_mut().flatten() {
                o.warnings.push(w.clone());
            }
        }
        drop(locks);
        self.enforce_retention(kept.iter().map(|k| k.added).sum());
        Ok(outcomes)
    }
}

/// Step 6 for a removal: unlink the target (already gone counts as removed: only a program
/// that ignores the directory lock could have taken it meanwhile).
fn remove_in_place(target: &Target) -> std::io::Result<()> {
    match rustix::fs::unlinkat(&target.dir, &target.name, AtFlags::empty()) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::NOENT => Ok(()),
        Err(e) => Err(errno_io(e)),
    }
}

/// `rows` with the pre-images dropped for them named again (their ids and times stay).
fn rows_again(rows: &[JournalRow], pruned: &Dropped) -> Vec<JournalRow> {
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(p) = pruned_field(pruned) {
                r.extra.insert(PRUNED_FIELD.into(), p);
            }
            r
        })
        .collect()
}
