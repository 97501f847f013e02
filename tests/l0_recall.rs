//! L0 recall floors on the generated corpus of issue 18 (`examples/l0_recall/mod.rs`): per
//! category, a little below what the classifier reaches, so a regression fails here. The full
//! table comes from `cargo run --release --example l0_recall`.

#[path = "../examples/l0_recall/mod.rs"]
mod recall;

use recall::pct;
use resilient_write::classify::Classifier;

/// (category, minimum % of cases that pass).
const FLOORS: &[(&str, f64)] = &[
    ("generic_password", 97.0),
    ("generic_secret_token_key", 97.0),
    ("connection_credentials", 97.0),
    ("framework_secret_key", 97.0),
    ("http_basic", 97.0),
    ("bearer_opaque", 97.0),
    ("artifactory_token", 97.0),
    ("scanner_formats", 97.0),
    ("card_number_written", 97.0),
    ("discord_bot_token", 97.0),
    ("us_ssn_spaced_dotted", 97.0),
    ("data_uri_binary", 97.0),
    ("redacted:prefix_ellipsis", 97.0),
    ("redacted:pem_bodyless", 97.0),
    ("redacted:doc_example", 97.0),
    ("redacted:placeholder", 97.0),
];

#[test]
fn recall_per_category_stays_above_its_floor_and_negatives_stay_below_medium() {
    let c = Classifier::default();
    let rep = recall::evaluate(&c, 150, 600, 0x18_2026);
    let mut failures = Vec::new();
    for (name, floor) in FLOORS {
        let k = rep
            .categories
            .iter()
            .find(|k| k.name == *name)
            .unwrap_or_else(|| panic!("category {name} missing"));
        let got = pct(k.ok, k.cases);
        if got < *floor {
            failures.push(format!("{name}: {got:.1}% < {floor}%"));
        }
        if !name.starts_with("redacted:") {
            let line = pct(k.right_line, k.cases);
            if line < *floor {
                failures.push(format!("{name} on the right line: {line:.1}% < {floor}%"));
            }
        }
    }
    let fp = pct(rep.negative_medium, rep.negative_files);
    if fp > 0.5 {
        failures.push(format!("false positives {fp:.2}% > 0.5%"));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
