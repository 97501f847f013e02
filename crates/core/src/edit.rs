//! Surgical edits for `safe_replace` (L1): exact-match replacement with count semantics, an
//! all-or-nothing list of edits, unified diffs for dry runs, and, when an `old_string` does not
//! match, the nearest region of the file so the agent can fix its request without re-reading.
//! The same engine computes what an agent's own edit tool will write, with that tool's
//! semantics ([`apply_replacements`]), for the hooks that screen a native edit.
//!
//! Pure functions over strings: no I/O. Matching is byte-exact (line endings, BOM and trailing
//! whitespace are significant), as the agent's `old_string` is meant to be copied from the file.

use crate::envelope::{Failure, NearestMatch, Result};
use similar::TextDiff;
use std::collections::HashSet;

/// One replacement: `count` = 1 means exactly one match, -1 every match (at least one),
/// N > 1 exactly N matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub old_string: String,
    pub new_string: String,
    pub count: i64,
}

/// Apply `edits` in order to `text`, each seeing the result of the previous ones. All or
/// nothing: the first edit that does not hold fails the whole list. Returns the new text and
/// the total number of replacements.
pub fn apply_edits(text: &str, edits: &[Edit], path: &str) -> Result<(String, usize)> {
    let many = edits.len() > 1;
    let mut current = text.to_string();
    let mut total = 0usize;
    for (i, e) in edits.iter().enumerate() {
        let edit_index = many.then_some(i);
        if e.old_string.is_empty() {
            return Err(Failure::InvalidArguments {
                message: format!(
                    "old_string must not be empty{}",
                    edit_index.map_or(String::new(), |i| format!(" (edits[{i}])"))
                ),
            });
        }
        if e.count == 0 || e.count < -1 {
            return Err(Failure::InvalidArguments {
                message: format!("count must be 1, -1 (all) or N > 1, got {}", e.count),
            });
        }
        let (next, found) = replace_counted(&current, &e.old_string, &e.new_string, e.count)
            .map_err(|positions| match positions.len() {
                0 => Failure::NoMatch {
                    path: path.into(),
                    edit_index,
                    nearest: nearest_region(&current, &e.old_string),
                },
                found => Failure::MatchCount {
                    path: path.into(),
                    edit_index,
                    expected: e.count,
                    found,
                    lines: positions.iter().map(|&p| line_of(&current, p)).collect(),
                },
            })?;
        current = next;
        total += found;
    }
    Ok((current, total))
}

/// One exact-match replacement as the agents' own edit tools make it (Claude Code's `Edit` and
/// `MultiEdit`, Gemini CLI's `replace`): what the agents' hooks screen before the tool runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
    /// Replace every occurrence (Claude Code `replace_all`, Gemini CLI `allow_multiple` or
    /// `expected_replacements` above 1); otherwise `old` must occur exactly once.
    pub all: bool,
}

/// The content the agents' `edits` produce from `current` (`None`: no file), with their
/// tools' semantics: applied in order as [`apply_edits`] applies them (`all` is count -1, else
/// count 1), and an empty `old` on a missing or empty file creates it with `new`. `None` when
/// an edit does not apply (`old` missing, not unique without `all`, or empty on a file with
/// content): the agent's tool fails the same way, and says why itself.
pub fn apply_replacements(current: Option<&str>, edits: &[Replacement]) -> Option<String> {
    let mut text = current.unwrap_or("").to_string();
    for e in edits {
        if e.old.is_empty() {
            if !text.is_empty() {
                return None;
            }
            text = e.new.clone();
            continue;
        }
        let count = if e.all { -1 } else { 1 };
        text = replace_counted(&text, &e.old, &e.new, count).ok()?.0;
    }
    Some(text)
}

/// `text` with every match of `old` (not empty) replaced by `new`, and how many there were,
/// when they are exactly `count` (-1: at least one); else the byte offsets of the matches
/// (none: `old` does not occur).
fn replace_counted(
    text: &str,
    old: &str,
    new: &str,
    count: i64,
) -> std::result::Result<(String, usize), Vec<usize>> {
    let positions: Vec<usize> = text.match_indices(old).map(|(p, _)| p).collect();
    let found = positions.len();
    if found == 0 || (count > 0 && found as i64 != count) {
        return Err(positions);
    }
    Ok((text.replace(old, new), found))
}

