//! Benchmark: compose a chunk session through the write pipeline (streaming, in-process via the
//! library) beside a plain `cat` of the same chunk files into one file + fsync, in the same run.
//! Reports throughput, the ratio compose/cat (target: within 2x) and the peak RSS of the
//! compose (VmHWM, reset before it via /proc/self/clear_refs; target: under 64 MB).
//!
//! 1 GB session (the size, ~1 min):  cargo run --release --example compose_bench
//! Quicker run (256 MB):  RW_BENCH_MB=256 cargo run --release --example compose_bench
//! Chunk size:          RW_BENCH_CHUNK_KB (default 1024). Directory: RW_BENCH_DIR (default a
//! temp directory under the current one, so the figures are those of the project's disk).
//! Chunks are written with `chunk_write` (recorded, as an agent's are); RW_BENCH_PLAIN=1
//! writes plain files instead, which compose must hash one by one. RW_BENCH_ROUNDS (default
//! 4) cat/compose pairs are timed, each printed with its CPU seconds, then the best of each
//! and the median ratio of the pairs. Before each timed run, memory is warmed (see
//! `warm_memory`), so both runs fill equally warm pages. The last line says whether the targets
//! were met (median ratio of the rounds, peak RSS).

use resilient_write::dispatch::{Config, Service};
use resilient_write_core::chunks::{self, ComposeOptions};
use resilient_write_core::write::pipeline::Caller;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// This machine is a VM whose guest memory is backed lazily: a page freed for a while is
/// handed back to the host (free page reporting) and the next write into it faults it in
/// again, which here costs ~2.5 s per GiB, more than the whole compose. Before each timed run
/// a file of twice the output's size is written and deleted until one pass finds its memory
/// warm (at least 2 GiB/s, at most 5 passes), so cat and compose fill equally warm page-cache
/// pages rather than whichever happened to be cold. A round that still met cold memory shows
/// it in its CPU seconds. RW_BENCH_WARM sets the factor (default 2; 0 turns warming off, to
/// see the effect).
fn warm_page_cache(dir: &Path, bytes: u64) {
    let factor = env_u64("RW_BENCH_WARM", 2);
    let path = dir.join("warm.tmp");
    let block = vec![0u8; 1024 * 1024];
    let blocks = factor * bytes.div_ceil(block.len() as u64);
    for _ in 0..5 {
        let t = Instant::now();
        if let Ok(mut f) = File::create(&path) {
            for _ in 0..blocks {
                if f.write_all(&block).is_err() {
                    break;
                }
            }
        }
        std::fs::remove_file(&path).ok();
        let rate = (blocks * block.len() as u64) as f64 / t.elapsed().as_secs_f64();
        if rate >= 2.0 * (1u64 << 30) as f64 {
            break;
        }
    }
}

/// CPU seconds (user + system) this process has used, all threads, from /proc/self/stat
/// (in clock ticks of 1/100 s); 0 where unavailable.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or("");
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11) // utime and stime are fields 14 and 15, the 12th and 13th after the name
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn cat_and_fsync(dir: &Path, n: u64, out: &Path) -> f64 {
    let t = Instant::now();
    let mut f = File::create(out).expect("create cat output");
    for i in 1..=n {
        let mut c = File::open(dir.join(chunks::part_name(i))).expect("open chunk");
        std::io::copy(&mut c, &mut f).expect("copy");
    }
    f.sync_all().expect("fsync");
    File::open(out.parent().unwrap())
        .and_then(|d| d.sync_all())
        .ok();
    t.elapsed().as_secs_f64()
}

