//! One scanned text (a file, a staged blob, the lines a commit added to a file) into the
//! findings a person sees: L0's findings minus the accepted ones, each with a severity, a
//! column and a fingerprint, and the text's score and verdict over what is left.
//!
//! Score: the paper's equation over the findings that are left (`findings_score`), without
//! L0's size rules: a scanner reports secrets, and a large file is not one. Severity of one
//! finding: the verdict of its family's weight alone, so a lone email address is `low` and a
//! lone token `medium`, while the text's verdict counts every family (two credentials of
//! different families reach `high`).

use super::suppress::{fingerprint, inline_allowed};
use resilient_write_core::classify::{Classifier, Finding, Verdict, findings, findings_score};
use std::collections::HashSet;

/// Where a text came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// As shown to the person (the path as walked, `-` for standard input).
    pub shown: String,
    /// Relative to the root, `/`-separated: what fingerprints hash and SARIF points at.
    pub rel: String,
    /// The commit that added the lines (`--git`).
    pub commit: Option<Commit>,
}

/// A commit of `--git`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: String,
    /// `Name <email>`.
    pub author: String,
    /// Author date, ISO 8601.
    pub date: String,
}

/// One reported finding. Holds no secret: `snippet` is L0's cut (at most 16 characters, never
/// the whole secret).
#[derive(Debug, Clone)]
pub struct Hit {
    pub kind: String,
    pub pattern: String,
    pub snippet: String,
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub severity: Verdict,
    pub fingerprint: String,
}

/// The findings of one text.
#[derive(Debug, Clone)]
pub struct TextReport {
    pub source: Source,
    pub score: f64,
    pub verdict: Verdict,
    pub hits: Vec<Hit>,
}

/// What was accepted, by how.
#[derive(Debug, Clone, Copy, Default)]
pub struct Suppressed {
    pub inline: usize,
    pub ignore_file: usize,
    pub baseline: usize,
}

impl Suppressed {
    pub fn add(&mut self, other: Suppressed) {
        self.inline += other.inline;
        self.ignore_file += other.ignore_file;
        self.baseline += other.baseline;
    }
}

/// The accepted fingerprints.
#[derive(Debug, Default)]
pub struct Filters {
    pub ignore_file: HashSet<String>,
    pub baseline: HashSet<String>,
}

/// The result of scanning one text: its report (when anything is left), what was accepted and
/// the findings a baseline would record (all but the inline- and ignore-file-accepted ones).
pub struct Scanned {
    /// The text's root-relative path (as in [`Source::rel`]).
    pub rel: String,
    pub report: Option<TextReport>,
    pub suppressed: Suppressed,
    pub for_baseline: Vec<Hit>,
}

/// 1-based character column of byte `at` in its line.
fn column(content: &str, at: usize) -> u32 {
    let at = floor_char(content, at);
    let start = content[..at].rfind('\n').map_or(0, |k| k + 1);
    u32::try_from(content[start..at].chars().count() + 1).unwrap_or(u32::MAX)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Scan `content` from `source`. `line_map[i]` is the real line of the text's line `i + 1`
/// (for the added lines of a commit); without it lines are the text's own.
pub fn scan_text(
    content: &str,
    source: Source,
    classifier: &Classifier,
    filters: &Filters,
    line_map: Option<&[u32]>,
) -> Scanned {
    let found = findings(content, classifier);
    let mut suppressed = Suppressed::default();
    let mut kept: Vec<Finding> = Vec::new();
    let mut hits = Vec::new();
    let mut for_baseline = Vec::new();
    for f in found {
        let span = f.span();
        if inline_allowed(content, span.clone()) {
            suppressed.inline += 1;
            continue;
        }
        let secret = content.get(span.clone()).unwrap_or("");
        let fp = fingerprint(&f.pattern, &source.rel, secret);
        if filters.ignore_file.contains(&fp) {
            suppressed.ignore_file += 1;
            continue;
        }
        let line = match line_map {
            Some(map) => usize::try_from(f.line)
                .ok()
                .and_then(|l| map.get(l.wrapping_sub(1)))
                .copied()
                .unwrap_or(f.line),
            None => f.line,
        };
        let severity = classifier.verdict(findings_score(
            content,
            std::slice::from_ref(&f),
            classifier,
        ));
        let hit = Hit {
            kind: f.kind.clone(),
            pattern: f.pattern.clone(),
            snippet: f.r#match.clone(),
            line,
            column: column(content, span.start),
            severity,
            fingerprint: fp,
        };
        for_baseline.push(hit.clone());
        if filters.baseline.contains(&hit.fingerprint) {
            suppressed.baseline += 1;
            continue;
        }
        hits.push(hit);
        kept.push(f);
    }
    let rel = source.rel.clone();
    let report = if hits.is_empty() {
        None
    } else {
        let score = findings_score(content, &kept, classifier);
        Some(TextReport {
            source,
            score,
            verdict: classifier.verdict(score),
            hits,
        })
    };
    Scanned {
        rel,
        report,
        suppressed,
        for_baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_from_one() {
        let text = "ab\né = X";
        assert_eq!(column(text, 0), 1);
        assert_eq!(column(text, text.find('X').unwrap()), 5);
    }
}
