//! A nearly full disk (issue 45): what an overwrite costs when the disk holding the workspace
//! and `.resilient_write/` has 40 KiB free and history holds 10,000 pre-images, against the
//! same overwrites on the same filesystem with plenty of room, measured in one run.
//!
//! A tmpfs is mounted for the run (root only). 10,000 small files are created and each
//! overwritten once, so the object store holds 10,000 pre-images; a server is started fresh
//! (it has listed nothing yet) and times `safe_write` overwrites over stdio, cycling through
//! the files: first with the disk roomy, then after a filler file leaves 40 KiB free. Each
//! case reports the median and p90 per write, how many writes failed, and how many versions
//! history gave up. The goal: the nearly full case within 1.5x of the roomy one, every write
//! succeeding while droppable pre-images exist.
//!
//! Run: `cargo build --release && sudo cargo run --release --example full_disk_bench [WRITES]`
//! (WRITES per case, default 1000; `$RW_BENCH_BIN` names another server binary).

#[path = "bench_server/mod.rs"]
mod bench_server;
use bench_server::binary;
use resilient_write::client::{Launch, McpClient};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const LEFT_FREE: u64 = 40 * 1024;

fn server(dir: &Path) -> McpClient {
    Launch::new(binary())
        .cwd(dir)
        .client_name("bench")
        .spawn()
        .expect("spawn the server (cargo build --release first)")
}

fn body(i: usize, round: usize) -> String {
    format!("file {i}, round {round}\n{}", "x".repeat(400))
}

fn free(dir: &Path) -> u64 {
    rustix::fs::statvfs(dir)
        .map(|v| v.f_bavail * v.f_frsize)
        .unwrap_or(0)
}

fn objects(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".resilient_write/objects"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|f| std::fs::read_dir(f.path()).into_iter().flatten().count())
        .sum()
}

struct Case {
    name: &'static str,
    times: Vec<Duration>,
    failed: usize,
    pruned: u64,
}

impl Case {
    fn quantile(&self, q: f64) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        t.get(((t.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    }
}

fn overwrites(c: &mut McpClient, name: &'static str, writes: usize, round: usize) -> Case {
    let mut case = Case {
        name,
        times: Vec::with_capacity(writes),
        failed: 0,
        pruned: 0,
    };
    for n in 0..writes {
        let i = (n * 7919) % FILES;
        let args = json!({"path": format!("d{}/f{i}.txt", i % 100), "content": body(i, round + n), "mode": "overwrite"});
        let t = Instant::now();
        let r = c.call_result("rw_safe_write", args);
        case.times.push(t.elapsed());
        match r {
            Ok(v) if v["isError"] == json!(true) => case.failed += 1,
            Ok(v) => {
                if let Some(n) = v["structuredContent"]["warnings"]
                    .as_array()
                    .and_then(|w| w.iter().find_map(|w| w.as_str()))
                    .filter(|w| w.starts_with("history_pruned"))
                    .and_then(|w| w.split(';').nth(1))
                    .and_then(|w| w.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    case.pruned += n;
                }
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
    case
}

fn main() {
    let writes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    if !rustix::process::geteuid().is_root() {
        eprintln!("full_disk_bench mounts a tmpfs: run it as root");
        std::process::exit(2);
    }
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = parent.path().join("mnt");
    std::fs::create_dir(&dir).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=128m", "tmpfs"])
        .arg(&dir)
        .status()
        .expect("run mount");
    assert!(mounted.success(), "mount -t tmpfs failed");
    let _unmount = Unmount(dir.clone());

    // 10,000 files, each overwritten once: 10,000 pre-images.
    let t = Instant::now();
    let mut c = server(&dir);
    for i in 0..FILES {
        let p = format!("d{}/f{i}.txt", i % 100);
        c.call("rw_safe_write", json!({"path": p, "content": body(i, 0)}))
            .expect("create");
        c.call(
            "rw_safe_write",
            json!({"path": p, "content": body(i, 1), "mode": "overwrite"}),
        )
        .expect("overwrite");
    }
    drop(c);
    println!(
        "setup: {FILES} files created and overwritten in {:.1} s; {} objects in the store; {} MiB free of 128",
        t.elapsed().as_secs_f64(),
        objects(&dir),
        free(&dir) >> 20
    );

    let mut c = server(&dir);
    let roomy = overwrites(&mut c, "roomy disk", writes, 10);
    drop(c);

    // Something else fills the disk to 40 KiB free; a fresh server meets it.
    let filler = dir.join("filler.bin");
    let mut f = std::fs::File::create(&filler).expect("filler");
    let block = vec![0u8; 1 << 20];
    while free(&dir) > LEFT_FREE + (1 << 20) {
        f.write_all(&block).expect("fill");
    }
    let small = vec![0u8; 4096];
    while free(&dir) > LEFT_FREE {
        f.write_all(&small).expect("fill");
    }
    f.sync_all().ok();
    let before = objects(&dir);
    println!("filled: {} KiB free, {before} objects", free(&dir) >> 10);
    let mut c = server(&dir);
    let full = overwrites(&mut c, "40 KiB free", writes, 10 + writes);
    drop(c);

    println!();
    println!(
        "{:<14} {:>7} {:>11} {:>11} {:>7} {:>16}",
        "case", "writes", "median", "p90", "failed", "versions dropped"
    );
    for case in [&roomy, &full] {
        println!(
            "{:<14} {:>7} {:>8.3} ms {:>8.3} ms {:>7} {:>16}",
            case.name,
            case.times.len(),
            case.quantile(0.5).as_secs_f64() * 1e3,
            case.quantile(0.9).as_secs_f64() * 1e3,
            case.failed,
            case.pruned
        );
    }
    println!(
        "nearly full / roomy: median {:.2}x, p90 {:.2}x (goal: within 1.5x); {} of {} writes failed \
         with {} objects left",
        full.quantile(0.5).as_secs_f64() / roomy.quantile(0.5).as_secs_f64(),
        full.quantile(0.9).as_secs_f64() / roomy.quantile(0.9).as_secs_f64(),
        full.failed,
        full.times.len(),
        objects(&dir)
    );
}

/// Unmounts the tmpfs when dropped.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
