//! A small blocking MCP client for our own binary over stdio: spawn `resilient-write` (or any
//! path) with arguments, environment and working directory, complete the `initialize`
//! handshake, then send requests and tool calls one at a time and read the line-delimited
//! JSON-RPC answers, skipping (and keeping) notifications.
//!
//! It is what `resilient-write demo` drives the real server with, and its API fits the
//! hand-rolled clients of the integration tests, crash tests and benchmarks: a server that dies
//! mid-call is [`ClientError::Closed`] (not a panic), a tool failure is
//! [`ClientError::Tool`] carrying the typed envelope, an optional per-request timeout turns a
//! hang into [`ClientError::Timeout`], and the child is killed when the client is dropped.
//!
//! Not a general MCP client: one request in flight at a time, no server-to-client requests
//! (sampling, roots), no HTTP.

mod json;

use serde_json::{Map, Value, json};
use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The protocol version the client asks for (the server negotiates down if it must).
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Environment variables that configure the server; a [`Launch`] removes them unless set
/// explicitly, so the caller's shell never changes what a test or the demo sees.
pub const SERVER_ENV: &[&str] = &[
    "RW_WORKSPACE",
    "RW_STATE_DIR",
    "RW_POLICY_FILE",
    "RW_MAX_WRITE_BYTES",
    "RW_SCRATCH_DISABLE_GET",
    "RW_FAULT_INJECT",
    "RW_TOOLS",
    "RW_READ_ONLY",
];

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot start {program}: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("I/O with the server: {0}")]
    Io(#[from] io::Error),
    /// The server closed its output (exited or was killed) before answering.
    #[error("the server closed its output while request {id} was pending")]
    Closed { id: u64 },
    #[error("no answer to request {id} within {after:?}")]
    Timeout { id: u64, after: Duration },
    #[error("the server sent a line that is not JSON ({error}): {line}")]
    BadMessage { line: String, error: String },
    /// A JSON-RPC error response.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The tool answered `isError: true`; `envelope` is its structuredContent.
    #[error("{tool} failed: {}/{}", envelope["error"].as_str().unwrap_or("?"), envelope["reason_hint"].as_str().unwrap_or("?"))]
    Tool { tool: String, envelope: Value },
    /// A response that does not have the shape MCP prescribes.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

impl ClientError {
    /// Whether the server went away (exited, killed, pipe broken) rather than answering.
    pub fn server_gone(&self) -> bool {
        match self {
            ClientError::Closed { .. } => true,
            ClientError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }

    /// The envelope of a failed tool call.
    pub fn envelope(&self) -> Option<&Value> {
        match self {
            ClientError::Tool { envelope, .. } => Some(envelope),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// How to start a server: program, arguments, environment, working directory.
#[derive(Debug, Clone)]
pub struct Launch {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    inherit_stderr: bool,
    timeout: Option<Duration>,
    client_name: String,
    ids: Option<(u32, u32)>,
}

impl Launch {
    /// Start `program` (no arguments: the MCP server over stdio).
    pub fn new(program: impl Into<PathBuf>) -> Launch {
        Launch {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            inherit_stderr: false,
            timeout: None,
            client_name: "resilient-write-client".into(),
            ids: None,
        }
    }

    /// Start the running executable itself (what `resilient-write demo` does).
    pub fn current_exe() -> Result<Launch> {
        let exe = std::env::current_exe().map_err(|source| ClientError::Spawn {
            program: "the current executable".into(),
            source,
        })?;
        Ok(Launch::new(exe))
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Launch {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Launch
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set an environment variable for the server (also one of [`SERVER_ENV`]).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Launch {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// The server's working directory (its default workspace and state root).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Launch {
        self.cwd = Some(dir.into());
        self
    }

    /// Let the server's log lines through to our stderr (default: discarded).
    pub fn inherit_stderr(mut self, yes: bool) -> Launch {
        self.inherit_stderr = yes;
        self
    }

    /// Give up on any one answer after `after` (default: wait as long as the server lives).
    pub fn timeout(mut self, after: Duration) -> Launch {
        self.timeout = Some(after);
        self
    }

    /// `clientInfo.name` in the handshake (the server journals it as the caller).
    pub fn client_name(mut self, name: impl Into<String>) -> Launch {
        self.client_name = name.into();
        self
    }

    /// Run the server as `(uid, gid)` (a root test process drops privileges this way).
    pub fn user(mut self, uid: u32, gid: u32) -> Launch {
        self.ids = Some((uid, gid));
        self
    }

    /// Spawn the server without the handshake (to time it, or to speak raw protocol first).
    pub fn spawn_uninitialized(&self) -> Result<McpClient> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        for k in SERVER_ENV {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if let Some((uid, gid)) = self.ids {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if self.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let mut child = cmd.spawn().map_err(|source| ClientError::Spawn {
            program: self.program.display().to_string(),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ClientError::Malformed(
                "the child has no stdio pipes".into(),
            ));
        };
        Ok(McpClient {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            next_id: 1,
            timeout: self.timeout,
            client_name: self.client_name.clone(),
            init: Value::Null,
            out: Vec::new(),
        })
    }

    /// Spawn the server and complete the handshake (`initialize`, then `initialized`).
    pub fn spawn(&self) -> Result<McpClient> {
        let mut client = self.spawn_uninitialized()?;
        client.initialize()?;
        Ok(client)
    }
}

/// A JSON-RPC answer together with the notifications the server sent before it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The whole response message (`result` or `error`).
    pub message: Value,
    pub notifications: Vec<Value>,
}

/// A running server and the client end of its stdio.
pub struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    timeout: Option<Duration>,
    client_name: String,
    init: Value,
    /// The buffer each request is serialised into, kept between calls (a fresh one cost a
    /// page fault per 4 KiB of a large request).
    out: Vec<u8>,
}

impl McpClient {
    /// The `initialize` result (Null before the handshake).
    pub fn init_result(&self) -> &Value {
        &self.init
    }

    /// The server's process id (crash tests kill it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child process, for signals and `try_wait`.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Send `initialize` and `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self) -> Result<&Value> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": self.client_name, "version": env!("CARGO_PKG_VERSION")}
        });
        self.init = self.request("initialize", params)?;
        self.notify("notifications/initialized", json!({}))?;
        Ok(&self.init)
    }

    /// Write one line (a newline is added) to the server's stdin.
    pub fn send_raw(&mut self, line: &str) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.extend_from_slice(line.as_bytes());
        self.send_line(out)
    }

    /// Write `msg` as one line (serialised straight into the buffer that is written).
    fn send_message(&mut self, msg: &Value) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        json::write_value(&mut out, msg);
        self.send_line(out)
    }

    /// Writes `line` and a newline; keeps the buffer for the next request (up to
    /// [`KEEP_OUT`]).
    fn send_line(&mut self, mut line: Vec<u8>) -> Result<()> {
        line.push(b'\n');
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).and_then(|()| stdin.flush()),
            None => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdin already closed",
            )),
        };
        if line.capacity() <= KEEP_OUT {
            self.out = line;
        }
        Ok(sent?)
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<()> {
        let msg = object([
            ("jsonrpc", Value::from("2.0")),
            ("method", Value::from(method)),
            ("params", params),
        ]);
        self.send_message(&msg)
    }

    /// Send a request and read until its answer, keeping the notifications seen meanwhile.
    /// Messages with other ids (answers to requests abandoned after a timeout) are dropped.
    pub fn request_full(&mut self, method: &str, params: Value) -> Result<Answer> {
        let id = self.next_id;
        self.next_id += 1;
        // Built by moving `params` in: `json!` would copy it (a whole file's `content`).
        let msg = object([
            ("jsonrpc", Value::from("2.0")),
            ("id", Value::from(id)),
            ("method", Value::from(method)),
            ("params", params),
        ]);
        self.send_message(&msg)?;
        let deadline = self.timeout.map(|t| (Instant::now() + t, t));
        let mut notifications = Vec::new();
        loop {
            let line = self.read_line(id, deadline)?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let v: Value = serde_json::from_slice(&line).map_err(|e| ClientError::BadMessage {
                line: String::from_utf8_lossy(&line).chars().take(200).collect(),
                error: e.to_string(),
            })?;
            match v.get("id") {
                Some(got) if *got == json!(id) => {
                    return Ok(Answer {
                        message: v,
                        notifications,
                    });
                }
                None => notifications.push(v),
                Some(_) => {}
            }
        }
    }

    /// A request's `result`; a JSON-RPC error becomes [`ClientError::Rpc`].
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let mut answer = self.request_full(method, params)?.message;
        if let Some(err) = answer.get("error") {
            return Err(ClientError::Rpc {
                code: err["code"].as_i64().unwrap_or(0),
                message: err["message"].as_str().unwrap_or("").to_string(),
                data: err.get("data").cloned(),
            });
        }
        match answer.get_mut("result") {
            Some(r) => Ok(r.take()),
            None => Err(ClientError::Malformed(format!(
                "response to {method} has neither result nor error"
            ))),
        }
    }

    /// `tools/call`: the whole `CallToolResult`, whether `isError` is true or not.
    pub fn call_result(&mut self, tool: &str, args: Value) -> Result<Value> {
        let params = object([("name", Value::from(tool)), ("arguments", args)]);
        self.request("tools/call", params)
    }

    /// `tools/call`: the `structuredContent` of a success; a tool failure becomes
    /// [`ClientError::Tool`] with the envelope.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let mut result = self.call_result(tool, args)?;
        let failed = result["isError"].as_bool().unwrap_or(false);
        let content = match result.get_mut("structuredContent") {
            Some(v) => v.take(),
            None => {
                return Err(ClientError::Malformed(format!(
                    "{tool} answered without structuredContent"
                )));
            }
        };
        if failed {
            Err(ClientError::Tool {
                tool: tool.to_string(),
                envelope: content,
            })
        } else {
            Ok(content)
        }
    }

    /// Close the server's stdin (its signal to stop) and wait for it to exit.
    pub fn close(mut self) -> Result<ExitStatus> {
        drop(self.stdin.take());
        Ok(self.child.wait()?)
    }

    /// One line from the server, waiting at most until `deadline` when there is one.
    fn read_line(&mut self, id: u64, deadline: Option<(Instant, Duration)>) -> Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            if let Some((at, after)) = deadline
                && self.stdout.buffer().is_empty()
                && !wait_readable(self.stdout.get_ref(), at)?
            {
                return Err(ClientError::Timeout { id, after });
            }
            let buf = self.stdout.fill_buf()?;
            if buf.is_empty() {
                return Err(ClientError::Closed { id });
            }
            match memchr::memchr(b'\n', buf) {
                Some(pos) => {
                    line.extend_from_slice(&buf[..pos]);
                    self.stdout.consume(pos + 1);
                    return Ok(line);
                }
                None => {
                    let n = buf.len();
                    line.extend_from_slice(buf);
                    self.stdout.consume(n);
                }
            }
        }
    }
}

/// The largest request buffer kept between calls; a larger one is freed after its request.
const KEEP_OUT: usize = 4 * 1024 * 1024;

/// A JSON object of `pairs`, the values moved in.
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map<String, Value>>(),
    )
}

/// Wait until `fd` has data (or EOF) or `deadline` passes; false on timeout.
fn wait_readable(fd: &impl AsFd, deadline: Instant) -> Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(ClientError::Io(e.into())),
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
