//! `resilient-write journal`: the journal's last rows as a table or JSON lines.

use crate::dispatch::Config;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct JournalArgs {
    /// How many rows (the newest; `--n` is an old spelling, still accepted).
    #[arg(
        short = 'n',
        long = "lines",
        alias = "n",
        value_name = "N",
        default_value_t = 20
    )]
    pub lines: usize,
    /// Only rows at or after this time: a duration back from now (30m, 24h, 7d), a date
    /// (2026-12-01, midnight UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN", value_parser = super::since::parse)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only rows for this file (relative to the workspace root or the working directory, or
    /// absolute).
    #[arg(long)]
    pub path: Option<String>,
    /// Only rows with this mode.
    #[arg(long)]
    pub mode: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut config: Config, args: JournalArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    let mut call = serde_json::json!({ "n": args.lines });
    if let Some(p) = args.path {
        call["filter_path"] = p.into();
    }
    if let Some(m) = args.mode {
        call["filter_mode"] = m.into();
    }
    match service.call("journal_tail", call) {
        Ok(v) => {
            let mut rows = v["entries"].as_array().cloned().unwrap_or_default();
            // Rows are appended in time order, so the newest N at or after --since are the
            // newest N rows less those before it.
            if let Some(since) = args.since {
                rows.retain(|r| {
                    r["ts"]
                        .as_str()
                        .and_then(crate::analytics::parse_since)
                        .is_some_and(|t| t >= since)
                });
            }
            if args.json {
                for r in rows {
                    println!("{r}");
                }
            } else {
                println!(
                    "{:<27} {:<9} {:>10} {:<12} path",
                    "ts", "mode", "bytes", "sha256"
                );
                for r in rows {
                    let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
                    // Relative to the workspace root; with several roots, the row names it.
                    let path = match r["root"].as_str() {
                        Some(root) => format!("{} ({root})", s("path")),
                        None => s("path"),
                    };
                    println!(
                        "{:<27} {:<9} {:>10} {:<12} {path}",
                        s("ts"),
                        s("mode"),
                        r["bytes"].as_u64().unwrap_or(0),
                        s("sha256").chars().take(12).collect::<String>(),
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(env) => {
            eprintln!(
                "resilient-write: {}",
                env.context
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("failed")
            );
            ExitCode::FAILURE
        }
    }
}
