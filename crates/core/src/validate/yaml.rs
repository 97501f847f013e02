//! YAML 1.2 through `serde-saphyr`: syntax errors, duplicate mapping keys (errors, as the spec
//! leaves a duplicated key's meaning undefined) and unknown aliases, located by line and column.
//! All documents of a multi-document stream are checked. saphyr's budgets bound alias expansion
//! and nesting, so hostile input costs bounded time and memory; the price is that collections
//! nested deeper than 64 levels are reported as too deep to check (saphyr recurses per level).

use super::{Finding, LineIndex};
use serde::de::IgnoredAny;

pub(super) fn check(content: &str) -> Vec<Finding> {
    first_error(content)
        .map(|(offset, message)| vec![Finding::error(offset, message)])
        .unwrap_or_default()
}

/// saphyr's default budget caps nodes and events at fixed counts (250,000 nodes), which a
/// legitimate multi-megabyte file exceeds. Without aliases every node and event costs at least a
/// byte of input, so caps proportional to the input refuse nothing real; alias expansion, the
/// actual amplification risk, stays bounded by the default anchor and alias budgets.
fn options(content: &str) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = budget.max_nodes.max(content.len().saturating_add(16));
    budget.max_events = budget
        .max_events
        .max(content.len().saturating_mul(2).saturating_add(16));
    budget.max_documents = budget.max_documents.max(content.len() / 4);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.with_snippet = false;
    options.emit_comments = false;
    options
}

/// The byte offset and message of the first problem in a YAML stream, if any.
pub(super) fn first_error(content: &str) -> Option<(usize, String)> {
    let err =
        serde_saphyr::from_multiple_with_options::<IgnoredAny>(content, options(content)).err()?;
    let offset = err.location().map_or(0, |location| {
        let line = usize::try_from(location.line()).unwrap_or(usize::MAX);
        let col = usize::try_from(location.column()).unwrap_or(usize::MAX);
        LineIndex::new(content).offset_of_char_col(line, col)
    });
    Some((offset, clean_message(&err.without_snippet().to_string())))
}

/// saphyr's message without the position prefix we report separately, and without advice that
/// names its Rust API (meaningless to the agent reading it).
fn clean_message(full: &str) -> String {
    let first_line = full.lines().next().unwrap_or(full);
    let mut message = first_line.strip_prefix("error: ").unwrap_or(first_line);
    if let Some(rest) = message.strip_prefix("line ")
        && let Some((_, after)) = rest.split_once(": ")
    {
        message = after;
    }
    if let Some(cut) = message.rfind(" at line ") {
        message = &message[..cut];
    }
    let message = message
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(message)
        .split("; use from_str_multiple")
        .next()
        .unwrap_or(message);
    if message.starts_with("budget breached") {
        return format!("too large, too deep or too alias-heavy to check safely ({message})");
    }
    message.trim().to_owned()
}
