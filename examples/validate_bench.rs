//! Throughput of each validator on about 1 MB of typical, valid content.
//!
//! Run with `cargo run --release --example validate_bench`. Prints MB/s per format (best of a few
//! runs, so a busy machine disturbs the figures less).

#[path = "../crates/core/src/validate/samples.rs"]
mod samples;

use resilient_write_core::validate::validate;
use std::time::Instant;

fn main() {
    println!(
        "{:<10} {:>10} {:>10} {:>10}",
        "format", "bytes", "best ms", "MB/s"
    );
    for format in samples::FORMATS {
        let content = samples::megabyte_of(format);
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            let report = validate(&content, Some(format), None);
            let elapsed = start.elapsed().as_secs_f64();
            assert!(report.valid, "{format}: {}", report.summary);
            best = best.min(elapsed);
        }
        let mb = content.len() as f64 / 1e6;
        // `text` checks nothing; its figure would only measure detection.
        let rate = if *format == "text" {
            "-".to_owned()
        } else {
            format!("{:.1}", mb / best)
        };
        println!(
            "{format:<10} {:>10} {:>10.2} {rate:>10}",
            content.len(),
            best * 1e3
        );
    }
}
