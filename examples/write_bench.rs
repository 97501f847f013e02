//! Benchmark of the foundation's performance goals, as ratios measured in one run:
//!
//! - `safe_write` over stdio (a real client round trip to the release binary) against the
//!   syscall floor, a bare loop doing the same temp write / fsync / rename / dir fsync, per
//!   call, for `create` (a new file each call) and `overwrite` (history on: every overwrite
//!   keeps its pre-image) at 1 KB, 64 KB and 1 MB; each call's content differs, so no
//!   pre-image is found already stored; then the 64 KB and 1 MB creates again after one
//!   failed call (`create*`: the server then keeps retry budgets);
//! - start to initialized (spawn + `initialize` answered);
//! - idle RSS of the server after the handshake.
//!
//! Beside each case's medians, the CPU time a call costs (mean per call): the floor's (its
//! thread's, user and kernel), the server process's (all its threads) and the client's (the
//! benchmark's thread while the call is on the wire). Work the kernel does on threads of
//! its own (the filesystem's journal commits, the block device) counts on neither side.
//!
//! Run: `cargo build --release && cargo run --release --example write_bench [ITERATIONS]`
//! (ITERATIONS per case, default 300; 1 MB cases run a fifth of them, at least 30)
//! (the directory used is `$RW_BENCH_DIR`, default a temp dir on the same disk as /tmp; the
//! server is `$RW_BENCH_BIN`, default the release build; `tests/bench_smoke.rs` runs it small).

#[path = "bench_server/mod.rs"]
mod bench_server;
use bench_server::binary;
use resilient_write::client::{Launch, McpClient};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A CPU-time clock's reading (`clock_gettime`).
fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration; an unknown clock
    // returns an error and leaves it zero.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time process `pid` has used, all its threads: Linux lets any process read another's
/// CPU clock, whose id is `MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)`.
fn process_cpu(pid: u32) -> Duration {
    cpu_clock((!(pid as libc::clockid_t) << 3) | 2)
}

/// Mean CPU time per call, in ms.
fn per_call_ms(total: Duration, calls: usize) -> f64 {
    total.as_secs_f64() * 1e3 / calls.max(1) as f64
}

