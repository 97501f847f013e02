//! Python through Ruff's parser (`ruff_python_parser`), a complete, error-recovering parser for
//! Python 3 up to 3.15: every syntax error it finds, not only the first, each located. Syntax newer
//! than [`TARGET`] (Python 3.12, the original's runtime) is a warning, not an error.
//!
//! Stack safety: the parser grows its own stack while parsing, but the syntax tree it returns is
//! freed recursively, and a pathological input (`- - - - ... x`, a million-term `1+1+...`) nests
//! as deep as the input is long. Every tree node covers at least one byte of source, so parsing
//! and dropping run on a fresh stack sized from the input length. The stack is reserved, not
//! touched: ordinary code uses a few kilobytes of it.

use super::Finding;
use ruff_python_parser::{Mode, ParseOptions};

/// The Python version whose syntax is accepted without comment.
const TARGET: ruff_python_ast::PythonVersion = ruff_python_ast::PythonVersion::PY312;

/// Stack reserved per byte of input: measured at 32-64 bytes per nesting level in the deepest
/// patterns (release and debug builds), doubled and more for margin.
const STACK_BYTES_PER_INPUT_BYTE: usize = 256;
const STACK_BASE: usize = 1 << 20;

pub(super) fn check(content: &str) -> Vec<Finding> {
    let stack = STACK_BASE.saturating_add(content.len().saturating_mul(STACK_BYTES_PER_INPUT_BYTE));
    stacker::grow(stack, || parse(content))
}

fn parse(content: &str) -> Vec<Finding> {
    let options = ParseOptions::from(Mode::Module).with_target_version(TARGET);
    let parsed = ruff_python_parser::parse_unchecked(content, options);
    let mut findings: Vec<Finding> = parsed
        .errors()
        .iter()
        .map(|err| Finding::error(err.location.start().to_usize(), err.error.to_string()))
        .collect();
    findings.extend(
        parsed
            .unsupported_syntax_errors()
            .iter()
            .map(|err| Finding::warning(err.range.start().to_usize(), err.to_string())),
    );
    // Dropped here, on the grown stack: freeing a deep tree recurses as deep as it nests.
    drop(parsed);
    findings
}
