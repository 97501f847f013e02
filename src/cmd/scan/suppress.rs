//! Accepting a finding, in the conventions people already have: an inline comment on the line
//! (`pragma: allowlist secret` as detect-secrets writes it, `gitleaks:allow` as gitleaks does),
//! a file of fingerprints (`.resilient-write-ignore` at the root), and a baseline written by
//! `scan --write-baseline` of which `scan --baseline` reports only what is new.
//!
//! A fingerprint names a finding without its secret and survives runs and line moves: the first
//! 32 hex digits (128 bits) of `sha256(rule \0 path \0 secret)`, the path relative to the root
//! (the repository's top level, else the working directory) with `/` separators. The same
//! secret in the same file gets the same fingerprint in a work-tree scan, a `--staged` scan and
//! a `--git` scan. It is a hash, not the secret; like any unsalted hash of a weak password, a
//! guessable secret can be confirmed from it, a random token cannot.

use resilient_write_core::hash::sha256_hex;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

/// The inline markers that accept the findings of their line.
pub const INLINE_MARKERS: &[&str] = &["pragma: allowlist secret", "gitleaks:allow"];
/// The file of accepted fingerprints, read at the root.
pub const IGNORE_FILE: &str = ".resilient-write-ignore";
/// Hex digits kept of the SHA-256.
const FINGERPRINT_HEX: usize = 32;

/// The fingerprint of a finding of `rule` whose matched text is `secret`, in the file at `path`
/// (root-relative, `/`-separated).
pub fn fingerprint(rule: &str, path: &str, secret: &str) -> String {
    let mut buf = Vec::with_capacity(rule.len() + path.len() + secret.len() + 2);
    buf.extend_from_slice(rule.as_bytes());
    buf.push(0);
    buf.extend_from_slice(path.as_bytes());
    buf.push(0);
    buf.extend_from_slice(secret.as_bytes());
    let mut hex = sha256_hex(&buf);
    hex.truncate(FINGERPRINT_HEX);
    hex
}

/// Whether a line the secret at `span` touches carries an inline marker.
pub fn inline_allowed(content: &str, span: std::ops::Range<usize>) -> bool {
    let bytes = content.as_bytes();
    let start = span.start.min(bytes.len());
    let end = span.end.clamp(start, bytes.len());
    let from = memchr_rev(bytes, start);
    let to = bytes[end..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |k| end + k);
    let lines = &bytes[from..to];
    INLINE_MARKERS
        .iter()
        .any(|m| lines.windows(m.len()).any(|w| w == m.as_bytes()))
}

fn memchr_rev(bytes: &[u8], before: usize) -> usize {
    bytes[..before]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |k| k + 1)
}

/// The fingerprints of an ignore file: one per line (the first word; the rest of the line and
/// lines starting with `#` are comments).
pub fn parse_ignore_file(text: &str) -> HashSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

/// The ignore file at `root`, or nothing when there is none.
pub fn load_ignore_file(root: &Path) -> Result<HashSet<String>, String> {
    let path = root.join(IGNORE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(parse_ignore_file(&String::from_utf8_lossy(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashSet::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// One accepted finding as a baseline records it: never the secret, nor its snippet.
#[derive(Debug, Clone)]
pub struct BaselineEntry {
    pub fingerprint: String,
    pub path: String,
    pub line: u32,
    pub rule: String,
    pub kind: String,
}

/// Version of the baseline document.
pub const BASELINE_VERSION: u64 = 1;

/// The baseline document for `entries` (sorted by path, line, rule; one entry per fingerprint).
pub fn baseline_json(entries: &[BaselineEntry]) -> Value {
    let mut sorted: Vec<&BaselineEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.path, a.line, &a.rule, &a.fingerprint).cmp(&(&b.path, b.line, &b.rule, &b.fingerprint))
    });
    let mut seen = HashSet::new();
    sorted.retain(|e| seen.insert(e.fingerprint.as_str()));
    let findings: Vec<Value> = sorted
        .iter()
        .map(|e| {
            json!({
                "fingerprint": e.fingerprint,
                "path": e.path,
                "line": e.line,
                "rule": e.rule,
                "kind": e.kind,
            })
        })
        .collect();
    json!({
        "tool": "resilient-write scan",
        "version": BASELINE_VERSION,
        "findings": findings,
    })
}

/// The fingerprints of a baseline document.
pub fn parse_baseline(text: &str) -> Result<HashSet<String>, String> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| format!("is not a scan baseline (JSON: {e})"))?;
    if doc.get("version").and_then(Value::as_u64) != Some(BASELINE_VERSION) {
        return Err(format!(
            "is not a scan baseline of version {BASELINE_VERSION} (write one with --write-baseline)"
        ));
    }
    let Some(findings) = doc.get("findings").and_then(Value::as_array) else {
        return Err("has no `findings` list".into());
    };
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.get("fingerprint")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .ok_or_else(|| format!("finding {i} has no `fingerprint`"))
        })
        .collect()
}

