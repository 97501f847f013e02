//! `resilient-write analytics`: the `analytics` tool's summary as a table or JSON.

use crate::dispatch::Config;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct AnalyticsCliArgs {
    /// Only rows at or after this time: a duration back from now (30m, 24h, 7d), a date
    /// (2026-12-01, midnight UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN", value_parser = super::since::parse)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only this chunk session in the sessions breakdown.
    #[arg(long)]
    pub session: Option<String>,
    /// Print the analysis as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut config: Config, args: AnalyticsCliArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    let a = match resilient_write_core::analytics::query::query(
        service.store().pipeline().journal(),
        service.store().workspaces().journal_paths(),
        args.since
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
            .as_deref(),
        args.session,
    ) {
        Ok(a) => a,
        Err(f) => {
            eprintln!("resilient-write: {f}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&a) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("resilient-write: {e}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    let p = &a.period;
    println!(
        "writes {}  paths {}  bytes {}  corrupt lines {}",
        a.total_writes, a.unique_paths, a.total_bytes_written, a.corrupt_lines
    );
    println!(
        "period {} .. {} ({:.1} s)  {:.2} writes/min  {:.0} bytes/write  peak minute {}",
        p.first_entry.as_deref().unwrap_or("-"),
        p.last_entry.as_deref().unwrap_or("-"),
        p.duration_seconds,
        a.write_velocity.writes_per_minute,
        a.write_velocity.avg_bytes_per_write,
        a.write_velocity.peak_minute.as_deref().unwrap_or("-")
    );
    for (title, map) in [("mode", &a.by_mode), ("caller", &a.by_caller)] {
        println!("\n{title:<24} {:>10}", "writes");
        for (k, n) in map {
            println!("{k:<24} {n:>10}");
        }
    }
    println!(
        "\n{:>8} {:>12} {:<27} hot path",
        "writes", "bytes", "last write"
    );
    for h in &a.hot_paths {
        // Relative to the home root; a file of another root is shown with it.
        let path = match &h.root {
            Some(root) => format!("{root}/{}", h.path),
            None => h.path.clone(),
        };
        println!(
            "{:>8} {:>12} {:<27} {path}",
            h.write_count, h.total_bytes, h.last_write
        );
    }
    if !a.sessions.is_empty() {
        println!(
            "\n{:<24} {:>8} {:>8} {:>10}",
            "session", "chunks", "composes", "seconds"
        );
        for (name, s) in &a.sessions {
            println!(
                "{name:<24} {:>8} {:>8} {:>10.1}",
                s.chunk_writes, s.composes, s.duration_seconds
            );
        }
    }
    if !a.agent_sessions.is_empty() {
        println!(
            "\n{} agent session(s) (undo one with `restore --session ID`)\n{:<38} {:<12} {:>6} {:>6} {:>6} {:>6} {:>6} last write",
            a.agent_sessions.len(),
            "agent session",
            "agent",
            "rows",
            "files",
            "edits",
            "shell",
            "mcp"
        );
        for (id, s) in &a.agent_sessions {
            println!(
                "{id:<38} {:<12} {:>6} {:>6} {:>6} {:>6} {:>6} {}",
                s.caller,
                s.writes,
                s.files,
                s.native_edits,
                s.shell_changes,
                s.mcp_writes,
                s.last_write
            );
        }
    }
    ExitCode::SUCCESS
}
