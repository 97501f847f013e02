//! `resilient-write doctor [--fix] [--json]`: check the configuration and the state directory,
//! print each problem with its fix, and with `--fix` repair what is safe to repair.
//!
//! Checks (each reuses the module that owns the state it looks at):
//! - configuration: refused workspace roots (deny-list), the policy file and its history
//!   retention parse (`preflight.rs`, `history.rs`);
//! - the journal, line by line: corrupt lines by number, a torn last line (`journal.rs`);
//! - stale temp files of dead writers under every root (`pipeline.rs`);
//! - chunk sessions: manifest missing, corrupt or out of step with the chunk files, chunks
//!   edited by hand, foreign files, missing chunks (`chunks.rs`);
//! - the scratchpad: unreadable index lines, blobs missing or not matching their address,
//!   blobs no row names (`scratch.rs`);
//! - transactions left in the WAL: committed but not applied, abandoned, expired (`tx.rs`);
//! - the object store against the retention policy (`history.rs` gc, dry run);
//! - whether `.resilient_write/` is git-ignored (`service.rs`).
//!
//! The checks write nothing: the service is started with its start-up repairs turned off.
//! `--fix` repairs what cannot lose anything: cut the torn journal tail, remove stale temp
//! files, rebuild manifests, drop unreadable scratch index lines, run transaction recovery,
//! gc, add the .gitignore line; every file it writes goes through the write pipeline. It then
//! checks again. What needs a person (a chunk edited by hand, a missing blob, a bad policy) is
//! reported with what to do. Exit status: 0 healthy (warnings allowed), 1 problems remain.
//! Long scans show progress on stderr when it is a terminal.

use crate::dispatch::{Config, STATE_DIR_NAME, Service};
use crate::pipeline::Caller;
use clap::Args;
use serde::Serialize;
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Repair what is safe to repair (through the write pipeline), then check again.
    #[arg(long)]
    pub fix: bool,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Most directory entries visited per root when looking for temp files.
const MAX_ENTRIES: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Damage or misconfiguration: exit status 1 while it remains.
    Problem,
    /// Worth knowing, harmless to the product's guarantees.
    Warning,
}

/// What `--fix` can do about a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Repair {
    CutJournalTail,
    SweepTemps(PathBuf),
    RebuildManifest(String),
    DropIndexLines,
    RecoverTransactions,
    Gc,
    GitIgnore(PathBuf),
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    pub message: String,
    /// What to do about it (`--fix` does it when `fixable`).
    pub fix: String,
    pub fixable: bool,
    #[serde(skip)]
    repair: Option<Repair>,
}

impl Finding {
    fn problem(check: &'static str, message: String, fix: String) -> Finding {
        Finding {
            check,
            severity: Severity::Problem,
            message,
            fix,
            fixable: false,
            repair: None,
        }
    }

    fn warning(check: &'static str, message: String, fix: String) -> Finding {
        Finding {
            severity: Severity::Warning,
            ..Finding::problem(check, message, fix)
        }
    }

    fn repaired_by(mut self, repair: Repair) -> Finding {
        self.fixable = true;
        self.repair = Some(repair);
        self
    }
}

/// Progress of a long scan on stderr, only when stderr is a terminal.
struct Progress {
    on: bool,
    last: Instant,
    shown: bool,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        Progress {
            on: !quiet && std::io::stderr().is_terminal(),
            last: Instant::now(),
            shown: false,
        }
    }

    fn tick(&mut self, what: &str, done: u64, total: u64) {
        if !self.on || self.last.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.last = Instant::now();
        self.shown = true;
        let mut err = std::io::stderr();
        let _ = if total > 0 {
            write!(err, "\r\x1b[2K{what}: {done}/{total}")
        } else {
            write!(err, "\r\x1b[2K{what}: {done}")
        };
        let _ = err.flush();
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.shown = false;
        }
    }
}

fn list(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(10).map(u64::to_string).collect();
    if v.len() > 10 {
        s.push(format!("... ({} in all)", v.len()));
    }
    s.join(", ")
}

fn lines(v: &[usize]) -> String {
    let as_u64: Vec<u64> = v.iter().map(|&n| n as u64).collect();
    list(&as_u64)
}

