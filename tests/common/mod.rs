//! A tiny MCP client for integration tests: starts the real `resilient-write` binary over
//! stdio in a throwaway workspace and speaks JSON-RPC to it line by line.
#![allow(dead_code)]

pub mod chunks;
pub mod hooks;
pub mod http;
pub mod shell;
pub mod tmpfs;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_resilient-write"))
}

/// Run the binary once in `cwd` with `args`, stdin closed and `env` added to an environment
/// without the server's variables or colour settings (the caller's shell must not leak in).
pub fn run_cli(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(cwd).stdin(Stdio::null());
    for var in [
        "RW_WORKSPACE",
        "RW_STATE_DIR",
        "RW_POLICY_FILE",
        "RW_TOOLS",
        "RW_READ_ONLY",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run resilient-write")
}

/// What a finished command printed: its stdout, then its stderr.
pub fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A home directory for a child process, so nothing touches the real one.
pub fn home() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// A running server.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    pub init: Value,
}

/// A throwaway workspace with a server started in it.
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Workspace {
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical tempdir");
        Workspace { dir, root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Start a server in this workspace (CWD = root).
    pub fn server(&self) -> Server {
        Server::start(&self.root, &[], &[])
    }
}

impl Server {
    /// Start the binary in `cwd` with extra `args` and `env`, and complete the handshake.
    pub fn start(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_as(cwd, args, env, None)
    }

    /// Like [`Server::start`], running the server as `(uid, gid)` when given (a root test
    /// process drops to an unprivileged user so that permission bits apply to the server).
    pub fn start_as(
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        ids: Option<(u32, u32)>,
    ) -> Server {
        Server::start_client(cwd, args, env, ids, json!({}))
    }

    /// Start the binary as a client declaring `capabilities` (e.g. `{"roots": {"listChanged":
    /// true}}`), and complete the handshake. A client offering roots must then answer the
    /// server's `roots/list` with [`Server::expect_request`] and [`Server::respond`].
    pub fn start_client(
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        ids: Option<(u32, u32)>,
        capabilities: Value,
    ) -> Server {
        let mut cmd = Command::new(bin());
        if let Some((uid, gid)) = ids {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
        }
        cmd.args(args)
            .current_dir(cwd)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .env_remove("RW_FAULT_INJECT")
            .env_remove("RW_TOOLS")
            .env_remove("RW_READ_ONLY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn resilient-write");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Server {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            init: Value::Null,
        };
        s.init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "integration-test", "version": "0"}
            }),
        );
        s.notify("notifications/initialized", json!({}));
        s
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&msg.to_string());
    }

    /// Read messages until the response with `id` (skipping notifications; a request of
    /// the server is not a response even when its id is the same number).
    pub fn read_response(&mut self, id: u64) -> Value {
        loop {
            let v = self.next_message();
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return v;
            }
        }
    }

    /// The next message the server sends.
    pub fn next_message(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read");
        assert!(n > 0, "server closed stdout");
        serde_json::from_str(&line).expect("server sent invalid JSON")
    }

    /// Read messages until the server's request `method`; returns it (notifications before
    /// it are dropped).
    pub fn expect_request(&mut self, method: &str) -> Value {
        loop {
            let v = self.next_message();
            if v.get("method") == Some(&json!(method)) && v.get("id").is_some() {
                return v;
            }
        }
    }

    /// Answer a request of the server.
    pub fn respond(&mut self, request: &Value, result: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.send_raw(&msg.to_string());
    }

    /// Send pings until a notification satisfying `want` arrives, up to `rounds` pings
    /// (with a short pause each) for events the server sends in the background. Returns the
    /// notification, or `None` when none came.
    pub fn wait_for_notification(
        &mut self,
        rounds: usize,
        want: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        for _ in 0..rounds {
            let (_, notes) = self.request_with_notifications("ping", json!({}));
            if let Some(n) = notes.into_iter().find(|n| want(n)) {
                return Some(n);
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        None
    }

    /// A JSON-RPC request; returns the response and the notifications received before it.
    pub fn request_with_notifications(
        &mut self,
        method: &str,
        params: Value,
    ) -> (Value, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&msg.to_string());
        let mut notes = Vec::new();
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(
                n > 0,
                "server closed stdout while waiting for response {id}"
            );
            let v: Value = serde_json::from_str(&line).expect("server sent invalid JSON");
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return (v, notes);
            }
            if v.get("id").is_none() {
                notes.push(v);
            }
        }
    }

    /// A JSON-RPC request; returns the whole response (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&msg.to_string());
        self.read_response(id)
    }

    /// Every tool this (default-listing) server has: it enables every toolset, then returns
    /// the `tools/list` tools (the catalogue and `rw_toolsets`).
    pub fn list_every_tool(&mut self) -> Vec<Value> {
        self.ok("rw_toolsets", json!({"enable": ["all"]}));
        self.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .expect("tools array")
            .clone()
    }

    /// `tools/call`; returns the CallToolResult.
    pub fn call_raw(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {tool} had no result: {r}"))
    }

    /// `tools/call` that must succeed; returns structuredContent.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call_raw(tool, args);
        assert_eq!(r["isError"], json!(false), "{tool} failed: {r}");
        let sc = r["structuredContent"].clone();
        assert_eq!(sc["ok"], json!(true));
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().expect("text"))
            .expect("text content is JSON");
        assert_eq!(text, sc, "text and structuredContent differ");
        sc
    }

    /// `tools/call` that must fail with an envelope; returns it.
    pub fn err(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call_raw(tool, args);
        assert_eq!(
            r["isError"],
            json!(true),
            "{tool} unexpectedly succeeded: {r}"
        );
        let env = r["structuredContent"].clone();
        assert_eq!(env["ok"], json!(false));
        assert_eq!(env["schema_version"], json!("1"));
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().expect("text"))
            .expect("text content is JSON");
        assert_eq!(text, env, "text and structuredContent differ");
        env
    }

    /// Close stdin and wait for the process to exit.
    pub fn shutdown(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The part of a `tools/list` a client sends its model with every request: each tool's name,
/// description and input schema, as one compact JSON array (output schemas, titles and
/// annotations stay with the client).
pub fn model_visible(tools: &[Value]) -> String {
    let visible: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}))
        .collect();
    serde_json::to_string(&visible).expect("JSON")
}

