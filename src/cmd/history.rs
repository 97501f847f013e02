//! `resilient-write history`, `restore`, `gc` and `recover` for people: tables over the history tools.

use crate::dispatch::Config;
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct HistoryCliArgs {
    /// The file.
    pub path: String,
    /// Most versions to show.
    #[arg(short, long, default_value_t = 50)]
    pub n: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RestoreCliArgs {
    /// The file.
    pub path: String,
    /// The version from `history`: its SHA-256, a prefix of at least 8 hex digits that only
    /// one version has (as the table prints it), or a journal_id (32 characters).
    #[arg(long = "to", value_name = "SHA")]
    pub to: String,
    /// Show the diff from the current content to that version and write nothing.
    #[arg(long)]
    pub diff: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Policy file with the `history:` section (default: .resilient_write/policy.yaml).
    #[arg(long, env = "RW_POLICY_FILE", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Report what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("resilient-write: {msg}");
    ExitCode::FAILURE
}

fn message(env: &crate::envelope::Envelope) -> String {
    env.context
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("failed")
        .to_string()
}

pub fn history(mut config: Config, args: HistoryCliArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(svc) = super::service(config) else {
        return ExitCode::from(2);
    };
    let v = match svc.call(
        "history",
        json!({"path": args.path, "limit": args.n.clamp(1, 10_000)}),
    ) {
        Ok(v) => v,
        Err(env) => return fail(&message(&env)),
    };
    if args.json {
        println!("{v}");
        return ExitCode::SUCCESS;
    }
    println!(
        "{:<27} {:<9} {:>10} {:<16} {:<7} {:<32} tx",
        "ts", "mode", "bytes", "sha256", "stored", "journal_id"
    );
    for r in v["versions"].as_array().into_iter().flatten() {
        let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
        println!(
            "{:<27} {:<9} {:>10} {:<16} {:<7} {:<32} {}",
            s("ts"),
            s("mode"),
            r["bytes"].as_u64().unwrap_or(0),
            s("sha256").chars().take(16).collect::<String>(),
            if r["stored"] == json!(true) {
                "yes"
            } else {
                "no"
            },
            s("journal_id"),
            s("tx_id")
        );
    }
    ExitCode::SUCCESS
}

pub fn restore(mut config: Config, args: RestoreCliArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(svc) = super::service(config) else {
        return ExitCode::from(2);
    };
    svc.set_caller("cli");
    let mut call = json!({"path": args.path, "dry_run": args.diff});
    let hex = args.to.bytes().all(|b| b.is_ascii_hexdigit());
    if hex && args.to.len() >= 8 && args.to.len() != 32 {
        call["to_sha256"] = json!(args.to);
    } else {
        call["journal_id"] = json!(args.to);
    }
    match svc.call("restore", call) {
        Ok(v) => {
            if args.diff {
                print!("{}", v["diff"].as_str().unwrap_or(""));
            } else {
                let f = &v["files"][0];
                if f["unchanged"] == json!(true) {
                    println!("{}: already at {}", args.path, args.to);
                } else {
                    println!(
                        "{}: restored to {} (journal_id {}; undo with --to {})",
                        args.path,
                        f["sha256"].as_str().unwrap_or(""),
                        f["journal_id"].as_str().unwrap_or(""),
                        f["prev_sha256"].as_str().unwrap_or("")
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(env) => fail(&message(&env)),
    }
}

pub fn gc(mut config: Config, args: GcArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(svc) = super::service(config) else {
        return ExitCode::from(2);
    };
    let policy_path = match args.policy {
        Some(p) if p.is_absolute() => p,
        Some(p) => svc.state_dir().parent().map(|r| r.join(&p)).unwrap_or(p),
        None => svc.state_dir().join("policy.yaml"),
    };
    let policy = match crate::policy::Policy::load(&policy_path) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    let retention = match crate::history::Retention::from_policy(policy.history.as_ref()) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{}: {e}", policy_path.display())),
    };
    let Some(objects) = svc.pipeline().objects() else {
        return fail("no object store");
    };
    match crate::history::gc(
        svc.pipeline().journal(),
        &svc.workspaces().journal_paths(),
        objects,
        &retention,
        args.dry_run,
    ) {
        Ok(r) => {
            println!(
                "{} {} object(s), {} bytes; kept {} object(s), {} bytes",
                if r.dry_run { "would remove" } else { "removed" },
                r.removed,
                r.removed_bytes,
                r.kept,
                r.kept_bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("gc: {e}")),
    }
}

pub fn recover(mut config: Config) -> ExitCode {
    config.store.sweep_on_start = false;
    // Service::start recovers; report what it did.
    let Some(svc) = super::service(config) else {
        return ExitCode::from(2);
    };
    let r = svc.recovery().cloned().unwrap_or_default();
    for line in r.summary() {
        println!("{line}");
    }
    if !r.open.is_empty() {
        println!(
            "{} transaction(s) open in live processes, left alone",
            r.open.len()
        );
    }
    if r.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