/// Every check, in order; writes nothing.
fn check(svc: &Service, progress: &mut Progress) -> Vec<Finding> {
    let mut out = Vec::new();
    check_config(svc, &mut out);
    check_journal(svc, progress, &mut out);
    check_temps(svc, progress, &mut out);
    check_chunks(svc, &mut out);
    check_scratch(svc, progress, &mut out);
    check_transactions(svc, &mut out);
    check_objects(svc, &mut out);
    check_gitignore(svc, &mut out);
    progress.clear();
    out
}

fn check_config(svc: &Service, out: &mut Vec<Finding>) {
    for (path, reason) in svc.workspaces().refused() {
        out.push(Finding::problem(
            "config",
            format!("workspace {} is refused: {reason}", path.display()),
            "name a project directory instead (-w DIR or RW_WORKSPACE)".into(),
        ));
    }
    if svc.workspaces().roots().next().is_none() {
        out.push(Finding::problem(
            "config",
            "no usable workspace: every write would be refused".into(),
            "run from a project directory or pass -w DIR".into(),
        ));
    }
    let policy = svc.policy();
    match (policy.problem(), policy.policy()) {
        (Some(p), _) => out.push(Finding::problem(
            "config",
            format!("policy file {} is unusable: {}", p.file, p.message),
            format!(
                "correct line {} (tools that classify refuse until it parses)",
                p.line
            ),
        )),
        (None, None) => {}
        (None, Some(p)) => {
            if let Err(e) = crate::history::Retention::from_policy(p.history.as_ref()) {
                out.push(Finding::problem(
                    "config",
                    format!(
                        "policy file {}: history section: {e}",
                        policy.path.display()
                    ),
                    "correct the history section (gc refuses until it parses)".into(),
                ));
            }
        }
    }
}

fn check_journal(svc: &Service, progress: &mut Progress, out: &mut Vec<Finding>) {
    let journal = svc.pipeline().journal();
    let shown = journal.path().display();
    match journal.check_lines(|done, total| progress.tick("journal", done, total)) {
        Err(e) => out.push(Finding::problem(
            "journal",
            format!("{shown} cannot be read: {e}"),
            "check its permissions".into(),
        )),
        Ok(c) => {
            if let Some(n) = c.torn_tail {
                out.push(
                    Finding::problem(
                        "journal",
                        format!(
                            "{shown}: line {n} is torn (an append that never finished, \
                             e.g. a crash)"
                        ),
                        "cut it off (the next server start also does)".into(),
                    )
                    .repaired_by(Repair::CutJournalTail),
                );
            }
            if !c.corrupt.is_empty() {
                out.push(Finding::warning(
                    "journal",
                    format!(
                        "{shown}: {} line(s) are not JSON and are skipped by readers: line {}",
                        c.corrupt.len(),
                        lines(&c.corrupt)
                    ),
                    "inspect them (sed -n 'Np'); the journal is append-only and shared with \
                     running servers, so doctor does not rewrite it"
                        .into(),
                ));
            }
        }
    }
}

fn check_temps(svc: &Service, progress: &mut Progress, out: &mut Vec<Finding>) {
    let roots: Vec<PathBuf> = svc.workspaces().roots().map(Path::to_path_buf).collect();
    let mut dirs = roots.clone();
    if !roots.iter().any(|r| svc.state_dir().starts_with(r)) {
        dirs.push(svc.state_dir().to_path_buf());
    }
    for (i, dir) in dirs.iter().enumerate() {
        progress.tick("temp files", i as u64, dirs.len() as u64);
        let stale = crate::pipeline::stale_temp_files(dir, MAX_ENTRIES);
        if stale.is_empty() {
            continue;
        }
        let names: Vec<String> = stale
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        out.push(
            Finding::problem(
                "temp_files",
                format!(
                    "{} stale temp file(s) of crashed writers under {}: {}{}",
                    stale.len(),
                    dir.display(),
                    names.join(", "),
                    if stale.len() > 5 { ", ..." } else { "" }
                ),
                "remove them (their writer process is gone; targets are intact)".into(),
            )
            .repaired_by(Repair::SweepTemps(dir.clone())),
        );
    }
}

