//! `resilient-write validate FILE...`: the format validators for people and hooks. Each file is
//! checked as its `--format` (or its extension, or its content) says, and every diagnostic is
//! printed as `file:line:col severity message`; `--json` prints the reports instead. Nothing is
//! written. Exit status: 1 when any file is invalid, else 2 when a file could not be read,
//! else 0.

use clap::Args;
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files to check (`-` reads standard input; give --format for it).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Check every file as this format (json, jsonl, yaml, toml, python, latex, markdown, xml,
    /// html, or an extension) instead of guessing from its name and content.
    #[arg(long, value_name = "F")]
    pub format: Option<String>,
    /// Print one JSON document with every report instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ValidateArgs) -> ExitCode {
    let mut invalid = false;
    let mut unreadable = false;
    let mut reports = Vec::new();
    for file in &args.files {
        let stdin = file.as_os_str() == "-";
        let shown = if stdin {
            "<stdin>".to_string()
        } else {
            file.display().to_string()
        };
        let bytes = if stdin {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b).map(|_| b)
        } else {
            std::fs::read(file)
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                unreadable = true;
                eprintln!("resilient-write validate: {shown}: {e}");
                reports.push(json!({"file": shown, "error": e.to_string()}));
                continue;
            }
        };
        let path = (!stdin).then(|| file.to_string_lossy().to_string());
        let report = resilient_write_core::validate::validate_bytes(
            &bytes,
            args.format.as_deref(),
            path.as_deref(),
        );
        invalid |= !report.valid;
        if args.json {
            reports.push(json!({"file": shown, "report": report}));
            continue;
        }
        for d in &report.errors {
            let severity = match d.severity {
                resilient_write_core::validate::Severity::Error => "error",
                resilient_write_core::validate::Severity::Warning => "warning",
            };
            println!("{shown}:{}:{}  {severity:<7}  {}", d.line, d.col, d.message);
        }
        println!(
            "{shown}: {} ({})",
            if report.valid { "valid" } else { "INVALID" },
            report.summary
        );
    }
    if args.json {
        let doc = json!({"valid": !invalid && !unreadable, "files": reports});
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    }
    if invalid {
        ExitCode::FAILURE
    } else if unreadable {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
