//! L0 benchmark: throughput on mixed source (MB/s, ms per 100 KB) and the time of pathological
//! inputs (a 10 MB single line, 1 MB of `=`, dense keywords). Pure CPU, no I/O in the timed part.
//!
//! Beside ours, the Python original (resilient-write 0.3.0, pinned by hash in
//! `tests/e2e/original.txt`) scores the same 100 KB in the same run
//! (`scripts/original_l0_bench.py`); its wheel is fetched into `target/original-py/` with pip
//! when missing (or named by `RW_ORIGINAL_WHEEL`).
//!
//! A draft of at least `SPLIT_MIN` (128 KiB) runs its scanners on a second thread, so the
//! 100 KB figure is on one thread. 400 KB and the 100 KB are also timed on two threads and on
//! one, alternated; `RW_L0_SPLIT=mixed` or `RW_L0_SPLIT=FILE` prints two threads against one at
//! sizes from 48 to 400 KB (where the second thread pays).
//!
//! Run: `cargo run --release --example l0_bench`

#[path = "l0_corpus/mod.rs"]
mod corpus;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use resilient_write_core::classify::{Classifier, SPLIT_MIN, redact, risk_score};

fn time_it(label: &str, input: &str, c: &Classifier, iters: usize) -> f64 {
    let per = time_quiet(input, c, iters);
    let mbps = input.len() as f64 / per / 1e6;
    println!(
        "{label:<44} {:>10} bytes {:>10.3} ms {:>9.1} MB/s",
        input.len(),
        per * 1e3,
        mbps
    );
    per
}

/// The mean time of one call over `iters` calls, after one to warm up, printed by the caller.
fn time_quiet(input: &str, c: &Classifier, iters: usize) -> f64 {
    let _ = black_box(risk_score(black_box(input), c));
    let t = Instant::now();
    for _ in 0..iters {
        black_box(risk_score(black_box(input), c));
    }
    t.elapsed().as_secs_f64() / iters as f64
}

/// `text` scored on two threads (`split_from(0)`) and on one, five rounds each, alternated:
/// the medians. Prints them and their ratio.
fn split_row(label: &str, text: &str, c: &Classifier) {
    let (two_c, one_c) = (c.clone().split_from(0), c.clone().on_one_thread());
    let iters = (20_000_000 / text.len().max(1)).clamp(3, 500);
    let (mut two, mut one) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        two.push(time_quiet(text, &two_c, iters));
        one.push(time_quiet(text, &one_c, iters));
    }
    let (two, one) = (median(&mut two), median(&mut one));
    let default = if text.len() >= SPLIT_MIN {
        "two"
    } else {
        "one"
    };
    println!(
        "{label:<36} {:>8} bytes  two threads {:>8.1} us  one {:>8.1} us  ratio {:.2}  (default: {default})",
        text.len(),
        two * 1e6,
        one * 1e6,
        two / one
    );
}

/// `RW_L0_SPLIT=mixed` or `RW_L0_SPLIT=FILE`: where the second thread starts to pay, two
/// threads against one at sizes from 48 to 400 KB of the generated mixed source or of a file's
/// text (the measurement behind `SPLIT_MIN`).
fn split_table(what: &str, rng: &mut corpus::Rng, c: &Classifier) {
    let text = if what == "mixed" {
        corpus::mixed_source(rng, 420_000)
    } else {
        match std::fs::read(what) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                eprintln!("l0_bench: RW_L0_SPLIT={what}: {e}");
                return;
            }
        }
    };
    println!(
        "\nwhere two threads pay ({what}; SPLIT_MIN {} KiB)",
        SPLIT_MIN / 1024
    );
    for kb in [48usize, 64, 100, 128, 160, 200, 256, 400] {
        let part = first_bytes(&text, kb * 1000);
        split_row(&format!("{kb} KB"), part, c);
        if part.len() == text.len() {
            break;
        }
    }
}

