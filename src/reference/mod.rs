//! The references in `docs/reference/`, rendered from the code: [`tools_md`] from the tool
//! catalogue (names, schemas, annotations, listing, declared failures and the core's
//! classification of each), [`cli_md`] from the clap definition (`Cli::command()`).
//!
//! `tests/reference.rs` renders both and fails when a checked-in file differs ([`stale`]);
//! `RW_BLESS=1 cargo test --test reference` rewrites them. The output is deterministic: no
//! time, no path of the machine, no version, no terminal width.

mod cli;
mod markdown;
mod tools;

pub use cli::cli_md;
pub use tools::{SECTIONS, tools_md};

/// The command that regenerates the references, quoted in each file and in every stale
/// message.
pub const BLESS_COMMAND: &str = "RW_BLESS=1 cargo test --test reference";

/// The line every generated file starts with.
pub fn generated_banner() -> String {
    format!(
        "<!-- Generated from the code by `{BLESS_COMMAND}`; do not edit: edit the code and \
         regenerate. -->"
    )
}

/// `None` when `checked_in` (the file `name` on disk) is `rendered`; else the message a stale
/// test fails with: the file, the first line that differs on each side, and the command that
/// regenerates it.
pub fn stale(name: &str, checked_in: &str, rendered: &str) -> Option<String> {
    if checked_in == rendered {
        return None;
    }
    let (old, new): (Vec<&str>, Vec<&str>) =
        (checked_in.lines().collect(), rendered.lines().collect());
    let at = old
        .iter()
        .zip(&new)
        .position(|(a, b)| a != b)
        .unwrap_or(old.len().min(new.len()));
    let line = |lines: &[&str]| {
        lines
            .get(at)
            .map_or_else(|| "(end of file)".to_string(), |l| format!("{l:?}"))
    };
    Some(format!(
        "{name} is stale: run `{BLESS_COMMAND}`\n  first difference at line {}\n  checked in: {}\n  \
         generated:  {}\n  ({} lines checked in, {} generated)",
        at + 1,
        line(&old),
        line(&new),
        old.len(),
        new.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_catches_a_one_line_difference_and_names_the_line_and_the_command() {
        let rendered = "# Title\n\nline a\nline b\n";
        assert_eq!(stale("x.md", rendered, rendered), None);
        let edited = "# Title\n\nline a\nline B\n";
        let msg = stale("docs/reference/x.md", edited, rendered).unwrap();
        assert!(
            msg.starts_with(
                "docs/reference/x.md is stale: run `RW_BLESS=1 cargo test --test reference`"
            ),
            "{msg}"
        );
        assert!(msg.contains("line 4"), "{msg}");
        assert!(
            msg.contains("\"line B\"") && msg.contains("\"line b\""),
            "{msg}"
        );
    }

    #[test]
    fn stale_catches_a_missing_or_added_line_and_a_trailing_newline() {
        let rendered = "a\nb\n";
        let msg = stale("x.md", "a\n", rendered).unwrap();
        assert!(
            msg.contains("line 2") && msg.contains("(end of file)"),
            "{msg}"
        );
        assert!(stale("x.md", "a\nb\nc\n", rendered).is_some());
        assert!(stale("x.md", "a\nb", rendered).is_some());
    }

    #[test]
    fn both_references_are_deterministic_and_start_with_the_banner() {
        for render in [tools_md, cli_md] {
            let (a, b) = (render().unwrap(), render().unwrap());
            assert_eq!(a, b);
            assert!(a.starts_with(&generated_banner()), "{}", &a[..80]);
            assert!(a.ends_with('\n') && !a.ends_with("\n\n"));
        }
    }
}
