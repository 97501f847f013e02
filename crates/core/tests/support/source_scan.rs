//! Reading Rust sources as text for the architecture tests of both crates (`tests/layers.rs`
//! here and in the server crate): comments and test modules left out, `crate::` paths
//! collected, environment reads and write-precondition constructors found, with their lines.

use std::path::{Path, PathBuf};

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments (string and char literals kept, line breaks kept, so
/// offsets map to the same lines) and without its `#[cfg(test)]` modules.
pub fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == b'"' {
            // a string literal (raw strings of this code base hold no `"` before their end)
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str(&text[start..i.min(b.len())]);
        } else if c == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.push_str(&text[i..i + 3]);
            i += 3;
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    // Test modules sit at the end of a file, after `#[cfg(test)]`.
    let mut kept = String::new();
    let mut lines = out.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

/// The module a file of `root` is: `chunks/compose.rs` is `chunks::compose`.
pub fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts.join("::")
}

/// Every `crate::…` path in `code`, with its line: `use crate::{a::x, b}` gives `a::x` and `b`.
pub fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `resilient_write_core::…`, `$crate::…`
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && ch == ',') {
                    let p = item.trim().to_string();
                    if !p.is_empty() {
                        out.push((line, p));
                    }
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    item.push(ch);
                }
            }
        } else {
            let p: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push((line, p.trim_end_matches(':').to_string()));
        }
    }
    out
}

/// Every read of the environment in `code`, as line numbers.
pub fn env_reads(code: &str) -> Vec<usize> {
    ["env::var", "env::vars", "env!(\"HOME", "option_env!"]
        .iter()
        .flat_map(|needle| code.match_indices(needle).map(|(at, _)| at))
        .map(|at| code[..at].matches('\n').count() + 1)
        .collect()
}

/// Constructions (not patterns) of the write-precondition failures in `code`, as lines.
pub fn precondition_constructions(code: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for variant in ["StaleHash", "TargetExists", "TargetMissing"] {
        let needle = format!("Failure::{variant}");
        for (at, _) in code.match_indices(&needle) {
            let rest = &code[at + needle.len()..];
            let body_end = rest.find('}').unwrap_or(rest.len());
            let body = &rest[..body_end];
            let after = rest[(body_end + 1).min(rest.len())..].trim_start();
            let pattern = body.contains("..")
                || after.starts_with("=>")
                || after.starts_with('|')
                || !rest.trim_start().starts_with('{');
            if !pattern {
                out.push(code[..at].matches('\n').count() + 1);
            }
        }
    }
    out
}
