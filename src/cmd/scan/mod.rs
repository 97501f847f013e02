//! `resilient-write scan [PATHS...]`: the L0 classifier (paper section 3.1) as a secret
//! scanner for people, pre-commit hooks and CI. Scores each text under the workspace policy
//! and prints the findings as a table, one JSON document or SARIF 2.1.0.
//!
//! What is scanned: the work tree under PATHS (default `.`), walked like ripgrep walks it
//! (`walk`); with `--staged` the index (what the next commit holds, `git`); with
//! `--git[=RANGE]` the lines the commits of RANGE added (`git`); `-` reads standard input.
//! What is reported: L0's findings minus those accepted inline, by fingerprint in
//! `.resilient-write-ignore` or by `--baseline` (`suppress`), each with a severity, a column
//! and a fingerprint (`report`); `--write-baseline` records the current findings instead.
//!
//! Guarantees: no output carries a whole secret (a snippet is at most 16 characters and never
//! a whole secret; fingerprints are hashes), and control characters are shown as `?`. Nothing
//! is written except the `--write-baseline` file (atomically). Exit status: 1 when any text's
//! verdict reaches `--fail-at` (default medium); otherwise 2 when a path could not be read, git
//! failed, or the policy, ignore or baseline file is unusable (the check is incomplete), or on
//! a usage error; else 0.

mod git;
mod output;
mod report;
mod suppress;
mod walk;

use crate::dispatch::Config;
use clap::{Args, ValueEnum};
use report::{Filters, Scanned, Source, Suppressed, TextReport, scan_text};
use resilient_write_core::classify::{Classifier, Verdict, redact};
use resilient_write_core::policy::active::ActivePolicy;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use suppress::{IGNORE_FILE, INLINE_MARKERS, fingerprint};

#[derive(Debug, Args)]
#[command(after_help = "\
Suppression: a line holding `pragma: allowlist secret` or `gitleaks:allow` accepts its findings; \
a fingerprint (shown with each finding) on a line of .resilient-write-ignore at the repository root \
accepts that finding; `--write-baseline FILE` records the current findings and `--baseline FILE` \
reports only the others.

Exit status: 0 clean, 1 a text reaches --fail-at, 2 usage or I/O error (incomplete check).")]
pub struct ScanArgs {
    /// Files or directories to scan (`-` = standard input; default: the current directory).
    /// With --staged or --git: limit to these paths.
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Same as `--format json`.
    #[arg(long, hide = true)]
    pub json: bool,
    /// Exit with status 1 when any text's verdict reaches this.
    #[arg(long, value_enum, default_value = "medium")]
    pub fail_at: FailAt,
    /// Also scan hidden files and directories (never `.git` nor `.resilient_write`).
    #[arg(long)]
    pub hidden: bool,
    /// Do not honour .gitignore, .ignore, git excludes or the hidden-file rule.
    #[arg(long)]
    pub no_ignore: bool,
    /// Scan the staged content (the git index, not the work tree): the pre-commit check.
    #[arg(long, conflicts_with_all = ["git", "hidden", "no_ignore"])]
    pub staged: bool,
    /// Scan the lines added by the commits of RANGE (`git log` syntax; default HEAD, all of
    /// its history), e.g. `--git=origin/main..HEAD`.
    #[arg(long, value_name = "RANGE", num_args = 0..=1, require_equals = true,
          default_missing_value = "HEAD", conflicts_with_all = ["hidden", "no_ignore"])]
    pub git: Option<String>,
    /// Report only findings whose fingerprint is not in this baseline file.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record the current findings (fingerprints, no secrets) in FILE and exit 0.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Print FILE (`-` = standard input) with every finding replaced by `{REDACTED:<rule>}`;
    /// the replacements are listed on stderr.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["paths", "staged", "git", "baseline", "write_baseline"])]
    pub redact: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
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

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!(
        "resilient-write scan: {}",
        output::printable(&msg.to_string())
    );
    ExitCode::from(2)
}

