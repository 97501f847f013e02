//! Many agents at once: aggregate 1 KB `safe_write` creates per second at 1, 4 and 16 agents,
//! against as many independent bare floor loops (temp file, write, fsync, rename, directory
//! fsync) measured in the same run:
//!
//! - **stdio**: one release server process per agent, all on one workspace (one journal);
//! - **HTTP**: one release server, one MCP session per agent (the journal's group commit and
//!   coalesced directory syncs apply to these).
//!
//! Each agent (and each floor loop) writes new files in a directory of its own, one call at a
//! time, for the case's duration. Each server case starts on a workspace of its own, empty,
//! beside the floor's directories: a server's start-up sweep for stale temp files (a walk of
//! the workspace on a low-priority thread) then has nothing to walk, so the case measures the
//! writes, not the start-up (which `write_bench` measures). The floor is measured before and
//! after the two server runs of each agent count and averaged, so a drift of the disk during
//! the run hits both sides.
//! HTTP is measured twice: each request on a connection of its own (`Connection: close`, as
//! the tests' client does), and each session on one connection kept alive across its calls
//! (as the MCP SDKs' HTTP clients do).
//!
//! Under each row, what the writes cost the whole machine (`/proc/stat` over each case's
//! run): CPU time per write, every process and kernel thread counted (clients, servers,
//! the filesystem's journal, the block device), and how busy the CPUs were; so a case that
//! ran out of CPU shows as such.
//!
//! Run: `cargo build --release && cargo run --release --example agents_bench [SECONDS]`
//! (SECONDS per case, default 3; the directory is `$RW_BENCH_DIR`, default a temp dir;
//! `RW_BENCH_AGENTS=16` runs only the agent counts listed; the server is `$RW_BENCH_BIN`,
//! default the release build; `tests/bench_smoke.rs` runs it small).

#[path = "bench_server/mod.rs"]
mod bench_server;
use bench_server::binary;
use resilient_write::client::{Launch, McpClient};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::time::Instant;

const LEN: usize = 1024;

fn content(agent: usize, i: usize) -> String {
    let mut s = format!("agent {agent} write {i}\n");
    s.extend((s.len()..LEN).map(|k| (b'a' + ((k + i) % 26) as u8) as char));
    s
}

/// Clock ticks per second of `/proc/stat` (`USER_HZ`, 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

/// CPU ticks of the whole machine since boot: (busy, all). Busy is user, nice, system, irq
/// and softirq; idle, iowait and steal (another guest's time) are not.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    (busy, busy + at(3) + at(4) + at(7))
}

/// One case's figures: calls per second, and what they cost the machine.
#[derive(Clone, Copy)]
struct Rate {
    per_sec: f64,
    /// Busy CPU time of the whole machine per call, ms.
    cpu_ms: f64,
    /// Fraction of the machine's CPU time that was busy.
    busy: f64,
}

/// Run `agents` loops of `one(agent, i)` for `secs` after a common start: calls per second
/// and the machine's CPU per call.
fn run(agents: usize, secs: f64, one: impl Fn(usize, usize) + Sync) -> Rate {
    let barrier = Barrier::new(agents);
    let ticks = machine_ticks();
    let total: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..agents)
            .map(|a| {
                let (barrier, one) = (&barrier, &one);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let mut i = 0;
                    while start.elapsed().as_secs_f64() < secs {
                        one(a, i);
                        i += 1;
                    }
                    i
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("agent thread"))
            .sum()
    });
    let now = machine_ticks();
    let (busy, all) = (now.0.saturating_sub(ticks.0), now.1.saturating_sub(ticks.1));
    Rate {
        per_sec: total as f64 / secs,
        cpu_ms: busy as f64 / USER_HZ * 1e3 / total.max(1) as f64,
        busy: busy as f64 / all.max(1) as f64,
    }
}

/// A new, empty workspace for one server case, beside the floor's directories.
fn workspace(root: &Path, kind: &str, agents: usize) -> PathBuf {
    let ws = root.join(format!("ws-{kind}-{agents}"));
    std::fs::create_dir_all(&ws).expect("workspace dir");
    ws
}

