//! L0 wiring (paper section 3.1): the workspace policy as the service holds it, and the one
//! pre-flight check every writing tool calls before a byte is written.
//!
//! The policy file (`RW_POLICY_FILE`, absolute or relative to the state root; unset:
//! `.resilient_write/policy.yaml` in the state root) is read and compiled once, at start. A missing
//! file is the defaults. A bad file does not stop the server: it is logged at start, and every
//! call that needs the classifier answers `policy_violation` naming the file and the line
//! ([`Failure::PolicyInvalid`]) until the file is fixed and the server restarted; it is never a
//! silent fallback to the defaults.
//!
//! Guarantees: [`ActivePolicy::preflight`] (and [`ActivePolicy::preflight_edit`] for edits) either lets the
//! write go ahead or refuses with [`Failure::ContentBlocked`] (`blocked` / `content_filter` /
//! `redact`), whose `detected_patterns` are the families and whose `context.detected` lists each
//! match with a snippet of at most 16 characters, never a whole secret. With `classify: false` it
//! costs nothing and does not need the policy.

use crate::classify::{Classifier, Finding, RiskReport, Verdict, findings, findings_score};
use crate::envelope::{Failure, Result};
use crate::policy::{Policy, PolicyError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// File name of the default policy inside the state directory.
pub const POLICY_FILE_NAME: &str = "policy.yaml";

/// The verdict at which a `classify: true` write is refused (`classify_reject_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RejectAt {
    /// Refuse only `high` drafts (the default).
    #[default]
    High,
    /// Refuse `medium` and `high` drafts (one live credential is `medium`).
    Medium,
    /// Refuse anything the classifier reports above `safe`.
    Low,
}

// The L0 check a writing call asks for: score what it writes, refuse at `classify_reject_at`.
// Flattened into the arguments of every tool that takes it (no doc comment: each tool says in
// its own words what `classify` scores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
pub struct Classify {
    #[serde(default)]
    pub classify: bool,
    #[serde(default)]
    pub classify_reject_at: RejectAt,
}

impl RejectAt {
    /// The lowest verdict that is refused.
    pub fn verdict(self) -> Verdict {
        match self {
            RejectAt::High => Verdict::High,
            RejectAt::Medium => Verdict::Medium,
            RejectAt::Low => Verdict::Low,
        }
    }
}

/// Why the policy file cannot be used: the file, the line (0 when unknown) and the message.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyProblem {
    pub file: String,
    pub line: u64,
    pub message: String,
}

impl PolicyProblem {
    fn from_error(file: &Path, e: &PolicyError) -> PolicyProblem {
        let file = file.display().to_string();
        // Classifier::new names the file `policy.yaml`; name the real one.
        let message = match e {
            PolicyError::InvalidRegex {
                file: f,
                line,
                name,
                message,
            } if *f != file => {
                format!("{file} line {line}: invalid regex for pattern `{name}`: {message}")
            }
            _ => e.to_string(),
        };
        PolicyProblem {
            file,
            line: e.line(),
            message,
        }
    }

    /// The failure every tool that needs the policy answers with.
    pub fn failure(&self) -> Failure {
        Failure::PolicyInvalid {
            file: self.file.clone(),
            line: self.line,
            message: self.message.clone(),
        }
    }
}

/// The policy as loaded at start: the effective policy and its compiled classifier, or why the
/// file could not be used.
///
/// Compiling the built-in rules takes tens of milliseconds, longer than the whole MCP
/// handshake should. A policy without `extend_patterns` (whose compilation can only fail on a
/// bug of this crate, which a unit test rules out) is therefore compiled on first use (an idle
/// server never pays for it); a policy with
/// `extend_patterns` is compiled at load, so a bad regex is reported at start.
#[derive(Debug)]
pub struct ActivePolicy {
    /// The file that was (or would have been) read.
    pub path: PathBuf,
    state: std::result::Result<(Policy, OnceLock<Compiled>), PolicyProblem>,
    /// The classifier scans every draft on the calling thread ([`ActivePolicy::on_one_thread`]).
    one_thread: bool,
}

type Compiled = std::result::Result<Classifier, PolicyProblem>;

impl ActivePolicy {
    /// The policy file named by `policy_file` (absolute, or relative to `state_root`), or the
    /// default location in the state directory.
    pub fn path_for(policy_file: Option<&Path>, state_root: &Path) -> PathBuf {
        match policy_file {
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => state_root.join(p),
            None => state_root
                .join(crate::layout::STATE_DIR_NAME)
                .join(POLICY_FILE_NAME),
        }
    }