/// Read the baseline at `path`.
pub fn load_baseline(path: &Path) -> Result<HashSet<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_baseline(&String::from_utf8_lossy(&bytes)).map_err(|e| format!("{}: {e}", path.display()))
}

/// Write `doc` to `path` atomically (a temporary file in the same directory, renamed).
pub fn write_json_atomic(path: &Path, doc: &Value) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    text.push('\n');
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_depend_on_rule_path_and_secret_only() {
        let a = fingerprint("r", "src/a.py", "s3cr3t");
        assert_eq!(a.len(), 32);
        assert_eq!(a, fingerprint("r", "src/a.py", "s3cr3t"));
        assert_ne!(a, fingerprint("r2", "src/a.py", "s3cr3t"));
        assert_ne!(a, fingerprint("r", "src/b.py", "s3cr3t"));
        assert_ne!(a, fingerprint("r", "src/a.py", "s3cr3u"));
        // the separators keep fields apart
        assert_ne!(fingerprint("ab", "c", "d"), fingerprint("a", "bc", "d"));
    }

    #[test]
    fn inline_markers_cover_the_lines_of_the_secret_only() {
        let text = "a = X1 # pragma: allowlist secret\nb = X2\nc = X3 // gitleaks:allow\n";
        let at = |s: &str| {
            let i = text.find(s).unwrap();
            i..i + s.len()
        };
        assert!(inline_allowed(text, at("X1")));
        assert!(!inline_allowed(text, at("X2")));
        assert!(inline_allowed(text, at("X3")));
        // a secret spanning lines is accepted by a marker on any of them
        let i = text.find("X2").unwrap();
        assert!(inline_allowed(text, i..text.find("X3").unwrap() + 2));
    }

    #[test]
    fn ignore_file_takes_the_first_word_and_skips_comments() {
        let set = parse_ignore_file("# accepted\nABCDEF0123 src/a.py:3 rule\n\n  fedcba  \n");
        assert_eq!(
            set,
            HashSet::from(["abcdef0123".to_string(), "fedcba".to_string()])
        );
    }

    #[test]
    fn baseline_round_trips_and_refuses_other_documents() {
        let e = |fp: &str, line| BaselineEntry {
            fingerprint: fp.into(),
            path: "a".into(),
            line,
            rule: "r".into(),
            kind: "k".into(),
        };
        let doc = baseline_json(&[e("bb", 2), e("aa", 1), e("aa", 5)]);
        assert_eq!(doc["findings"].as_array().unwrap().len(), 2);
        let set = parse_baseline(&doc.to_string()).unwrap();
        assert_eq!(set, HashSet::from(["aa".to_string(), "bb".to_string()]));
        assert!(parse_baseline("[]").is_err());
        assert!(parse_baseline(r#"{"version": 1, "findings": [{}]}"#).is_err());
        assert!(parse_baseline("not json").is_err());
    }
}
