//! The score of a draft (the paper's equation 1): each family with findings adds its weight, raised
//! by a quarter per further distinct secret up to one and a half times; the size rules add their
//! penalties; the sum is clamped to [0, 1] and rounded to 4 decimals; the classifier's thresholds
//! turn it into a [`Verdict`]. Also the suggested actions of a report.

use std::collections::BTreeMap;

use super::compile::Classifier;
use super::detect::findings;
use super::{Finding, RiskReport, SuggestedAction, Verdict};

impl Classifier {
    /// The verdict of a score under this policy's thresholds.
    pub fn verdict(&self, score: f64) -> Verdict {
        self.thresholds.verdict(score)
    }

    /// The weight of a family (0 for a family no rule reports).
    pub fn weight(&self, family: &str) -> f64 {
        self.weights.get(family).copied().unwrap_or(0.0)
    }
}

/// Size of the content as the original measured it: lines and the longest line in characters.
/// The lines are the newlines counted (one vectorised count) plus an unterminated last line.
/// Only a line longer in bytes than the longest so far can be longer in characters, so the
/// search for one jumps: when the next `max_len + 1` bytes hold a newline, every line ending
/// there is no longer than `max_len` and the search resumes after the last of them (one
/// `memrchr` per `max_len` bytes instead of one `memchr` per line).
pub(super) fn size_metrics(content: &str) -> (usize, usize) {
    let s = content.as_bytes();
    let Some(&last) = s.last() else {
        return (0, 0);
    };
    let lines = memchr::memchr_iter(b'\n', s).count() + usize::from(last != b'\n');
    let (mut max_len, mut start) = (0usize, 0usize);
    while start < s.len() {
        let lim = s.len().min(start + max_len + 1);
        if let Some(q) = memchr::memrchr(b'\n', &s[start..lim]) {
            start += q + 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &s[start..]).map_or(s.len(), |k| start + k);
        let line = content.get(start..end).unwrap_or("");
        if line.len() > max_len {
            max_len = max_len.max(line.chars().count());
        }
        start = end + 1;
    }
    (lines, max_len)
}

/// [`size_metrics`] as it was, one line at a time: the reference of its test.
#[cfg(test)]
fn size_metrics_by_line(content: &str) -> (usize, usize) {
    if content.is_empty() {
        return (0, 0);
    }
    let (mut lines, mut max_len, mut start) = (0usize, 0usize, 0usize);
    let mut measure = |line: &str| {
        // a line no longer in bytes than the longest so far cannot be longer in characters
        if line.len() > max_len {
            max_len = max_len.max(line.chars().count());
        }
    };
    for nl in memchr::memchr_iter(b'\n', content.as_bytes()) {
        lines += 1;
        measure(content.get(start..nl).unwrap_or(""));
        start = nl + 1;
    }
    if start < content.len() {
        lines += 1;
        measure(content.get(start..).unwrap_or(""));
    }
    (lines, max_len)
}

/// The paper's per-family contribution: `w * min(1.5, 1 + 0.25 (n - 1))`.
pub fn family_contribution(weight: f64, distinct_matches: usize) -> f64 {
    if distinct_matches == 0 {
        return 0.0;
    }
    weight * (1.0 + 0.25 * (distinct_matches as f64 - 1.0)).min(1.5)
}

/// The number of distinct secrets of each family among `found` (findings of `content`).
/// Sorted and deduplicated `(family, secret)` pairs: hashing every secret into a set per
/// family cost more than the sort.
fn per_family<'a>(content: &'a str, found: &'a [Finding]) -> BTreeMap<&'a str, usize> {
    let mut pairs: Vec<(&str, &str)> = found
        .iter()
        .map(|f| (f.kind.as_str(), content.get(f.span.clone()).unwrap_or("")))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut out: BTreeMap<&str, usize> = BTreeMap::new();
    for (family, _) in pairs {
        *out.entry(family).or_default() += 1;
    }
    out
}

/// The paper's equation over a subset of the findings of `content`, without the size rules
/// (what an edit introduces is scored this way), clamped and rounded like [`risk_score`].
pub fn findings_score(content: &str, found: &[Finding], classifier: &Classifier) -> f64 {
    let score: f64 = per_family(content, found)
        .iter()
        .map(|(fam, n)| family_contribution(classifier.weight(fam), *n))
        .sum();
    rounded(score)
}