    /// Read and compile the policy at `path` (missing = defaults). Never fails: a problem is
    /// kept for the tools to report.
    pub fn load(path: PathBuf) -> ActivePolicy {
        let state = Policy::load(&path)
            .map_err(|e| PolicyProblem::from_error(&path, &e))
            .and_then(|p| {
                let compiled = OnceLock::new();
                if !p.extend_patterns.is_empty() {
                    let c = p
                        .compile()
                        .map_err(|e| PolicyProblem::from_error(&path, &e))?;
                    let _ = compiled.set(Ok(c));
                }
                Ok((p, compiled))
            });
        ActivePolicy {
            path,
            state,
            one_thread: false,
        }
    }

    /// The default policy, `path` not read.
    pub fn defaults(path: PathBuf) -> ActivePolicy {
        ActivePolicy {
            path,
            state: Ok((Policy::default(), OnceLock::new())),
            one_thread: false,
        }
    }

    /// This policy with its classifier scanning every draft on the calling thread
    /// ([`Classifier::on_one_thread`]): for a process that scores once and exits (`scan`, the
    /// hooks), where a second thread's start costs more than it saves. A long-running server
    /// keeps the default, a long draft's scanners on a second thread.
    pub fn on_one_thread(mut self) -> ActivePolicy {
        self.one_thread = true;
        if let Ok((_, compiled)) = &mut self.state
            && let Some(Ok(c)) = compiled.take()
        {
            let _ = compiled.set(Ok(c.on_one_thread()));
        }
        self
    }

    /// Why the policy file cannot be used, if it cannot (known at load).
    pub fn problem(&self) -> Option<&PolicyProblem> {
        self.state.as_ref().err()
    }

    /// The compiled classifier, or the policy failure. Compiles on first use (a concurrent
    /// caller waits for the one compilation).
    pub fn classifier(&self) -> Result<&Classifier> {
        match &self.state {
            Ok((policy, compiled)) => compiled
                .get_or_init(|| {
                    policy
                        .compile()
                        .map(|c| {
                            if self.one_thread {
                                c.on_one_thread()
                            } else {
                                c
                            }
                        })
                        .map_err(|e| PolicyProblem::from_error(&self.path, &e))
                })
                .as_ref()
                .map_err(PolicyProblem::failure),
            Err(p) => Err(p.failure()),
        }
    }

    /// Whether the classifier is compiled (or known to be unusable) already.
    pub fn is_compiled(&self) -> bool {
        match &self.state {
            Ok((_, compiled)) => compiled.get().is_some(),
            Err(_) => true,
        }
    }

    /// The effective policy, when the file was usable.
    pub fn policy(&self) -> Option<&Policy> {
        self.state.as_ref().ok().map(|(p, _)| p)
    }
}

/// The refusal for `found` (already known to reach the threshold).
pub(crate) fn blocked(score: f64, verdict: Verdict, found: &[Finding]) -> Failure {
    let families: BTreeSet<&str> = found.iter().map(|f| f.kind.as_str()).collect();
    Failure::ContentBlocked {
        score,
        verdict: verdict_name(verdict).into(),
        families: families.into_iter().map(str::to_string).collect(),
        detected: found
            .iter()
            .map(|f| serde_json::to_value(f).unwrap_or_default())
            .collect(),
    }
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Safe => "safe",
        Verdict::Low => "low",
        Verdict::Medium => "medium",
        Verdict::High => "high",
    }
}

/// The checks every writing tool makes before a byte is written, reached through the store as
/// `store.policy()`.
impl ActivePolicy {
    /// Score `content` under the workspace policy (the `risk_score` tool).
    pub fn risk_score(&self, content: &str) -> Result<RiskReport> {
        Ok(crate::classify::risk_score(content, self.classifier()?))
    }

    /// The pre-flight check of every writing tool: with `classify`, refuse `content` with
    /// `blocked`/`content_filter` when its verdict reaches `reject_at`. Returns the report when
    /// the content was scored and let through.
    pub fn preflight(
        &self,
        content: &str,
        classify: bool,
        reject_at: RejectAt,
    ) -> Result<Option<RiskReport>> {
        if !classify {
            return Ok(None);
        }
        let report = self.risk_score(content)?;
        if report.verdict >= reject_at.verdict() {
            return Err(blocked(
                report.score,
                report.verdict,
                &report.detected_patterns,
            ));
        }
        Ok(Some(report))
    }

    /// [`ActivePolicy::preflight`] for bytes (base64 content): invalid UTF-8 is scored as text with
    /// replacement characters, which the binary hints notice.
    pub fn preflight_bytes(
        &self,
        content: &[u8],
        classify: bool,
        reject_at: RejectAt,
    ) -> Result<Option<RiskReport>> {
        if !classify {
            return Ok(None);
        }
        self.preflight(&String::from_utf8_lossy(content), classify, reject_at)
    }

