//! YAML 1.2 through `serde-saphyr`: syntax errors, duplicate mapping keys (errors, as the spec
//! leaves a duplicated key's meaning undefined) and unknown aliases, located by line and column.
//! All documents of a multi-document stream are checked. saphyr's budgets bound alias expansion
//! and nesting, so hostile input costs bounded time and memory.

use super::{Finding, LineIndex};
use serde::de::IgnoredAny;

pub(super) fn check(content: &str) -> Vec<Finding> {
    first_error(content)
        .map(|(offset, message)| vec![Finding::error(offset, message)])
        .unwrap_or_default()
}

/// The byte offset and message of the first problem in a YAML stream, if any.
pub(super) fn first_error(content: &str) -> Option<(usize, String)> {
    let err = serde_saphyr::from_multiple::<IgnoredAny>(content).err()?;
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
    let message = message
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(message)
        .split("; use from_str_multiple")
        .next()
        .unwrap_or(message);
    message.trim().to_owned()
}
