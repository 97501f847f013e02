//! Real agent clients (Claude Code, Gemini CLI, Codex CLI) driven end to end against the
//! scripted model endpoint ([`model`]), in a fresh git repository set up by `init`.
//!
//! The clients are the npm packages pinned in `tests/agents/package.json` (lockfile beside it),
//! installed by `.ci/run` with `npm ci --prefix tests/agents`. A client that is not installed,
//! or not at its pinned version, is a printed skip, and a failure under CI with the reason.
//!
//! A [`Scenario`] is a list of scripted tool calls, each with an optional check of the result
//! the client sent back. [`Scenario::run`] starts the model, runs the client once in
//! non-interactive mode on the project, and fails the test when the client exits badly or a
//! call got no result; it returns the [`Outcome`] for checks of the disk and the journal.
//! docs/agent-e2e.md says how to add a scenario.
#![allow(dead_code)]

pub mod model;

pub use model::{Call, Offered, ScriptedModel, ToolResult};

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server's name in every client config (`init` writes it).
pub const SERVER: &str = "resilient-write";

/// Longest a client may take for one session before it is killed and the test fails.
const SESSION_TIMEOUT: Duration = Duration::from_secs(240);

/// A dummy credential for the clients' API-key checks, built at run time (never a real key).
fn dummy_key(prefix: &str) -> String {
    format!("{prefix}scripted-{}", std::process::id())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    GeminiCli,
    Codex,
}

impl Agent {
    pub fn label(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::GeminiCli => "Gemini CLI",
            Agent::Codex => "Codex CLI",
        }
    }

    /// The npm package.
    pub fn package(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "@anthropic-ai/claude-code",
            Agent::GeminiCli => "@google/gemini-cli",
            Agent::Codex => "@openai/codex",
        }
    }

    fn bin(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::GeminiCli => "gemini",
            Agent::Codex => "codex",
        }
    }

    /// The `init --client` value.
    pub fn init_client(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::GeminiCli => "gemini",
            Agent::Codex => "codex",
        }
    }

    /// A call of our MCP tool `tool` (its listed name, `rw_...`) as this client presents it
    /// to the model: Claude Code `mcp__<server>__<tool>`, Gemini CLI `mcp_<server>_<tool>`,
    /// Codex `<tool>` in the namespace `mcp__<server>` (the server's `-` becomes `_`).
    pub fn mcp(self, tool: &str, args: Value) -> Call {
        match self {
            Agent::ClaudeCode => Call::new(format!("mcp__{SERVER}__{tool}"), args),
            Agent::GeminiCli => Call::new(format!("mcp_{SERVER}_{tool}"), args),
            Agent::Codex => Call {
                namespace: Some(self.namespace()),
                name: tool.to_string(),
                args,
            },
        }
    }

    /// Codex's namespace for our server's tools.
    pub fn namespace(self) -> String {
        format!("mcp__{}", SERVER.replace('-', "_"))
    }

    /// The name our server lists for an offered tool, when the tool is one of our server's
    /// (by this client's prefix or namespace).
    pub fn ours(self, offered: &Offered) -> Option<String> {
        match self {
            Agent::ClaudeCode => offered
                .name
                .strip_prefix(&format!("mcp__{SERVER}__"))
                .map(String::from),
            Agent::GeminiCli => offered
                .name
                .strip_prefix(&format!("mcp_{SERVER}_"))
                .map(String::from),
            Agent::Codex => (offered.namespace.as_deref() == Some(self.namespace().as_str()))
                .then(|| offered.name.clone()),
        }
    }

    /// The version pinned in tests/agents/package.json.
    pub fn pinned(self) -> String {
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(agents_dir().join("package.json"))
                .expect("tests/agents/package.json"),
        )
        .expect("package.json is JSON");
        manifest["dependencies"][self.package()]
            .as_str()
            .unwrap_or("?")
            .to_string()
    }

    /// The installed client, or why it cannot be run.
    pub fn installed(self) -> Result<PathBuf, String> {
        let dir = modules_dir();
        let how = "install the pinned clients with `npm ci --prefix tests/agents` (.ci/run does)";
        let bin = dir.join(".bin").join(self.bin());
        if !bin.exists() {
            return Err(format!(
                "{} ({}) is not installed at {}: {how}",
                self.label(),
                self.package(),
                bin.display()
            ));
        }
        let pkg = dir.join(self.package()).join("package.json");
        let installed = std::fs::read_to_string(&pkg)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["version"].as_str().map(String::from))
            .unwrap_or_default();
        if installed != self.pinned() {
            return Err(format!(
                "{} {installed} is installed but {} is pinned: {how}",
                self.label(),
                self.pinned()
            ));
        }
        if self == Agent::GeminiCli {
            // A Node script: it needs `node` (>= 20) on PATH.
            let node = Command::new("node").arg("--version").output();
            let major = node.ok().filter(|o| o.status.success()).and_then(|o| {
                let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
                v.trim_start_matches('v')
                    .split('.')
                    .next()?
                    .parse::<u32>()
                    .ok()
            });
            match major {
                Some(m) if m >= 20 => {}
                Some(m) => return Err(format!("Gemini CLI needs Node >= 20; `node` is {m}")),
                None => return Err("Gemini CLI needs `node` (>= 20) on PATH".into()),
            }
        }
        Ok(bin)
    }
}