/// The first `n` bytes of `s` (all of it when shorter), cut back to a character boundary.
fn first_bytes(s: &str, n: usize) -> &str {
    let mut cut = s.len().min(n);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let t = Instant::now();
    let c = Classifier::default();
    println!(
        "compiling the built-in rules (once, at server start): {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut rng = corpus::Rng(42);
    let mixed = corpus::mixed_source(&mut rng, 100_000);
    let mixed = first_bytes(&mixed, 100_000);
    // `RW_L0_PROFILE=SECS`: only score the 100 KB input in a loop, for `perf record`
    // (`RW_L0_INPUT=plain`: 100 KB of ordinary lines instead, `RW_L0_INPUT=FILE`: the first
    // 100 KB of that file; `RW_L0_THREADS=1` or `2`: on one thread, or on two at any size).
    // `RW_L0_ITERS=N`: exactly N iterations instead, for instruction counts (`valgrind
    // --tool=callgrind`): the difference between two counts, over the difference of their N,
    // is the steady-state cost of one call.
    let iters = std::env::var("RW_L0_ITERS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let secs = std::env::var("RW_L0_PROFILE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    if secs.is_some() || iters.is_some() {
        let secs = secs.unwrap_or(f64::INFINITY);
        let c = match std::env::var("RW_L0_THREADS").ok().as_deref() {
            Some("1") => c.clone().on_one_thread(),
            Some("2") => c.clone().split_from(0),
            _ => c.clone(),
        };
        let other: String;
        let input = match std::env::var("RW_L0_INPUT").ok().as_deref() {
            Some("plain") => {
                other = (0..850)
                    .map(|_| corpus::ordinary_line(&mut rng))
                    .collect::<Vec<_>>()
                    .join("\n");
                &other
            }
            Some(path) => {
                other = match std::fs::read(path) {
                    Ok(b) => first_bytes(&String::from_utf8_lossy(&b), 100_000).to_string(),
                    Err(e) => {
                        eprintln!("l0_bench: RW_L0_INPUT={path}: {e}");
                        std::process::exit(2);
                    }
                };
                &other
            }
            None => mixed,
        };
        println!("profiling {} bytes", input.len());
        let t = Instant::now();
        let mut n = 0u64;
        while iters.map_or(t.elapsed().as_secs_f64() < secs, |want| n < want) {
            black_box(risk_score(black_box(input), &c));
            n += 1;
        }
        println!(
            "{n} iterations, {:.3} ms each",
            t.elapsed().as_secs_f64() * 1e3 / n as f64
        );
        return;
    }
    println!(
        "{:<44} {:>16} {:>13} {:>14}",
        "input", "size", "time/iter", "throughput"
    );
    // five rounds of 100 calls, the median, with the default threshold
    let mut rounds: Vec<f64> = (0..5).map(|_| time_quiet(mixed, &c, 100)).collect();
    let per = median(&mut rounds);
    println!(
        "{:<44} {:>10} bytes {:>10.3} ms {:>9.1} MB/s",
        "mixed source, 100 KB",
        mixed.len(),
        per * 1e3,
        mixed.len() as f64 / per / 1e6
    );
    println!(
        "  => {:.3} ms per 100 KB (target < 0.5 ms; on {}: SPLIT_MIN is {} KiB)",
        per * 1e3 * 100_000.0 / mixed.len() as f64,
        if mixed.len() >= SPLIT_MIN {
            "two threads"
        } else {
            "one thread"
        },
        SPLIT_MIN / 1024
    );
    original_on(mixed, per);
    // two threads against one, alternated: a draft over the threshold and the 100 KB (from a
    // generator of their own, so that the inputs below stay those of earlier runs)
    let mut own = corpus::Rng(400);
    let long = corpus::mixed_source(&mut own, 400_000);
    split_row("mixed source, 400 KB", &long, &c);
    split_row("mixed source, 100 KB, both ways", mixed, &c);
    if let Ok(what) = std::env::var("RW_L0_SPLIT") {
        split_table(&what, &mut own, &c);
    }
    let plain: String = (0..3000)
        .map(|_| corpus::ordinary_line(&mut rng))
        .collect::<Vec<_>>()
        .join("\n");
    time_it("ordinary lines only (no secrets)", &plain, &c, 100);
    let big = corpus::mixed_source(&mut rng, 5_000_000);
    time_it("mixed source, 5 MB", &big, &c, 3);
    let t = Instant::now();
    let r = redact(mixed, &c);
    println!(
        "redact 100 KB mixed: {:.3} ms, {} replacements",
        t.elapsed().as_secs_f64() * 1e3,
        r.replacements.len()
    );

    println!("\npathological inputs");
    time_it(
        "10 MB single line of random base64",
        &rng.chars(corpus::B64, 10_000_000),
        &c,
        1,
    );
    time_it("10 MB single line of 'a'", &"a".repeat(10_000_000), &c, 1);
    time_it("1 MB of '='", &"=".repeat(1_000_000), &c, 3);
    time_it(
        "1 MB of 'token=' on one line",
        &"token=".repeat(170_000),
        &c,
        1,
    );
    time_it(
        "1 MB of 'password: ' on one line",
        &"password: ".repeat(100_000),
        &c,
        1,
    );
    time_it("1 MB of '@' on one line", &"@".repeat(1_000_000), &c, 1);
    time_it(
        "1 MB of digits and dashes",
        &"123-45-".repeat(150_000),
        &c,
        1,
    );
    time_it("1 MB of 'sk-' prefixes", &"sk-".repeat(340_000), &c, 1);
    time_it(
        "1 MB of '-----BEGIN PRIVATE KEY-----\\n'",
        &"-----BEGIN PRIVATE KEY-----\n".repeat(36_000),
        &c,
        1,
    );
    time_it(
        "1 MB of 'kind: Secret\\ndata:\\n'",
        &"kind: Secret\ndata:\n".repeat(55_000),
        &c,
        1,
    );
    time_it("1 MB of NUL bytes", &"\0".repeat(1_000_000), &c, 1);
}

/// The Python original's wheel: `RW_ORIGINAL_WHEEL`, or `target/original-py/`, fetched there
/// with pip (pinned by hash) when missing.
fn original_wheel() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("RW_ORIGINAL_WHEEL") {
        return Ok(PathBuf::from(p));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/original-py");
    let wheel = dir.join("resilient_write-0.3.0-py3-none-any.whl");
    if !wheel.is_file() {
        let status = Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args([
                "--no-deps",
                "--python-version",
                "3.12",
                "--only-binary=:all:",
            ])
            .args(["--require-hashes", "-r"])
            .arg(root.join("tests/e2e/original.txt"))
            .arg("-d")
            .arg(&dir)
            .status()
            .map_err(|e| format!("python3: {e}"))?;
        if !status.success() || !wheel.is_file() {
            return Err(format!("pip download failed ({status})"));
        }
    }
    Ok(wheel)
}

/// Scores `input` with the Python original and prints its time beside ours (`ours` seconds per
/// call, measured just before on the same bytes).
fn original_on(input: &str, ours: f64) {
    let run = || -> Result<String, String> {
        let wheel = original_wheel()?;
        let file = std::env::temp_dir().join(format!("rw-l0-bench-{}.txt", std::process::id()));
        std::fs::write(&file, input).map_err(|e| e.to_string())?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/original_l0_bench.py");
        let out = Command::new("python3")
            .arg(script)
            .arg(&wheel)
            .arg(&file)
            .arg("20")
            .output();
        let _ = std::fs::remove_file(&file);
        let out = out.map_err(|e| format!("python3: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match run() {
        Ok(json) => {
            let field = |k: &str| {
                json.split(&format!("\"{k}\": "))
                    .nth(1)
                    .and_then(|r| r.split([',', '}']).next())
                    .unwrap_or("?")
                    .trim()
                    .to_string()
            };
            let theirs: f64 = field("ms").parse().unwrap_or(f64::NAN);
            println!(
                "  Python original 0.3.0, same {} bytes: {theirs:.3} ms ({:.1} MB/s; verdict {}, {} findings) => ours is {:.1}x faster",
                input.len(),
                input.len() as f64 / theirs / 1e3,
                field("verdict"),
                field("findings"),
                theirs / (ours * 1e3)
            );
        }
        Err(e) => {
            eprintln!("l0_bench: the Python original could not run: {e}");
            std::process::exit(1);
        }
    }
}
