//! `resilient-write history`, `restore`, `gc` and `recover` for people: tables over the history tools.

use crate::dispatch::{Config, Service};
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct HistoryCliArgs {
    /// The file.
    pub path: String,
    /// Most versions to show (the newest; `--n` is an old spelling, still accepted).
    #[arg(
        short = 'n',
        long = "lines",
        alias = "n",
        value_name = "N",
        default_value_t = 50
    )]
    pub lines: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RestoreCliArgs {
    /// The file (not with --tx or --session).
    #[arg(required_unless_present_any = ["tx", "session"])]
    pub path: Option<String>,
    /// The version from `history`: its SHA-256, a prefix of at least 8 hex digits that only
    /// one version has (as the table prints it), or a journal_id.
    #[arg(long = "to", value_name = "SHA", required_unless_present_any = ["tx", "session"])]
    pub to: Option<String>,
    /// Put every file this transaction wrote back to its content before it, as one new
    /// transaction (undo it with --tx and the transaction it prints).
    #[arg(long = "tx", value_name = "TX_ID", conflicts_with_all = ["path", "to", "diff", "session"])]
    pub tx: Option<String>,
    /// Undo an agent session: every file it changed (through the MCP tools, the agent's own
    /// edits or its shell commands) back to its content before the session's first change,
    /// files it created removed, as one transaction. ID is the agent's session (conversation)
    /// id, as `journal --session` and `analytics` show it. With --diff (or --dry-run), show
    /// what would change and write nothing.
    #[arg(long = "session", value_name = "ID", conflicts_with_all = ["path", "to"])]
    pub session: Option<String>,
    /// Show the diff from the current content to that version and write nothing.
    #[arg(long, visible_alias = "dry-run")]
    pub diff: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Policy file with the `history:` and `idempotency:` sections (default:
    /// .resilient_write/policy.yaml).
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

fn message(env: &resilient_write_core::envelope::Envelope) -> String {
    env.context
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("failed")
        .to_string()
}

pub fn history(mut config: Config, args: HistoryCliArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    let v = match service.call(
        "history",
        json!({"path": args.path, "limit": args.lines.clamp(1, 10_000)}),
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
        // A native edit (an agent's own tool, journaled by its hook) says so, and says when
        // the content it replaced was not kept.
        let native = match (r["native_tool"].as_str(), r["pre_image"].as_bool()) {
            (Some(t), Some(false)) => format!("  {t}: no pre-image (no before-edit hook)"),
            (Some(t), _) => format!("  {t}"),
            _ => String::new(),
        };
        println!(
            "{:<27} {:<9} {:>10} {:<16} {:<7} {:<32} {}{native}",
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
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    service.store().set_caller("cli");
    let (Some(path), Some(to)) = (args.path, args.to) else {
        return match (args.tx, args.session) {
            (Some(tx), _) => restore_tx(&service, &tx),
            (None, Some(session)) => restore_session(&service, &session, args.diff),
            _ => fail("give PATH --to VERSION, --tx TX_ID or --session ID"),
        };
    };
    let mut call = json!({"path": path, "dry_run": args.diff});
    let hex = to.bytes().all(|b| b.is_ascii_hexdigit());
    let named = if hex && to.len() >= 8 && to.len() != 32 {
        call["to_sha256"] = json!(to);
        service.call("restore", call)
    } else {
        call["journal_id"] = json!(to);
        match service.call("restore", call) {
            // 32 hex digits are one of our journal_ids or a hash prefix: when no version has
            // that journal_id, try the prefix (and report the first refusal if it fails too).
            Err(env) if hex && env.context.contains_key("version") => service
                .call(
                    "restore",
                    json!({"path": path, "dry_run": args.diff, "to_sha256": to}),
                )
                .map_err(|_| env),
            other => other,
        }
    };
    match named {
        Ok(v) => {
            if args.diff {
                print!("{}", v["diff"].as_str().unwrap_or(""));
            } else {
                let f = &v["files"][0];
                if f["unchanged"] == json!(true) {
                    println!("{path}: already at {to}");
                } else {
                    println!(
                        "{}: restored to {} (journal_id {}; undo with --to {})",
                        path,
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

/// `restore --tx`: every file of a transaction back to its content before it.
fn restore_tx(service: &Service, tx: &str) -> ExitCode {
    match service.call("restore", json!({"tx_id": tx})) {
        Ok(v) => {
            for f in v["files"].as_array().into_iter().flatten() {
                println!(
                    "{}: restored to {}",
                    f["path"].as_str().unwrap_or(""),
                    f["sha256"].as_str().unwrap_or("")
                );
            }
            for s in v["skipped"].as_array().into_iter().flatten() {
                println!(
                    "{}: skipped ({})",
                    s["path"].as_str().unwrap_or(""),
                    s["reason"].as_str().unwrap_or("")
                );
            }
            println!(
                "as transaction {} (undo with --tx {})",
                v["restore_tx_id"].as_str().unwrap_or(""),
                v["restore_tx_id"].as_str().unwrap_or("")
            );
            ExitCode::SUCCESS
        }
        Err(env) => fail(&message(&env)),
    }
}

/// `restore --session`: every file an agent session changed back as before it.
fn restore_session(service: &Service, session: &str, diff: bool) -> ExitCode {
    match service.call("restore", json!({"session": session, "dry_run": diff})) {
        Ok(v) => {
            let s = |f: &Value, k: &str| f[k].as_str().unwrap_or("").to_string();
            if diff {
                print!("{}", v["diff"].as_str().unwrap_or(""));
            }
            for f in v["files"].as_array().into_iter().flatten() {
                let what = match (f["unchanged"] == json!(true), f["removed"] == json!(true)) {
                    (true, _) => "already as before the session".to_string(),
                    (_, true) if diff => "would be removed (the session created it)".into(),
                    (_, true) => "removed (the session created it)".into(),
                    _ if diff => format!("would be restored to {}", s(f, "sha256")),
                    _ => format!("restored to {}", s(f, "sha256")),
                };
                println!("{}: {what}", s(f, "path"));
            }
            for k in v["skipped"].as_array().into_iter().flatten() {
                println!("{}: skipped ({})", s(k, "path"), s(k, "reason"));
            }
            if let Some(tx) = v["restore_tx_id"].as_str() {
                println!("as transaction {tx} (undo with --tx {tx})");
            }
            ExitCode::SUCCESS
        }
        Err(env) => {
            for c in env
                .context
                .get("conflicts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                eprintln!(
                    "resilient-write: {}: changed since the session left it",
                    c["path"].as_str().unwrap_or("")
                );
            }
            fail(&message(&env))
        }
    }
}

pub fn gc(mut config: Config, args: GcArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    let policy_path = match args.policy {
        Some(p) if p.is_absolute() => p,
        Some(p) => service
            .store()
            .state_dir()
            .parent()
            .map(|r| r.join(&p))
            .unwrap_or(p),
        None => service.store().state_dir().join("policy.yaml"),
    };
    let policy = match resilient_write_core::policy::Policy::load(&policy_path) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    let retention =
        match resilient_write_core::history::Retention::from_policy(policy.history.as_ref()) {
            Ok(r) => r,
            Err(e) => return fail(&format!("{}: {e}", policy_path.display())),
        };
    let expiry = match resilient_write_core::write::results::Expiry::from_policy(
        policy.idempotency.as_ref(),
    ) {
        Ok(e) => e,
        Err(e) => return fail(&format!("{}: {e}", policy_path.display())),
    };
    let Some(objects) = service.store().pipeline().objects() else {
        return fail("no object store");
    };
    match resilient_write_core::history::gc(
        service.store().pipeline().journal(),
        &service.store().workspaces().journal_paths(),
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
        }
        Err(e) => return fail(&format!("gc: {e}")),
    }
    compact_results(&service, expiry, args.dry_run)
}

/// `gc`'s second half: drop the first results of keyed calls past `idempotency.max_age`.
fn compact_results(
    service: &crate::dispatch::Service,
    expiry: resilient_write_core::write::results::Expiry,
    dry_run: bool,
) -> ExitCode {
    let results = resilient_write_core::write::results::ResultLog::new(service.store().state_dir())
        .with_expiry(expiry);
    match results.compact(dry_run) {
        Ok(c) => {
            println!(
                "{} {} idempotency result(s) older than {} s, {} unreadable line(s); kept {}, \
                 {} of {} bytes",
                if dry_run { "would drop" } else { "dropped" },
                c.expired,
                expiry.max_age.as_secs(),
                c.unreadable,
                c.kept,
                c.bytes_after,
                c.bytes_before
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("gc: idempotency results: {e}")),
    }
}

pub fn recover(mut config: Config) -> ExitCode {
    config.store.sweep_on_start = false;
    // Service::start recovers; report what it did.
    let Some(service) = super::service(config) else {
        return ExitCode::from(2);
    };
    let r = service.recovery().cloned().unwrap_or_default();
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
