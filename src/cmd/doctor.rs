//! `resilient-write doctor [--fix] [--json]`: check the configuration and the state directory,
//! print each problem with its fix, and with `--fix` repair what is safe to repair.
//!
//! The checks and the repairs live in the core ([`resilient_write_core::maint`], which lists them); this
//! file parses the arguments, starts the service, shows progress, prints and sets the exit
//! status. The checks write nothing: the service is started with its start-up repairs turned
//! off. `--fix` carries out every finding's repair (one recovery or gc serves every finding
//! that asks for it), then checks again with a fresh service. What needs a person is
//! reported with what to do. Exit status: 0 healthy (warnings allowed), 1 problems remain.
//! Long scans show progress on stderr when it is a terminal.

use crate::cmd::style::{self, paint};
use crate::dispatch::{Config, Service};
use clap::Args;
use resilient_write_core::maint::{Finding, Repair, Severity, problems};
use serde_json::json;
use std::io::{IsTerminal, Write};
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

/// Every check, in order ([`resilient_write_core::maint::check`]), with progress on stderr, then the
/// client configs; each finding once.
fn check(service: &Service, config: &Config, progress: &mut Progress) -> Vec<Finding> {
    let mut findings =
        resilient_write_core::maint::check(service.store(), &mut |what, done, total| {
            progress.tick(what, done, total)
        });
    progress.clear();
    if let Some(project) = service.store().state_dir().parent() {
        let path_var = std::env::var_os("PATH");
        findings.extend(client_findings(
            project,
            config.store.home.as_deref(),
            path_var.as_deref(),
        ));
    }
    #[cfg(target_os = "linux")]
    findings.extend(watcher_finding(service.store().state_dir()));
    let mut seen = std::collections::HashSet::new();
    findings.retain(|f| seen.insert((f.check, f.message.clone())));
    findings
}

/// A WARNING while the shell hooks' watcher refuses this workspace: every command is still
/// journaled, with a walk of the whole work tree per hook.
#[cfg(target_os = "linux")]
fn watcher_finding(state_dir: &std::path::Path) -> Option<Finding> {
    let why = resilient_write_core::native::watch::refusal(state_dir)?;
    Some(Finding::warning(
        "shell_watcher",
        format!("the shell hooks' watcher refused this workspace: {why}"),
        "fix the cause, then remove .resilient_write/hooks/shell/watch/off (it lapses after an \
         hour); hooks.shell_watcher: false stops the attempts"
            .into(),
    ))
}

/// A PROBLEM for each client config whose server command does not exist: the client would
/// fail to start the server while everything here looks healthy.
pub fn client_findings(
    project: &std::path::Path,
    home: Option<&std::path::Path>,
    path_var: Option<&std::ffi::OsStr>,
) -> Vec<Finding> {
    use crate::cmd::init::clients;
    clients::registered(project, home)
        .into_iter()
        .filter(|r| !clients::command_exists(&r.command, path_var))
        .map(|r| {
            let kind = clap::ValueEnum::to_possible_value(&r.kind)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            Finding::problem(
                "clients",
                format!(
                    "{} ({}) starts `{}`, which does not exist or is not executable",
                    r.label,
                    r.file.display(),
                    r.command
                ),
                format!("run `resilient-write init --client {kind}` again (it writes this binary's path)"),
            )
        })
        .collect()
}

fn start(config: &Config) -> Arc<Service> {
    let mut config = config.clone();
    config.store.sweep_on_start = false;
    config.store.repair_on_start = false;
    Service::start(config)
}

fn print_findings(findings: &[Finding], fixed: &[(usize, Result<(), String>)]) {
    for (i, f) in findings.iter().enumerate() {
        // Padded before painting: escape codes would count towards the width.
        let tag = match f.severity {
            Severity::Problem => paint(style::PROBLEM, &format!("{:<8}", "PROBLEM")),
            Severity::Warning => paint(style::WARNING, &format!("{:<8}", "warning")),
        };
        anstream::println!("{tag} {:<12} {}", f.check, f.message);
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
    let service = start(config);
    let state_dir = service.store().state_dir().display().to_string();
    let mut progress = Progress::new(args.json);
    let history = resilient_write_core::maint::history_store(service.store())
        .map(|r| r.map_err(|e| e.to_string()));
    let findings = check(&service, config, &mut progress);
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
            fixed.push((i, resilient_write_core::maint::repair(service.store(), r)));
            done.push(r.clone());
        }
    }
    let after = if args.fix {
        // Check again with a fresh service: what remains is what the exit status reports.
        drop(service);
        let service = start(config);
        Some(check(&service, config, &mut progress))
    } else {
        None
    };
    let remaining = after.as_ref().map_or(problems(&findings), |a| problems(a));
    if args.json {
        let doc = json!({
            "ok": remaining == 0,
            "state_dir": state_dir,
            "history_store": match &history {
                Some(Ok(h)) => json!(h),
                Some(Err(e)) => json!({"error": e}),
                None => json!(null),
            },
            "findings": findings,
            "problems": problems(&findings),
            "fixed": fixed.iter().filter(|(_, r)| r.is_ok()).count(),
            "after_fix": after,
            "remaining_problems": remaining,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        println!("resilient-write doctor: state in {state_dir}");
        match &history {
            Some(Ok(h)) => println!(
                "history: {} object(s), {} of the {} budget ({}%); keep_last {}, max_age {}",
                h.objects,
                human_bytes(h.bytes),
                human_bytes(h.max_bytes),
                (h.bytes as u128 * 100)
                    .checked_div(h.max_bytes as u128)
                    .unwrap_or(if h.bytes > 0 { 100 } else { 0 }),
                h.keep_last,
                human_secs(h.max_age_secs)
            ),
            Some(Err(e)) => println!("history: the object store cannot be listed: {e}"),
            None => {}
        }
        if let Some(Ok(h)) = &history {
            match &h.disk {
                Some(d) => println!(
                    "state disk: {} of {} free at {} (history keeps {} free: min_free {}){}",
                    human_bytes(d.free_bytes),
                    human_bytes(d.total_bytes),
                    d.mount,
                    human_bytes(d.floor_bytes),
                    h.min_free,
                    if d.below_floor {
                        "; BELOW THE FLOOR"
                    } else {
                        ""
                    }
                ),
                None => println!(
                    "state disk: reports no size; history yields only when a write meets a full disk"
                ),
            }
        }
        print_findings(&findings, &fixed);
        let warnings = findings.len() - problems(&findings);
        if findings.is_empty() {
            anstream::println!("{}: no problems found", paint(style::GOOD, "healthy"));
        } else if let Some(after) = &after {
            println!(
                "{} problem(s), {} warning(s); after --fix: {} problem(s) remain",
                problems(&findings),
                warnings,
                problems(after)
            );
            for f in after.iter().filter(|f| f.severity == Severity::Problem) {
                anstream::println!(
                    "  {} {} {}",
                    paint(style::PROBLEM, "remains:"),
                    f.check,
                    f.message
                );
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

/// `n` bytes for people: B, KiB, MiB or GiB with one decimal.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A duration in whole days, hours, minutes or seconds, whichever divides it.
fn human_secs(s: u64) -> String {
    for (unit, len) in [("d", 86400), ("h", 3600), ("m", 60)] {
        if s >= len && s.is_multiple_of(len) {
            return format!("{}{unit}", s / len);
        }
    }
    format!("{s}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_as_people_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
        assert_eq!(human_secs(30 * 86400), "30d");
        assert_eq!(human_secs(7200), "2h");
        assert_eq!(human_secs(90), "90s");
    }
}