/// 1-based line number of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A unified diff of `old` to `new`, labelled with `path`.
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

fn tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|t| t.len() >= 2)
}

/// Longest diff shown in a nearest-match report.
const MAX_DIFF_CHARS: usize = 1500;
/// Candidate windows scored exactly after the cheap token filter.
const EXACT_CANDIDATES: usize = 16;

/// The region of `text` most similar to `needle`: windows of as many lines as the needle are
/// ranked cheaply by shared tokens, the best few exactly by character similarity.
pub fn nearest_region(text: &str, needle: &str) -> Option<NearestMatch> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.is_empty() {
        return None;
    }
    let k = needle.split_inclusive('\n').count().clamp(1, lines.len());
    let wanted: HashSet<&str> = tokens(needle).collect();
    // Per line: how many distinct needle tokens it holds.
    let per_line: Vec<usize> = lines
        .iter()
        .map(|l| {
            let mut seen = HashSet::new();
            tokens(l)
                .filter(|t| wanted.contains(t) && seen.insert(*t))
                .count()
        })
        .collect();
    let mut window: usize = per_line[..k].iter().sum();
    let mut scored = vec![(window, 0usize)];
    for start in 1..=(lines.len() - k) {
        window = window + per_line[start + k - 1] - per_line[start - 1];
        scored.push((window, start));
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let needle_norm: String = needle.chars().filter(|c| !c.is_whitespace()).collect();
    let mut best: Option<(f64, usize, String)> = None;
    for &(_, start) in scored.iter().take(EXACT_CANDIDATES) {
        let region: String = lines[start..start + k].concat();
        let ratio = f64::from(TextDiff::from_chars(needle, region.as_str()).ratio());
        if best.as_ref().is_none_or(|(r, _, _)| ratio > *r) {
            best = Some((ratio, start, region));
        }
    }
    let (ratio, start, region) = best?;
    if ratio <= 0.0 {
        return None;
    }
    let region_norm: String = region.chars().filter(|c| !c.is_whitespace()).collect();
    let mut diff = TextDiff::from_lines(needle, region.as_str())
        .unified_diff()
        .context_radius(1)
        .header("old_string", "file")
        .to_string();
    if diff.len() > MAX_DIFF_CHARS {
        let cut = (0..=MAX_DIFF_CHARS)
            .rev()
            .find(|&i| diff.is_char_boundary(i))
            .unwrap_or(0);
        diff.truncate(cut);
        diff.push_str("\n[diff truncated]\n");
    }
    Some(NearestMatch {
        line: start + 1,
        similarity: (ratio * 1000.0).round() / 1000.0,
        diff,
        whitespace_only: !needle_norm.is_empty() && needle_norm == region_norm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str, count: i64) -> Edit {
        Edit {
            old_string: old.into(),
            new_string: new.into(),
            count,
        }
    }

    #[test]
    fn count_one_requires_exactly_one_match() {
        let err = apply_edits("a a", &[edit("a", "b", 1)], "f").unwrap_err();
        match err {
            Failure::MatchCount { found, lines, .. } => {
                assert_eq!(found, 2);
                assert_eq!(lines, vec![1, 1]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            apply_edits("a c", &[edit("a", "b", 1)], "f").unwrap(),
            ("b c".into(), 1)
        );
    }

    #[test]
    fn count_minus_one_replaces_every_match() {
        assert_eq!(
            apply_edits("x\nx\nx", &[edit("x", "y", -1)], "f").unwrap(),
            ("y\ny\ny".into(), 3)
        );
    }

    #[test]
    fn count_n_requires_exactly_n_matches() {
        assert!(apply_edits("x x x", &[edit("x", "y", 2)], "f").is_err());
        assert_eq!(
            apply_edits("x x", &[edit("x", "y", 2)], "f").unwrap(),
            ("y y".into(), 2)
        );
    }

    #[test]
    fn invalid_count_and_empty_old_string_are_argument_errors() {
        assert!(matches!(
            apply_edits("x", &[edit("x", "y", 0)], "f"),
            Err(Failure::InvalidArguments { .. })
        ));
        assert!(matches!(
            apply_edits("x", &[edit("", "y", 1)], "f"),
            Err(Failure::InvalidArguments { .. })
        ));
    }

    #[test]
    fn edits_are_all_or_nothing_and_name_the_failing_edit() {
        let err = apply_edits(
            "alpha beta",
            &[edit("alpha", "A", 1), edit("gamma", "G", 1)],
            "f",
        )
        .unwrap_err();
        match err {
            Failure::NoMatch { edit_index, .. } => assert_eq!(edit_index, Some(1)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn edits_see_each_others_results() {
        let (out, n) = apply_edits(
            "one",
            &[edit("one", "two", 1), edit("two", "three", 1)],
            "f",
        )
        .unwrap();
        assert_eq!((out.as_str(), n), ("three", 2));
    }

    #[test]
    fn crlf_and_bom_are_preserved() {
        let (out, _) = apply_edits("\u{feff}a\r\nb\r\n", &[edit("a", "c", 1)], "f").unwrap();
        assert_eq!(out, "\u{feff}c\r\nb\r\n");
    }

    #[test]
    fn miss_reports_nearest_region_with_line_and_similarity() {
        let text = "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n}\n";
        let err = apply_edits(text, &[edit("    let x = 2;\n", "", 1)], "f").unwrap_err();
        match err {
            Failure::NoMatch {
                nearest: Some(n), ..
            } => {
                assert_eq!(n.line, 2);
                assert!(n.similarity > 0.8, "{}", n.similarity);
                assert!(n.diff.contains("-    let x = 2;"));
                assert!(!n.whitespace_only);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn whitespace_only_difference_is_flagged() {
        let text = "def f():\n\treturn 1\n";
        let n = nearest_region(text, "def f():\n    return 1\n").unwrap();
        assert!(n.whitespace_only);
        assert_eq!(n.line, 1);
    }

    fn r(old: &str, new: &str, all: bool) -> Replacement {
        Replacement {
            old: old.into(),
            new: new.into(),
            all,
        }
    }

    #[test]
    fn the_agents_edits_apply_in_order_and_refuse_what_their_tools_would() {
        let text = "a b a";
        let apply = apply_replacements;
        assert_eq!(
            apply(Some(text), &[r("b", "c", false)]).as_deref(),
            Some("a c a")
        );
        assert_eq!(apply(Some(text), &[r("a", "x", false)]), None, "not unique");
        assert_eq!(
            apply(Some(text), &[r("a", "x", true)]).as_deref(),
            Some("x b x")
        );
        assert_eq!(apply(Some(text), &[r("zz", "x", false)]), None, "missing");
        assert_eq!(
            apply(Some(text), &[r("zz", "x", true)]),
            None,
            "all of none"
        );
        // Each edit sees the previous one's result.
        assert_eq!(
            apply(Some(text), &[r("b", "c", false), r("c a", "done", false)]).as_deref(),
            Some("a done")
        );
    }

    #[test]
    fn an_agents_empty_old_creates_a_missing_or_empty_file_only() {
        let create = [r("", "new", false)];
        assert_eq!(apply_replacements(None, &create).as_deref(), Some("new"));
        assert_eq!(
            apply_replacements(Some(""), &create).as_deref(),
            Some("new")
        );
        assert_eq!(apply_replacements(Some("x"), &create), None);
        // Created, then edited like any content.
        let then = [r("", "one two", false), r("two", "2", false)];
        assert_eq!(apply_replacements(None, &then).as_deref(), Some("one 2"));
        // safe_replace keeps refusing an empty old_string.
        assert!(matches!(
            apply_edits("", &[edit("", "new", 1)], "f"),
            Err(Failure::InvalidArguments { .. })
        ));
    }

    #[test]
    fn unified_diff_names_the_path() {
        let d = unified_diff("a\n", "b\n", "x.txt");
        assert!(d.contains("--- a/x.txt") && d.contains("+b"));
    }
}
