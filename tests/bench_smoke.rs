//! The write benchmarks of issue 17 (`examples/write_bench.rs`, `examples/agents_bench.rs`),
//! run small against the debug server: they still run end to end, and what they print is
//! whole (every case, a ratio, and the CPU figures, which must be read, not zero). Their
//! figures are taken with the commands in docs/guide/testing.md ("Benchmarks"), never here.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// An example's binary, which `cargo test` builds beside the tests (`target/<profile>/examples`).
fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let path = profile_dir.join("examples").join(name);
    path.is_file().then_some(path)
}

/// Runs example `name` with `args` in a throwaway directory against the debug server; its
/// standard output, or `None` (after the prerequisite notice) when the example was not built.
fn run(name: &str, args: &[&str], env: &[(&str, &str)]) -> Option<(String, tempfile::TempDir)> {
    let Some(path) = example(name) else {
        common::missing_prerequisite(&format!(
            "examples/{name} is not built (`cargo test` builds it; `--test bench_smoke` alone does not)"
        ));
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(&path)
        .args(args)
        .envs(env.iter().copied())
        .env("RW_BENCH_BIN", common::bin())
        .env("RW_BENCH_DIR", dir.path())
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_AUTH_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{name} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some((stdout, dir))
}

/// The numbers of a whitespace-separated line, a trailing `x`, `%` or `(...)` taken off.
fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '(' || c == ')' || c == ',' || c == '%'))
        .filter_map(|w| w.trim_end_matches('x').parse().ok())
        .collect()
}

#[test]
fn write_bench_prints_every_case_with_its_ratio_and_cpu_per_call() {
    let Some((out, _dir)) = run("write_bench", &["2"], &[]) else {
        return;
    };
    let cases = [
        ("create", "1 KB"),
        ("create", "64 KB"),
        ("create", "1 MB"),
        ("overwrite", "1 KB"),
        ("overwrite", "64 KB"),
        ("overwrite", "1 MB"),
        ("create*", "64 KB"),
        ("create*", "1 MB"),
    ];
    for (mode, size) in cases {
        let line = out
            .lines()
            .find(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("{mode} ")) && l.contains(&format!(" {size} "))
            })
            .unwrap_or_else(|| panic!("no row for {mode} {size}:\n{out}"));
        // calls, floor ms, safe_write ms, ratio, goal, then the floor's, the server's and the
        // client's CPU per call
        let n = numbers(line);
        let [
            size_n,
            calls,
            floor,
            write,
            ratio,
            goal,
            floor_cpu,
            server_cpu,
            client_cpu,
        ] = n[..]
        else {
            panic!("row {line:?} has numbers {n:?}");
        };
        assert!(size_n > 0.0 && calls >= 2.0, "{line}");
        assert!(floor > 0.0 && write > 0.0, "{line}");
        // the times are printed to the microsecond, a few percent of them on a tmpfs
        assert!(
            (ratio - write / floor).abs() <= 0.01 + ratio * 0.05,
            "{line}"
        );
        assert!(goal == 1.3 || goal == 1.5, "{line}");
        // every side did work: a CPU clock that could not be read prints zero
        assert!(floor_cpu > 0.0, "floor CPU not measured: {line}");
        assert!(server_cpu > 0.0, "server CPU not measured: {line}");
        assert!(client_cpu > 0.0, "client CPU not measured: {line}");
    }
    assert!(out.contains("start to initialized:"), "{out}");
    assert!(out.contains("idle RSS after initialize:"), "{out}");
}

#[test]
fn agents_bench_prints_rates_ratios_and_the_machines_cpu_per_write() {
    let Some((out, _dir)) = run("agents_bench", &["0.3"], &[("RW_BENCH_AGENTS", "1,2")]) else {
        return;
    };
    for agents in [1.0, 2.0] {
        let lines: Vec<&str> = out.lines().collect();
        let at = lines
            .iter()
            .position(|l| numbers(l).first() == Some(&agents) && l.contains("floor before"))
            .unwrap_or_else(|| panic!("no row for {agents} agents:\n{out}"));
        // agents, floor w/s, then writes/s and ratio for stdio, HTTP and kept alive, then the
        // floor before and after
        let n = numbers(lines[at]);
        assert_eq!(n.len(), 10, "{}", lines[at]);
        let floor = n[1];
        assert!(floor > 0.0, "{}", lines[at]);
        for k in [2, 4, 6] {
            assert!(n[k] > 0.0, "no writes: {}", lines[at]);
            // the rates are printed as whole writes per second
            let ratio = n[k] / floor;
            assert!(
                (n[k + 1] - ratio).abs() <= 0.01 + ratio * 0.05,
                "{}",
                lines[at]
            );
        }
        let cpu = lines
            .get(at + 1)
            .filter(|l| l.contains("cpu ms/write (busy)"))
            .unwrap_or_else(|| panic!("no CPU line under {}:\n{out}", lines[at]));
        // floor before and after, stdio, HTTP, kept alive: each `ms (busy%)`
        let n = numbers(cpu);
        assert_eq!(n.len(), 10, "{cpu}");
        // a share that rounds to 0% is a reading (a short case waiting on a slow disk:
        // one busy tick in hundreds), so only the CPU time must be non-zero
        for pair in n.chunks(2) {
            let (ms, busy) = (pair[0], pair[1]);
            assert!(ms > 0.0, "no CPU counted: {cpu}");
            assert!((0.0..=100.0).contains(&busy), "{cpu}");
        }
    }
}
