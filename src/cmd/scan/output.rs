//! The three output formats of `scan`: a table for people, one JSON document for scripts, and
//! SARIF 2.1.0 for code-scanning dashboards (GitHub's among them: results carry a rule id, a
//! level, a location relative to the repository root and a `partialFingerprints` entry).
//!
//! Guarantee: no format carries a whole secret. A finding is shown by its rule, its L0 snippet
//! (at most 16 characters, never the whole secret) and its fingerprint (a hash).

use super::report::{Hit, Suppressed, TextReport};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use resilient_write_core::classify::Verdict;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Everything a run produced, for the printers.
pub struct Summary<'a> {
    pub reports: &'a [TextReport],
    pub scanned: usize,
    pub bytes: u64,
    pub skipped_binary: usize,
    pub commits: Option<usize>,
    pub suppressed: Suppressed,
    pub errors: &'a [(String, String)],
    pub fail_at: Verdict,
    pub failing: usize,
}

pub fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Safe => "safe",
        Verdict::Low => "low",
        Verdict::Medium => "medium",
        Verdict::High => "high",
    }
}

/// Control characters shown as `?`.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The table on stdout, the per-text verdicts and the totals on stderr.
pub fn text(s: &Summary) {
    let total: usize = s.reports.iter().map(|r| r.hits.len()).sum();
    if total > 0 {
        println!(
            "{:<40} {:>5}  {:<18} {:<32} {:<18} {:<32}{}",
            "file",
            "line",
            "kind",
            "pattern",
            "snippet",
            "fingerprint",
            if s.commits.is_some() {
                " commit       author"
            } else {
                ""
            }
        );
    }
    for r in s.reports {
        for h in &r.hits {
            let commit = r
                .source
                .commit
                .as_ref()
                .map(|c| format!(" {:<12} {}", short(&c.id), printable(&c.author)))
                .unwrap_or_default();
            println!(
                "{:<40} {:>5}  {:<18} {:<32} {:<18} {:<32}{}",
                printable(&r.source.shown),
                h.line,
                h.kind,
                h.pattern,
                printable(&h.snippet),
                h.fingerprint,
                commit
            );
        }
    }
    for r in s.reports {
        let at = r
            .source
            .commit
            .as_ref()
            .map(|c| format!(" @ {}", short(&c.id)))
            .unwrap_or_default();
        eprintln!(
            "{}{at}: {} (score {:.2})",
            printable(&r.source.shown),
            verdict_name(r.verdict),
            r.score
        );
    }
    let commits = s
        .commits
        .map(|n| format!(" in {n} commit(s)"))
        .unwrap_or_default();
    let sup = s.suppressed;
    let accepted = sup.inline + sup.ignore_file + sup.baseline;
    let accepted = if accepted > 0 {
        format!(
            ", {accepted} accepted (inline {}, ignore file {}, baseline {})",
            sup.inline, sup.ignore_file, sup.baseline
        )
    } else {
        String::new()
    };
    eprintln!(
        "{} file(s) scanned{commits}, {} binary skipped, {total} finding(s){accepted}, {} at or above {}",
        s.scanned,
        s.skipped_binary,
        s.failing,
        verdict_name(s.fail_at)
    );
}

fn commit_json(r: &TextReport) -> Option<Value> {
    r.source
        .commit
        .as_ref()
        .map(|c| json!({"id": c.id, "author": c.author, "date": c.date}))
}

fn hit_json(r: &TextReport, h: &Hit) -> Value {
    let mut v = json!({
        "kind": h.kind,
        "pattern": h.pattern,
        "match": h.snippet,
        "line": h.line,
        "column": h.column,
        "severity": verdict_name(h.severity),
        "fingerprint": h.fingerprint,
    });
    if let (Some(c), Some(obj)) = (commit_json(r), v.as_object_mut()) {
        obj.insert("commit".into(), c);
    }
    v
}

