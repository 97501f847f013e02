//! Python through Ruff's parser (`ruff_python_parser`), a complete, error-recovering parser for
//! Python 3 up to 3.15: every syntax error it finds, not only the first, each located. Syntax newer
//! than [`TARGET`] (Python 3.12, the original's runtime) is a warning, not an error.
//!
//! Stack safety: the parser grows its own stack while parsing, but the tree it returns would be
//! freed recursively, and a pathological input (`- - - ... x`, a million-term `1+1+...`, `a.b.c...`)
//! nests as deep as the input is long: dropping it overflows any fixed stack and aborts the
//! process. So the tree is taken apart first, bottom-up, by a walk that grows its stack on demand
//! (as the parser does); each node is then dropped with only leaves below it.

use super::Finding;
use ruff_python_ast::visitor::transformer::{self, Transformer};
use ruff_python_ast::{Expr, ExprNoneLiteral, Mod, Pattern, PatternMatchAs, Stmt, StmtPass};
use ruff_python_parser::{Mode, ParseOptions};

/// The Python version whose syntax is accepted without comment.
const TARGET: ruff_python_ast::PythonVersion = ruff_python_ast::PythonVersion::PY312;

/// When less than this much stack is left, the walk continues on a new segment of
/// [`STACK_SEGMENT`] bytes (a debug build's `walk_expr` frame is several kilobytes).
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 4 << 20;

pub(super) fn check(content: &str) -> Vec<Finding> {
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
    free_without_deep_recursion(parsed.into_syntax());
    findings
}

fn free_without_deep_recursion(syntax: Mod) {
    let mut body = match syntax {
        Mod::Module(module) => module.body,
        Mod::Expression(expression) => {
            let mut expr = *expression.body;
            Dismantle.visit_expr(&mut expr);
            return;
        }
    };
    Dismantle.visit_body(&mut body);
}

/// Replaces every node by a leaf after its children were replaced, so each drop is shallow.
struct Dismantle;

impl Transformer for Dismantle {
    fn visit_stmt(&self, stmt: &mut Stmt) {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            transformer::walk_stmt(self, stmt);
        });
        *stmt = Stmt::Pass(StmtPass {
            node_index: Default::default(),
            range: Default::default(),
        });
    }

    fn visit_expr(&self, expr: &mut Expr) {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            transformer::walk_expr(self, expr);
        });
        *expr = Expr::NoneLiteral(ExprNoneLiteral::default());
    }

    fn visit_pattern(&self, pattern: &mut Pattern) {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            transformer::walk_pattern(self, pattern);
        });
        *pattern = Pattern::MatchAs(PatternMatchAs {
            node_index: Default::default(),
            range: Default::default(),
            pattern: None,
            name: None,
        });
    }
}
