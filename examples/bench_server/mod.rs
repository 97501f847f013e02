//! The server binary the write benchmarks spawn (`write_bench`, `agents_bench`).

use std::path::{Path, PathBuf};

/// The server under test: `$RW_BENCH_BIN` (the suite's smoke test, `tests/bench_smoke.rs`,
/// runs the debug build), else the release build of this checkout.
pub fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("RW_BENCH_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("release/resilient-write")
}
