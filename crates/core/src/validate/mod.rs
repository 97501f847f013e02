//! Format validators behind the `validate` tool: syntax checks for json, jsonl, yaml, toml,
//! python, latex, markdown, xml and html that report every problem with a 1-based line and column.
//!
//! This is the paper's section 3.7 extension ("format-aware validation"), widened to the formats of
//! SPEC section 9. An agent calls it on a draft before writing, so a broken file is caught while the
//! draft is still in hand rather than after the build fails.
//!
//! Architecture invariant: these are pure functions. No I/O, no clock, no global state; the same
//! input always gives the same report. Every validator is linear in the input (or calls a linear
//! parser), never panics on any input, and reports problems as diagnostics rather than failing:
//! a [`ValidationReport`] is always produced. `valid` is false exactly when at least one diagnostic
//! has [`Severity::Error`]; warnings never make a draft invalid.
//!
//! Format detection, first match wins: the `format_hint` (aliases such as `yml`, `py`, `tex`, `md`,
//! `htm`, `ndjson` accepted), then the extension (or a few well-known names) of `target_path`, then
//! a look at the first few kilobytes of the content. Content that matches nothing is reported as
//! format `text`, valid, with a summary saying nothing was checked.

mod html;
mod json;
mod jsonl;
mod latex;
mod markdown;
mod python;
mod toml;
mod xml;
mod yaml;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How serious a diagnostic is: errors make the content invalid, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The content is broken: a parser, compiler or renderer would fail or misread it.
    Error,
    /// Likely a mistake, but the content still parses.
    Warning,
}

/// One problem found in the content, located by 1-based line and 1-based column (in characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in characters (Unicode scalar values), not bytes.
    pub col: usize,
    /// What is wrong, for the agent to act on.
    pub message: String,
    pub severity: Severity,
}

/// The result of validating one draft: the `validate` tool's result fields (besides `ok`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationReport {
    /// False iff `errors` holds at least one error-severity diagnostic.
    pub valid: bool,
    /// The format that was checked: json, jsonl, yaml, toml, python, latex, markdown, xml, html, or
    /// text when nothing was recognised (and nothing checked).
    pub format: String,
    /// Errors and warnings in order of position, at most [`MAX_DIAGNOSTICS`] of them; when there
    /// are more, errors are kept before warnings.
    pub errors: Vec<Diagnostic>,
    /// One line for people: the format, how it was chosen, and the counts or the first problem.
    pub summary: String,
}

/// At most this many diagnostics are returned; the summary gives the full counts.
pub const MAX_DIAGNOSTICS: usize = 100;

/// The formats this module knows how to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Jsonl,
    Yaml,
    Toml,
    Python,
    Latex,
    Markdown,
    Xml,
    Html,
    Text,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Yaml => "yaml",
            Format::Toml => "toml",
            Format::Python => "python",
            Format::Latex => "latex",
            Format::Markdown => "markdown",
            Format::Xml => "xml",
            Format::Html => "html",
            Format::Text => "text",
        }
    }

    /// A format name, alias or file extension (case-insensitive, leading dot allowed).
    fn from_alias(alias: &str) -> Option<Format> {
        let alias = alias.trim().trim_start_matches('.').to_ascii_lowercase();
        let format = match alias.as_str() {
            "json" | "geojson" | "jsonc" | "json5" | "ipynb" => Format::Json,
            "jsonl" | "ndjson" | "jsonlines" | "json-lines" | "json_lines" => Format::Jsonl,
            "yaml" | "yml" => Format::Yaml,
            "toml" => Format::Toml,
            "python" | "py" | "python3" | "py3" | "pyi" | "pyw" => Format::Python,
            "latex" | "tex" | "ltx" | "sty" | "cls" | "bib" => Format::Latex,
            "markdown" | "md" | "mdown" | "mkd" | "mkdn" | "mdx" => Format::Markdown,
            "xml" | "xsd" | "xsl" | "xslt" | "svg" | "rss" | "atom" | "xhtml" | "plist"
            | "csproj" | "xaml" => Format::Xml,
            "html" | "htm" => Format::Html,
            "text" | "txt" | "plain" | "plaintext" => Format::Text,
            _ => return None,
        };
        Some(format)
    }

    /// The format a workspace path implies: its extension, or a few extensionless names.
    fn from_path(path: &str) -> Option<Format> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        match name {
            "Cargo.lock" | "Pipfile" | "poetry.lock" | "uv.lock" => return Some(Format::Toml),
            "SConstruct" | "SConscript" => return Some(Format::Python),
            _ => {}
        }
        let (_, ext) = name.rsplit_once('.')?;
        Format::from_alias(ext)
    }
}