fn main() {
    let total_mb = env_u64("RW_BENCH_MB", 1024);
    let chunk_kb = env_u64("RW_BENCH_CHUNK_KB", 1024).max(1);
    let base = std::env::var("RW_BENCH_DIR").unwrap_or_else(|_| ".".into());
    let tmp = tempfile::Builder::new()
        .prefix("compose-bench-")
        .tempdir_in(&base)
        .expect("temp dir");
    let root = tmp.path().canonicalize().expect("canonical");
    let mut config = Config::new(root.clone());
    config.store.workspaces = vec![root.clone()];
    config.store.sweep_on_start = false;
    let service = Service::start(config);

    // The session, written with chunk_write as an agent would (each chunk recorded), or with
    // RW_BENCH_PLAIN=1 as plain files without records (compose then hashes every chunk).
    let plain = std::env::var("RW_BENCH_PLAIN").is_ok_and(|v| v == "1");
    let n = (total_mb * 1024).div_ceil(chunk_kb);
    let dir = root.join(".resilient_write/chunks/bench");
    std::fs::create_dir_all(&dir).expect("session dir");
    let writer = Caller {
        caller: "bench".into(),
        tool: "chunk_write".into(),
    };
    let t = Instant::now();
    let mut block = vec![0u8; (chunk_kb * 1024) as usize];
    for i in 1..=n {
        for (k, b) in block.iter_mut().enumerate() {
            *b = b'a' + ((k as u64 + i) % 26) as u8;
        }
        if plain {
            File::create(dir.join(chunks::part_name(i)))
                .and_then(|mut f| f.write_all(&block))
                .expect("write chunk");
        } else {
            let done = chunks::write_chunk(
                service.store(),
                &writer,
                "bench",
                Some(i),
                block.clone(),
                None,
                Default::default(),
            )
            .expect("chunk_write");
            assert!(!done.replayed(), "no idempotency key: never a replay");
        }
    }
    drop(block);
    println!(
        "session written in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        if plain {
            "plain files, no records: compose hashes every chunk"
        } else {
            "chunk_write: every chunk recorded"
        }
    );
    let bytes = n * chunk_kb * 1024;
    let mb = bytes as f64 / (1024.0 * 1024.0);
    println!(
        "session: {n} chunks of {chunk_kb} KiB = {mb:.0} MiB in {}",
        root.display()
    );

    let who = Caller {
        caller: "bench".into(),
        tool: "chunk_compose".into(),
    };
    let rounds = env_u64("RW_BENCH_ROUNDS", 4).max(1);
    let mut cats = Vec::new();
    let mut composes = Vec::new();
    let mut peak_kb = 0;
    let rss_before = status_kb("VmRSS:");
    for round in 0..rounds {
        warm_page_cache(&root, bytes);
        let cat = cat_and_fsync(&dir, n, &root.join("cat.out"));
        std::fs::remove_file(root.join("cat.out")).ok();
        let target = service
            .store()
            .workspaces()
            .resolve(&format!("composed-{round}.out"), true)
            .expect("resolve output");
        warm_page_cache(&root, bytes);
        let reset = reset_peak_rss();
        let cpu0 = cpu_secs();
        let t = Instant::now();
        let done = chunks::compose_with(
            service.store(),
            &who,
            "bench",
            &target,
            ComposeOptions {
                separator: Vec::new(),
                mode: None,
                expected_prev_sha256: None,
                cleanup: false,
                extra: BTreeMap::new(),
                progress: None,
                classify: None,
            },
            |_| Ok(None::<()>),
        )
        .expect("compose");
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_secs() - cpu0;
        println!(
            "round {round}: cat + fsync {cat:.3} s, compose {secs:.3} s ({cpu:.2} s CPU), ratio {:.2}x",
            secs / cat
        );
        let Ok(composed) = done else {
            panic!("compose did not complete")
        };
        assert_eq!(composed.outcome.bytes, bytes);
        cats.push(cat);
        composes.push(secs);
        if reset {
            peak_kb = peak_kb.max(status_kb("VmHWM:"));
        }
        std::fs::remove_file(root.join(format!("composed-{round}.out"))).ok();
    }
    let ratios: Vec<f64> = composes.iter().zip(&cats).map(|(c, k)| c / k).collect();
    let best_cat = cats.iter().copied().fold(f64::MAX, f64::min);
    let best_compose = composes.iter().copied().fold(f64::MAX, f64::min);
    println!(
        "cat + fsync:          {:8.3} s  {:8.1} MiB/s  (best of {rounds}; median {:.3} s)",
        best_cat,
        mb / best_cat,
        median(cats.clone())
    );
    println!(
        "chunk_compose:        {:8.3} s  {:8.1} MiB/s  (best of {rounds}; median {:.3} s; stream, hash, fsync, read-back, rename)",
        best_compose,
        mb / best_compose,
        median(composes.clone())
    );
    let median_ratio = median(ratios);
    println!(
        "ratio compose/cat:    {:8.2}x  (best against best; median of the rounds {median_ratio:.2}x; target <= 2x)",
        best_compose / best_cat,
    );
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    let rss = match peak_kb {
        0 => "unmeasured".to_string(),
        kb => met(kb < 64 * 1024).to_string(),
    };
    let verdict = format!(
        "targets: ratio <= 2x {} (median {median_ratio:.2}x); peak RSS < 64 MiB {rss}",
        met(median_ratio <= 2.0)
    );
    if peak_kb > 0 {
        println!(
            "peak RSS of compose:  {:8.1} MiB  (VmHWM reset before compose; RSS before: {:.1} MiB; target < 64 MiB)",
            peak_kb as f64 / 1024.0,
            rss_before as f64 / 1024.0
        );
    } else {
        println!("peak RSS of compose:  unavailable (/proc/self/clear_refs not writable)");
    }
    println!("{verdict}");
}