/// Lowercase hex SHA-256.
pub fn sha256(bytes: &[u8]) -> String {
    resilient_write_core::hash::sha256_hex(bytes)
}

/// Journal rows of a state directory (blank lines, rows taken back in place, skipped as
/// every reader does).
pub fn journal_rows(state_root: &Path) -> Vec<Value> {
    let path = state_root.join(".resilient_write/journal.jsonl");
    match std::fs::read_to_string(path) {
        Ok(s) => s
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("journal line is JSON"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Transactions in the write-ahead log of the state directory at `root`.
pub fn wal_entries(root: &Path) -> usize {
    std::fs::read_dir(root.join(".resilient_write/wal"))
        .map(|r| r.count())
        .unwrap_or(0)
}

/// Every file under `root`, at any depth (none when `root` does not exist).
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Temp files of the pipeline left anywhere under `root`.
pub fn temp_files(root: &Path) -> Vec<PathBuf> {
    files_under(root)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".rw-tmp-"))
        })
        .collect()
}

/// Letters and digits, the alphabet of most token formats.
pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Deterministic pseudo-random characters from `set` (xorshift): secret-shaped test strings
/// are generated at run time, never typed into the source.
pub fn chars(seed: u64, set: &[u8], n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            set[(x % set.len() as u64) as usize] as char
        })
        .collect()
}

/// A GitHub classic token of the public format.
pub fn github_token(seed: u64) -> String {
    format!("{}{}", "ghp_", chars(seed, ALNUM, 36))
}

/// A server a crash test may kill at any moment (the library's [`McpClient`] underneath):
/// a call answers `None` once the server is gone instead of failing the test, while a tool
/// failure of a live server still fails it.
///
/// [`McpClient`]: resilient_write::client::McpClient
pub struct Killable(resilient_write::client::McpClient);

impl Killable {
    /// Start a server in `root` (its CWD, workspace and state root), with `RW_FAULT_INJECT`
    /// set to `fault` if given. `None` when the server died before the handshake finished.
    pub fn start(root: &Path, fault: Option<&str>) -> Option<Killable> {
        let mut launch = resilient_write::client::Launch::new(bin())
            .cwd(root)
            .client_name("crash-test");
        if let Some(f) = fault {
            launch = launch.env("RW_FAULT_INJECT", f);
        }
        match launch.spawn() {
            Ok(c) => Some(Killable(c)),
            Err(e) if e.server_gone() => None,
            Err(e) => panic!("starting the server: {e}"),
        }
    }

    /// A tool call's structuredContent; `None` when the server died before answering (a line
    /// torn by the kill counts as no answer).
    pub fn call(&mut self, tool: &str, args: Value) -> Option<Value> {
        match self.0.call(tool, args) {
            Ok(v) => Some(v),
            Err(e) if e.server_gone() => None,
            Err(e @ resilient_write::client::ClientError::BadMessage { .. }) => {
                assert!(
                    self.exits_soon(),
                    "{tool}: a live server sent a bad line: {e}"
                );
                None
            }
            Err(e) => panic!("{tool} failed: {e}"),
        }
    }

    pub fn pid(&self) -> u32 {
        self.0.pid()
    }

    /// Whether the server exits within two seconds (a killed one does at once).
    fn exits_soon(&mut self) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.child_mut().try_wait() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        false
    }

    /// Wait for the server to exit (after a kill).
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.0.child_mut().wait().expect("wait for the server")
    }

    /// Kill the server and reap it.
    pub fn kill(mut self) {
        let _ = self.0.child_mut().kill();
        let _ = self.0.child_mut().wait();
    }

    /// Close stdin and wait for a clean exit.
    pub fn close(self) {
        let _ = self.0.close();
    }
}

/// SplitMix64: a tiny seeded PRNG, so a failing trial can be replayed with its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Whether the tests run under CI (`CI` set to anything but empty, `0` or `false`), where a
/// missing prerequisite fails the test instead of skipping it.
pub fn under_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

pub fn ci_value(v: Option<&str>) -> bool {
    match v {
        None => false,
        Some(v) => !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"),
    }
}

/// A test's prerequisite (root, a tmpfs, `chattr`, a debug build) is missing: under CI this
/// fails the test, since a skipped test proves nothing there; elsewhere it prints why the test
/// is skipped. The caller returns right after.
#[track_caller]
pub fn missing_prerequisite(why: &str) {
    if under_ci() {
        panic!("prerequisite missing under CI (a skip would prove nothing): {why}");
    }
    println!("SKIPPED: {why}");
}

/// Whether the binary honours `RW_FAULT_INJECT` (debug builds only). In a release build the
/// fault-driven tests skip with a notice, and fail under CI.
#[track_caller]
pub fn faults_compiled_in() -> bool {
    if !cfg!(debug_assertions) {
        missing_prerequisite("fault injection is compiled out of release builds");
    }
    cfg!(debug_assertions)
}
