//! The classifier's configuration as the workspace policy gives it: the verdict cut-offs
//! ([`Thresholds`]) and the rules the operator adds ([`PatternSpec`]). The policy file parser fills
//! them in and re-exports them; the classifier reads them and nothing else of the policy, so the
//! dependency runs one way (policy to classifier).

use super::Verdict;
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

impl Thresholds {
    /// The verdict of `score`: the first cut-off it reaches, checked from high down (as the
    /// original checks them, so cut-offs out of order leave a verdict unreachable).
    pub fn verdict(&self, score: f64) -> Verdict {
        if score >= self.high {
            Verdict::High
        } else if score >= self.medium {
            Verdict::Medium
        } else if score >= self.low {
            Verdict::Low
        } else {
            Verdict::Safe
        }
    }

    /// The verdicts no score in [0, 1] gets under these cut-offs (e.g. medium when high is
    /// below it), lowest first. The verdict changes only at a cut-off and takes the value of
    /// the cut-off itself (`>=`), so scoring 0 and each cut-off inside (0, 1] meets every
    /// verdict that can be given.
    pub fn unreachable(&self) -> Vec<Verdict> {
        let cut_offs = [self.high, self.medium, self.low];
        let given: Vec<Verdict> = std::iter::once(0.0)
            .chain(cut_offs.into_iter().filter(|t| *t > 0.0 && *t <= 1.0))
            .map(|s| self.verdict(s))
            .collect();
        [Verdict::Safe, Verdict::Low, Verdict::Medium, Verdict::High]
            .into_iter()
            .filter(|v| !given.contains(v))
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(high: f64, medium: f64, low: f64) -> Thresholds {
        Thresholds { high, medium, low }
    }

    #[test]
    fn every_verdict_is_reachable_under_the_defaults() {
        assert!(Thresholds::default().unreachable().is_empty());
    }

    #[test]
    fn cut_offs_out_of_order_or_range_leave_verdicts_unreachable() {
        use Verdict::*;
        // high below medium: a score reaching medium is high first.
        assert_eq!(t(0.3, 0.4, 0.1).unreachable(), [Medium]);
        // low above medium: below medium is below low too.
        assert_eq!(t(0.7, 0.4, 0.5).unreachable(), [Low]);
        // high above 1: no score gets there; low at 0: every score is at least low.
        assert_eq!(t(1.5, 0.4, 0.0).unreachable(), [Safe, High]);
        assert_eq!(t(f64::NAN, 0.4, 0.1).unreachable(), [High]);
        assert_eq!(t(0.0, 0.4, 0.1).unreachable(), [Safe, Low, Medium]);
    }
}
