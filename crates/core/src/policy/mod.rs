//! The workspace policy file (`.resilient_write/policy.yaml`, or `RW_POLICY_FILE`): what the L0
//! pre-flight classifier (paper section 3.1, "Workspace policy overrides") and the error envelope's
//! retry budget read from the operator.
//!
//! A policy merges over the defaults: `extend_patterns` adds rules, `disable_families` switches
//! whole families off, `thresholds` moves the verdict cut-offs and `retry_budget.default` sets the
//! start value of the L3 retry budget. The sections `history`, `idempotency`, `limits` and `hooks` belong to
//! other layers and are kept as raw values for them. Any other key is an error.
//!
//! Guarantees: a bad policy is never a silent fallback to the defaults. Malformed YAML, an unknown
//! key or an invalid regex is a [`PolicyError`] whose message names the file and the line.
//! Thresholds are taken as the original takes them, in any order: a verdict they make
//! unreachable is reported by `doctor` ([`Thresholds::unreachable`]), not refused. A missing file is the defaults. Parsing is done with `serde-saphyr`, which
//! rejects duplicate keys and survives alias bombs. [`Policy::compile`] compiles every regex once
//! into a reusable [`Classifier`].
//!
//! `extend_patterns` accepts two spellings: a list of `{family, name, regex, weight?}` entries, or
//! the Python original's mapping `family: [{name, regex, weight?}]`. A `weight`, when given, sets the
//! weight of that family (the largest given weight wins); a new family without any weight gets
//! [`crate::classify::DEFAULT_CUSTOM_WEIGHT`]. A custom regex may mark the secret part with a named
//! group `secret` (only that part is redacted); otherwise the whole match is.

pub mod active;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::classify::Classifier;
pub use crate::classify::config::{PatternSpec, Thresholds};

/// The label used in error messages when a policy is parsed from a string.
const DEFAULT_LABEL: &str = "policy.yaml";
/// The only policy format version this build understands.
pub const POLICY_VERSION: u32 = 1;

/// The start value of the L3 retry budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RetryBudget {
    pub default: u32,
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget { default: 3 }
    }
}

/// The effective policy: defaults merged with the operator's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Policy {
    pub version: u32,
    pub extend_patterns: Vec<PatternSpec>,
    pub disable_families: Vec<String>,
    pub thresholds: Thresholds,
    pub retry_budget: RetryBudget,
    /// Raw `history` section, interpreted by the history layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<serde_json::Value>,
    /// Raw `idempotency` section, interpreted by the result log
    /// ([`crate::write::results::Expiry`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<serde_json::Value>,
    /// Raw `limits` section, interpreted by the transport and write layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<serde_json::Value>,
    /// Raw `hooks` section, interpreted by the agents' hooks (`reject_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<serde_json::Value>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: POLICY_VERSION,
            extend_patterns: Vec::new(),
            disable_families: Vec::new(),
            thresholds: Thresholds::default(),
            retry_budget: RetryBudget::default(),
            history: None,
            idempotency: None,
            limits: None,
            hooks: None,
        }
    }
}

/// Why a policy could not be used. Every variant with a line names it in its message.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{file} line {line}: {message}")]
    Yaml {
        file: String,
        line: u64,
        message: String,
    },
    #[error("{file} line {line}: invalid regex for pattern `{name}`: {message}")]
    InvalidRegex {
        file: String,
        line: u64,
        name: String,
        message: String,
    },
    #[error("{file} line {line}: {message}")]
    Invalid {
        file: String,
        line: u64,
        message: String,
    },
}

impl PolicyError {
    /// The 1-based line the error points at (0 when unknown).
    pub fn line(&self) -> u64 {
        match self {
            PolicyError::Io { .. } => 0,
            PolicyError::Yaml { line, .. }
            | PolicyError::InvalidRegex { line, .. }
            | PolicyError::Invalid { line, .. } => *line,
        }
    }
}

