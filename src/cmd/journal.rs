//! `resilient-write journal`: the journal's last rows as a table or JSON lines.

use crate::dispatch::Config;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct JournalArgs {
    /// How many rows (the newest; `--n` is an old spelling, still accepted). Default 20, or
    /// every row of the session with --session.
    #[arg(short = 'n', long = "lines", alias = "n", value_name = "N")]
    pub lines: Option<usize>,
    /// Only the rows of this agent session (its conversation id): its shell commands and
    /// native edits, and the MCP tool calls its hooks attributed to it. Oldest first.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
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
    if let Some(session) = &args.session {
        return session_rows(&service, session, &args);
    }
    let mut call = serde_json::json!({ "n": args.lines.unwrap_or(20) });
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
                        .and_then(resilient_write_core::analytics::parse_since)
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

/// `journal --session`: the rows of one agent session, oldest first, with the tool of each.
fn session_rows(service: &crate::dispatch::Service, session: &str, args: &JournalArgs) -> ExitCode {
    let mut rows = match resilient_write_core::history::session_rows(service.store(), session) {
        Ok(r) => r,
        Err(f) => {
            eprintln!("resilient-write: {f}");
            return ExitCode::FAILURE;
        }
    };
    let paths = service.store().workspaces().journal_paths();
    for r in &mut rows {
        paths.relativize_row(r);
    }
    rows.retain(|r| {
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("");
        args.mode.as_deref().is_none_or(|m| s("mode") == m)
            && args
                .path
                .as_deref()
                .is_none_or(|p| s("path") == p.trim_start_matches("./"))
            && args.since.is_none_or(|since| {
                resilient_write_core::analytics::parse_since(s("ts")).is_some_and(|t| t >= since)
            })
    });
    if let Some(n) = args.lines {
        let skip = rows.len().saturating_sub(n);
        rows.drain(..skip);
    }
    if args.json {
        for r in rows {
            println!("{}", serde_json::Value::Object(r));
        }
        return ExitCode::SUCCESS;
    }
    println!(
        "{:<27} {:<9} {:>10} {:<12} {:<20} path",
        "ts", "mode", "bytes", "sha256", "tool"
    );
    for r in rows {
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        println!(
            "{:<27} {:<9} {:>10} {:<12} {:<20} {}",
            s("ts"),
            s("mode"),
            r.get("bytes").and_then(|v| v.as_u64()).unwrap_or(0),
            s("sha256").chars().take(12).collect::<String>(),
            s("tool"),
            s("path"),
        );
    }
    ExitCode::SUCCESS
}