/// `score` clamped to [0, 1] and rounded to 4 decimals. A sum of nothing is -0.0 in Rust;
/// `+ 0.0` makes it the 0.0 the original reports (JSON `0.0`, not `-0.0`).
fn rounded(score: f64) -> f64 {
    (score.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0 + 0.0
}

/// Scores `content` (the paper's `rw.risk_score`). Pure: no I/O, no clock.
pub fn risk_score(content: &str, classifier: &Classifier) -> RiskReport {
    let detected = findings(content, classifier);
    let bytes = content.len();
    let (line_count, max_line_len) = size_metrics(content);
    let per_family = per_family(content, &detected);
    let mut score: f64 = per_family
        .iter()
        .map(|(fam, n)| family_contribution(classifier.weight(fam), *n))
        .sum();
    let size_rules: [(&str, usize, usize, f64, &str); 4] = [
        ("total_bytes", bytes, 100_000, 0.15, "split"),
        ("total_bytes", bytes, 500_000, 0.30, "split"),
        ("max_line_len", max_line_len, 2_000, 0.20, "escape"),
        ("line_count", line_count, 5_000, 0.10, "split"),
    ];
    let mut actions = Vec::new();
    let redact_targets: Vec<String> = per_family
        .keys()
        .filter(|f| **f != "binary_hint")
        .map(|f| (*f).to_string())
        .collect();
    if !redact_targets.is_empty() {
        actions.push(SuggestedAction {
            action: "redact".into(),
            targets: Some(redact_targets),
            reason: None,
        });
    }
    if per_family.contains_key("binary_hint") {
        actions.push(SuggestedAction {
            action: "split".into(),
            targets: None,
            reason: Some("binary_content_detected".into()),
        });
    }
    for (key, value, gt, add, action) in size_rules {
        if value > gt {
            score += add;
            actions.push(SuggestedAction {
                action: action.into(),
                targets: None,
                reason: Some(format!("{key}_{value}_exceeds_{gt}")),
            });
        }
    }
    let score = rounded(score);
    RiskReport {
        score,
        verdict: classifier.verdict(score),
        bytes,
        line_count,
        max_line_len,
        detected_patterns: detected,
        suggested_actions: actions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{ALNUM, Rng, clf, corpus, mixed_draft, score, synth};

    #[test]
    fn family_contribution_saturates_at_one_and_a_half() {
        assert_eq!(family_contribution(0.4, 0), 0.0);
        assert_eq!(family_contribution(0.4, 1), 0.4);
        assert!((family_contribution(0.4, 2) - 0.5).abs() < 1e-12);
        assert!((family_contribution(0.4, 9) - 0.6).abs() < 1e-12);
    }

    #[test]
    fn repeated_identical_secret_counts_once() {
        let t = synth("ghp_", ALNUM, 36);
        let r = score(&format!("{t}\n{t}\n"));
        assert_eq!(r.detected_patterns.len(), 2);
        assert_eq!(r.score, 0.45);
    }

    #[test]
    fn two_credentials_of_different_families_score_high() {
        let s = format!(
            "{}\n{}\n",
            synth("ghp_", ALNUM, 36),
            synth("sk_live_", ALNUM, 24)
        );
        assert_eq!(score(&s).verdict, Verdict::High);
    }

    #[test]
    fn size_rules_add_their_increments() {
        let big = "x = 1\n".repeat(20_000);
        let r = score(&big);
        assert_eq!(r.line_count, 20_000);
        assert!((r.score - 0.25).abs() < 1e-9, "{}", r.score);
        assert!(
            r.suggested_actions
                .iter()
                .any(|a| a.reason.as_deref() == Some("total_bytes_120000_exceeds_100000"))
        );
    }

    #[test]
    fn verdict_thresholds_are_inclusive() {
        let c = clf();
        assert_eq!(c.verdict(0.70), Verdict::High);
        assert_eq!(c.verdict(0.6999), Verdict::Medium);
        assert_eq!(c.verdict(0.40), Verdict::Medium);
        assert_eq!(c.verdict(0.10), Verdict::Low);
        assert_eq!(c.verdict(0.0999), Verdict::Safe);
    }

    #[test]
    fn a_score_of_nothing_is_positive_zero_as_the_original_writes_it() {
        // A sum of no terms is -0.0 in Rust, which JSON writes as `-0.0`.
        for r in [score(""), score("plain words\n")] {
            assert!(r.score == 0.0 && r.score.is_sign_positive(), "{}", r.score);
            assert_eq!(serde_json::to_string(&r.score).unwrap(), "0.0");
        }
    }

    #[test]
    fn empty_content_is_safe_with_zero_metrics() {
        let r = score("");
        assert_eq!(
            (r.score, r.verdict, r.bytes, r.line_count, r.max_line_len),
            (0.0, Verdict::Safe, 0, 0, 0)
        );
    }

    #[test]
    fn max_line_len_counts_characters() {
        assert_eq!(score("héllo\nab").max_line_len, 5);
    }

    #[test]
    fn line_count_follows_python_splitlines_of_newlines() {
        // (content, lines, longest line in characters), as the original's `len(content.split("\n"))`
        // minus a final empty piece
        for (content, lines, longest) in [
            ("a", 1, 1),
            ("a\n", 1, 1),
            ("\n\n", 2, 0),
            ("ab\ncdé\n\n", 3, 3),
            ("éééé\nabcde", 2, 5),
            ("abcde\néééé", 2, 5),
        ] {
            let r = score(content);
            assert_eq!(
                (r.line_count, r.max_line_len),
                (lines, longest),
                "{content:?}"
            );
        }
    }

    #[test]
    fn classifier_is_deterministic() {
        let d = mixed_draft();
        assert_eq!(score(&d), score(&d));
    }

    /// The line count and longest line of the score (`score::size_metrics`, which jumps over
    /// lines no longer than the longest so far) are those of the line-by-line routine it replaced:
    /// over the corpus and random text of lines of every length, multi-byte characters (a line
    /// longer in bytes but not in characters), empty lines, and with and without a final newline.
    #[test]
    fn size_metrics_agree_with_the_line_by_line_count() {
        let mut inputs: Vec<String> = ["", "\n", "\n\n", "a", "a\n", "\na", "é\nab\n", "ab\né"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut r = corpus::Rng(0x18_0050);
        inputs.push(corpus::mixed_source(&mut r, 100_000));
        for _ in 0..200 {
            inputs.push(corpus::negative_file(&mut r));
        }
        let mut rng = Rng(0x18_0051);
        let pieces = ["a", "bb", "é", "€", "\u{1F600}", " ", "\n", "\n\n", "\r\n"];
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..(rng.next() % 200) {
                let p = pieces[(rng.next() % pieces.len() as u64) as usize];
                for _ in 0..(rng.next() % 30) {
                    s.push_str(p);
                }
            }
            inputs.push(s);
        }
        for s in &inputs {
            assert_eq!(size_metrics(s), size_metrics_by_line(s), "input {s:?}");
        }
    }
}
