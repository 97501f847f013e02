//! The hook around an agent's shell command, and after its calls of our MCP tools.
//!
//! - Before a shell command: `native::NativeWorkspace::shell_before` snapshots the
//!   workspace. After it: `shell_after` journals every file the command created, changed or
//!   deleted, and a secret it wrote (at or above `hooks.reject_at`) comes back as
//!   [`Answer::Report`]: the write already happened, so the model is told which file, rule,
//!   family and line, and asked to remove it or use `redact`.
//! - After a call of one of our MCP tools: the `journal_id`s in its result are attributed to
//!   the agent's session (`agent_session.jsonl`), so `restore --session` and `journal
//!   --session` find the session's MCP writes too.
//!
//! As everywhere in `hook`, a failure is one stderr line and the call goes on: a shell
//! command is never blocked by its hook.

use super::{Agent, Answer, McpCall, Phase, ShellRun, note, reject_at, warn};
use crate::dispatch::Config;
#[cfg(target_os = "linux")]
use resilient_write_core::native::watch;
use resilient_write_core::native::{DEFAULT_MAX_FILES, Found, NativeWorkspace, ShellCall};
use serde_json::Value;

/// The policy key (in `hooks`) capping the files journaled per command.
pub const SHELL_MAX_FILES: &str = "shell_max_files";

/// `hooks.shell_max_files`: a positive whole number, default [`DEFAULT_MAX_FILES`].
fn max_files(ws: &NativeWorkspace) -> usize {
    let set = ws
        .policy()
        .policy()
        .and_then(|p| p.hooks.as_ref())
        .and_then(|h| h.get(SHELL_MAX_FILES));
    match set.map(Value::as_u64) {
        None => DEFAULT_MAX_FILES,
        Some(Some(n)) if n > 0 => n as usize,
        Some(_) => {
            note(format!(
                "{}: hooks.{SHELL_MAX_FILES} must be a positive whole number; using \
                 {DEFAULT_MAX_FILES}",
                ws.policy().path.display()
            ));
            DEFAULT_MAX_FILES
        }
    }
}

/// The policy key (in `hooks`) that turns the watcher off (`false`).
pub const SHELL_WATCHER: &str = "shell_watcher";

/// How long the watcher waits for a question before exiting (tests shorten it).
#[cfg(target_os = "linux")]
const WATCHER_IDLE_ENV: &str = "RW_SHELL_WATCHER_IDLE_SECS";

/// The program that runs the watcher: this one, unless `hooks.shell_watcher` is `false`.
fn watcher_exe(ws: &NativeWorkspace) -> Option<std::path::PathBuf> {
    let set = ws
        .policy()
        .policy()
        .and_then(|p| p.hooks.as_ref())
        .and_then(|h| h.get(SHELL_WATCHER));
    if cfg!(not(target_os = "linux")) {
        return None; // no inotify: the hooks snapshot the whole tree
    }
    match set {
        None | Some(Value::Bool(true)) => std::env::current_exe().ok(),
        Some(Value::Bool(false)) => None,
        Some(_) => {
            note(format!(
                "{}: hooks.{SHELL_WATCHER} must be true or false; using true",
                ws.policy().path.display()
            ));
            std::env::current_exe().ok()
        }
    }
}

/// `shell-watcher`'s arguments.
#[derive(Debug, clap::Args)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct WatcherArgs {
    /// The workspace root to watch.
    #[arg(long)]
    root: std::path::PathBuf,
    /// The workspace's state directory.
    #[arg(long)]
    state_dir: std::path::PathBuf,
}

/// The watcher needs inotify.
#[cfg(not(target_os = "linux"))]
pub fn watcher(_args: &WatcherArgs) -> std::process::ExitCode {
    eprintln!("resilient-write shell-watcher: needs Linux (inotify)");
    std::process::ExitCode::FAILURE
}