/// The floor: `agents` independent loops, each in its own directory.
fn floor(root: &Path, round: &str, agents: usize, secs: f64) -> Rate {
    let dirs: Vec<(PathBuf, File)> = (0..agents)
        .map(|a| {
            let d = root.join(format!("floor/{round}-{agents}-{a}"));
            std::fs::create_dir_all(&d).expect("floor dir");
            let h = File::open(&d).expect("open floor dir");
            (d, h)
        })
        .collect();
    run(agents, secs, |a, i| {
        let (dir, handle) = &dirs[a];
        let tmp = dir.join(format!(".tmp{i}"));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .expect("create temp");
        f.write_all(content(a, i).as_bytes()).expect("write");
        f.sync_all().expect("fsync");
        drop(f);
        std::fs::rename(&tmp, dir.join(format!("f{i}.txt"))).expect("rename");
        handle.sync_all().expect("fsync dir");
    })
}

fn stdio(root: &Path, agents: usize, secs: f64) -> Rate {
    let clients: Vec<std::sync::Mutex<McpClient>> = (0..agents)
        .map(|_| {
            std::sync::Mutex::new(
                Launch::new(binary())
                    .cwd(root)
                    .client_name("agents-bench")
                    .spawn()
                    .expect("spawn the release binary (cargo build --release first)"),
            )
        })
        .collect();
    run(agents, secs, |a, i| {
        let mut c = clients[a].lock().expect("client");
        c.call(
            "rw_safe_write",
            json!({"path": format!("stdio-{agents}-{a}/f{i}.txt"), "content": content(a, i),
                   "mode": "create"}),
        )
        .expect("safe_write over stdio");
    })
}

struct Http {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Http {
    fn start(root: &Path) -> Http {
        let mut child = Command::new(binary())
            .args(["serve", "--transport", "http", "--port", "0"])
            .current_dir(root)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .env_remove("RW_AUTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the release binary (cargo build --release first)");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
        let addr = loop {
            let mut line = String::new();
            assert!(lines.read_line(&mut line).expect("stderr") > 0, "no listen");
            if let Some(rest) = line.trim().split("listening on http://").nth(1) {
                break rest
                    .trim_end_matches("/mcp")
                    .parse()
                    .expect("bound address");
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink);
        });
        Http { child, addr }
    }

    fn post(&self, session: Option<&str>, body: &str) -> String {
        let mut s = TcpStream::connect(self.addr).expect("connect");
        s.write_all(request(self.addr, session, body, false).as_bytes())
            .expect("send");
        let mut raw = String::new();
        s.read_to_string(&mut raw).expect("read reply");
        raw
    }

    fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "agents-bench", "version": "0"}}});
        let reply = self.post(None, &init.to_string());
        let id = reply
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_string())
            })
            .expect("Mcp-Session-Id");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(Some(&id), &note.to_string());
        id
    }
}

/// One POST to `/mcp`: the head and `body`; `keep` leaves the connection open for the next.
fn request(addr: SocketAddr, session: Option<&str>, body: &str, keep: bool) -> String {
    let connection = if keep { "keep-alive" } else { "close" };
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n",
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    head
}

/// A client connection kept open across calls (what the MCP SDKs' HTTP clients do).
struct KeptAlive {
    reader: BufReader<TcpStream>,
}

impl KeptAlive {
    fn connect(addr: SocketAddr) -> KeptAlive {
        KeptAlive {
            reader: BufReader::new(TcpStream::connect(addr).expect("connect")),
        }
    }