/// Validates `content`, choosing the format from `format_hint`, then `target_path`, then the
/// content itself. Never fails: every problem is a diagnostic in the report.
pub fn validate(
    content: &str,
    format_hint: Option<&str>,
    target_path: Option<&str>,
) -> ValidationReport {
    let (format, chosen_by) = detect(content, format_hint, target_path);
    // The parsers recurse to bounded depths (serde_json 128, saphyr 64 levels), which in a debug
    // build can take more than a small thread stack has left; guarantee them room.
    let findings = stacker::maybe_grow(VALIDATOR_STACK_RED_ZONE, VALIDATOR_STACK, || {
        run(format, content)
    });
    report(content, format, &chosen_by, findings)
}

/// The stack a validator may need (at least this much is left when it starts) and the size of
/// the stack segment allocated when less is left.
const VALIDATOR_STACK_RED_ZONE: usize = 2 << 20;
const VALIDATOR_STACK: usize = 8 << 20;

fn run(format: Format, content: &str) -> Vec<Finding> {
    match format {
        Format::Json => json::check(content),
        Format::Jsonl => jsonl::check(content),
        Format::Yaml => yaml::check(content),
        Format::Toml => toml::check(content),
        Format::Python => python::check(content),
        Format::Latex => latex::check(content),
        Format::Markdown => markdown::check(content),
        Format::Xml => xml::check(content),
        Format::Html => html::check(content),
        Format::Text => Vec::new(),
    }
}

/// Validates raw bytes: content that is not UTF-8 gets one error at the first bad byte (its line
/// and column counted in characters of the valid prefix) instead of being checked further.
pub fn validate_bytes(
    bytes: &[u8],
    format_hint: Option<&str>,
    target_path: Option<&str>,
) -> ValidationReport {
    match std::str::from_utf8(bytes) {
        Ok(content) => validate(content, format_hint, target_path),
        Err(err) => {
            let valid_up_to = err.valid_up_to();
            // The prefix is valid UTF-8 by construction, so lossy decoding changes nothing.
            let prefix = String::from_utf8_lossy(bytes.get(..valid_up_to).unwrap_or_default());
            let bad = bytes
                .get(valid_up_to)
                .map(|b| format!("0x{b:02x}"))
                .unwrap_or_default();
            let sample = bytes.get(..bytes.len().min(4096)).unwrap_or_default();
            let (format, chosen_by) =
                detect(&String::from_utf8_lossy(sample), format_hint, target_path);
            let finding = Finding::error(
                prefix.len(),
                format!(
                    "content is not valid UTF-8: invalid byte {bad} at byte offset {valid_up_to}; \
                     nothing else was checked"
                ),
            );
            report(&prefix, format, &chosen_by, vec![finding])
        }
    }
}

/// Picks the format and says how: "format_hint", "target_path", "content" or "nothing matched".
fn detect(content: &str, format_hint: Option<&str>, target_path: Option<&str>) -> (Format, String) {
    let mut note = String::new();
    if let Some(hint) = format_hint.filter(|h| !h.trim().is_empty()) {
        match Format::from_alias(hint) {
            Some(format) => return (format, "format_hint".to_owned()),
            None => note = format!("; format_hint {:?} not recognised", truncate(hint, 32)),
        }
    }
    if let Some(format) = target_path.and_then(Format::from_path) {
        return (format, format!("target_path extension{note}"));
    }
    match sniff(content) {
        Some(format) => (format, format!("content{note}")),
        None => (Format::Text, format!("nothing matched{note}")),
    }
}

