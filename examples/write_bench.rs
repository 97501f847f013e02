//! Benchmark of the foundation's performance goals, as ratios measured in one run:
//!
//! - `safe_write` of 1 KB over stdio (a real client round trip to the release binary) against
//!   the syscall floor: a bare loop doing the same temp write / fsync / rename / dir fsync;
//! - start to initialized (spawn + `initialize` answered);
//! - idle RSS of the server after the handshake.
//!
//! Run: `cargo build --release && cargo run --release --example write_bench [ITERATIONS]`
//! (the directory used is `$RW_BENCH_DIR`, default a temp dir on the same disk as /tmp).

use resilient_write::client::{Launch, McpClient};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
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

/// Start the release server in `dir` and time spawn + `initialize` answered.
fn start(dir: &Path) -> (McpClient, Duration) {
    let t = Instant::now();
    let client = Launch::new(binary())
        .cwd(dir)
        .client_name("bench")
        .spawn()
        .expect("spawn the release binary (cargo build --release first)");
    (client, t.elapsed())
}

/// Resident set of process `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
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
    let (mut client, _) = start(&root);
    let mut times = Vec::with_capacity(iterations);
    let mut floor_times = Vec::with_capacity(iterations);
    for i in 0..iterations + 20 {
        let floor_once = syscall_floor_once(&root, &dir_handle, &payload, i);
        let t = Instant::now();
        let r = client.call(
            "rw_safe_write",
            json!({"path": "bench.txt", "content": content, "mode": "overwrite"}),
        );
        let elapsed = t.elapsed();
        if let Err(e) = r {
            panic!("safe_write failed: {e}");
        }
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
        let (c, elapsed) = start(&root);
        starts.push(elapsed);
        std::thread::sleep(Duration::from_millis(50));
        rss.push(rss_kib(c.pid()));
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
