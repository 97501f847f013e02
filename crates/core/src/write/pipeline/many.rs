//! [`Pipeline::commit_many`]: the protocol for several targets at once, all or nothing, for
//! transactions (`tx`).

use super::PRUNED_FIELD;
use super::keep::Kept;
use super::retention::NOT_KEPT_FIELD;
use super::room::{Holds, pruned_field, pruned_warning};
use super::temp::{Staged, Written};
use super::{
    Body, Caller, DirLock, Existing, Outcome, Pipeline, Plan, check_writable, fault,
    hardlink_warning, journal_row, read_target, rename_failure, rename_into_place,
};
use crate::envelope::{Failure, Result};
use crate::journal::JournalRow;
use crate::objects::Dropped;
use crate::util::sys::errno_io;
use crate::workspace::Target;
use rustix::fd::AsFd;
use rustix::fs::FlockOperation;
use serde_json::Value;

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
    ///    entry per target (`None`: leave it untouched) or fails the whole commit.
    /// 3. Stage every temp file (all written, then all fsynced back to back, then all read
    ///    back) and keep every pre-image.
    /// 4. `commit_point` runs with everything staged: the caller makes its commit record
    ///    durable there. Before it returns, nothing is applied; after, the caller's recovery
    ///    must roll forward.
    /// 5. Journal one row per written target with one durable append (skipped when
    ///    `journal_rows` is false: recovery of a transaction whose rows already landed).
    /// 6. Rename every temp file into place, then fsync each touched directory once.
    ///
    /// A failure after the commit point returns the error with the commit record in place:
    /// the caller's recovery finishes the renames.
    pub fn commit_many(
        &self,
        targets: &[&Target],
        who: &Caller,
        decide: impl FnOnce(&[Option<Existing>]) -> Result<Vec<Option<Plan>>>,
        commit_point: impl FnOnce(&[StagedFile]) -> Result<()>,
        journal_rows: bool,
    ) -> Result<Vec<Option<Outcome>>> {
        // 1. Locks, one per distinct directory, in a stable order.
        let mut dirs: Vec<((u64, u64), usize)> = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            let st = rustix::fs::fstat(&t.dir)
                .map_err(|e| Failure::io("stat directory", &t.display, errno_io(e)))?;
            dirs.push(((st.st_dev as u64, st.st_ino as u64), i));
        }
        dirs.sort();
        dirs.dedup_by_key(|(id, _)| *id);
        let mut locks = Vec::with_capacity(dirs.len());
        for (_, i) in &dirs {
            let t = targets[*i];
            rustix::fs::flock(&t.dir, FlockOperation::LockExclusive)
                .map_err(|e| Failure::io("lock", &t.display, errno_io(e)))?;
            locks.push(DirLock(&t.dir));
        }

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
        let mut pruned = Dropped::default();
        for (i, plan) in plans.into_iter().enumerate() {
            let Some(mut plan) = plan else { continue };
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
        let mut staged: Vec<(usize, Staged, Plan)> = Vec::with_capacity(written.len());
        for (i, mut w, plan) in written {
            let actual = w.read_back()?;
            staged.push((i, w.verify(actual)?, plan));
        }
        let mut kept: Vec<Kept> = staged
            .iter()
            .map(|(i, _, _)| self.preserve(targets[*i], existing[*i].as_ref()))
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
        for ((_, _, plan), k) in staged.iter_mut().zip(&kept) {
            if let Some(reason) = &k.not_kept {
                plan.extra
                    .insert(NOT_KEPT_FIELD.into(), Value::from(reason.clone()));
            }
        }
        let grew = kept.iter().map(|k| k.added).sum();
        if let Some((_, first)) = dirs.first() {
            let (more, _) = self.hold_floor(targets[*first].dir.as_fd(), 0, grew);
            pruned.extend(more);
        }

        // 4. The commit point.
        let shown: Vec<StagedFile> = staged
            .iter()
            .map(|(i, s, _)| StagedFile {
                index: *i,
                sha256: s.sha256.clone(),
                bytes: s.bytes,
                prev_sha256: existing[*i].as_ref().map(|e| e.sha256.clone()),
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
        let rows = |pruned: &Dropped, staged: &[(usize, Staged, Plan)]| -> Vec<JournalRow> {
            staged
                .iter()
                .map(|(i, s, plan)| {
                    let mut extra = plan.extra.clone();
                    if let Some(p) = pruned_field(pruned) {
                        extra.insert(PRUNED_FIELD.into(), p);
                    }
                    journal_row(
                        targets[*i],
                        who,
                        s,
                        existing[*i].as_ref(),
                        &plan.mode_label,
                        extra,
                    )
                })
                .collect()
        };
        let mut rows = rows(&pruned, &staged);
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

        // 6. Renames, then one fsync per touched directory.
        let mut outcomes: Vec<Option<Outcome>> = (0..targets.len()).map(|_| None).collect();
        let mut renamed_dirs: Vec<usize> = Vec::new();
        for (n, ((i, s, plan), row)) in staged.iter_mut().zip(&rows).enumerate() {
            let t = targets[*i];
            if n == 1 && fault("tx_crash_mid_renames") {
                std::process::abort();
            }
            if let Err(e) = rename_into_place(t, &s.guard.name, plan.create_only) {
                if let Some(a) = appended {
                    a.commit();
                }
                settle_all(n, false);
                return Err(rename_failure(t, e));
            }
            s.guard.armed = false;
            self.settle(&kept[n], true);
            renamed_dirs.push(*i);
            tick(steps / 2 + n as u64 + 1);
            let mut warnings = std::mem::take(&mut s.warnings);
            if n == 0 {
                warnings.extend(pruned_warning(&pruned));
            }
            let detached_hardlinks =
                hardlink_warning(self.objects.as_ref(), existing[*i].as_ref(), &mut warnings);
            warnings.extend(kept[n].warning());
            outcomes[*i] = Some(Outcome {
                abs_path: t.abs_path.clone(),
                sha256: s.sha256.clone(),
                bytes: s.bytes,
                prev_sha256: existing[*i].as_ref().map(|e| e.sha256.clone()),
                journal_id: row.journal_id.clone(),
                wrote_at: row.ts.clone(),
                mode_label: plan.mode_label.clone(),
                detached_hardlinks,
                warnings,
            });
        }
        if let Some(a) = appended {
            a.commit();
        }
        let mut fsync_failed = None;
        for (_, i) in &dirs {
            if let Err(e) = rustix::fs::fsync(&targets[*i].dir) {
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