/// Recognises a format from the first few kilobytes; `None` means plain text.
fn sniff(content: &str) -> Option<Format> {
    let head = prefix_at_char_boundary(content, 4096);
    let trimmed = head.trim_start_matches('\u{feff}').trim_start();
    let lower_start: String = trimmed
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower_start.starts_with("<!doctype html") || lower_start.starts_with("<html") {
        return Some(Format::Html);
    }
    if trimmed.starts_with('<') {
        let lower = trimmed.to_ascii_lowercase();
        if lower.contains("<html") || lower.contains("<body") || lower.contains("<div") {
            return Some(Format::Html);
        }
        return Some(Format::Xml);
    }
    let first_line = trimmed.lines().next().unwrap_or("").trim();
    // `[section]` then `key = value` is TOML; `["a"]` alone is a JSON array.
    if looks_like_toml_table(first_line)
        && trimmed
            .lines()
            .skip(1)
            .any(|l| looks_like_toml_pair(l.trim()))
    {
        return Some(Format::Toml);
    }
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let mut lines = trimmed.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("");
        let second = lines.next().unwrap_or("");
        let first_is_value = serde_json::from_str::<serde::de::IgnoredAny>(first).is_ok();
        if first_is_value && (second.starts_with('{') || second.starts_with('[')) {
            return Some(Format::Jsonl);
        }
        return Some(Format::Json);
    }
    let latex_markers = ["\\documentclass", "\\begin{", "\\section", "\\usepackage"];
    if latex_markers.iter().any(|m| head.contains(m)) {
        return Some(Format::Latex);
    }
    if first_line == "---" {
        // Front matter followed by prose is Markdown; a bare `---` document is YAML.
        let after = trimmed.split_once('\n').map_or("", |(_, rest)| rest);
        let closing = after
            .lines()
            .position(|l| l.trim_end() == "---" || l.trim_end() == "...");
        if let Some(closing) = closing {
            let body: Vec<&str> = after.lines().skip(closing + 1).collect();
            if body.iter().any(|l| markdown_marker(l)) {
                return Some(Format::Markdown);
            }
        }
        return Some(Format::Yaml);
    }
    if first_line.starts_with("#!") && first_line.contains("python") {
        return Some(Format::Python);
    }
    let lines: Vec<&str> = head.lines().take(64).collect();
    if lines.iter().any(|l| python_marker(l)) {
        return Some(Format::Python);
    }
    if lines.iter().any(|l| markdown_marker(l)) {
        return Some(Format::Markdown);
    }
    let code: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if let Some(first) = code.first() {
        if looks_like_toml_pair(first) {
            return Some(Format::Toml);
        }
        if looks_like_yaml_pair(first) || first.starts_with("- ") {
            return Some(Format::Yaml);
        }
    }
    None
}

fn looks_like_toml_table(line: &str) -> bool {
    let inner = line.trim_start_matches('[').trim_end_matches(']');
    line.starts_with('[')
        && line.ends_with(']')
        && !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | ' '))
}

fn looks_like_toml_pair(line: &str) -> bool {
    line.split_once('=').is_some_and(|(key, value)| {
        let key = key.trim();
        !key.is_empty()
            && !value.trim().is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"'))
    })
}

fn looks_like_yaml_pair(line: &str) -> bool {
    line.split_once(':').is_some_and(|(key, rest)| {
        !key.is_empty()
            && (rest.is_empty() || rest.starts_with(' '))
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | '\''))
    })
}

fn python_marker(line: &str) -> bool {
    let starts = [
        "def ",
        "class ",
        "import ",
        "async def ",
        "@dataclass",
        "if __name__",
    ];
    starts.iter().any(|s| line.starts_with(s))
        || (line.starts_with("from ") && line.contains(" import "))
}

fn markdown_marker(line: &str) -> bool {
    line.starts_with("# ") || line.starts_with("## ") || line.starts_with("```")
}

/// The longest prefix of at most `max` bytes that ends on a character boundary.
fn prefix_at_char_boundary(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn truncate(s: &str, max_chars: usize) -> String {
    s.chars().take(max_chars).collect()
}

/// A problem found by a validator, located by byte offset into the content. Offsets are turned
/// into line and column only for the diagnostics that are returned, which keeps a run linear even
/// when a megabyte-long line holds thousands of problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) offset: usize,
    pub(crate) message: String,
    pub(crate) severity: Severity,
}

impl Finding {
    pub(crate) fn error(offset: usize, message: impl Into<String>) -> Self {
        Finding {
            offset,
            message: message.into(),
            severity: Severity::Error,
        }
    }

    pub(crate) fn warning(offset: usize, message: impl Into<String>) -> Self {
        Finding {
            offset,
            message: message.into(),
            severity: Severity::Warning,
        }
    }
}

/// Sorts, counts, caps, locates and summarises the findings of one run.
fn report(
    content: &str,
    format: Format,
    chosen_by: &str,
    mut findings: Vec<Finding>,
) -> ValidationReport {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if findings.len() > MAX_DIAGNOSTICS {
        // Errors are listed before warnings, so a report that is invalid always shows why.
        findings.sort_by_key(|f| (f.severity != Severity::Error, f.offset));
        findings.truncate(MAX_DIAGNOSTICS);
    }
    findings.sort_by_key(|f| f.offset);
    let listed = findings.len();
    let mut locator = Locator::new(content);
    let diagnostics: Vec<Diagnostic> = findings
        .into_iter()
        .take(listed)
        .map(|f| {
            let (line, col) = locator.position(f.offset);
            Diagnostic {
                line,
                col,
                message: f.message,
                severity: f.severity,
            }
        })
        .collect();
    let mut summary = if format == Format::Text {
        format!("text ({chosen_by}): not a recognised format, nothing was checked")
    } else {
        format!(
            "{} ({chosen_by}): {}",
            format.name(),
            counts(errors, warnings)
        )
    };
    if let Some(first) = diagnostics.first() {
        summary.push_str(&format!(
            "; first at line {} col {}: {}",
            first.line,
            first.col,
            truncate(&first.message, 200)
        ));
    }
    if errors + warnings > listed {
        summary.push_str(&format!("; only the first {MAX_DIAGNOSTICS} are listed"));
    }
    ValidationReport {
        valid: errors == 0,
        format: format.name().to_owned(),
        errors: diagnostics,
        summary,
    }
}