    /// POST `body` and read the whole response (its body by length or by chunks).
    fn post(&mut self, addr: SocketAddr, session: &str, body: &str) -> String {
        let req = request(addr, Some(session), body, true);
        self.reader
            .get_mut()
            .write_all(req.as_bytes())
            .expect("send");
        let (mut length, mut chunked) = (None, false);
        loop {
            let mut line = String::new();
            assert!(
                self.reader.read_line(&mut line).expect("head") > 0,
                "closed"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "content-length" {
                    length = v.parse::<usize>().ok();
                }
                if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).expect("chunk size");
                let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
                let mut chunk = vec![0u8; n + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
        } else if let Some(n) = length {
            out.resize(n, 0);
            self.reader.read_exact(&mut out).expect("body");
        }
        String::from_utf8(out).expect("utf-8 reply")
    }
}

fn check_reply(reply: &str) {
    assert!(
        reply.contains("\\\"journal_id\\\"") || reply.contains("\"journal_id\""),
        "safe_write over HTTP failed: {reply}"
    );
    assert!(!reply.contains("\"isError\":true"), "{reply}");
}

fn write_call(agents: usize, a: usize, i: usize, kind: &str) -> String {
    json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
        "name": "rw_safe_write",
        "arguments": {"path": format!("{kind}-{agents}-{a}/f{i}.txt"), "content": content(a, i),
                      "mode": "create"}}})
    .to_string()
}

/// HTTP sessions, each call on a connection of its own (`Connection: close`).
fn http(root: &Path, agents: usize, secs: f64) -> Rate {
    let server = Http::start(root);
    let sessions: Vec<String> = (0..agents).map(|_| server.session()).collect();
    run(agents, secs, |a, i| {
        check_reply(&server.post(Some(&sessions[a]), &write_call(agents, a, i, "http")));
    })
}

/// HTTP sessions, each on one connection kept alive across its calls.
fn http_kept(root: &Path, agents: usize, secs: f64) -> Rate {
    let server = Http::start(root);
    let sessions: Vec<String> = (0..agents).map(|_| server.session()).collect();
    let conns: Vec<std::sync::Mutex<KeptAlive>> = (0..agents)
        .map(|_| std::sync::Mutex::new(KeptAlive::connect(server.addr)))
        .collect();
    run(agents, secs, |a, i| {
        let mut c = conns[a].lock().expect("connection");
        check_reply(&c.post(server.addr, &sessions[a], &write_call(agents, a, i, "kept")));
    })
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3.0);
    let base = std::env::var_os("RW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("rw-agents-bench")
        .tempdir_in(&base)
        .expect("bench dir");
    let root = dir.path().canonicalize().expect("canonical");
    println!(
        "resilient-write agents benchmark: aggregate 1 KB creates/s, {secs} s per case, dir {}",
        base.display()
    );
    println!("  agents  floor w/s   stdio w/s  ratio   http w/s  ratio   http keep-alive  ratio");
    // `RW_BENCH_AGENTS=16` (a comma-separated list) runs only those counts.
    let counts: Vec<usize> = std::env::var("RW_BENCH_AGENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 4, 16]);
    for agents in counts {
        let before = floor(&root, "a", agents, secs);
        let s = stdio(&workspace(&root, "stdio", agents), agents, secs);
        let h = http(&workspace(&root, "http", agents), agents, secs);
        let k = http_kept(&workspace(&root, "kept", agents), agents, secs);
        let after = floor(&root, "b", agents, secs);
        let f = (before.per_sec + after.per_sec) / 2.0;
        println!(
            "  {agents:>6} {f:>10.0} {:>11.0} {:>5.2}x {:>10.0} {:>5.2}x {:>17.0} {:>5.2}x   (floor before {:.0}, after {:.0})",
            s.per_sec,
            s.per_sec / f,
            h.per_sec,
            h.per_sec / f,
            k.per_sec,
            k.per_sec / f,
            before.per_sec,
            after.per_sec,
        );
        let cpu = |r: Rate| format!("{:.3} ({:.0}%)", r.cpu_ms, r.busy * 1e2);
        println!(
            "         cpu ms/write (busy): floor {} / {}, stdio {}, http {}, kept alive {}",
            cpu(before),
            cpu(after),
            cpu(s),
            cpu(h),
            cpu(k),
        );
    }
    println!("  goals at 16 agents: stdio >= 0.7x, http >= 0.9x of the floor");
    println!(
        "  cpu ms/write: the whole machine's busy CPU time per write (every process and kernel \
         thread), with how busy its CPUs were"
    );
}
