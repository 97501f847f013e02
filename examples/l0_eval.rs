//! L0 evaluation: generates a labelled set in memory (positives per credential rule,
//! redacted-prefix cases, negative files of ordinary code and near-misses), prints per-rule recall
//! and the false-positive rate, and exits non-zero when a target is missed:
//! >= 95% of credential cases at verdict >= medium, < 1% of negative files with any finding at
//! >= medium, > 85% of redacted-prefix cases reported.
//!
//! Run: `cargo run --release --example l0_eval`

#[path = "l0_corpus/mod.rs"]
mod corpus;

use resilient_write_core::classify::{Classifier, Verdict, risk_score};

const CASES_PER_RULE: usize = 40;
const NEGATIVE_FILES: usize = 2000;
const REDACTED_CASES: usize = 1000;

fn main() {
    let c = Classifier::default();
    let mut rng = corpus::Rng(0x5EED_2026);
    let filler = |r: &mut corpus::Rng| -> String {
        (0..3)
            .map(|_| corpus::ordinary_line(r))
            .filter(|l| !l.contains("-----BEGIN"))
            .collect::<Vec<_>>()
            .join("\n")
    };

    println!(
        "{:<34} {:>7} {:>9} {:>9}",
        "rule", "cases", "detected", ">=medium"
    );
    let (mut total, mut total_medium) = (0usize, 0usize);
    let mut weak_rules = Vec::new();
    let cases = corpus::credential_cases();
    for (rule, generate) in &cases {
        let (mut hit, mut medium) = (0usize, 0usize);
        for _ in 0..CASES_PER_RULE {
            let doc = format!(
                "{}\n{}\n{}\n",
                filler(&mut rng),
                generate(&mut rng),
                filler(&mut rng)
            );
            let r = risk_score(&doc, &c);
            if r.detected_patterns.iter().any(|f| f.pattern == *rule) {
                hit += 1;
            }
            if r.verdict >= Verdict::Medium {
                medium += 1;
            }
        }
        total += CASES_PER_RULE;
        total_medium += medium;
        if hit < CASES_PER_RULE {
            weak_rules.push(*rule);
        }
        println!(
            "{rule:<34} {CASES_PER_RULE:>7} {:>8.1}% {:>8.1}%",
            pct(hit, CASES_PER_RULE),
            pct(medium, CASES_PER_RULE)
        );
    }
    let credential_rate = pct(total_medium, total);

    let mut redacted_hits = 0;
    for case in corpus::redacted_cases(&mut rng, REDACTED_CASES) {
        if !risk_score(&case, &c).detected_patterns.is_empty() {
            redacted_hits += 1;
        }
    }
    let redacted_rate = pct(redacted_hits, REDACTED_CASES);

    let (mut fp_medium, mut any_finding, mut fp_examples) = (0usize, 0usize, Vec::new());
    let mut negative_by_rule: std::collections::BTreeMap<String, usize> =
        std::collections::BTreeMap::new();
    for _ in 0..NEGATIVE_FILES {
        let f = corpus::negative_file(&mut rng);
        let r = risk_score(&f, &c);
        let medium_finding = r
            .detected_patterns
            .iter()
            .any(|x| c.verdict(c.weight(&x.kind)) >= Verdict::Medium);
        if r.verdict >= Verdict::Medium || medium_finding {
            fp_medium += 1;
            if fp_examples.len() < 5 {
                fp_examples.extend(
                    r.detected_patterns
                        .iter()
                        .map(|x| format!("{}:{} {:?}", x.kind, x.pattern, x.r#match)),
                );
            }
        }
        if !r.detected_patterns.is_empty() {
            any_finding += 1;
        }
        for x in &r.detected_patterns {
            *negative_by_rule.entry(x.pattern.clone()).or_insert(0usize) += 1;
        }
    }
    let fp_rate = pct(fp_medium, NEGATIVE_FILES);

    println!();
    println!(
        "credential rules evaluated: {} ({} cases)",
        cases.len(),
        total
    );
    println!("credential cases at verdict >= medium: {credential_rate:.2}% (target >= 95%)");
    println!(
        "redacted-prefix cases reported: {redacted_rate:.2}% of {REDACTED_CASES} (target > 85%)"
    );
    println!(
        "negative files with a finding >= medium: {fp_rate:.2}% of {NEGATIVE_FILES} (target < 1%)"
    );
    println!(
        "negative files with any finding (low included): {:.2}%",
        pct(any_finding, NEGATIVE_FILES)
    );
    println!("low findings in negative files, by rule: {negative_by_rule:?}");
    if !weak_rules.is_empty() {
        println!("rules below 100% detection: {}", weak_rules.join(", "));
    }
    for e in &fp_examples {
        println!("  false positive: {e}");
    }
    let ok = credential_rate >= 95.0 && fp_rate < 1.0 && redacted_rate > 85.0;
    println!("{}", if ok { "PASS" } else { "FAIL" });
    if !ok {
        std::process::exit(1);
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}
