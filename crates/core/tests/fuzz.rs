//! Property tests over the parsers that read what a hostile repository or client controls: the
//! policy file, every validator, the classifier and redaction. None may panic, and each keeps
//! its documented guarantees on any input.
//!
//! A short run is part of `cargo test` (proptest's 256 cases per property, or `PROPTEST_CASES`);
//! the long run is `PROPTEST_CASES=100000 cargo test --release -p resilient-write-core --test fuzz`
//! (docs/guide/testing.md, "Long runs").

use proptest::prelude::*;
use resilient_write_core::classify::{Classifier, SNIPPET_CHARS, redact, risk_score};
use resilient_write_core::policy::Policy;
use resilient_write_core::validate::{Severity, validate, validate_bytes};

const FORMATS: &[&str] = &[
    "json", "jsonl", "yaml", "toml", "python", "latex", "markdown", "xml", "html",
];

/// Text made of the characters that drive the parsers' states: brackets, quotes, escapes,
/// indentation, newlines, markup, comment and assignment characters, plus any Unicode.
fn structured_text() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        4 => prop::sample::select(vec![
            "{", "}", "[", "]", "(", ")", "\"", "'", "`", ":", ",", "=", "\\", "\n", "\r\n",
            "  ", "\t", "#", "-", "- ", "<", ">", "</", "/>", "&", ";", "$", "%", "*", "!",
            "---", "```", "\"\"\"", "\\begin{", "\\end{", "def ", "class ", "import ", "key: ",
            "[table]", "<a>", "<!--", "-->", "{{", "}}", "null", "true", "1e999", "-0",
            "\\u", "\\ud800", "&amp;", "<![CDATA[", "]]>", "*a", "&a ", "!!str", "|", ">-",
        ])
        .prop_map(String::from),
        2 => "[a-z0-9_]{1,6}",
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(atoms, 0..80).prop_map(|v| v.concat())
}

/// YAML-shaped policy text: the policy's own keys and values in random order and depth.
fn policy_text() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "version: ",
        "1",
        "2",
        "\n",
        "  ",
        "- ",
        "thresholds:",
        "high: ",
        "medium: ",
        "low: ",
        "0.3",
        "0.9",
        "-1",
        "1e9",
        "retry_budget:",
        "default: ",
        "disable_families:",
        "extend_patterns:",
        "family: ",
        "name: ",
        "regex: ",
        "weight: ",
        "history:",
        "limits:",
        "api_key",
        "\"(?P<secret>x+)\"",
        "\"[\"",
        "\"(a+)+$\"",
        "{",
        "}",
        "[",
        "]",
        ",",
        "&a ",
        "*a",
        "!!map",
        "~",
        "null",
        "'",
        "\"",
        "#",
        ":",
        "x",
    ]);
    prop::collection::vec(atoms, 0..60).prop_map(|v| v.concat())
}

fn line_count(s: &str) -> usize {
    s.lines().count().max(1)
}

fn classifier() -> &'static Classifier {
    static C: std::sync::OnceLock<Classifier> = std::sync::OnceLock::new();
    C.get_or_init(Classifier::default)
}

proptest! {
    #[test]
    fn validators_never_panic_and_report_positions_inside_the_text(
        text in prop_oneof![structured_text(), any::<String>()],
        which in 0..FORMATS.len(),
    ) {
        let report = validate(&text, Some(FORMATS[which]), None);
        let errors = report.errors.iter().any(|d| d.severity == Severity::Error);
        prop_assert_eq!(report.valid, !errors);
        let lines = line_count(&text) + 1;
        for d in &report.errors {
            prop_assert!(d.line >= 1 && d.line <= lines, "line {} of {}: {:?}", d.line, lines, d);
            prop_assert!(d.col >= 1, "{:?}", d);
        }
    }

    #[test]
    fn validate_bytes_never_panics_on_any_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        which in 0..FORMATS.len(),
    ) {
        let report = validate_bytes(&bytes, Some(FORMATS[which]), None);
        if std::str::from_utf8(&bytes).is_err() {
            prop_assert!(!report.valid);
        }
    }

    #[test]
    fn a_bad_policy_is_an_error_naming_a_line_never_a_panic(text in policy_text()) {
        match Policy::from_yaml_str(&text) {
            Ok(policy) => {
                // A policy that parses compiles, or says why not; either way no panic.
                let _ = policy.compile();
            }
            Err(e) => {
                let line = e.line();
                prop_assert!(line as usize <= line_count(&text) + 1, "line {} for {:?}", line, text);
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }

    #[test]
    fn the_score_is_bounded_and_snippets_stay_short(text in prop_oneof![structured_text(), any::<String>()]) {
        let r = risk_score(&text, classifier());
        prop_assert!((0.0..=1.0).contains(&r.score));
        for f in &r.detected_patterns {
            prop_assert!(f.r#match.chars().count() <= SNIPPET_CHARS, "{:?}", f);
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more(text in structured_text(), token in "[A-Za-z0-9]{36}") {
        // Seed the text with a secret-shaped token so there is something to redact.
        let draft = format!("{text}\ntoken = \"{}{token}\"\n{text}", "ghp_");
        let once = redact(&draft, classifier());
        let twice = redact(&once.content, classifier());
        prop_assert_eq!(&twice.content, &once.content);
        prop_assert!(twice.replacements.is_empty());
    }
}
