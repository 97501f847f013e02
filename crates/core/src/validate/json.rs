//! JSON (RFC 8259) through `serde_json`: the first syntax error, located; serde_json's nesting
//! limit (128) keeps deep input from exhausting the stack.

use super::{Finding, LineIndex};
use serde::de::IgnoredAny;

pub(super) fn check(content: &str) -> Vec<Finding> {
    // A byte-order mark is not JSON, but editors write one; say so rather than fail obscurely.
    let (body, shift, mut findings) = match content.strip_prefix('\u{feff}') {
        Some(rest) => (
            rest,
            '\u{feff}'.len_utf8(),
            vec![Finding::warning(0, "byte-order mark before the JSON text")],
        ),
        None => (content, 0, Vec::new()),
    };
    if let Some((offset, message)) = first_error(body) {
        findings.push(Finding::error(offset + shift, message));
    }
    findings
}

/// The byte offset and message of the first syntax error in one JSON text, if any.
pub(super) fn first_error(text: &str) -> Option<(usize, String)> {
    let err = serde_json::from_str::<IgnoredAny>(text).err()?;
    // serde_json counts columns in bytes and reports column 0 for an error at a line's start.
    let index = LineIndex::new(text);
    let offset = index.offset_of_byte_col(err.line(), err.column());
    Some((offset, message_without_position(&err)))
}

/// serde_json's message without its trailing "at line L column C" (we report those separately).
fn message_without_position(err: &serde_json::Error) -> String {
    let full = err.to_string();
    match full.rfind(" at line ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    }
}