fn counts(errors: usize, warnings: usize) -> String {
    fn plural(n: usize, word: &str) -> String {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    }
    match (errors, warnings) {
        (0, 0) => "valid, no problems found".to_owned(),
        (0, w) => format!("valid, {}", plural(w, "warning")),
        (e, 0) => format!("invalid, {}", plural(e, "error")),
        (e, w) => format!("invalid, {}, {}", plural(e, "error"), plural(w, "warning")),
    }
}

/// Turns ascending byte offsets into 1-based (line, column) pairs in one forward pass, so that
/// locating many findings on one very long line stays linear.
struct Locator<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
    col: usize,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str) -> Self {
        Locator {
            text,
            offset: 0,
            line: 1,
            col: 1,
        }
    }

    /// The position of `offset`; offsets must come in ascending order.
    fn position(&mut self, offset: usize) -> (usize, usize) {
        let offset = prefix_at_char_boundary(self.text, offset).len();
        if let Some(between) = self.text.get(self.offset..offset) {
            for c in between.chars() {
                if c == '\n' {
                    self.line += 1;
                    self.col = 1;
                } else {
                    self.col += 1;
                }
            }
            self.offset = offset;
        }
        (self.line, self.col)
    }
}

/// The elements (LaTeX environments, HTML tags) open at a point of a scan, innermost last. Knows
/// in constant time whether a name is open at all, so a run of stray closers stays linear.
#[derive(Default)]
pub(crate) struct OpenStack {
    stack: Vec<(String, usize)>,
    open_counts: std::collections::HashMap<String, usize>,
}

impl OpenStack {
    pub(crate) fn push(&mut self, name: &str, offset: usize) {
        *self.open_counts.entry(name.to_owned()).or_default() += 1;
        self.stack.push((name.to_owned(), offset));
    }

    pub(crate) fn last(&self) -> Option<&(String, usize)> {
        self.stack.last()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    pub(crate) fn pop(&mut self) -> Option<(String, usize)> {
        let top = self.stack.pop()?;
        if let Some(count) = self.open_counts.get_mut(&top.0) {
            *count = count.saturating_sub(1);
        }
        Some(top)
    }

    /// Closes the innermost open `name`. Returns the elements that were open inside it (now
    /// closed with it), innermost first; `None`, leaving the stack alone, if `name` is not open.
    pub(crate) fn close(&mut self, name: &str) -> Option<Vec<(String, usize)>> {
        if self.open_counts.get(name).copied().unwrap_or(0) == 0 {
            return None;
        }
        let mut inside = Vec::new();
        while let Some(top) = self.pop() {
            if top.0 == name {
                return Some(inside);
            }
            inside.push(top);
        }
        Some(inside)
    }

    /// Everything still open, outermost first.
    pub(crate) fn into_open(self) -> Vec<(String, usize)> {
        self.stack
    }
}

/// Maps between byte offsets and 1-based (line, column) pairs; columns count characters, lines
/// end at `\n`. Built once per input in linear time; each lookup is a binary search plus a scan
/// of one line.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, line_starts }
    }

    /// The 1-based line of byte `offset`, in logarithmic time.
    pub(crate) fn position_line(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .max(1)
    }

    fn line_start(&self, line: usize) -> usize {
        self.line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(self.text.len())
    }

    /// The byte offset of 1-based `line` and 1-based byte column `col`, clamped to the text.
    pub(crate) fn offset_of_byte_col(&self, line: usize, col: usize) -> usize {
        self.line_start(line)
            .saturating_add(col.saturating_sub(1))
            .min(self.text.len())
    }

    /// The byte offset of 1-based `line` and 1-based character column `col`, clamped to the line.
    pub(crate) fn offset_of_char_col(&self, line: usize, col: usize) -> usize {
        let start = self.line_start(line);
        let rest = self.text.get(start..).unwrap_or("");
        let skip = col.saturating_sub(1);
        let within = rest
            .char_indices()
            .take_while(|&(_, c)| c != '\n')
            .nth(skip)
            .map(|(i, _)| i)
            .unwrap_or_else(|| rest.find('\n').unwrap_or(rest.len()));
        start + within
    }
}

#[cfg(test)]
mod samples;
#[cfg(test)]
mod tests;
