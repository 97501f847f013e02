//! L0 of the paper (section 3.1): the pre-flight risk classifier. It scores a draft for the
//! likelihood that a downstream content filter or secret scanner rejects it, names what it found
//! (family, rule, a 16-character snippet, line) and suggests what to do, before any byte is
//! written. [`redact`] replaces every finding with a typed placeholder in one call.
//!
//! Architecture invariant: the classifier is a pure function of the content and a compiled
//! [`Classifier`]: no I/O, no clock, no randomness; the same input gives the same report.
//!
//! Guarantees:
//! - One pass for every keyed rule: an Aho-Corasick automaton over all rule keywords finds the
//!   places worth looking at, and each rule's regex runs only on the merged windows (one line, or a
//!   bounded forward span) around its keywords; PII numbers and binary hints are hand-written
//!   linear scans. Every window is bounded and merged, so cost is linear in the input (a 10 MB
//!   single line and 1 MB of `=` are benchmarked in `examples/l0_bench.rs`).
//! - A reported `match` is at most 16 characters and never contains a whole secret (it is cut to
//!   half of the secret when the secret is short).
//! - Redacting a redacted draft changes nothing: placeholders never match a rule.
//! - A draft of [`SPLIT_MIN`] bytes or more is scanned on two threads (a scoped thread spawned
//!   for the call), with the findings one thread gives; [`Classifier::on_one_thread`] keeps
//!   every scan on the caller's thread.
//!
//! Score (the paper's equation 1): `sum_f w_f * min(1.5, 1 + 0.25 (n_f - 1))` over the families
//! with at least one finding (`n_f` = distinct matched secrets), plus size rules (over 100 KB
//! +0.15, over 500 KB +0.30, a line over 2000 chars +0.20, over 5000 lines +0.10), clamped to
//! [0, 1]. Verdict: high from 0.70, medium from 0.40, low from 0.10, else safe (the policy's
//! `thresholds` may move these).
//!
//! Weights (the paper's in brackets). They are raised so that one live credential alone reaches
//! `medium` and one private key alone reaches `high`; two credentials of different families reach
//! `high`; personal contact data and binary hints alone stay `low`; redacted shapes (no secret is
//! left) stay `low` however many, and beside any amount of contact data too (0.10 x 1.5 +
//! 0.15 x 1.5 < 0.40):
//!
//! | family              | weight | what                                                        |
//! |---------------------|--------|-------------------------------------------------------------|
//! | `pem_block`         | 0.75 (0.50) | PEM/OpenSSH/PGP/PuTTY private keys, age secret keys    |
//! | `aws_secret`        | 0.55 (0.40) | AWS secret access keys, session tokens                 |
//! | `api_key`           | 0.45 (0.35) | vendor tokens (AWS key ids, GCP, Slack, Stripe, AI...) |
//! | `github_pat`        | 0.45 (0.35) | all GitHub token kinds                                 |
//! | `connection_string` | 0.45   | URL/JDBC/ODBC passwords, Azure keys and SAS signatures      |
//! | `password`          | 0.45   | password literals, Basic auth, netrc, docker/npm auth       |
//! | `generic_secret`    | 0.45   | entropy-gated secret/token/key assignments, k8s Secret data |
//! | `jwt`               | 0.40 (0.25) | JSON Web Tokens and JWEs with a decodable header       |
//! | `pii_financial`     | 0.40   | Luhn-checked cards (not integer literals in code), mod-97 IBANs |
//! | `pii_government_id` | 0.40   | US SSNs of a valid shape                                    |
//! | `redacted_prefix`   | 0.10   | a vendor prefix + a marker or named in prose, a JWT header, a bodiless key |
//! | `binary_hint`       | 0.20 (0.20) | long base64 (wrapped; data URIs but images), hex, controls |
//! | `pii`               | 0.15 (0.15) | emails outside reserved domains, phone numbers         |
//! | `example_key`       | 0.10   | vendors' documentation example keys (`...EXAMPLE`): low     |
//!
//! Families added by policy (`extend_patterns`) weigh [`DEFAULT_CUSTOM_WEIGHT`] unless the policy
//! gives a weight.
//!
//! Layout: this file holds the public types and re-exports; `config` the thresholds and operator
//! rules the policy fills in (the classifier never reads the policy itself); `compile` builds a
//! [`Classifier`]; `detect` scans a draft for findings (`gates` tests a keyword hit before a
//! window opens, `derive` takes capture groups from a match's span); `verify` confirms a regex
//! match; `score` applies the equation, the size rules and the verdict. `spec` says what a rule
//! is (check, window, tier, gate) and holds the builders; `rules` is the built-in rule table, `vendors` the long tail of SaaS formats and the platforms' UUID keys, `prefixes`
//! the redacted-prefix shapes (a prefix and a marker, a prefix named in prose, a JWT's header
//! alone); `entropy`, `pii`, `binary` and `tokens` (prefixless token shapes) the hand-written
//! checks and scanners, `redact` the one-call redaction and `stream` the scorer for documents
//! fed in pieces; `bytes` the substring search they share.

