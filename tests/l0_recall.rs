//! L0 recall floors on the generated corpus of issues 18 and 43 (`examples/l0_recall/`): per
//! category, a little below what the classifier reaches, so a regression fails here; and the
//! negatives: none at `medium`, at most 1% with any finding but personal data. The full table
//! comes from `cargo run --release --example l0_recall`.

#[path = "../examples/l0_recall/mod.rs"]
mod recall;

use recall::pct;
use resilient_write_core::classify::Classifier;

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
    // issue 43
    ("saas_long_tail", 97.0),
    ("paas_uuid_key", 97.0),
    ("http_auth", 97.0),
    ("rare_syntax_secret", 97.0),
    ("redacted:prefix_in_prose", 97.0),
    ("redacted:jwt_header_only", 97.0),
    ("redacted:after_prefix", 97.0),
    ("quiet:image_data_uri", 99.0),
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
        if !name.starts_with("redacted:") && !name.starts_with("quiet:") {
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
    let flagged = pct(rep.negative_flagged, rep.negative_files);
    if flagged > 1.0 {
        failures.push(format!(
            "negatives with a finding (personal data aside) {flagged:.2}% > 1%: {:?}",
            rep.negative_low_rules
        ));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
