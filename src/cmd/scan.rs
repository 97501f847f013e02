//! `resilient-write scan [PATHS...]`: the L0 classifier (paper section 3.1) for people and
//! pre-commit hooks. Scores each file under the workspace policy and prints the findings as a
//! table (file, line, kind, pattern, snippet) or, with `--json`, as one JSON document.
//!
//! Guarantees: a snippet is at most 16 characters and never a whole secret (the classifier cuts
//! it), and control characters in it are shown as `?`. Directories are walked without following
//! symlinks, skipping `.git`, `target`, `node_modules` and `.resilient_write`; files that look
//! binary (a NUL byte in the first 8 KiB) are skipped; `-` reads standard input. Nothing is
//! written. Exit status: 1 when any file reaches `--fail-at` (default medium); otherwise 2 when a
//! path could not be read or the policy file is unusable (the check is incomplete); else 0.

use crate::classify::{RiskReport, Verdict, risk_score};
use crate::dispatch::Config;
use crate::preflight::ActivePolicy;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Directory names never descended into.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules", ".resilient_write"];
/// How much of a file is looked at to decide it is binary.
const BINARY_SNIFF: usize = 8192;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or directories to scan (`-` = standard input; default: the current directory).
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when any file's verdict reaches this.
    #[arg(long, value_enum, default_value = "medium")]
    pub fail_at: FailAt,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FailAt {
    Low,
    Medium,
    High,
}

impl FailAt {
    fn verdict(self) -> Verdict {
        match self {
            FailAt::Low => Verdict::Low,
            FailAt::Medium => Verdict::Medium,
            FailAt::High => Verdict::High,
        }
    }
}

/// One input: a name to show and where to read it.
enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::Stdin => "-".into(),
            Input::File(p) => p.display().to_string(),
        }
    }

    fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            Input::Stdin => {
                let mut buf = Vec::new();
                std::io::stdin().read_to_end(&mut buf)?;
                Ok(buf)
            }
            Input::File(p) => std::fs::read(p),
        }
    }
}

/// Files under `path` in a stable order; unreadable directories are reported in `errors`.
fn collect(path: &Path, out: &mut Vec<Input>, errors: &mut Vec<(String, String)>) {
    match std::fs::metadata(path) {
        Err(e) => errors.push((path.display().to_string(), e.to_string())),
        Ok(m) if m.is_dir() => walk(path, out, errors),
        Ok(_) => out.push(Input::File(path.to_path_buf())),
    }
}

fn walk(dir: &Path, out: &mut Vec<Input>, errors: &mut Vec<(String, String)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            errors.push((dir.display().to_string(), e.to_string()));
            return;
        }
    };
    let mut children: Vec<(PathBuf, std::fs::FileType)> = entries
        .flatten()
        .filter_map(|e| e.file_type().ok().map(|t| (e.path(), t)))
        .collect();
    children.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, t) in children {
        if t.is_dir() {
            let skip = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| SKIPPED_DIRS.contains(&n));
            if !skip {
                walk(&p, out, errors);
            }
        } else if t.is_file() {
            out.push(Input::File(p));
        }
    }
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0)
}

fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Safe => "safe",
        Verdict::Low => "low",
        Verdict::Medium => "medium",
        Verdict::High => "high",
    }
}

/// Run `scan` with the service configuration (for the policy file) and the arguments.
pub fn run(config: &Config, args: &ScanArgs) -> ExitCode {
    let state_root = config
        .store
        .state_root
        .as_deref()
        .unwrap_or(&config.store.cwd);
    let policy = ActivePolicy::load(ActivePolicy::path_for(
        config.store.policy_file.as_deref(),
        state_root,
    ));
    let classifier = match policy.classifier() {
        Ok(c) => c,
        Err(f) => {
            eprintln!("resilient-write scan: {f}");
            return ExitCode::from(2);
        }
    };
    let mut inputs = Vec::new();
    let mut errors: Vec<(String, String)> = Vec::new();
    if args.paths.is_empty() {
        walk(Path::new("."), &mut inputs, &mut errors);
    }
    for p in &args.paths {
        if p.as_os_str() == "-" {
            inputs.push(Input::Stdin);
        } else {
            collect(p, &mut inputs, &mut errors);
        }
    }
    let fail_at = args.fail_at.verdict();
    let mut reports: Vec<(String, RiskReport)> = Vec::new();
    let (mut scanned, mut skipped_binary) = (0usize, 0usize);
    for input in &inputs {
        let bytes = match input.read() {
            Ok(b) => b,
            Err(e) => {
                errors.push((input.name(), e.to_string()));
                continue;
            }
        };
        if looks_binary(&bytes) {
            skipped_binary += 1;
            continue;
        }
        scanned += 1;
        let report = risk_score(&String::from_utf8_lossy(&bytes), classifier);
        if report.verdict > Verdict::Safe || !report.detected_patterns.is_empty() {
            reports.push((input.name(), report));
        }
    }
    let failing = reports.iter().filter(|(_, r)| r.verdict >= fail_at).count();
    if args.json {
        let files: Vec<_> = reports
            .iter()
            .map(|(path, r)| {
                json!({
                    "path": path,
                    "score": r.score,
                    "verdict": r.verdict,
                    "detected_patterns": r.detected_patterns,
                    "suggested_actions": r.suggested_actions,
                })
            })
            .collect();
        let errs: Vec<_> = errors
            .iter()
            .map(|(p, m)| json!({"path": p, "message": m}))
            .collect();
        let doc = json!({
            "files": files,
            "scanned": scanned,
            "skipped_binary": skipped_binary,
            "errors": errs,
            "fail_at": verdict_name(fail_at),
            "failing_files": failing,
        });
        println!("{doc}");
    } else {
        if !reports.is_empty() {
            println!(
                "{:<40} {:>5}  {:<18} {:<32} snippet",
                "file", "line", "kind", "pattern"
            );
        }
        for (path, r) in &reports {
            for f in &r.detected_patterns {
                println!(
                    "{:<40} {:>5}  {:<18} {:<32} {}",
                    printable(path),
                    f.line,
                    f.kind,
                    f.pattern,
                    printable(&f.r#match)
                );
            }
        }
        for (path, r) in &reports {
            eprintln!(
                "{}: {} (score {:.2})",
                printable(path),
                verdict_name(r.verdict),
                r.score
            );
        }
        eprintln!(
            "{scanned} file(s) scanned, {skipped_binary} binary skipped, {failing} at or above {}",
            verdict_name(fail_at)
        );
    }
    for (p, m) in &errors {
        eprintln!("resilient-write scan: {}: {m}", printable(p));
    }
    if failing > 0 {
        ExitCode::from(1)
    } else if !errors.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
