//! `docs/reference/cli.md`: every subcommand and flag, rendered by walking the clap definition
//! (`Cli::command()`), never from `--help` text (which wraps at the terminal's width).

use super::markdown::{anchor, cell, one_line, paragraphs};
use crate::cmd::Cli;
use clap::{Arg, ArgAction, Command, CommandFactory};
use std::fmt::Write;

/// The whole of `docs/reference/cli.md`.
pub fn cli_md() -> Result<String, String> {
    let root = Cli::command();
    let mut out = super::generated_banner();
    out += "\n\n# Command-line reference\n\n";
    out += &paragraphs(
        "Every subcommand of `resilient-write` and every option, rendered from the clap \
         definition (the one `--help`, the completions and the man page come from). Every \
         command also takes `-h` (summary) and `--help` (in full); the top level takes `-V`, \
         `--version`. An option that names an environment variable reads it when the option \
         is not given.",
    );
    out += "\n\n## Contents\n\n";
    let mut commands = Vec::new();
    collect(&root, "", &mut commands);
    for (path, _) in &commands {
        let _ = writeln!(out, "- [`{path}`](#{})", anchor(path));
    }
    for (path, cmd) in &commands {
        out += &command(path, cmd);
    }
    Ok(out.trim_end().to_string() + "\n")
}

/// `cmd` and its visible subcommands, depth first, each with its full name.
fn collect<'a>(cmd: &'a Command, parent: &str, out: &mut Vec<(String, &'a Command)>) {
    let path = if parent.is_empty() {
        cmd.get_name().to_string()
    } else {
        format!("{parent} {}", cmd.get_name())
    };
    out.push((path.clone(), cmd));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, &path, out);
    }
}

fn command(path: &str, cmd: &Command) -> String {
    let mut out = format!("\n## `{path}`\n\n");
    let about = cmd
        .get_long_about()
        .or_else(|| cmd.get_about())
        .map(|a| paragraphs(&a.to_string()))
        .unwrap_or_default();
    if !about.is_empty() {
        out += &about;
        out += "\n\n";
    }
    let aliases: Vec<String> = cmd
        .get_visible_aliases()
        .map(|a| format!("`{a}`"))
        .collect();
    if !aliases.is_empty() {
        let _ = write!(out, "Also: {}.\n\n", aliases.join(", "));
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| {
            let name = format!("{path} {}", s.get_name());
            format!("[`{}`](#{})", s.get_name(), anchor(&name))
        })
        .collect();
    if !subs.is_empty() {
        let _ = write!(out, "Subcommands: {}.\n\n", subs.join(", "));
    }
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    for (title, args) in [("Arguments", positionals), ("Options", options)] {
        if args.is_empty() {
            continue;
        }
        let _ = write!(out, "{title}:\n\n");
        for a in args {
            out += &arg(a);
        }
        out += "\n";
    }
    if cmd.get_arguments().all(|a| a.is_hide_set()) && subs.is_empty() {
        out += "No options.\n";
    }
    out.trim_end().to_string() + "\n"
}

/// The value placeholder of `a`: `<DIR>`, or its id in capitals.
fn value_name(a: &Arg) -> String {
    let names: Vec<String> = a
        .get_value_names()
        .map(|n| n.iter().map(|n| format!("<{n}>")).collect())
        .unwrap_or_else(|| vec![format!("<{}>", a.get_id().as_str().to_uppercase())]);
    names.join(" ")
}

fn repeatable(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::Append | ArgAction::Count)
        || a.get_num_args().is_some_and(|n| n.max_values() > 1)
}

/// One argument as a list item: its spelling, then its help, environment variable, default
/// and possible values.
fn arg(a: &Arg) -> String {
    let takes_value = a.get_action().takes_values();
    let spelling = if a.is_positional() {
        value_name(a)
    } else {
        let mut names: Vec<String> = a.get_short().map(|s| format!("-{s}")).into_iter().collect();
        if let Some(l) = a.get_long() {
            names.push(format!("--{l}"));
        }
        let mut s = names.join(", ");
        if takes_value {
            s = format!("{s} {}", value_name(a));
        }
        s
    };
    let mut notes = Vec::new();
    if a.is_required_set() {
        notes.push("required".to_string());
    }
    if repeatable(a) {
        notes.push("repeatable".to_string());
    }
    if a.is_global_set() {
        notes.push("global".to_string());
    }
    let ellipsis = if a.is_positional() && repeatable(a) {
        "..."
    } else {
        ""
    };
    let mut out = format!("- `{spelling}{ellipsis}`");
    if !notes.is_empty() {
        let _ = write!(out, " ({})", notes.join(", "));
    }
    let help = a
        .get_long_help()
        .or_else(|| a.get_help())
        .map(|h| one_line(&h.to_string()))
        .unwrap_or_default();
    if !help.is_empty() {
        let _ = write!(out, ": {help}");
    }
    out += "\n";
    if let Some(env) = a.get_env() {
        let _ = writeln!(out, "  - Environment: `{}`", env.to_string_lossy());
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if !defaults.is_empty() {
        let _ = writeln!(out, "  - Default: {}", defaults.join(", "));
    }
    if takes_value {
        let values: Vec<String> = a
            .get_possible_values()
            .into_iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| match v.get_help() {
                Some(h) => format!("`{}` ({})", v.get_name(), cell(&h.to_string())),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        if !values.is_empty() {
            let _ = writeln!(out, "  - Values: {}", values.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_and_long_option_is_in_the_reference() {
        let md = cli_md().unwrap();
        let root = Cli::command();
        for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
            let heading = format!("## `resilient-write {}`", sub.get_name());
            assert!(md.contains(&heading), "{heading}");
            for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(l) = a.get_long() {
                    assert!(md.contains(&format!("--{l}")), "{} --{l}", sub.get_name());
                }
            }
        }
        assert!(md.contains("Environment: `RW_STATE_DIR`"));
    }

    #[test]
    fn hidden_options_are_left_out() {
        let md = cli_md().unwrap();
        let root = Cli::command();
        for sub in root.get_subcommands() {
            for a in sub.get_arguments().filter(|a| a.is_hide_set()) {
                if let Some(l) = a.get_long() {
                    let visible_elsewhere = root
                        .get_subcommands()
                        .flat_map(|s| s.get_arguments())
                        .chain(root.get_arguments())
                        .any(|b| !b.is_hide_set() && b.get_long() == Some(l));
                    assert!(
                        visible_elsewhere || !md.contains(&format!("`--{l}")),
                        "--{l}"
                    );
                }
            }
        }
    }
}
