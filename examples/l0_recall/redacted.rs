//! Redacted and example shapes of issue 18, each with the verdict range it belongs in: a known
//! prefix and an ellipsis in a sentence, bodiless PEM blocks, vendors' documentation examples,
//! ellipsis and braced placeholders.

use super::values::{assignment, password_words, secret_words};
use super::{ALNUM, B64, Case, Rng};

// ---- redacted shapes --------------------------------------------------------------------------

pub(super) const PREFIXES: &[&str] = &[
    "sk-ant-api03-",
    "sk-ant-oat01-",
    "sk-proj-",
    "sk-",
    "ghp_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "AKIA",
    "AIza",
    "hf_",
    "npm_",
    "sk_live_",
    "gsk_",
    "xai-",
    "SG.",
];

pub(super) fn prefix_ellipsis_prose(r: &mut Rng) -> Case {
    let p = r.pick(PREFIXES);
    let keep = if r.below(2) == 0 {
        String::new()
    } else {
        {
            let n = r.range(2, 6);
            r.chars(ALNUM, n)
        }
    };
    let dots = r.pick(&["...", "\u{2026}"]);
    let t = if r.below(4) == 0 {
        // the display form: prefix, ellipsis, last four
        format!("{p}{dots}{}", r.chars(ALNUM, 4))
    } else {
        format!("{p}{keep}{dots}")
    };
    let text = match r.below(5) {
        0 => format!("The failing request used a key starting with {t} so I rotated it."),
        1 => format!("Your token ({t}) expired yesterday."),
        2 => format!("We saw `{t}` in the log and redacted the rest."),
        3 => format!("- set the header to {t} and retry"),
        _ => format!("Keys that look like {t} belong in the vault, not in code."),
    };
    Case { text, secret: t }
}

pub(super) fn pem_bodyless(r: &mut Rng) -> Case {
    let kind = r.pick(&[
        "RSA PRIVATE KEY",
        "PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "EC PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    ]);
    let d = "-----";
    let body = r.pick(&[
        "...",
        "\u{2026}",
        "<redacted>",
        "[key material removed]",
        "",
        "MIIEv...",
        "(omitted)",
    ]);
    let text = match r.below(3) {
        0 => format!("{d}BEGIN {kind}{d}\n{body}\n{d}END {kind}{d}"),
        1 => format!("key: |\n  {d}BEGIN {kind}{d}\n  {body}\n  {d}END {kind}{d}"),
        _ => format!("\"private_key\": \"{d}BEGIN {kind}{d}\\n{body}\\n{d}END {kind}{d}\\n\","),
    };
    Case {
        text,
        secret: format!("BEGIN {kind}"),
    }
}

pub(super) fn documentation_example(r: &mut Rng) -> Case {
    // the vendors' documented example shapes: random-looking body spelled with EXAMPLE
    let v = match r.below(3) {
        0 => format!(
            "AKIA{}EXAMPLE",
            r.chars(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 9)
        ),
        1 => format!("{}EXAMPLEKEY", r.chars(B64, 30)),
        _ => format!("ghp_EXAMPLE{}", r.chars(ALNUM, 29)),
    };
    let text = match r.below(3) {
        0 => format!("aws_access_key_id = {v}"),
        1 => format!("export TOKEN={v}"),
        _ => format!("For example: `{v}`"),
    };
    Case { text, secret: v }
}

pub(super) fn ellipsis_or_braced_placeholder(r: &mut Rng) -> Case {
    let words = if r.below(2) == 0 {
        password_words(r)
    } else {
        secret_words(r)
    };
    let v = r
        .pick(&[
            "...",
            "\u{2026}",
            "{REDACTED}",
            "{{ api_token }}",
            "<YOUR_API_KEY>",
            "${DB_PASSWORD}",
            "[REDACTED]",
            "********",
            "{{SECRET}}",
            "<token>",
            "%(password)s",
            "{password}",
            "REPLACE_ME",
            "your-secret-here",
            "$(cat /run/secrets/token)",
            "<redacted>",
        ])
        .to_string();
    let text = assignment(r, &words, &v);
    Case { text, secret: v }
}