/// The nearest ancestor of `cwd` holding `.git` (a directory, or a file for worktrees), else
/// `cwd`: what fingerprints and SARIF locations are relative to.
fn find_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// A file's bytes as text: borrowed when they are UTF-8 (checked a word at a time), each
/// invalid sequence replaced by U+FFFD otherwise. `String::from_utf8_lossy` alone checks
/// byte by byte, a twentieth of a one-file `scan`.
fn text_of(data: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(data) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(data),
    }
}

fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

fn run_redact(path: &Path, classifier: &Classifier) -> ExitCode {
    let bytes = match read_input(path) {
        Ok(b) => b,
        Err(e) => return fail(format!("{}: {e}", path.display())),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return fail(format!("{}: is not UTF-8 text", path.display()));
    };
    let r = redact(&text, classifier);
    print!("{}", r.content);
    for rep in &r.replacements {
        eprintln!("line {}: {}", rep.line, rep.placeholder);
    }
    eprintln!("{} replacement(s)", r.replacements.len());
    ExitCode::SUCCESS
}

/// Run `scan` with the service configuration (for the policy file) and the arguments.
pub fn run(config: &Config, args: &ScanArgs) -> ExitCode {
    let state_root = config
        .store
        .state_root
        .as_deref()
        .unwrap_or(&config.store.cwd);
    // Left for the process's exit to take back: `scan` runs once per process, and dropping
    // the compiled rules and keyword automata is a measurable share of a one-file scan.
    // On one thread: a second thread's start, in a fresh process, costs more than it saves,
    // and the walker's threads keep the CPUs busy (figures: `docs/performance-log.md`).
    let policy = std::mem::ManuallyDrop::new(
        ActivePolicy::load(ActivePolicy::path_for(
            config.store.policy_file.as_deref(),
            state_root,
        ))
        .on_one_thread(),
    );
    let classifier = match policy.classifier() {
        Ok(c) => c,
        Err(f) => return fail(f),
    };
    if let Some(path) = &args.redact {
        return run_redact(path, classifier);
    }
    let cwd = config.store.cwd.as_path();
    let in_git = args.staged || args.git.is_some();
    if in_git && args.paths.iter().any(|p| p.as_os_str() == "-") {
        return fail("`-` (standard input) cannot be combined with --staged or --git");
    }
    let root = if in_git {
        match git::toplevel(cwd) {
            Ok(t) => t,
            Err(e) => return fail(e),
        }
    } else {
        find_root(cwd)
    };
    let mut filters = Filters::default();
    match suppress::load_ignore_file(&root) {
        Ok(set) => filters.ignore_file = set,
        Err(e) => return fail(e),
    }
    if let Some(b) = &args.baseline {
        match suppress::load_baseline(&cwd.join(b)) {
            Ok(set) => filters.baseline = set,
            Err(e) => return fail(e),
        }
    }

    let mut scanned: Vec<Scanned> = Vec::new();
    let mut errors: Vec<(String, String)> = Vec::new();
    let (mut texts, mut bytes, mut skipped_binary) = (0usize, 0u64, 0usize);
    let mut commits = None;
    let pathspecs = || -> Vec<String> {
        args.paths
            .iter()
            .map(|p| walk::root_relative(&root, cwd, p))
            .filter(|s| !s.is_empty())
            .collect()
    };
    if args.staged {
        match git::scan_staged(&root, &pathspecs(), classifier, &filters, |p| p.to_string()) {
            Ok((s, t)) => {
                scanned = s;
                (texts, bytes, skipped_binary) = (t.texts, t.bytes, t.skipped_binary);
            }
            Err(e) => errors.push(("git".into(), e)),
        }
    } else if let Some(range) = &args.git {
        match git::scan_history(&root, range, &pathspecs(), classifier, &filters, |s| {
            scanned.push(s)
        }) {
            Ok(t) => {
                (texts, bytes, skipped_binary) = (t.texts, t.bytes, t.skipped_binary);
                commits = Some(t.commits);
            }
            Err(e) => errors.push(("git".into(), e)),
        }
    } else {
        let strip_dot = args.paths.is_empty();
        let mut paths: Vec<PathBuf> = if strip_dot {
            vec![PathBuf::from(".")]
        } else {
            args.paths.clone()
        };
        let stdin = paths.iter().any(|p| p.as_os_str() == "-");
        paths.retain(|p| p.as_os_str() != "-");
        let opts = walk::WalkOptions {
            hidden: args.hidden,
            no_ignore: args.no_ignore,
            strip_dot,
        };
        let walked = walk::walk(&paths, cwd, &root, &opts, classifier, &filters);
        scanned = walked.scanned;
        errors = walked.errors;
        texts = walked.totals.files;
        bytes = walked.totals.bytes;
        skipped_binary = walked.totals.skipped_binary;
        if stdin {
            match read_input(Path::new("-")) {
                Ok(data) if walk::looks_binary(&data) => skipped_binary += 1,
                Ok(data) => {
                    texts += 1;
                    bytes += data.len() as u64;
                    let source = Source {
                        shown: "-".into(),
                        rel: "-".into(),
                        commit: None,
                    };
                    let text = text_of(&data);
                    scanned.push(scan_text(&text, source, classifier, &filters, None));
                }
                Err(e) => errors.push(("-".into(), e.to_string())),
            }
        }
    }
    errors.sort();

    if let Some(out) = &args.write_baseline {
        let entries: Vec<suppress::BaselineEntry> = scanned
            .iter()
            .flat_map(|s| {
                let rel = s.rel.clone();
                s.for_baseline.iter().map(move |h| suppress::BaselineEntry {
                    fingerprint: h.fingerprint.clone(),
                    path: rel.clone(),
                    line: h.line,
                    rule: h.pattern.clone(),
                    kind: h.kind.clone(),
                })
            })
            .collect();
        for (p, m) in &errors {
            eprintln!("resilient-write scan: {}: {m}", output::printable(p));
        }
        if let Err(e) =
            suppress::write_json_atomic(&cwd.join(out), &suppress::baseline_json(&entries))
        {
            return fail(e);
        }
        eprintln!(
            "{} finding(s) recorded in {}",
            entries.len(),
            output::printable(&out.display().to_string())
        );
        return if errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        };
    }

    let mut suppressed = Suppressed::default();
    let mut reports: Vec<TextReport> = Vec::new();
    for s in scanned {
        suppressed.add(s.suppressed);
        if let Some(r) = s.report {
            reports.push(r);
        }
    }
    if args.git.is_none() {
        reports.sort_by(|a, b| a.source.shown.cmp(&b.source.shown));
    }
    let fail_at = args.fail_at.verdict();
    let failing = reports.iter().filter(|r| r.verdict >= fail_at).count();
    let summary = output::Summary {
        reports: &reports,
        scanned: texts,
        bytes,
        skipped_binary,
        commits,
        suppressed,
        errors: &errors,
        fail_at,
        failing,
    };
    let format = if args.json { Format::Json } else { args.format };
    match format {
        Format::Text => output::text(&summary),
        Format::Json => println!("{}", output::json_doc(&summary)),
        Format::Sarif => println!("{}", output::sarif(&summary)),
    }
    for (p, m) in &errors {
        eprintln!("resilient-write scan: {}: {m}", output::printable(p));
    }
    if failing > 0 {
        ExitCode::from(1)
    } else if !errors.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::text_of;
    use std::borrow::Cow;

    #[test]
    fn text_is_borrowed_when_utf8_and_each_invalid_sequence_replaced_otherwise() {
        let valid = "plain ascii, then é and 漢字\n".repeat(40);
        assert!(matches!(text_of(valid.as_bytes()), Cow::Borrowed(t) if t == valid));
        let mut bytes = b"a\xffb".to_vec();
        bytes.extend_from_slice(valid.as_bytes());
        bytes.extend_from_slice(b"\xe6\xbc");
        let text = text_of(&bytes);
        assert!(matches!(text, Cow::Owned(_)));
        assert_eq!(text, format!("a\u{FFFD}b{valid}\u{FFFD}"));
    }
}