/// `tests/agents`.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// Where the clients are installed: `RW_AGENTS_MODULES`, else `tests/agents/node_modules`.
fn modules_dir() -> PathBuf {
    std::env::var_os("RW_AGENTS_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| agents_dir().join("node_modules"))
}

/// The client's path, or `None` after reporting it missing (a skip; a failure under CI).
pub fn client_or_skip(agent: Agent) -> Option<PathBuf> {
    match agent.installed() {
        Ok(p) => Some(p),
        Err(why) => {
            super::common::missing_prerequisite(&why);
            None
        }
    }
}

/// A fresh git repository (`root`) and a home directory of its own (`home`) for the client's
/// and `init`'s user files.
pub struct Project {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    /// The `resilient-write` binary `init` runs (and, by default, the one the clients start).
    pub bin: PathBuf,
    /// What the client configs start instead (`init --command`), if set.
    pub command: Option<PathBuf>,
}

impl Project {
    pub fn new() -> Project {
        Project::with_bin(super::common::bin())
    }

    /// A project whose client configs start `bin`.
    pub fn with_bin(bin: PathBuf) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical tempdir");
        let root = base.join("repo");
        let home = base.join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&root)
            .status()
            .expect("git");
        assert!(git.success(), "git init failed");
        Project {
            _dir: dir,
            root,
            home,
            bin,
            command: None,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `resilient-write init ARGS` in the project with HOME = `home`; must succeed. Returns
    /// stdout and stderr together.
    /// Set up `agent` as a new user would: `init --client <agent>`, then `init --hooks
    /// --client <agent>` (the agents with hooks run project hooks without further settings).
    pub fn init_with_hooks(&self, agent: Agent) {
        self.init(&["--client", agent.init_client()]);
        self.init(&["--hooks", "--client", agent.init_client()]);
    }

    pub fn init(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("init").args(args);
        if let Some(c) = &self.command {
            cmd.arg("--command").arg(c);
        }
        let out = cmd
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .env_remove("RW_TOOLS")
            .stdin(Stdio::null())
            .output()
            .expect("run init");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "init {args:?} failed:\n{text}");
        text
    }
}

/// One finished client session.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    pub fn report(&self) -> String {
        format!(
            "exit {:?}{} after {:.1} s\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            if self.timed_out { " (timed out)" } else { "" },
            self.elapsed.as_secs_f64(),
            tail(&self.stdout, 4000),
            tail(&self.stderr, 4000)
        )
    }
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}

/// The prompt every session starts with (the scripted model ignores it).
const PROMPT: &str = "Carry out the scripted session.";

