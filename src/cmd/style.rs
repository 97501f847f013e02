//! Colour for people's terminals. Text is styled with `anstyle` and printed through
//! `anstream`, which strips the styling when stdout is not a terminal, when `NO_COLOR` is
//! set (to anything non-empty) or `CLICOLOR=0`; `CLICOLOR_FORCE=1` keeps it in a pipe.
//! `NO_COLOR` wins over `CLICOLOR_FORCE`.

use anstyle::{AnsiColor, Style};

/// A problem that keeps the exit status non-zero.
pub const PROBLEM: Style = AnsiColor::Red.on_default().bold();
/// Worth a look, not a failure.
pub const WARNING: Style = AnsiColor::Yellow.on_default();
/// Healthy, or a step that behaved.
pub const GOOD: Style = AnsiColor::Green.on_default();
/// A call made, a heading.
pub const CALL: Style = AnsiColor::Cyan.on_default();
/// Emphasis: a step number, a tool name.
pub const BOLD: Style = Style::new().bold();

/// `text` wrapped in `style`'s escape codes (stripped on output where colour is off).
pub fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}
