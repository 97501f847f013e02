//! The classifier's configuration as the workspace policy gives it: the verdict cut-offs
//! ([`Thresholds`]) and the rules the operator adds ([`PatternSpec`]). The policy file parser fills
//! them in and re-exports them; the classifier reads them and nothing else of the policy, so the
//! dependency runs one way (policy to classifier).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Verdict cut-offs on the [0, 1] score (paper: high >= 0.70, medium >= 0.40, low >= 0.10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Thresholds {
    pub high: f64,
    pub medium: f64,
    pub low: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            high: 0.70,
            medium: 0.40,
            low: 0.10,
        }
    }
}

/// One rule added by the operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PatternSpec {
    /// The reporting family (`kind` in findings); may be a new family.
    pub family: String,
    /// The rule name (`pattern` in findings, and the redaction placeholder).
    pub name: String,
    /// A Rust `regex` expression.
    pub regex: String,
    /// Weight of the family, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Line of the `regex` in the policy file, for error messages.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) line: Option<u64>,
}