fn session_names(svc: &Service) -> Vec<String> {
    let dir = svc.state_dir().join(crate::chunks::CHUNKS_DIR);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

fn check_chunks(svc: &Service, out: &mut Vec<Finding>) {
    for name in session_names(svc) {
        let what = format!("chunk session {name}");
        if crate::chunks::validate_session(&name).is_err() {
            out.push(Finding::warning(
                "chunks",
                format!("{what}: not a valid session name; no tool can reach it"),
                format!("remove {STATE_DIR_NAME}/chunks/{name} if it is not needed"),
            ));
            continue;
        }
        let drift = match crate::chunks::manifest_drift(svc, &name) {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(f) => {
                out.push(Finding::problem(
                    "chunks",
                    format!("{what}: cannot be read: {f}"),
                    "check the directory's permissions".into(),
                ));
                continue;
            }
        };
        let (drift, listing) = drift;
        if drift.needs_rebuild(!listing.parts.is_empty()) {
            let mut why = Vec::new();
            if drift.manifest != "ok" {
                why.push(format!("manifest.json is {}", drift.manifest));
            }
            if !drift.unrecorded.is_empty() {
                why.push(format!("chunks {} have no record", list(&drift.unrecorded)));
            }
            if !drift.stale_records.is_empty() {
                why.push(format!(
                    "records of chunks {} whose files are gone",
                    list(&drift.stale_records)
                ));
            }
            out.push(
                Finding::problem(
                    "chunks",
                    format!("{what}: {}", why.join("; ")),
                    "rebuild the manifest from the chunk files".into(),
                )
                .repaired_by(Repair::RebuildManifest(name.clone())),
            );
        }
        // Doctor re-hashes every chunk: it is the thorough check, not the quick status.
        let status = match crate::chunks::status(svc, &name, true) {
            Ok((s, _)) => s,
            Err(f) => {
                out.push(Finding::problem(
                    "chunks",
                    format!("{what}: cannot be checked: {f}"),
                    "check the chunk files' permissions".into(),
                ));
                continue;
            }
        };
        if !status.modified.is_empty() {
            let idx: Vec<u64> = status.modified.iter().map(|m| m.index).collect();
            out.push(Finding::problem(
                "chunks",
                format!(
                    "{what}: chunk(s) {} changed since they were written (edited outside \
                     resilient-write)",
                    list(&idx)
                ),
                "rewrite them with chunk_write, or chunk_reset the session".into(),
            ));
        }
        if !status.unrecognised_files.is_empty() {
            out.push(Finding::problem(
                "chunks",
                format!(
                    "{what}: files not written by resilient-write: {}",
                    status.unrecognised_files.join(", ")
                ),
                "remove them, or chunk_reset the session".into(),
            ));
        }
        if !status.missing_indices.is_empty() {
            out.push(Finding::warning(
                "chunks",
                format!(
                    "{what}: incomplete, missing chunk(s) {}",
                    list(&status.missing_indices)
                ),
                "write the missing chunks and compose, or chunk_reset it if abandoned".into(),
            ));
        }
    }
}

fn check_scratch(svc: &Service, progress: &mut Progress, out: &mut Vec<Finding>) {
    let (rows, skipped) = match crate::scratch::read_index(svc) {
        Ok(r) => r,
        Err(f) => {
            out.push(Finding::problem(
                "scratch",
                format!("the scratch index cannot be read: {f}"),
                "check the scratch directory's permissions".into(),
            ));
            return;
        }
    };
    let index = format!("{STATE_DIR_NAME}/scratch/index.jsonl");
    if !skipped.is_empty() {
        let detail: Vec<String> = skipped
            .iter()
            .take(5)
            .map(|s| format!("line {}: {}", s.line, s.reason))
            .collect();
        out.push(
            Finding::problem(
                "scratch",
                format!(
                    "{index}: {} unreadable line(s): {}",
                    skipped.len(),
                    detail.join("; ")
                ),
                "drop them from the index (the blobs stay)".into(),
            )
            .repaired_by(Repair::DropIndexLines),
        );
    }
    let dir = svc.state_dir().join(crate::scratch::SCRATCH_DIR);
    let mut named: Vec<String> = rows
        .iter()
        .filter_map(|r| r.get("sha256").and_then(|v| v.as_str()))
        .map(str::to_ascii_lowercase)
        .collect();
    named.sort();
    named.dedup();
    let mut missing = Vec::new();
    let mut tampered = Vec::new();
    for (i, sha) in named.iter().enumerate() {
        progress.tick("scratch blobs", i as u64, named.len() as u64);
        let path = dir.join(format!("{sha}.bin"));
        match std::fs::File::open(&path).and_then(crate::hash::sha256_reader) {
            Ok((actual, _)) if actual == *sha => {}
            Ok(_) => tampered.push(sha.clone()),
            Err(_) => missing.push(sha.clone()),
        }
    }
    let short = |v: &[String]| {
        v.iter()
            .take(5)
            .map(|s| s[..12].to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !missing.is_empty() {
        out.push(Finding::problem(
            "scratch",
            format!(
                "{} blob(s) named by the index are missing: {}",
                missing.len(),
                short(&missing)
            ),
            "deposit the content again with scratch_put (the index row then resolves)".into(),
        ));
    }
    if !tampered.is_empty() {
        out.push(Finding::problem(
            "scratch",
            format!(
                "{} blob(s) do not match their address (tampered with): {}",
                tampered.len(),
                short(&tampered)
            ),
            "deposit the true content again with scratch_put (it restores the blob); \
             scratch_get refuses these meanwhile"
                .into(),
        ));
    }
    let unnamed: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            let sha = n.strip_suffix(".bin")?.to_ascii_lowercase();
            (crate::hash::is_sha256_hex(&sha) && named.binary_search(&sha).is_err()).then_some(sha)
        })
        .collect();
    if !unnamed.is_empty() {
        out.push(Finding::warning(
            "scratch",
            format!(
                "{} blob(s) have no index row: {}",
                unnamed.len(),
                short(&unnamed)
            ),
            "harmless (scratch_get by hash still works); remove them if not needed".into(),
        ));
    }
}

fn check_transactions(svc: &Service, out: &mut Vec<Finding>) {
    use crate::tx::TxState;
    for (id, state) in crate::tx::inspect(svc) {
        let (message, fix) = match state {
            TxState::Open => continue,
            TxState::Committed => (
                format!("transaction {id} committed but not fully applied (a crash?)"),
                "run recovery: it rolls the commit forward",
            ),
            TxState::Abandoned => (
                format!("transaction {id} was never committed and its process is gone"),
                "run recovery: it rolls it back (no workspace file changes)",
            ),
            TxState::Expired => (
                format!("transaction {id} passed its timeout without a commit"),
                "run recovery: it discards it",
            ),
        };
        out.push(
            Finding::problem("transactions", message, fix.into())
                .repaired_by(Repair::RecoverTransactions),
        );
    }
}

fn retention(svc: &Service) -> Option<crate::history::Retention> {
    let history = svc.policy().policy()?.history.as_ref();
    crate::history::Retention::from_policy(history).ok()
}

fn check_objects(svc: &Service, out: &mut Vec<Finding>) {
    let (Some(objects), Some(retention)) = (svc.pipeline().objects(), retention(svc)) else {
        return;
    };
    match crate::history::gc(svc.pipeline().journal(), objects, &retention, true) {
        Ok(r) if r.removed > 0 => out.push(
            Finding::warning(
                "objects",
                format!(
                    "the object store holds {} bytes in {} object(s); the retention policy \
                     would remove {} object(s), {} bytes",
                    r.kept_bytes + r.removed_bytes,
                    r.kept + r.removed,
                    r.removed,
                    r.removed_bytes
                ),
                "run gc".into(),
            )
            .repaired_by(Repair::Gc),
        ),
        Ok(_) => {}
        Err(e) => out.push(Finding::problem(
            "objects",
            format!("the object store cannot be listed: {e}"),
            "check its permissions".into(),
        )),
    }
}

fn check_gitignore(svc: &Service, out: &mut Vec<Finding>) {
    let Some(root) = svc.state_dir().parent() else {
        return;
    };
    if crate::store::state_dir_git_ignored(root) == Some(false) {
        let path = root.join(".gitignore");
        out.push(
            Finding::problem(
                "gitignore",
                format!(
                    "{STATE_DIR_NAME}/ in {} is not git-ignored: the journal and scratchpad \
                     may hold sensitive names",
                    root.display()
                ),
                format!("add `{STATE_DIR_NAME}/` to {}", path.display()),
            )
            .repaired_by(Repair::GitIgnore(path)),
        );
    }
}

/// Carry out one repair; `Err` says why it could not.
fn repair(svc: &Service, what: &Repair) -> Result<(), String> {
    let who = Caller {
        caller: "resilient-write doctor".into(),
        tool: "doctor".into(),
    };
    match what {
        Repair::CutJournalTail => svc.pipeline().journal().repair().map_err(|e| e.to_string()),
        Repair::SweepTemps(dir) => {
            crate::pipeline::sweep_temp_files(dir, MAX_ENTRIES);
            Ok(())
        }
        Repair::RebuildManifest(name) => crate::chunks::rebuild_manifest(svc, &who, name)
            .map(drop)
            .map_err(|f| f.to_string()),
        Repair::DropIndexLines => crate::scratch::drop_unreadable_index_lines(svc, &who)
            .map(drop)
            .map_err(|f| f.to_string()),
        Repair::RecoverTransactions => {
            let report = crate::tx::recover(svc);
            match report.problems.is_empty() {
                true => Ok(()),
                false => Err(report.problems.join("; ")),
            }
        }
        Repair::Gc => {
            let (Some(objects), Some(retention)) = (svc.pipeline().objects(), retention(svc))
            else {
                return Err("no object store or no usable retention policy".into());
            };
            crate::history::gc(svc.pipeline().journal(), objects, &retention, false)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Repair::GitIgnore(path) => {
            let old = match std::fs::read_to_string(path) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e.to_string()),
            };
            let new = crate::cmd::init::with_gitignore_entry(old.as_deref().unwrap_or(""));
            crate::cmd::init::write_text(svc, path, old.as_deref(), &new)
        }
    }
}

