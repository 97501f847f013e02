//! Negative files: ordinary code and config with near-misses that must stay below `medium`.

use super::positives::card_shaped_constant;
use super::values::{Case_, assignment, key_in, password_words, secret_words};
use super::{B64, DIGITS, HEX, Rng};

// ---- negatives --------------------------------------------------------------------------------

/// A negative file: ordinary code and config with near-misses (placeholders, references,
/// lockfile hashes, UUIDs, digests, identifiers) that must stay below `medium`.
pub fn negative_file(r: &mut Rng) -> String {
    let mut lines = Vec::new();
    for _ in 0..r.range(8, 20) {
        lines.push(negative_line(r));
    }
    lines.join("\n")
}

pub(super) fn negative_line(r: &mut Rng) -> String {
    let words = if r.below(2) == 0 {
        password_words(r)
    } else {
        secret_words(r)
    };
    match r.below(28) {
        26 | 27 => super::tail::quiet_line(r),
        24 => card_shaped_constant(r),
        25 => format!(
            "{}{}",
            r.pick(&[
                "TWILIO_ACCOUNT_SID=AC",
                // not `xoxp-` or `sq0csp-` + `x`s: a prefix and a run of `x` is a redacted
                // shape, low by issue 43 (`redacted:after_prefix`), and the negatives should
                // carry no finding
                "SLACK_TOKEN=",
                "SQUARE_SECRET=",
                "//registry.npmjs.org/:_authToken="
            ]),
            "x".repeat(32 + r.below(12))
        ),
        0 => {
            let v = reference_value(r);
            assignment(r, &words, v)
        }
        1 => format!(
            "{} = os.environ[\"{}\"]",
            key_in(&words, Case_::Snake),
            key_in(&words, Case_::UpperSnake)
        ),
        2 => format!(
            "const {} = process.env.{};",
            key_in(&words, Case_::Camel),
            key_in(&words, Case_::UpperSnake)
        ),
        3 => format!(
            "  {}: ${{{{ secrets.{} }}}}",
            key_in(&words, Case_::Snake),
            key_in(&words, Case_::UpperSnake)
        ),
        4 => format!(
            "\"node_modules/{}\": {{ \"integrity\": \"sha512-{}==\" }},",
            r.pick(&["lodash", "react", "left-pad", "chalk"]),
            r.chars(B64, 86)
        ),
        5 => format!(
            "{} = \"sha256:{}\"",
            r.pick(&["checksum", "digest", "hash"]),
            r.chars(HEX, 64)
        ),
        6 => format!(
            "id = \"{}-{}-4{}-a{}-{}\"",
            r.chars(HEX, 8),
            r.chars(HEX, 4),
            r.chars(HEX, 3),
            r.chars(HEX, 3),
            r.chars(HEX, 12)
        ),
        7 => format!("commit {}", r.chars(HEX, 40)),
        8 => format!(
            "fn {}(&self) -> Result<String, Error> {{",
            key_in(&words, Case_::Snake)
        ),
        9 => format!(
            "    let {} = self.{}.clone();",
            key_in(&words, Case_::Snake),
            key_in(&words, Case_::Snake)
        ),
        10 => format!(
            "if ({}.length < 12) throw new Error(\"{} too short\");",
            key_in(&words, Case_::Camel),
            words.join(" ")
        ),
        11 => format!(
            "{} = get_secret(\"{}\")",
            key_in(&words, Case_::Snake),
            key_in(&words, Case_::Kebab)
        ),
        12 => format!(
            "<input type=\"password\" name=\"{}\" placeholder=\"Enter your password\">",
            key_in(&words, Case_::Snake)
        ),
        13 => format!(
            "{}: str = Field(..., min_length=8)",
            key_in(&words, Case_::Snake)
        ),
        14 => format!(
            "# Set {} in your environment before running.",
            key_in(&words, Case_::UpperSnake)
        ),
        15 => format!(
            "resolved \"https://registry.yarnpkg.com/{p}/-/{p}-1.2.{}.tgz#{}\"",
            r.below(9),
            r.chars(HEX, 40),
            p = r.pick(&["ms", "debug", "semver"])
        ),
        16 => format!(
            "version = \"{}.{}.{}\"",
            r.below(9),
            r.below(30),
            r.below(30)
        ),
        17 => format!(
            "Call {} {} {} on weekdays.",
            r.range(200, 899),
            r.range(100, 999),
            r.range(1000, 9999)
        ),
        18 => format!(
            "let ts = {}.{}; // seconds",
            r.range(1_600_000_000, 1_800_000_000),
            r.chars(DIGITS, 6)
        ),
        19 => format!(
            "    assert_eq!(parse(\"{}\"), None);",
            key_in(&words, Case_::Kebab)
        ),
        20 => format!(
            "{} = {}",
            key_in(&words, Case_::UpperSnake),
            r.pick(&["None", "null", "\"\"", "undefined", "nil", "''"])
        ),
        21 => format!(
            "{} := cfg.Get{}()",
            key_in(&words, Case_::Camel),
            key_in(&words, Case_::Pascal)
        ),
        22 => format!(
            "Authorization: Bearer {}",
            r.pick(&["<token>", "$TOKEN", "${ACCESS_TOKEN}", "YOUR_TOKEN"])
        ),
        _ => format!(
            "const {} = useState<string>(\"\");",
            key_in(&words, Case_::Camel)
        ),
    }
}

/// A placeholder or a reference in place of a value.
pub(super) fn reference_value(r: &mut Rng) -> &'static str {
    r.pick(&[
        "${DB_PASSWORD}",
        "<password>",
        "changeme",
        "YOUR_API_KEY_HERE",
        "{{ .Values.token }}",
        "%(secret)s",
        "$SECRET",
        "xxxxxxxxxxxxxxxx",
        "env:API_TOKEN",
        "process.env.TOKEN",
        "settings.SECRET_KEY",
        "********",
        "<your-token>",
        "TODO",
        "vault:secret/data/db#password",
    ])
}
