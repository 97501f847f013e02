//! Maintenance of a workspace's configuration and state (what `resilient-write doctor` runs):
//! the checks, which read and write nothing, and the repairs that cannot lose anything.
//!
//! Checks (each reuses the module that owns the state it looks at), in [`check::check`]'s
//! order:
//! - configuration: refused workspace roots (deny-list), the policy file and its history
//!   retention parse, thresholds that leave a verdict unreachable (`preflight`, `history`,
//!   `classify`);
//! - the journal, line by line: corrupt lines by number, a torn last line (`journal`);
//! - stale temp files of dead writers under every root (`pipeline`);
//! - chunk sessions: manifest missing, corrupt or out of step with the chunk files, chunks
//!   edited by hand, foreign files, missing chunks (`chunks`);
//! - the scratchpad: unreadable index lines, an index mostly made of superseded rows (worth
//!   compacting), blobs missing or not matching their address, blobs no row names (`scratch`);
//! - transactions left in the WAL: committed but not applied, abandoned, expired (`tx`);
//! - the object store against the retention policy (`history` gc, dry run); its size against
//!   the budget is [`check::history_store`], which `doctor` prints whatever it finds;
//! - whether `.resilient_write/` is git-ignored (`store`, [`gitignore`]).
//!
//! A finding that is safe to repair carries a [`Repair`]; [`repair::repair`] carries it out:
//! cut the torn journal tail, remove stale temp files, rebuild manifests, compact the
//! scratch index (its unreadable lines dropped, superseded rows folded), run transaction recovery, gc, add the .gitignore line. Every file it
//! writes goes through the write pipeline. What needs a person (a chunk edited by hand, a
//! missing blob, a bad policy) is a finding without a repair, with what to do.
//!
//! To see the state as it is, open the store with its start-up repairs turned off
//! (`sweep_on_start`, `repair_on_start`). Long scans report progress through a callback, so
//! the front end decides whether and how to show it.

pub mod check;
pub mod gitignore;
pub mod repair;

pub use check::{HistoryUsage, check, history_store};
pub use repair::repair;

use serde::Serialize;
use std::path::PathBuf;

/// Most directory entries visited per root when looking for temp files.
pub const MAX_ENTRIES: usize = 1_000_000;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Damage or misconfiguration: exit status 1 while it remains.
    Problem,
    /// Worth knowing, harmless to the product's guarantees.
    Warning,
}

/// What a repair can do about a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Cut the journal's torn last line.
    CutJournalTail,
    /// Remove the stale temp files under this directory.
    SweepTemps(PathBuf),
    /// Rebuild this chunk session's manifest from its chunk files.
    RebuildManifest(String),
    /// Compact the scratch index to its live view (one row per sha256 and label), dropping
    /// its unreadable lines.
    CompactIndex,
    /// Run transaction recovery.
    RecoverTransactions,
    /// Run gc under the retention policy, then drop the oldest versions until the state's
    /// filesystem is above history's floor.
    Gc,
    /// Add the state directory's line to this `.gitignore`.
    GitIgnore(PathBuf),
}

/// One thing a check found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The check's name (`config`, `state_dir`, `journal`, `temp_files`, `chunks`, `scratch`,
    /// `transactions`, `objects`, `disk`, `gitignore`).
    pub check: &'static str,
    pub severity: Severity,
    pub message: String,
    /// What to do about it (the repair does it when `fixable`).
    pub fix: String,
    pub fixable: bool,
    /// The repair that does `fix`, when it is safe.
    #[serde(skip)]
    pub repair: Option<Repair>,
}

impl Finding {
    /// A problem with no repair.
    pub fn problem(check: &'static str, message: String, fix: String) -> Finding {
        Finding {
            check,
            severity: Severity::Problem,
            message,
            fix,
            fixable: false,
            repair: None,
        }
    }

    /// A warning with no repair.
    pub fn warning(check: &'static str, message: String, fix: String) -> Finding {
        Finding {
            severity: Severity::Warning,
            ..Finding::problem(check, message, fix)
        }
    }

    /// This finding, repaired by `repair`.
    pub fn repaired_by(mut self, repair: Repair) -> Finding {
        self.fixable = true;
        self.repair = Some(repair);
        self
    }
}

/// How many findings are problems.
pub fn problems(findings: &[Finding]) -> usize {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count()
}
