//! The HTTP test harness: a real spawned server (`serve --transport http|sse --port 0`) spoken
//! to with raw HTTP/1.1, so that every header (a forged Host, a foreign Origin, a wrong token,
//! a chunked oversize body, a stalled body) is exactly what the test says. Used by
//! `tests/http.rs` and `tests/http_limits.rs`.

use super::{Workspace, bin};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A running HTTP server.
pub struct HttpServer {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<Mutex<String>>,
    pub token: Option<String>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn command(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("serve")
        .args(args)
        .current_dir(cwd)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_AUTH_TOKEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

impl HttpServer {
    pub fn start(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut all = vec!["--transport", "http", "--port", "0"];
        all.extend_from_slice(args);
        HttpServer::spawn(ws, &all, env, "/mcp")
    }

    pub fn spawn(ws: &Workspace, args: &[&str], env: &[(&str, &str)], path: &str) -> HttpServer {
        let mut child = command(&ws.root, args, env).spawn().expect("spawn");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
        let mut seen = String::new();
        let addr = loop {
            let mut line = String::new();
            let n = lines.read_line(&mut line).expect("read stderr");
            assert!(n > 0, "server exited before listening: {seen}");
            seen.push_str(&line);
            if let Some(rest) = line.trim().split("listening on http://").nth(1) {
                let addr = rest.strip_suffix(path).expect("bound path");
                break addr.parse::<SocketAddr>().expect("bound address");
            }
        };
        let stderr = Arc::new(Mutex::new(seen));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut rest = String::new();
            while lines.read_line(&mut rest).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&rest);
                rest.clear();
            }
        });
        let token = env
            .iter()
            .find(|(k, _)| *k == "RW_AUTH_TOKEN")
            .map(|(_, v)| v.to_string());
        HttpServer {
            child,
            addr,
            stderr,
            token,
        }
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// One HTTP exchange; `Host` defaults to the bound address unless given in `headers`.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
        {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(head.as_bytes()).expect("write head");
        // A server that refuses early may close before the whole body is sent.
        let _ = s.write_all(body);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        Reply::parse(&raw)
    }

    /// A POST of a JSON-RPC message with the usual MCP headers plus `extra`.
    pub fn post(&self, session: Option<&str>, message: &Value, extra: &[(&str, &str)]) -> Reply {
        self.post_to("/mcp", session, message, extra)
    }

    pub fn post_to(
        &self,
        path: &str,
        session: Option<&str>,
        message: &Value,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut headers = vec![ACCEPT, JSON];
        let auth;
        if let Some(t) = &self.token {
            auth = format!("Bearer {t}");
            headers.push(("Authorization", &auth));
        }
        if let Some(id) = session {
            headers.push(("Mcp-Session-Id", id));
        }
        headers.extend_from_slice(extra);
        self.send("POST", path, &headers, message.to_string().as_bytes())
    }

    /// An `initialize` POST (not followed by `initialized`).
    pub fn initialize(&self) -> Reply {
        self.post(None, &initialize_message(), &[])
    }

    pub fn session(&self) -> Session<'_> {
        let r = self.initialize();
        assert_eq!(r.status, 200, "initialize: {}", r.text());
        let id = r
            .header("mcp-session-id")
            .expect("Mcp-Session-Id")
            .to_string();
        assert_eq!(r.rpc(0)["result"]["serverInfo"]["name"], "resilient-write");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&id), &note, &[]).status, 202);
        Session {
            srv: self,
            id,
            next: 1,
        }
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// Wait for exit (at most `within`); the exit code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the server did not exit within {within:?}");
    }
}

pub fn initialize_message() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "0"}}})
}

/// An HTTP response with its body de-chunked.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn parse(raw: &[u8]) -> Reply {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .expect("status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        if chunked {
            body = dechunk(&body);
        }
        Reply {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// The JSON-RPC message answering `id`: the body itself, or the SSE `data:` frame.
    pub fn rpc(&self, id: u64) -> Value {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
        {
            return self.json();
        }
        sse_data(&self.text())
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .unwrap_or_else(|| panic!("no answer to {id} in {}", self.text()))
    }
}

pub fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&body[..eol]).unwrap_or("0");
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || body.len() < eol + 2 + size {
            return out;
        }
        out.extend_from_slice(&body[eol + 2..eol + 2 + size]);
        body = &body[(eol + 4 + size).min(body.len())..];
    }
}

/// The JSON of every SSE `data:` frame (empty priming frames skipped).
pub fn sse_data(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n");
            serde_json::from_str(&data).ok()
        })
        .collect()
}

/// An initialised MCP session.
pub struct Session<'a> {
    pub srv: &'a HttpServer,
    pub id: String,
    pub next: u64,
}

impl Session<'_> {
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let r = self.srv.post(Some(&self.id), &msg, &[]);
        assert_eq!(r.status, 200, "{method}: {}", r.text());
        r.rpc(id)
    }

    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r["result"].clone()
    }

    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args);
        assert_eq!(r["isError"], false, "{tool}: {r}");
        r["structuredContent"].clone()
    }
}

/// A secret-shaped token built at run time (never typed into a file).
pub fn generated_token() -> String {
    let seed = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut x = seed;
    let body: String = (0..40)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize])
        })
        .collect();
    format!("rwtest_{body}")
}

/// A streaming reader of one SSE response (the legacy GET /sse).
pub struct EventStream {
    pub reader: BufReader<TcpStream>,
    pub buffer: String,
    /// The response head (status line and headers).
    pub head: String,
}

impl EventStream {
    pub fn open(srv: &HttpServer) -> EventStream {
        EventStream::get(srv, "/sse", "")
    }

    /// GET `path` as an event stream; `extra` is more header lines, each ending in CRLF.
    pub fn get(srv: &HttpServer, path: &str, extra: &str) -> EventStream {
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{extra}\r\n",
            srv.host()
        );
        s.write_all(head.as_bytes()).unwrap();
        let mut reader = BufReader::new(s);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).unwrap() > 0, "closed: {head}");
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        EventStream {
            reader,
            buffer: String::new(),
            head,
        }
    }

    /// The response's status code.
    pub fn status(&self) -> u16 {
        self.head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status")
    }

    /// The next event as (name, data), reading chunk by chunk.
    pub fn next(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = Vec::new();
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                    }
                }
                if data.is_empty() {
                    continue; // keep-alive comment
                }
                return (name, data.join("\n"));
            }
            let mut size = String::new();
            self.reader.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
            assert!(n > 0, "the event stream ended");
            let mut chunk = vec![0; n + 2];
            self.reader.read_exact(&mut chunk).unwrap();
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk[..n]).replace("\r\n", "\n"));
        }
    }
}

/// A `tools/list` POST on `session`: its status (200 live, 404 gone).
pub fn list_status(srv: &HttpServer, session: &str) -> Reply {
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    srv.post(Some(session), &list, &[])
}

pub fn assert_session_gone(r: &Reply) {
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["reason"], "session_not_found");
}

/// Whether the server has closed `conn` (a read gives end of file or a reset).
pub fn closed(conn: &mut TcpStream) -> bool {
    conn.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 512];
    let closed = match conn.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    conn.set_nonblocking(false).unwrap();
    closed
}
