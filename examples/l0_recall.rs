//! L0 recall on the weak categories of issues 18 and 43: per-category recall (verdict >= medium
//! for credentials, a binary hint for binary data-URI payloads, the expected verdict range for
//! redacted and example shapes, no finding for image data URIs), detection on the right line,
//! and the false-positive rates (negative files at verdict medium or higher, and with any
//! finding but personal data). The corpus is generated in `examples/l0_recall/mod.rs`; `tests/l0_recall.rs`
//! asserts floors on the same corpus.
//!
//! Run: `cargo run --release --example l0_recall [-- --misses [--only CATEGORY]]`; with
//! `--dump DIR` it writes the documents for `scripts/l0-recall-compare.py` instead.

#[path = "l0_recall/mod.rs"]
mod recall;

use recall::{Expect, pct};
use resilient_write_core::classify::Classifier;

const PER_CATEGORY: usize = 400;
const NEGATIVE_FILES: usize = 4000;

fn main() {
    let show_misses = std::env::args().any(|a| a == "--misses");
    // `--only NAME`: print the misses of one category (or `negative`) only
    let only: Option<String> = std::env::args().skip_while(|a| a != "--only").nth(1);
    // `--dump DIR`: write the documents instead, for another build or `scan` to score
    if let Some(dir) = std::env::args().skip_while(|a| a != "--dump").nth(1) {
        if let Err(e) = recall::write_documents(
            std::path::Path::new(&dir),
            PER_CATEGORY,
            NEGATIVE_FILES,
            0x18_2026,
        ) {
            eprintln!("l0_recall: {dir}: {e}");
            std::process::exit(2);
        }
        return;
    }
    let c = Classifier::default();
    let rep = recall::evaluate(&c, PER_CATEGORY, NEGATIVE_FILES, 0x18_2026);
    println!(
        "{:<28} {:>6} {:>10} {:>11}",
        "category", "cases", "recall", "right line"
    );
    let (mut cred, mut cred_ok, mut cred_line, mut red, mut red_ok) = (0, 0, 0, 0, 0);
    for k in &rep.categories {
        let line = match k.expect {
            Expect::Range(..) | Expect::Quiet => "-".to_string(),
            _ => format!("{:.1}%", pct(k.right_line, k.cases)),
        };
        println!(
            "{:<28} {:>6} {:>9.1}% {:>11}",
            k.name,
            k.cases,
            pct(k.ok, k.cases),
            line
        );
        match k.expect {
            Expect::Range(..) => {
                red += k.cases;
                red_ok += k.ok;
            }
            Expect::Quiet => {}
            _ => {
                cred += k.cases;
                cred_ok += k.ok;
                cred_line += k.right_line;
            }
        }
    }
    println!();
    println!(
        "credentials/binary recall: {:.1}% of {cred}",
        pct(cred_ok, cred)
    );
    println!("on the right line:         {:.1}%", pct(cred_line, cred));
    println!(
        "redacted shapes in range:  {:.1}% of {red}",
        pct(red_ok, red)
    );
    println!(
        "false positives >= medium: {:.2}% of {} negative files",
        pct(rep.negative_medium, rep.negative_files),
        rep.negative_files
    );
    for (rule, n) in &rep.negative_rules {
        println!("  fired in negatives: {rule} x{n}");
    }
    println!(
        "negatives with any finding (personal data aside): {:.2}%",
        pct(rep.negative_flagged, rep.negative_files)
    );
    for (rule, n) in &rep.negative_low_rules {
        println!("  low in negatives: {rule} x{n}");
    }
    if show_misses {
        for (cat, text) in rep
            .misses
            .iter()
            .filter(|(cat, _)| only.as_deref().is_none_or(|o| cat.starts_with(o)))
        {
            println!("--- {cat}\n{text}");
        }
    }
}