fn start(config: &Config) -> Arc<Service> {
    let mut config = config.clone();
    config.store.sweep_on_start = false;
    config.store.repair_on_start = false;
    Service::start(config)
}

fn problems(findings: &[Finding]) -> usize {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count()
}

fn print_findings(findings: &[Finding], fixed: &[(usize, Result<(), String>)]) {
    for (i, f) in findings.iter().enumerate() {
        let tag = match f.severity {
            Severity::Problem => "PROBLEM",
            Severity::Warning => "warning",
        };
        println!("{tag:<8} {:<12} {}", f.check, f.message);
        let outcome = fixed.iter().find(|(j, _)| *j == i).map(|(_, r)| r);
        match outcome {
            Some(Ok(())) => println!("{:<21} fixed: {}", "", f.fix),
            Some(Err(e)) => println!("{:<21} fix failed ({e}): {}", "", f.fix),
            None if f.fixable => println!("{:<21} fix (--fix does it): {}", "", f.fix),
            None => println!("{:<21} fix: {}", "", f.fix),
        }
    }
}

/// Run the checks (and with `--fix` the repairs, then the checks again).
pub fn run(config: &Config, args: &DoctorArgs) -> ExitCode {
    let svc = start(config);
    let state_dir = svc.state_dir().display().to_string();
    let mut progress = Progress::new(args.json);
    let findings = check(&svc, &mut progress);
    let mut fixed: Vec<(usize, Result<(), String>)> = Vec::new();
    let mut done: Vec<Repair> = Vec::new();
    if args.fix {
        for (i, f) in findings.iter().enumerate() {
            let Some(r) = &f.repair else { continue };
            // One recovery or gc repairs every finding that asked for it.
            if let Some(pos) = done.iter().position(|d| d == r) {
                let earlier = fixed
                    .iter()
                    .find(|(j, _)| findings[*j].repair.as_ref() == Some(&done[pos]))
                    .map(|(_, res)| res.clone())
                    .unwrap_or(Ok(()));
                fixed.push((i, earlier));
                continue;
            }
            fixed.push((i, repair(&svc, r)));
            done.push(r.clone());
        }
    }
    let after = if args.fix {
        // Check again with a fresh service: what remains is what the exit status reports.
        drop(svc);
        let svc = start(config);
        Some(check(&svc, &mut progress))
    } else {
        None
    };
    let remaining = after.as_ref().map_or(problems(&findings), |a| problems(a));
    if args.json {
        let doc = json!({
            "ok": remaining == 0,
            "state_dir": state_dir,
            "findings": findings,
            "problems": problems(&findings),
            "fixed": fixed.iter().filter(|(_, r)| r.is_ok()).count(),
            "after_fix": after,
            "remaining_problems": remaining,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        println!("resilient-write doctor: state in {state_dir}");
        print_findings(&findings, &fixed);
        let warnings = findings.len() - problems(&findings);
        if findings.is_empty() {
            println!("healthy: no problems found");
        } else if let Some(after) = &after {
            println!(
                "{} problem(s), {} warning(s); after --fix: {} problem(s) remain",
                problems(&findings),
                warnings,
                problems(after)
            );
            for f in after.iter().filter(|f| f.severity == Severity::Problem) {
                println!("  remains: {} {}", f.check, f.message);
            }
        } else {
            let fixable = findings.iter().filter(|f| f.fixable).count();
            println!(
                "{} problem(s), {} warning(s); {} can be repaired with --fix",
                problems(&findings),
                warnings,
                fixable
            );
        }
    }
    if remaining == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