/// Run `agent` once, non-interactively, in `project` against `model`. The environment is
/// cleared but for PATH, LANG and what the client needs: HOME is the project's, the model's
/// URL and a dummy key, and the settings that keep the client off the network (telemetry,
/// update checks, plugin syncs).
pub fn run(agent: Agent, client: &Path, project: &Project, model: &ScriptedModel) -> Run {
    let url = model.base_url();
    let mut cmd = Command::new(client);
    cmd.current_dir(&project.root)
        .env_clear()
        .env("HOME", &project.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    match agent {
        Agent::ClaudeCode => {
            // What Claude Code records when the user approves the project's .mcp.json server
            // in its start-up dialog (`-p` shows no dialog).
            write_json(
                &project.path(".claude/settings.local.json"),
                json!({"enabledMcpjsonServers": [SERVER]}),
            );
            // Every tool the script calls is allowed (as a user answering "yes" would), our
            // server's as a whole; a hook's denial still applies.
            let mut allowed = vec![format!("mcp__{SERVER}")];
            for call in model.script() {
                if !call.name.starts_with("mcp__") && !allowed.contains(&call.name) {
                    allowed.push(call.name.clone());
                }
            }
            cmd.env("ANTHROPIC_BASE_URL", &url)
                .env("ANTHROPIC_API_KEY", dummy_key("sk-ant-"))
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .args(["-p", PROMPT, "--output-format", "json", "--allowedTools"])
                .args(&allowed);
        }
        Agent::GeminiCli => {
            write_json(
                &project.home.join(".gemini/settings.json"),
                json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                    "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                }),
            );
            cmd.env("GOOGLE_GEMINI_BASE_URL", &url)
                .env("GEMINI_API_KEY", dummy_key("gm-"))
                // Stands in for trusting the folder in Gemini CLI's dialog.
                .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                // A fixed model: no routing request before each turn.
                .args(["-p", PROMPT, "-m", "gemini-2.5-flash"])
                .args(["--approval-mode", "yolo", "--output-format", "json"]);
        }
        Agent::Codex => {
            // The provider and the approval stand in for the user's own settings; the server
            // entry is the one `init --client codex --write-global` wrote to ~/.codex.
            let provider = format!(
                "model_providers.scripted={{name=\"scripted\", base_url=\"{url}/v1\", \
                 env_key=\"SCRIPTED_API_KEY\", wire_api=\"responses\"}}"
            );
            cmd.env("SCRIPTED_API_KEY", dummy_key("sk-"))
                .args(["exec", "--color", "never"])
                .args(["-c", "model_provider=\"scripted\"", "-c", &provider])
                .args(["-m", "gpt-5.1-codex"])
                .args(["-c", "check_for_update_on_startup=false"])
                .args([
                    "-c",
                    "features.plugins=false",
                    "-c",
                    "analytics.enabled=false",
                ])
                .arg("-c")
                .arg(format!(
                    "mcp_servers.{SERVER}.default_tools_approval_mode=\"approve\""
                ))
                .arg(PROMPT);
        }
    }
    spawn_with_timeout(cmd, &project.home)
}

fn write_json(path: &Path, value: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{value:#}\n")).unwrap();
}

/// Run `cmd` with stdout and stderr in files under `dir`, killing it after
/// [`SESSION_TIMEOUT`].
fn spawn_with_timeout(mut cmd: Command, dir: &Path) -> Run {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let out_path = dir.join(format!("client-{n}.out"));
    let err_path = dir.join(format!("client-{n}.err"));
    let start = Instant::now();
    cmd.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().expect("spawn the client");
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > SESSION_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.and_then(|s| s.code()),
        timed_out,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        elapsed: start.elapsed(),
    }
}

type Check = Box<dyn Fn(&ToolResult)>;

/// One scripted call and what its result must satisfy.
pub struct Step {
    pub call: Call,
    pub check: Option<Check>,
}

/// A scripted session: the calls the model makes, in order.
#[derive(Default)]
pub struct Scenario {
    pub steps: Vec<Step>,
}

impl Scenario {
    pub fn new() -> Scenario {
        Scenario::default()
    }

    /// A call whose result is not checked (beyond arriving).
    pub fn call(mut self, call: Call) -> Scenario {
        self.steps.push(Step { call, check: None });
        self
    }

    /// A call whose result must satisfy `check` (which panics with a message when not).
    pub fn expect(mut self, call: Call, check: impl Fn(&ToolResult) + 'static) -> Scenario {
        self.steps.push(Step {
            call,
            check: Some(Box::new(check)),
        });
        self
    }

    /// Run the session; fails the test when the client fails, times out, or leaves a call
    /// without a result, or a check fails.
    pub fn run(self, agent: Agent, client: &Path, project: &Project) -> Outcome {
        let model = ScriptedModel::start(self.steps.iter().map(|s| s.call.clone()).collect());
        let run = run(agent, client, project, &model);
        let context = || {
            format!(
                "{} session:\n{}\n--- requests\n{}",
                agent.label(),
                run.report(),
                model.summary()
            )
        };
        assert!(run.ok(), "{}", context());
        for (k, step) in self.steps.iter().enumerate() {
            let Some(result) = model.result(k) else {
                panic!(
                    "call {k} ({}) got no result back\n{}",
                    step.call.shown(),
                    context()
                );
            };
            if std::env::var_os("RW_AGENTS_TRACE").is_some() {
                println!(
                    "{} call {k} {}{}: {}",
                    agent.label(),
                    step.call.shown(),
                    if result.is_error { " (error)" } else { "" },
                    tail(&result.text, 600)
                );
            }
            if let Some(check) = &step.check {
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&result)));
                if outcome.is_err() {
                    panic!(
                        "call {k} ({}): its result failed the check above; result: {}{}\n{}",
                        step.call.shown(),
                        result.text,
                        if result.is_error { " (error)" } else { "" },
                        context()
                    );
                }
            }
        }
        Outcome { model, run }
    }
}

/// A finished scenario: the model's record and the client's run.
pub struct Outcome {
    pub model: ScriptedModel,
    pub run: Run,
}

/// The tools our server lists with `args` (e.g. `["--tools", "core"]`), by name, in order.
pub fn listed_tools(args: &[&str]) -> Vec<(String, Value)> {
    let ws = super::common::Workspace::new();
    let mut s = super::common::Server::start(&ws.root, args, &[]);
    let r = s.request("tools/list", json!({}));
    r["result"]["tools"]
        .as_array()
        .expect("tools/list result")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

/// A result that must be our tool's success: its JSON with `ok: true`.
#[track_caller]
pub fn ok_json(r: &ToolResult) -> Value {
    assert!(!r.is_error, "the call failed: {}", r.text);
    let v = r.json().unwrap_or_else(|| panic!("no JSON in {}", r.text));
    assert_eq!(v["ok"], json!(true), "{v}");
    v
}
