//! For people at a terminal: shell completions and the man page, generated from the same
//! clap definition as `--help` so they cannot drift from it.

use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install, e.g.:
    /// `resilient-write completions bash > ~/.local/share/bash-completion/completions/resilient-write`,
    /// `resilient-write completions zsh > ~/.zfunc/_resilient-write`,
    /// `resilient-write completions fish > ~/.config/fish/completions/resilient-write.fish`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `resilient-write completions SHELL`: the completion script on stdout.
pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "resilient-write", &mut out);
    write_stdout(&out)
}

/// `resilient-write man`: the man page (roff) on stdout, the subcommands in it.
pub fn man() -> ExitCode {
    let cmd = super::Cli::command();
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd.clone()).render(&mut out) {
        eprintln!("resilient-write: cannot render the man page: {e}");
        return ExitCode::FAILURE;
    }
    // Man::render lists the subcommands by name; each follows as its own section (its
    // synopsis and options as subsections) so that one page documents every flag.
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("resilient-write {}", sub.get_name());
        let man = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
        let mut text = Vec::new();
        let rendered = man
            .render_synopsis_section(&mut text)
            .and_then(|()| man.render_options_section(&mut text));
        if let Err(e) = rendered {
            eprintln!("resilient-write: cannot render the man page: {e}");
            return ExitCode::FAILURE;
        }
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let text = String::from_utf8_lossy(&text).replace("\n.SH ", "\n.SS ");
        let text = text
            .strip_prefix(".SH ")
            .map_or(text.clone(), |t| format!(".SS {t}"));
        out.extend_from_slice(
            format!(
                ".SH \"{}\"\n{}\n{text}",
                name.to_uppercase(),
                roff_escape(&about)
            )
            .as_bytes(),
        );
    }
    write_stdout(&out)
}

/// Text as a roff paragraph: `\` as `\e`, `-` as `\-`, a leading `.` or `'` kept literal.
fn roff_escape(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is the reader's choice, not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("resilient-write: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}