/// One case's figures: the medians of the floor and of safe_write, and the mean CPU time a
/// call cost the floor, the server and the client.
struct Case {
    floor: Duration,
    write: Duration,
    floor_cpu: f64,
    server_cpu: f64,
    client_cpu: f64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The floor: what any correct atomic writer must do per call (one call, timed): temp file,
/// write, fsync, rename over `name`, fsync of the directory.
fn syscall_floor_once(
    dir: &Path,
    dir_handle: &File,
    name: &str,
    payload: &[u8],
    i: usize,
) -> (Duration, Duration) {
    let target = dir.join(name);
    let cpu = thread_cpu();
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
    (t.elapsed(), thread_cpu().saturating_sub(cpu))
}

/// Content of `len` bytes, different for each `i`.
fn content(len: usize, i: usize) -> String {
    let mut s = format!("{i:>12}\n");
    s.extend((s.len()..len).map(|k| (b'a' + ((k + i) % 26) as u8) as char));
    s.truncate(len);
    s
}

/// Medians of the floor and of safe_write for one case (`create`: a new file per call, removed
/// untimed afterwards on both sides; else overwrites of one file), and their CPU times.
fn case(
    client: &mut McpClient,
    root: &Path,
    dir_handle: &File,
    mode: &str,
    len: usize,
    iterations: usize,
) -> Case {
    // The two sides alternate call by call, so background load hits both alike; the first 20
    // rounds warm up the disk and the page cache and are not counted.
    let mut times = Vec::with_capacity(iterations);
    let mut floor_times = Vec::with_capacity(iterations);
    let (mut floor_cpu, mut server_cpu, mut client_cpu) = Default::default();
    let server = client.pid();
    let create = mode == "create";
    for i in 0..iterations + 20 {
        let body = content(len, i);
        let name = if create {
            format!("floor-{len}-{i}.txt")
        } else {
            format!("floor-{len}.txt")
        };
        let (floor_once, floor_cpu_once) =
            syscall_floor_once(root, dir_handle, &name, body.as_bytes(), i);
        let path = if create {
            format!("bench-{len}-{i}.txt")
        } else {
            format!("bench-{len}.txt")
        };
        // The arguments are built before the clock starts (the body moved in, not copied), as
        // the floor's payload is: both sides start from the content in memory in the form
        // their interface takes, and the client's serialisation, the round trip and the
        // server's work are timed.
        let mode = if create { "create" } else { "overwrite" };
        let args = serde_json::Value::Object(serde_json::Map::from_iter([
            ("path".to_string(), json!(path)),
            ("mode".to_string(), json!(mode)),
            ("content".to_string(), serde_json::Value::String(body)),
        ]));
        let (server_before, client_before) = (process_cpu(server), thread_cpu());
        let t = Instant::now();
        let r = client.call("rw_safe_write", args);
        let elapsed = t.elapsed();
        let client_once = thread_cpu().saturating_sub(client_before);
        let server_once = process_cpu(server).saturating_sub(server_before);
        if let Err(e) = r {
            panic!("safe_write failed: {e}");
        }
        if create {
            let _ = std::fs::remove_file(root.join(&name));
            let _ = std::fs::remove_file(root.join(&path));
        }
        if i >= 20 {
            times.push(elapsed);
            floor_times.push(floor_once);
            floor_cpu += floor_cpu_once;
            server_cpu += server_once;
            client_cpu += client_once;
        }
    }
    Case {
        floor: median(floor_times),
        write: median(times),
        floor_cpu: per_call_ms(floor_cpu, iterations),
        server_cpu: per_call_ms(server_cpu, iterations),
        client_cpu: per_call_ms(client_cpu, iterations),
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
    let dir_handle = File::open(&root).expect("open dir");
    let (mut client, _) = start(&root);
    let mut results = Vec::new();
    for mode in ["create", "overwrite"] {
        for (label, len) in [("1 KB", 1024), ("64 KB", 64 * 1024), ("1 MB", 1024 * 1024)] {
            let n = if len >= 1 << 20 {
                (iterations / 5).max(30)
            } else {
                iterations
            };
            results.push((
                mode,
                label,
                n,
                case(&mut client, &root, &dir_handle, mode, len, n),
            ));
        }
    }
    // A session that has seen a failure keeps retry budgets: the large creates again, after
    // one failed call (a read of a missing file), so a cost that only such sessions pay shows.
    let failed = client.call("rw_read", json!({"path": "no-such-file.txt"}));
    assert!(failed.is_err(), "the read of a missing file must fail");
    for (label, len) in [("64 KB", 64 * 1024), ("1 MB", 1024 * 1024)] {
        let n = if len >= 1 << 20 {
            (iterations / 5).max(30)
        } else {
            iterations
        };
        let c = case(&mut client, &root, &dir_handle, "create", len, n);
        results.push(("create*", label, n, c));
    }
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
        "resilient-write write benchmark (safe_write over stdio vs syscall floor, per call, \
         median; dir {})",
        base.display()
    );
    println!(
        "  case               calls   floor ms   safe_write ms   ratio  goal      \
         cpu ms/call: floor  server  client"
    );
    for (mode, label, n, c) in &results {
        let goal = if mode.starts_with("create") { 1.3 } else { 1.5 };
        let ratio = c.write.as_secs_f64() / c.floor.as_secs_f64();
        let verdict = if ratio <= goal { "" } else { " (not met)" };
        println!(
            "  {mode:<9} {label:<6} {n:>7} {:>10.3} {:>15.3} {ratio:>6.2}x  <= {goal}x{verdict:<11} \
             {:>6.3} {:>7.3} {:>7.3}",
            c.floor.as_secs_f64() * 1e3,
            c.write.as_secs_f64() * 1e3,
            c.floor_cpu,
            c.server_cpu,
            c.client_cpu,
        );
    }
    println!(
        "  create*: the same creates in a session that has seen a failed call (retry budgets kept)"
    );
    println!(
        "  cpu ms/call: mean CPU time of a call, user and kernel: the floor's thread, the server \
         process, the client's thread"
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
