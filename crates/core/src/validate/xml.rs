//! XML 1.0 well-formedness through `roxmltree`: one root element, matching tags, quoted
//! attributes, known entities, namespaces. roxmltree refuses entity-expansion bombs and does not
//! fetch external DTDs (nothing here does I/O).

use super::{Finding, LineIndex};

pub(super) fn check(content: &str) -> Vec<Finding> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let Err(err) = roxmltree::Document::parse_with_options(content, options) else {
        return Vec::new();
    };
    let pos = err.pos();
    let offset = LineIndex::new(content).offset_of_char_col(pos.row as usize, pos.col as usize);
    let full = err.to_string();
    let message = match full.rfind(" at ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    };
    vec![Finding::error(offset, message)]
}
