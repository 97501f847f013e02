//! Benchmark of the foundation's performance goals, as ratios measured in one run:
//!
//! - `safe_write` of 1 KB over stdio (a real client round trip to the release binary) against
//!   the syscall floor: a bare loop doing the same temp write / fsync / rename / dir fsync;
//! - start to initialized (spawn + `initialize` answered);
//! - idle RSS of the server after the handshake.
//!
//! Run: `cargo build --release && cargo run --release --example write_bench [ITERATIONS]`
//! (the directory used is `$RW_BENCH_DIR`, default a temp dir on the same disk as /tmp).

use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("release/resilient-write")
}

/// The floor: what any correct atomic writer must do per call (one call, timed).
fn syscall_floor_once(dir: &Path, dir_handle: &File, payload: &[u8], i: usize) -> Duration {
    let target = dir.join("floor.txt");
    {
        let t = Instant::now();
        let tmp = dir.join(format!(".floor.tmp{i}"));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .expect("create temp");
        f.write_all(payload).expect("write");
        f.sync_all().expect("fsync");
        drop(f);
        std::fs::rename(&tmp, &target).expect("rename");
        dir_handle.sync_all().expect("fsync dir");
        t.elapsed()
    }
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: u64,
}

impl Client {
    fn start(dir: &Path) -> (Client, Duration) {
        let t = Instant::now();
        let mut child = Command::new(binary())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the release binary (cargo build --release first)");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut c = Client {
            child,
            stdin,
            stdout,
            id: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        let elapsed = t.elapsed();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(c.stdin, "{note}").expect("write");
        (c, elapsed)
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("read");
            let v: Value = serde_json::from_str(&line).expect("json");
            if v["id"] == json!(self.id) {
                return v;
            }
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let base = std::env::var_os("RW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("rw-bench")
        .tempdir_in(&base)
        .expect("bench dir");
    let root = dir.path().canonicalize().expect("canonical");
    let payload: Vec<u8> = (0..1024).map(|i| b'a' + (i % 26) as u8).collect();
    let content = String::from_utf8(payload.clone()).expect("ascii");

    // The two sides alternate call by call, so background load hits both alike; the first 20
    // rounds warm up the disk and the page cache and are not counted.
    let dir_handle = File::open(&root).expect("open dir");
    let (mut client, _) = Client::start(&root);
    let mut times = Vec::with_capacity(iterations);
    let mut floor_times = Vec::with_capacity(iterations);
    for i in 0..iterations + 20 {
        let floor_once = syscall_floor_once(&root, &dir_handle, &payload, i);
        let t = Instant::now();
        let r = client.request(
            "tools/call",
            json!({"name": "rw_safe_write",
                   "arguments": {"path": "bench.txt", "content": content, "mode": "overwrite"}}),
        );
        let elapsed = t.elapsed();
        assert_eq!(r["result"]["isError"], json!(false), "{r}");
        if i >= 20 {
            times.push(elapsed);
            floor_times.push(floor_once);
        }
    }
    let write = median(times);
    let floor = median(floor_times);
    drop(client);

    let mut starts = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..20 {
        let (c, elapsed) = Client::start(&root);
        starts.push(elapsed);
        std::thread::sleep(Duration::from_millis(50));
        rss.push(c.rss_kib());
    }
    rss.sort();

    println!(
        "resilient-write write benchmark ({iterations} iterations, 1 KB, dir {})",
        base.display()
    );
    println!(
        "  syscall floor (temp+fsync+rename+dir fsync): median {:>9.3} ms",
        floor.as_secs_f64() * 1e3
    );
    println!(
        "  safe_write over stdio (client round trip):   median {:>9.3} ms",
        write.as_secs_f64() * 1e3
    );
    println!(
        "  ratio safe_write / floor:                     {:>9.2}x (goal <= 1.5x)",
        write.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "  start to initialized:                         median {:>9.3} ms (goal < 20 ms)",
        median(starts).as_secs_f64() * 1e3
    );
    println!(
        "  idle RSS after initialize:                    median {:>9.1} MB (goal < 15 MB)",
        rss[rss.len() / 2] as f64 / 1024.0
    );
}
