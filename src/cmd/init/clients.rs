//! The clients `init` sets up, one row each: where the client reads its MCP servers, in which
//! format, under which key, the entry it needs, and the instruction file its agent reads.
//! Adding a client is adding a row; the editing itself is per format ([`super::jsonc`],
//! [`super::toml_cfg`]).
//!
//! Every entry starts the server from any working directory: the command is an absolute path
//! (GUI clients do not see the shell's PATH) and the workspace is named, either absolutely or
//! through `${workspaceFolder}` where the client expands it (Cursor, VS Code: their project
//! files are often shared, and the variable keeps them machine-independent).

use super::ClientKind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Whose file holds the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A file in the project (path relative to it): written by `init`.
    Project,
    /// A file of the user's (path relative to HOME): written with `--write-global`, else
    /// the change is shown.
    User,
}

/// How the file is edited.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    /// JSON or JSONC, the server entry under these nested keys.
    Json(&'static [&'static str]),
    /// Codex's TOML: `[mcp_servers.<name>]`.
    CodexToml,
}

/// What an entry starts: the command and the project it serves.
#[derive(Debug, Clone)]
pub struct Launch {
    pub command: String,
    pub project: PathBuf,
}

impl Launch {
    /// `serve -w <project> --state-dir <project>`, the project by absolute path.
    pub fn args(&self) -> Vec<String> {
        let p = self.project.display().to_string();
        ["serve", "-w", &p, "--state-dir", &p]
            .map(String::from)
            .to_vec()
    }

    /// The same with `${workspaceFolder}`, for clients that expand it.
    fn folder_args(&self) -> Vec<String> {
        let p = "${workspaceFolder}";
        ["serve", "-w", p, "--state-dir", p]
            .map(String::from)
            .to_vec()
    }
}

/// One client.
pub struct Client {
    pub kind: ClientKind,
    /// As shown to people.
    pub label: &'static str,
    /// The instruction file its agent reads, in the project.
    pub instructions: Option<&'static str>,
    pub scope: Scope,
    /// The config file, relative to the project or HOME (see [`Scope`]).
    pub file: fn() -> PathBuf,
    pub format: Format,
    /// The server entry (JSON formats), keys in the order written.
    pub entry: fn(&Launch) -> Vec<(&'static str, Value)>,
}

fn plain(l: &Launch) -> Vec<(&'static str, Value)> {
    vec![
        ("command", json!(l.command)),
        ("args", json!(l.args())),
        ("env", json!({})),
    ]
}

fn claude_desktop_file() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("Library/Application Support/Claude/claude_desktop_config.json")
    } else {
        PathBuf::from(".config/Claude/claude_desktop_config.json")
    }
}