/// One JSON document.
pub fn json_doc(s: &Summary) -> Value {
    let files: Vec<Value> = s
        .reports
        .iter()
        .map(|r| {
            let mut v = json!({
                "path": r.source.shown,
                "rel_path": r.source.rel,
                "score": r.score,
                "verdict": verdict_name(r.verdict),
                "detected_patterns": r.hits.iter().map(|h| hit_json(r, h)).collect::<Vec<_>>(),
            });
            if let (Some(c), Some(obj)) = (commit_json(r), v.as_object_mut()) {
                obj.insert("commit".into(), c);
            }
            v
        })
        .collect();
    let errors: Vec<Value> = s
        .errors
        .iter()
        .map(|(p, m)| json!({"path": p, "message": m}))
        .collect();
    let mut doc = json!({
        "files": files,
        "findings": s.reports.iter().map(|r| r.hits.len()).sum::<usize>(),
        "scanned": s.scanned,
        "bytes": s.bytes,
        "skipped_binary": s.skipped_binary,
        "suppressed": {
            "inline": s.suppressed.inline,
            "ignore_file": s.suppressed.ignore_file,
            "baseline": s.suppressed.baseline,
        },
        "errors": errors,
        "fail_at": verdict_name(s.fail_at),
        "failing_files": s.failing,
    });
    if let (Some(n), Some(obj)) = (s.commits, doc.as_object_mut()) {
        obj.insert("commits".into(), json!(n));
    }
    doc
}

fn level(v: Verdict) -> &'static str {
    match v {
        Verdict::High => "error",
        Verdict::Medium => "warning",
        Verdict::Low | Verdict::Safe => "note",
    }
}

/// GitHub's `security-severity` (critical from 9.0, high from 7.0, medium from 4.0).
fn security_severity(v: Verdict) -> &'static str {
    match v {
        Verdict::High => "9.0",
        Verdict::Medium => "7.5",
        Verdict::Low => "4.0",
        Verdict::Safe => "1.0",
    }
}

/// Characters percent-encoded in a SARIF URI path segment.
const URI_SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A root-relative path as a relative URI reference (`-` = standard input).
fn uri(rel: &str) -> String {
    if rel == "-" {
        return "stdin".into();
    }
    let absolute = rel.starts_with('/');
    let enc: Vec<String> = rel
        .split('/')
        .map(|seg| utf8_percent_encode(seg, URI_SEGMENT).to_string())
        .collect();
    let joined = enc.join("/");
    if absolute {
        format!("file://{joined}")
    } else {
        joined
    }
}

/// The SARIF 2.1.0 log.
pub fn sarif(s: &Summary) -> Value {
    // rules in first-seen order of (pattern); each rule's level from its first finding
    let mut rule_index: BTreeMap<String, usize> = BTreeMap::new();
    let mut rules: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for r in s.reports {
        for h in &r.hits {
            let idx = *rule_index.entry(h.pattern.clone()).or_insert_with(|| {
                rules.push(json!({
                    "id": h.pattern,
                    "name": h.pattern,
                    "shortDescription": {"text": format!("{} ({})", h.pattern, h.kind)},
                    "fullDescription": {"text": format!(
                        "A {} finding of the L0 rule {}: move the value out of the tree (environment, secret store), rotate it if it was real, or accept it with an inline `pragma: allowlist secret`, the fingerprint in .resilient-write-ignore, or a baseline.",
                        h.kind, h.pattern
                    )},
                    "defaultConfiguration": {"level": level(h.severity)},
                    "properties": {
                        "tags": ["security", "secret", h.kind],
                        "security-severity": security_severity(h.severity),
                    },
                }));
                rules.len() - 1
            });
            let mut message = format!(
                "{} ({}) starting `{}`; fingerprint {}",
                h.pattern,
                h.kind,
                printable(&h.snippet),
                h.fingerprint
            );
            let mut props = json!({
                "kind": h.kind,
                "severity": verdict_name(h.severity),
            });
            if let Some(c) = &r.source.commit {
                message.push_str(&format!("; added in {} by {}", short(&c.id), c.author));
                if let Some(obj) = props.as_object_mut() {
                    obj.insert("commit".into(), json!(c.id));
                    obj.insert("author".into(), json!(c.author));
                    obj.insert("date".into(), json!(c.date));
                }
            }
            results.push(json!({
                "ruleId": h.pattern,
                "ruleIndex": idx,
                "level": level(h.severity),
                "message": {"text": message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&r.source.rel), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": h.line.max(1), "startColumn": h.column.max(1)},
                    },
                }],
                "partialFingerprints": {"resilientWriteFingerprint/v1": h.fingerprint},
                "properties": props,
            }));
        }
    }
    let notifications: Vec<Value> = s
        .errors
        .iter()
        .map(|(p, m)| {
            json!({
                "level": "error",
                "message": {"text": format!("{}: {m}", printable(p))},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "resilient-write",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "invocations": [{
                "executionSuccessful": s.errors.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(uri("src/a b.rs"), "src/a%20b.rs");
        assert_eq!(uri("src/x#1?.py"), "src/x%231%3F.py");
        assert_eq!(uri("/abs/p"), "file:///abs/p");
        assert_eq!(uri("é"), "%C3%A9");
    }
}