// ---- the file as written -------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: Option<Spanned<u32>>,
    #[serde(default)]
    extend_patterns: Option<ExtendPatterns>,
    #[serde(default)]
    disable_families: Option<Vec<String>>,
    thresholds: Option<ThresholdsFile>,
    retry_budget: Option<RetryBudgetFile>,
    history: Option<serde_json::Value>,
    idempotency: Option<serde_json::Value>,
    limits: Option<serde_json::Value>,
    hooks: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThresholdsFile {
    high: Option<f64>,
    medium: Option<f64>,
    low: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryBudgetFile {
    default: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternEntry {
    family: Option<String>,
    #[serde(alias = "pattern")]
    name: String,
    regex: Spanned<String>,
    weight: Option<Spanned<f64>>,
}

/// Either spelling of `extend_patterns`; a hand-written visitor (not `untagged`) so that the
/// `Spanned` line numbers survive.
struct ExtendPatterns(Vec<(Option<String>, PatternEntry)>);

impl<'de> Deserialize<'de> for ExtendPatterns {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExtendPatterns;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of {family, name, regex, weight} or a mapping family -> list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = seq.next_element::<PatternEntry>()? {
                    out.push((None, entry));
                }
                Ok(ExtendPatterns(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((family, entries)) = map.next_entry::<String, Vec<PatternEntry>>()? {
                    for entry in entries {
                        out.push((Some(family.clone()), entry));
                    }
                }
                Ok(ExtendPatterns(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ExtendPatterns(Vec::new()))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl Policy {
    /// Parses a policy from YAML text and merges it over the defaults.
    pub fn from_yaml_str(text: &str) -> Result<Policy, PolicyError> {
        Self::parse(text, DEFAULT_LABEL)
    }

    /// Reads a policy file; a missing file is the defaults.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = match crate::util::statefile::read_to_string_following(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Policy::default()),
            Err(source) => {
                return Err(PolicyError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        Self::parse(&text, &path.display().to_string())
    }

    /// Compiles the policy (built-in rules plus `extend_patterns`) into a reusable classifier.
    pub fn compile(&self) -> Result<Classifier, PolicyError> {
        Classifier::new(self)
    }

    /// The family weights this policy asks for (from `extend_patterns[].weight`).
    pub fn weight_overrides(&self) -> BTreeMap<String, f64> {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for p in &self.extend_patterns {
            if let Some(w) = p.weight {
                let slot = out.entry(p.family.clone()).or_insert(w);
                *slot = slot.max(w);
            }
        }
        out
    }

    fn parse(text: &str, label: &str) -> Result<Policy, PolicyError> {
        let mut policy = Policy::default();
        let has_content = text.lines().any(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && t != "---" && t != "..."
        });
        if !has_content {
            return Ok(policy);
        }
        let file: PolicyFile = serde_saphyr::from_str(text).map_err(|e| PolicyError::Yaml {
            file: label.to_string(),
            line: e.location().map(|l| l.line()).unwrap_or(0),
            message: yaml_message(&e.to_string()),
        })?;
        if let Some(v) = file.version
            && v.value != POLICY_VERSION
        {
            return Err(PolicyError::Invalid {
                file: label.to_string(),
                line: v.referenced.line(),
                message: format!(
                    "unsupported policy version {} (this build reads version {POLICY_VERSION})",
                    v.value
                ),
            });
        }
        if let Some(entries) = file.extend_patterns {
            for (map_family, e) in entries.0 {
                let line = e.regex.referenced.line();
                let family = match e.family.or(map_family) {
                    Some(f) if !f.trim().is_empty() => f,
                    _ => {
                        return Err(PolicyError::Invalid {
                            file: label.to_string(),
                            line,
                            message: format!("pattern `{}` has no family", e.name),
                        });
                    }
                };
                if e.name.trim().is_empty() {
                    return Err(PolicyError::Invalid {
                        file: label.to_string(),
                        line,
                        message: "a pattern has an empty name".to_string(),
                    });
                }
                let weight = match e.weight {
                    Some(w) if !(0.0..=1.0).contains(&w.value) => {
                        return Err(PolicyError::Invalid {
                            file: label.to_string(),
                            line: w.referenced.line(),
                            message: format!(
                                "weight {} of `{}` is outside [0, 1]",
                                w.value, e.name
                            ),
                        });
                    }
                    Some(w) => Some(w.value),
                    None => None,
                };
                if let Err(err) = regex::bytes::Regex::new(&e.regex.value) {
                    return Err(PolicyError::InvalidRegex {
                        file: label.to_string(),
                        line,
                        name: e.name,
                        message: first_line(&err.to_string().replace('\n', " ")),
                    });
                }
                policy.extend_patterns.push(PatternSpec {
                    family,
                    name: e.name,
                    regex: e.regex.value,
                    weight,
                    line: Some(line),
                });
            }
        }
        if let Some(d) = file.disable_families {
            policy.disable_families = d;
        }
        if let Some(t) = file.thresholds {
            // Key by key over the defaults, in any order and range, as the original merges
            // them: verdicts are checked from high down, so cut-offs out of order make a
            // verdict unreachable (doctor warns) rather than the file invalid.
            policy.thresholds = Thresholds {
                high: t.high.unwrap_or(policy.thresholds.high),
                medium: t.medium.unwrap_or(policy.thresholds.medium),
                low: t.low.unwrap_or(policy.thresholds.low),
            };
        }
        if let Some(rb) = file.retry_budget.and_then(|r| r.default) {
            policy.retry_budget.default = rb;
        }
        policy.history = file.history;
        policy.idempotency = file.idempotency;
        policy.limits = file.limits;
        policy.hooks = file.hooks;
        Ok(policy)
    }
}

impl Classifier {
    /// Compiles the built-in rules (minus disabled families) and the policy's `extend_patterns`.
    pub fn new(policy: &Policy) -> Result<Classifier, PolicyError> {
        Classifier::build(
            &policy.disable_families,
            &policy.extend_patterns,
            policy.weight_overrides(),
            policy.thresholds,
        )
        .map_err(|e| PolicyError::InvalidRegex {
            file: "policy.yaml".to_string(),
            line: e.line,
            name: e.name,
            message: e.message,
        })
    }
}

/// serde-saphyr renders a source snippet after the first line; the envelope wants one line.
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// The YAML parser's message without the place it starts with (`error: line 1 column 15:
/// ...`): the error names the line itself, so it is said once, with the column after.
fn yaml_message(text: &str) -> String {
    let first = first_line(text);
    let rest = first.strip_prefix("error: ").unwrap_or(&first);
    let placed = rest
        .strip_prefix("line ")
        .and_then(|r| r.split_once(": "))
        .and_then(|(place, msg)| Some((place.split_once(" column ")?.1, msg)));
    match placed {
        Some((column, msg)) => format!("{msg} (column {column})"),
        None => rest.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{ALNUM, HEX, synth};
    use crate::classify::{Verdict, risk_score};

    #[test]
    fn a_yaml_error_names_its_line_once_and_keeps_the_column() {
        assert_eq!(
            yaml_message("error: line 1 column 15: expected mapping start\nmore"),
            "expected mapping start (column 15)"
        );
        assert_eq!(
            yaml_message("invalid type: sequence"),
            "invalid type: sequence"
        );
        let e = Policy::parse("retry_budget: [oops\n", "policy.yaml").unwrap_err();
        let said = e.to_string();
        assert_eq!(said.matches("line").count(), 1, "{said}");
        assert!(said.starts_with("policy.yaml line 1: "), "{said}");
    }

    #[test]
    fn empty_policy_is_the_defaults() {
        assert_eq!(Policy::from_yaml_str("").unwrap(), Policy::default());
        assert_eq!(
            Policy::from_yaml_str("# only a comment\n").unwrap(),
            Policy::default()
        );
    }

    #[test]
    fn missing_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let p = Policy::load(&dir.path().join("policy.yaml")).unwrap();
        assert_eq!(p, Policy::default());
    }

    #[test]
    fn thresholds_merge_over_defaults_key_by_key() {
        let p = Policy::from_yaml_str("version: 1\nthresholds:\n  high: 0.9\n").unwrap();
        assert_eq!(
            p.thresholds,
            Thresholds {
                high: 0.9,
                medium: 0.40,
                low: 0.10
            }
        );
    }

    #[test]
    fn retry_budget_default_is_read() {
        let p = Policy::from_yaml_str("retry_budget:\n  default: 5\n").unwrap();
        assert_eq!(p.retry_budget.default, 5);
        assert_eq!(Policy::default().retry_budget.default, 3);
    }

    #[test]
    fn disable_families_is_read() {
        let p = Policy::from_yaml_str("disable_families: [pii, binary_hint]\n").unwrap();
        assert_eq!(
            p.disable_families,
            vec!["pii".to_string(), "binary_hint".to_string()]
        );
    }

    #[test]
    fn extend_patterns_list_form_is_read() {
        let y = "extend_patterns:\n  - family: internal\n    name: acme_token\n    regex: 'acme_[0-9a-f]{16}'\n    weight: 0.5\n";
        let p = Policy::from_yaml_str(y).unwrap();
        assert_eq!(p.extend_patterns.len(), 1);
        assert_eq!(p.extend_patterns[0].family, "internal");
        assert_eq!(p.extend_patterns[0].name, "acme_token");
        assert_eq!(p.extend_patterns[0].weight, Some(0.5));
    }

    #[test]
    fn extend_patterns_mapping_form_of_the_original_is_read() {
        let y =
            "extend_patterns:\n  api_key:\n    - name: acme\n      regex: 'acme_[0-9a-f]{16}'\n";
        let p = Policy::from_yaml_str(y).unwrap();
        assert_eq!(p.extend_patterns[0].family, "api_key");
        assert_eq!(p.extend_patterns[0].name, "acme");
    }

    #[test]
    fn history_and_limits_are_kept_raw() {
        let y = "history:\n  keep_versions: 20\nlimits:\n  max_body: 4096\n";
        let p = Policy::from_yaml_str(y).unwrap();
        assert_eq!(p.history.unwrap()["keep_versions"], serde_json::json!(20));
        assert_eq!(p.limits.unwrap()["max_body"], serde_json::json!(4096));
    }

    #[test]
    fn unknown_top_level_key_is_an_error_naming_the_line() {
        let err = Policy::from_yaml_str("version: 1\nthreshold:\n  high: 0.9\n").unwrap_err();
        assert_eq!(err.line(), 2, "{err}");
        assert!(err.to_string().starts_with("policy.yaml line 2:"), "{err}");
    }

    #[test]
    fn invalid_regex_is_an_error_naming_the_line() {
        let y = "version: 1\n# comment\nextend_patterns:\n  - family: x\n    name: broken\n    regex: 'abc(['\n";
        let err = Policy::from_yaml_str(y).unwrap_err();
        assert!(matches!(err, PolicyError::InvalidRegex { .. }), "{err:?}");
        assert_eq!(err.line(), 6);
        let msg = err.to_string();
        assert!(
            msg.starts_with("policy.yaml line 6: invalid regex for pattern `broken`"),
            "{msg}"
        );
    }

    #[test]
    fn malformed_yaml_is_an_error_naming_the_line() {
        let err = Policy::from_yaml_str("version: 1\nthresholds:\n  high: [0.9\n").unwrap_err();
        assert!(matches!(err, PolicyError::Yaml { .. }), "{err:?}");
        assert!(err.line() >= 3, "{err}");
        assert!(err.to_string().contains(" line "), "{err}");
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        assert!(Policy::from_yaml_str("version: 1\nversion: 1\n").is_err());
    }

    #[test]
    fn thresholds_out_of_order_are_merged_like_the_originals() {
        // The original's policy accepts any numbers and checks high, then medium, then low.
        let p = Policy::from_yaml_str("version: 1\nthresholds:\n  high: 0.3\n").unwrap();
        assert_eq!(
            p.thresholds,
            Thresholds {
                high: 0.3,
                medium: 0.40,
                low: 0.10
            }
        );
        let c = p.compile().unwrap();
        let verdicts: Vec<Verdict> = [0.0, 0.0999, 0.1, 0.2999, 0.3, 0.35, 0.4, 0.5, 1.0]
            .iter()
            .map(|s| c.verdict(*s))
            .collect();
        use Verdict::*;
        assert_eq!(
            verdicts,
            [Safe, Safe, Low, Low, High, High, High, High, High]
        );
        let p = Policy::from_yaml_str("thresholds:\n  high: 1.5\n  low: 0.5\n").unwrap();
        let c = p.compile().unwrap();
        let verdicts: Vec<Verdict> = [0.0, 0.39, 0.4, 0.6, 1.0]
            .iter()
            .map(|s| c.verdict(*s))
            .collect();
        assert_eq!(verdicts, [Safe, Safe, Medium, Medium, Medium]);
    }

    #[test]
    fn weight_outside_unit_interval_is_an_error() {
        let y = "extend_patterns:\n  - family: x\n    name: y\n    regex: 'z'\n    weight: 2.0\n";
        let err = Policy::from_yaml_str(y).unwrap_err();
        assert_eq!(err.line(), 5, "{err}");
    }

    #[test]
    fn unsupported_version_is_an_error() {
        let err = Policy::from_yaml_str("version: 2\n").unwrap_err();
        assert_eq!(err.line(), 1, "{err}");
    }

    #[test]
    fn load_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "bogus: 1\n").unwrap();
        let err = Policy::load(&path).unwrap_err();
        assert!(err.to_string().contains("policy.yaml line 1"), "{err}");
    }

    // ---- the policy drives the classifier ----

    #[test]
    fn policy_pattern_is_detected_with_its_weight() {
        let p = Policy::from_yaml_str("extend_patterns:\n  - family: internal\n    name: acme_token\n    regex: 'acme_[0-9a-f]{16}'\n    weight: 0.8\n")
            .unwrap_or_default();
        let c = p.compile().unwrap_or_default();
        let r = risk_score(&format!("x = {}\n", synth("acme_", HEX, 16)), &c);
        assert_eq!(r.detected_patterns[0].pattern, "acme_token");
        assert_eq!(r.verdict, Verdict::High);
    }

    #[test]
    fn disabled_family_is_not_reported() {
        let p = Policy::from_yaml_str("disable_families: [github_pat]\n").unwrap_or_default();
        let c = p.compile().unwrap_or_default();
        assert!(
            risk_score(&synth("ghp_", ALNUM, 36), &c)
                .detected_patterns
                .is_empty()
        );
    }

    #[test]
    fn policy_thresholds_move_the_verdict() {
        let p = Policy::from_yaml_str("thresholds:\n  medium: 0.5\n").unwrap_or_default();
        let c = p.compile().unwrap_or_default();
        assert_eq!(
            risk_score(&synth("ghp_", ALNUM, 36), &c).verdict,
            Verdict::Low
        );
    }

    #[test]
    fn builtin_rules_compile() {
        assert!(Classifier::new(&Policy::default()).is_ok());
    }
}