    /// The pre-flight check of an edit: scores what the edit introduces, i.e. the findings of
    /// `after` whose rule and secret do not occur among the findings of `before`, with the
    /// paper's equation (size rules left out: the file's size is not the edit's). A secret the
    /// file already held does not block an unrelated edit; a secret assembled from old and new
    /// text is caught.
    pub fn preflight_edit(
        &self,
        before: &str,
        after: &str,
        classify: bool,
        reject_at: RejectAt,
    ) -> Result<()> {
        if !classify {
            return Ok(());
        }
        let c = self.classifier()?;
        let old: BTreeSet<(String, &str)> = findings(before, c)
            .iter()
            .map(|f| (f.pattern.clone(), before.get(f.span()).unwrap_or("")))
            .collect();
        let new: Vec<Finding> = findings(after, c)
            .into_iter()
            .filter(|f| !old.contains(&(f.pattern.clone(), after.get(f.span()).unwrap_or(""))))
            .collect();
        let score = findings_score(after, &new, c);
        let verdict = c.verdict(score);
        if verdict >= reject_at.verdict() {
            return Err(blocked(score, verdict, &new));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_policy_file_anchors_at_the_state_root_and_unset_is_the_state_dir() {
        let root = Path::new("/srv/project");
        assert_eq!(
            ActivePolicy::path_for(Some(Path::new("conf/p.yaml")), root),
            root.join("conf/p.yaml")
        );
        assert_eq!(
            ActivePolicy::path_for(Some(Path::new("/etc/rw.yaml")), root),
            Path::new("/etc/rw.yaml")
        );
        assert_eq!(
            ActivePolicy::path_for(None, root),
            root.join(".resilient_write/policy.yaml")
        );
    }

    /// `yaml` written as `p.yaml` in `dir`.
    fn policy_file(dir: &tempfile::TempDir, yaml: &str) -> PathBuf {
        let path = dir.path().join("p.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// A policy adding one pattern, `name`, whose YAML-quoted regex is `regex`.
    fn extra_pattern(name: &str, regex: &str) -> String {
        format!(
            "version: 1\nextend_patterns:\n  - name: {name}\n    family: custom\n    regex: {regex}\n"
        )
    }

    /// `on_one_thread` reaches the classifier whether it is compiled at load (a policy with
    /// its own patterns) or on first use; by default a long draft is scanned on two threads.
    #[test]
    fn on_one_thread_reaches_the_classifier_compiled_at_load_or_later() {
        let dir = tempfile::tempdir().unwrap();
        let own = policy_file(&dir, &extra_pattern("ticket", "'TCK-[0-9]{6}'"));
        let none = dir.path().join("none.yaml");
        for path in [&own, &none] {
            let two = ActivePolicy::load(path.clone());
            assert!(two.problem().is_none(), "{path:?}");
            assert!(!two.classifier().unwrap().is_on_one_thread());
            let one = ActivePolicy::load(path.clone()).on_one_thread();
            assert_eq!(one.is_compiled(), path == &own);
            assert!(one.classifier().unwrap().is_on_one_thread(), "{path:?}");
        }
        let defaults = ActivePolicy::defaults(none).on_one_thread();
        assert!(defaults.classifier().unwrap().is_on_one_thread());
    }

    #[test]
    fn a_bad_policy_is_kept_as_a_problem_naming_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = policy_file(&dir, "version: 1\nthresholds:\n  hihg: 0.9\n");
        let active = ActivePolicy::load(path.clone());
        let Some(problem) = active.problem() else {
            panic!("loaded a bad policy")
        };
        assert_eq!(problem.file, path.display().to_string());
        assert!(problem.line >= 2, "{problem:?}");
        assert!(problem.message.contains(" line "), "{problem:?}");
        assert!(active.classifier().is_err());
    }

    #[test]
    fn a_bad_extra_regex_is_reported_at_load_not_at_first_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = policy_file(&dir, &extra_pattern("broken", "\"(unclosed\""));
        let active = ActivePolicy::load(path.clone());
        let problem = active.problem().expect("the bad regex is known at load");
        assert!(problem.message.contains("broken"), "{problem:?}");
        assert!(active.classifier().is_err());
    }

    #[test]
    fn the_default_policy_compiles_on_first_use_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let active = ActivePolicy::load(dir.path().join("none.yaml"));
        assert!(
            !active.is_compiled(),
            "compiling at load delays the handshake"
        );
        let first: *const Classifier = active.classifier().unwrap();
        assert!(active.is_compiled());
        let again: *const Classifier = active.classifier().unwrap();
        assert_eq!(first, again);
    }

    #[test]
    fn a_missing_policy_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let active = ActivePolicy::load(dir.path().join("none.yaml"));
        assert_eq!(active.policy(), Some(&Policy::default()));
    }
}