/// Run the watcher until it is idle (started detached by a hook; exit 0 unless it could not
/// start at all).
#[cfg(target_os = "linux")]
pub fn watcher(args: &WatcherArgs) -> std::process::ExitCode {
    let idle = std::env::var(WATCHER_IDLE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(watch::IDLE, std::time::Duration::from_secs);
    // Out of the hook's session: an agent ending its process group does not end us.
    let _ = rustix::process::setsid();
    match watch::daemon::serve(&args.root, &args.state_dir, idle) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("resilient-write shell-watcher: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Before or after the shell command `run`.
pub fn shell(config: &Config, agent: Agent, phase: Phase, run: &ShellRun) -> Answer {
    let ws = super::workspace(config, &run.workspace);
    if !ws.has_root() {
        return Answer::Allow; // $HOME or / as the workspace: nothing of ours to journal
    }
    let exe = watcher_exe(&ws);
    let call = ShellCall {
        agent: agent.name(),
        tool: &run.tool,
        session: run.session.as_deref(),
        call_id: run.call_id.as_deref(),
        command: &run.command,
        reject_at: reject_at(&ws),
        max_files: max_files(&ws),
        max_bytes: config.store.max_write_bytes,
        watcher: exe.as_deref(),
    };
    match phase {
        Phase::Before => {
            if let Err(e) = ws.shell_before(&call) {
                warn(format!(
                    "could not snapshot the workspace before the {}: {e}",
                    run.tool
                ));
            }
            Answer::Allow
        }
        Phase::After => match ws.shell_after(&call) {
            Ok(report) => {
                for n in &report.notes {
                    note(n);
                }
                match report.secrets.is_empty() {
                    true => Answer::Allow,
                    false => Answer::Report(secret_report(&run.tool, &report.secrets)),
                }
            }
            Err(e) => {
                warn(format!(
                    "could not journal what the {} changed: {e}",
                    run.tool
                ));
                Answer::Allow
            }
        },
    }
}

/// What the model reads after a command that wrote a secret: which file, rule, family and
/// line, and what to do. Never the secret.
fn secret_report(tool: &str, found: &[Found]) -> String {
    let list: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "{} ({}) in {} on line {}",
                f.pattern, f.kind, f.path, f.line
            )
        })
        .collect();
    let files: std::collections::BTreeSet<&str> = found.iter().map(|f| f.path.as_str()).collect();
    let files: Vec<&str> = files.into_iter().collect();
    format!(
        "resilient-write: this {tool} command wrote a secret into the workspace: {}. The write \
         has already happened. Remove the secret from {} now: read it from the environment or \
         a config file outside the repository, or replace it with a placeholder (the `redact` \
         tool of the resilient-write MCP server returns the content with each secret replaced \
         by {{REDACTED:<rule>}}). The file's earlier version is kept: `resilient-write history \
         <file>` lists it.",
        list.join(", "),
        files.join(", ")
    )
}

/// After a call of our MCP tool `m`: attribute the rows it wrote to the agent's session.
pub fn attribute(config: &Config, agent: Agent, m: &McpCall) -> Answer {
    let Some(session) = m.session.as_deref() else {
        return Answer::Allow;
    };
    let ids = resilient_write_core::agent_session::journal_ids_in(&m.response.to_string());
    if ids.is_empty() {
        return Answer::Allow;
    }
    let ws = super::workspace(config, &m.workspace);
    if !ws.has_root() {
        return Answer::Allow;
    }
    if let Err(e) = ws.attribute(agent.name(), session, &m.tool, ids) {
        warn(format!(
            "could not record which session made the {} call: {e}",
            m.tool
        ));
    }
    Answer::Allow
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_file_rule_family_and_line_and_the_way_out() {
        let r = secret_report(
            "Bash",
            &[Found {
                path: "leak.env".into(),
                pattern: "github_classic_pat".into(),
                kind: "github_pat".into(),
                line: 1,
            }],
        );
        for part in [
            "github_classic_pat (github_pat) in leak.env on line 1",
            "Remove the secret from leak.env",
            "redact",
        ] {
            assert!(r.contains(part), "{part}: {r}");
        }
    }
}