mod binary;
mod bytes;
mod compile;
pub(crate) mod config;
mod derive;
mod detect;
mod entropy;
mod gates;
mod keys;
mod keywords;
mod pii;
mod prefixes;
mod redact;
mod rules;
mod score;
mod spec;
mod tokens;
mod vendors;
mod verify;

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use compile::{Classifier, SPLIT_MIN};
pub use detect::findings;
pub use redact::{Original, Redaction, Replacement, redact};
pub use score::{family_contribution, findings_score, risk_score};

/// Weight of a family introduced by the policy without a weight.
pub const DEFAULT_CUSTOM_WEIGHT: f64 = 0.45;
/// Maximum characters of a reported match.
pub const SNIPPET_CHARS: usize = 16;

/// The built-in family weights (see the module documentation).
pub const DEFAULT_WEIGHTS: &[(&str, f64)] = &[
    ("pem_block", 0.75),
    ("aws_secret", 0.55),
    ("api_key", 0.45),
    ("github_pat", 0.45),
    ("connection_string", 0.45),
    ("password", 0.45),
    ("generic_secret", 0.45),
    ("jwt", 0.40),
    ("pii_financial", 0.40),
    ("pii_government_id", 0.40),
    ("redacted_prefix", 0.10),
    ("binary_hint", 0.20),
    ("pii", 0.15),
    (EXAMPLE_FAMILY, 0.10),
];

/// The family of a vendor's documentation example key (`AKIAIOSFODNN7EXAMPLE`): reported, with
/// the rule that recognised it as `pattern`, and redacted like any finding, but weighing only
/// enough for `low`.
pub const EXAMPLE_FAMILY: &str = "example_key";

/// The categorical verdict, ordered `safe < low < medium < high`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Safe,
    Low,
    Medium,
    High,
}

/// One detected pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The family (reporting category), e.g. `api_key`.
    pub kind: String,
    /// The specific rule, e.g. `github_fine_grained_pat`.
    pub pattern: String,
    /// At most 16 characters from the start of the match; never the whole secret.
    #[serde(rename = "match")]
    pub r#match: String,
    /// 1-based line of the secret.
    pub line: u32,
    /// Byte range of the secret in the content (what redaction replaces). Not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    span: Range<usize>,
}

impl Finding {
    /// Byte range of the secret in the scored content.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

/// One suggested next step: `{action, targets}` or `{action, reason}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuggestedAction {
    /// `redact`, `split` or `escape`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The result of [`risk_score`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RiskReport {
    /// In [0, 1], rounded to 4 decimals.
    pub score: f64,
    pub verdict: Verdict,
    /// UTF-8 length of the content.
    pub bytes: usize,
    pub line_count: usize,
    /// Longest line, in characters.
    pub max_line_len: usize,
    pub detected_patterns: Vec<Finding>,
    pub suggested_actions: Vec<SuggestedAction>,
}

pub mod stream;

// Tests: each module's own beside it (`mod tests`, or a `tests_<module>.rs` file it declares);
// the behaviour of the whole classifier on drafts, through the public API only, in the
// `tests_*.rs` files below; what they share in `testing`.
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests_credentials;
#[cfg(test)]
mod tests_formats;
#[cfg(test)]
mod tests_http;
#[cfg(test)]
mod tests_prefixes;
#[cfg(test)]
mod tests_scanners;
#[cfg(test)]
mod tests_syntax;
#[cfg(test)]
mod tests_vendors;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{ALNUM, score, synth};

    #[test]
    fn verdict_serializes_lowercase_and_finding_as_match() {
        let r = score(&synth("ghp_", ALNUM, 36));
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["verdict"], "medium");
        assert!(v["detected_patterns"][0].get("match").is_some());
        assert!(v["detected_patterns"][0].get("span").is_none());
        assert_eq!(v["suggested_actions"][0]["targets"][0], "github_pat");
    }

    #[test]
    fn report_schema_is_generated() {
        let s = schemars::schema_for!(RiskReport);
        let text = serde_json::to_string(&s).unwrap_or_default();
        assert!(text.contains("detected_patterns") && text.contains("\"match\""));
    }
}