pub const CLIENTS: &[Client] = &[
    Client {
        kind: ClientKind::Claude,
        label: "Claude Code",
        instructions: Some("CLAUDE.md"),
        scope: Scope::Project,
        file: || PathBuf::from(".mcp.json"),
        format: Format::Json(&["mcpServers"]),
        entry: |l| {
            let mut e = vec![("type", json!("stdio"))];
            e.extend(plain(l));
            e
        },
    },
    Client {
        kind: ClientKind::ClaudeDesktop,
        label: "Claude Desktop",
        instructions: None,
        scope: Scope::User,
        file: claude_desktop_file,
        format: Format::Json(&["mcpServers"]),
        entry: plain,
    },
    Client {
        kind: ClientKind::Cursor,
        label: "Cursor",
        instructions: Some("AGENTS.md"),
        scope: Scope::Project,
        file: || PathBuf::from(".cursor/mcp.json"),
        format: Format::Json(&["mcpServers"]),
        entry: |l| {
            vec![
                ("command", json!(l.command)),
                ("args", json!(l.folder_args())),
            ]
        },
    },
    Client {
        kind: ClientKind::Vscode,
        label: "VS Code",
        instructions: Some("AGENTS.md"),
        scope: Scope::Project,
        file: || PathBuf::from(".vscode/mcp.json"),
        format: Format::Json(&["servers"]),
        entry: |l| {
            vec![
                ("type", json!("stdio")),
                ("command", json!(l.command)),
                ("args", json!(l.folder_args())),
            ]
        },
    },
    Client {
        kind: ClientKind::Windsurf,
        label: "Windsurf",
        instructions: Some("AGENTS.md"),
        scope: Scope::User,
        file: || PathBuf::from(".codeium/windsurf/mcp_config.json"),
        format: Format::Json(&["mcpServers"]),
        entry: plain,
    },
    Client {
        kind: ClientKind::Zed,
        label: "Zed",
        instructions: Some("AGENTS.md"),
        scope: Scope::User,
        file: || PathBuf::from(".config/zed/settings.json"),
        format: Format::Json(&["context_servers"]),
        entry: |l| {
            let mut e = vec![("source", json!("custom"))];
            e.extend(plain(l));
            e
        },
    },
    Client {
        kind: ClientKind::Gemini,
        label: "Gemini CLI",
        instructions: Some("GEMINI.md"),
        scope: Scope::Project,
        file: || PathBuf::from(".gemini/settings.json"),
        format: Format::Json(&["mcpServers"]),
        entry: plain,
    },
    Client {
        kind: ClientKind::Codex,
        label: "Codex",
        instructions: Some("AGENTS.md"),
        scope: Scope::User,
        file: || PathBuf::from(".codex/config.toml"),
        format: Format::CodexToml,
        entry: |_| Vec::new(),
    },
];

/// The rows for the clients asked for (`all` is every row), in table order.
pub fn selected(kinds: &[ClientKind]) -> Vec<&'static Client> {
    CLIENTS
        .iter()
        .filter(|c| kinds.contains(&c.kind) || kinds.contains(&ClientKind::All))
        .collect()
}

/// The absolute config file of `client`, or `None` for a user file without a HOME.
pub fn config_path(client: &Client, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
    match client.scope {
        Scope::Project => Some(project.join((client.file)())),
        Scope::User => home.map(|h| h.join((client.file)())),
    }
}

/// A client config that registers the server: which client, the file, the command it runs.
#[derive(Debug, Clone)]
pub struct Registered {
    pub label: &'static str,
    pub kind: ClientKind,
    pub file: PathBuf,
    pub command: String,
}

/// The command each client config found registers for the server (files that are missing,
/// unreadable or malformed are skipped: `init` reports those).
pub fn registered(project: &Path, home: Option<&Path>) -> Vec<Registered> {
    let mut out = Vec::new();
    for client in CLIENTS {
        let Some(file) = config_path(client, project, home) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let command = match client.format {
            Format::Json(keys) => jsonc_parser::cst::CstRootNode::parse(&text, &Default::default())
                .ok()
                .and_then(|root| root.to_serde_value())
                .and_then(|mut v| {
                    for k in keys.iter().chain([&super::SERVER_NAME, &"command"]) {
                        v = v.get(*k)?.clone();
                    }
                    v.as_str().map(String::from)
                }),
            Format::CodexToml => text.parse::<toml_edit::DocumentMut>().ok().and_then(|d| {
                d.get("mcp_servers")?
                    .get(super::SERVER_NAME)?
                    .get("command")?
                    .as_str()
                    .map(String::from)
            }),
        };
        if let Some(command) = command {
            out.push(Registered {
                label: client.label,
                kind: client.kind,
                file,
                command,
            });
        }
    }
    out
}

/// Whether `command` names an executable file: a path as it is, a bare name on `path_var`.
pub fn command_exists(command: &str, path_var: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return runnable(Path::new(command));
    }
    path_var.is_some_and(|paths| std::env::split_paths(paths).any(|d| runnable(&d.join(command))))
}
