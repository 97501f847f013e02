//! L0 recall on the weak categories of issue 18: per-category recall (verdict >= medium for
//! credentials, a binary hint for data-URI payloads, the expected verdict range for redacted and
//! example shapes), detection on the right line, and the false-positive rate (negative files at
//! verdict medium or higher). The corpus is generated in `examples/l0_recall/mod.rs`; `tests/l0_recall.rs`
//! asserts floors on the same corpus.
//!
//! Run: `cargo run --release --example l0_recall [-- --misses]`

#[path = "l0_recall/mod.rs"]
mod recall;

use recall::{Expect, pct};
use resilient_write::classify::Classifier;

const PER_CATEGORY: usize = 400;
const NEGATIVE_FILES: usize = 4000;

fn main() {
    let show_misses = std::env::args().any(|a| a == "--misses");
    let c = Classifier::default();
    let rep = recall::evaluate(&c, PER_CATEGORY, NEGATIVE_FILES, 0x18_2026);
    println!(
        "{:<28} {:>6} {:>10} {:>11}",
        "category", "cases", "recall", "right line"
    );
    let (mut cred, mut cred_ok, mut cred_line, mut red, mut red_ok) = (0, 0, 0, 0, 0);
    for k in &rep.categories {
        let line = match k.expect {
            Expect::Range(..) => "-".to_string(),
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
    if show_misses {
        for (cat, text) in rep.misses.iter() {
            println!("--- {cat}\n{text}");
        }
    }
}
