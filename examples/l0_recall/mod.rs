//! Labelled recall corpus for the L0 classifier, generated in memory: the categories where L0
//! was weak in issue 18 (credentials without a vendor prefix, framework secret keys, HTTP Basic
//! credentials, opaque bearer tokens, Discord bot tokens, spaced or dotted SSNs, Artifactory
//! tokens, binary payloads in data URIs) and issue 43 (`tail`: the long tail of SaaS tokens,
//! PaaS UUID keys, HTTP authentication, less common syntaxes, vendor prefixes named in prose,
//! JWT headers, redacted forms after a prefix, image data URIs), each written in many syntaxes
//! (env, YAML, JSON, TOML, INI, HCL, XML, shell, CLI flags, curl, HTTP logs, connection strings,
//! URLs with userinfo, assignments in a dozen languages, Markdown and LaTeX prose); redacted
//! shapes with the verdict range they belong in; and negatives (placeholders, variable
//! references, lockfile hashes, UUIDs, ordinary code) that must stay below `medium`, and
//! should carry no finding at all.
//!
//! Every secret-shaped string is built here from a seeded PRNG (a public prefix at most plus
//! random characters): nothing is a real credential and none is written out literally. Key names
//! and syntaxes are drawn independently of the values, so a rule tuned to one string fails here.
//!
//! Used by `examples/l0_recall.rs` (prints the table) and `tests/l0_recall.rs` (asserts floors).

#![allow(dead_code)]

use base64::Engine;
use resilient_write_core::classify::{Classifier, Verdict, risk_score};

// The PRNG and the alphabets are the evaluation corpus's (examples/l0_corpus).
#[path = "../l0_corpus/mod.rs"]
mod corpus;
pub use corpus::{ALNUM, B64, DIGITS, HEX, LOWER_ALNUM, Rng, URLSAFE};

/// Characters Django's `get_random_secret_key` draws from.
pub const DJANGO: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)";
/// Characters of a typed password with symbols.
pub const PASSWORD: &[u8] =
    b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!@#%^&*-_+=.?~";

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn b64url(s: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

/// One generated case: the text and the secret inside it (the line holding `secret` is where a
/// finding must be reported).
pub struct Case {
    pub text: String,
    pub secret: String,
}

/// What a category's cases must score.
#[derive(Clone, Copy, PartialEq)]
pub enum Expect {
    /// A credential: verdict >= medium, a finding on the secret's line.
    Credential,
    /// A binary payload: a `binary_hint` finding on the payload's line (weighs `low` by design).
    Binary,
    /// A redacted or example shape: verdict within [lo, hi].
    Range(Verdict, Verdict),
    /// Content that is no filter risk: no finding on its line but personal data.
    Quiet,
}

pub struct Category {
    pub name: &'static str,
    pub expect: Expect,
    pub generate: fn(&mut Rng) -> Case,
}

mod negatives;
mod positives;
mod redacted;
mod saas;
mod tail;
mod values;

pub use negatives::negative_file;
use negatives::negative_line;
use positives::*;
use redacted::*;
use saas::*;
use tail::*;

pub fn categories() -> Vec<Category> {
    use Expect::*;
    use Verdict::{Low, Safe};
    vec![
        Category {
            name: "generic_password",
            expect: Credential,
            generate: generic_password,
        },
        Category {
            name: "generic_secret_token_key",
            expect: Credential,
            generate: generic_secret,
        },
        Category {
            name: "connection_credentials",
            expect: Credential,
            generate: connection_credentials,
        },
        Category {
            name: "framework_secret_key",
            expect: Credential,
            generate: framework_secret_key,
        },
        Category {
            name: "http_basic",
            expect: Credential,
            generate: http_basic,
        },
        Category {
            name: "bearer_opaque",
            expect: Credential,
            generate: bearer_token,
        },
        Category {
            name: "discord_bot_token",
            expect: Credential,
            generate: discord_bot_token,
        },
        Category {
            name: "us_ssn_spaced_dotted",
            expect: Credential,
            generate: us_ssn_spaced,
        },
        Category {
            name: "artifactory_token",
            expect: Credential,
            generate: artifactory_token,
        },
        Category {
            name: "scanner_formats",
            expect: Credential,
            generate: scanner_formats,
        },
        Category {
            name: "card_number_written",
            expect: Credential,
            generate: card_number,
        },
        Category {
            name: "data_uri_binary",
            expect: Binary,
            generate: data_uri_binary,
        },
        Category {
            name: "redacted:prefix_ellipsis",
            expect: Range(Low, Low),
            generate: prefix_ellipsis_prose,
        },
        Category {
            name: "redacted:pem_bodyless",
            expect: Range(Low, Low),
            generate: pem_bodyless,
        },
        Category {
            name: "redacted:doc_example",
            expect: Range(Low, Low),
            generate: documentation_example,
        },
        Category {
            name: "redacted:placeholder",
            expect: Range(Safe, Low),
            generate: ellipsis_or_braced_placeholder,
        },
        // issue 43
        Category {
            name: "saas_long_tail",
            expect: Credential,
            generate: saas_long_tail,
        },
        Category {
            name: "paas_uuid_key",
            expect: Credential,
            generate: paas_uuid_key,
        },
        Category {
            name: "http_auth",
            expect: Credential,
            generate: http_auth,
        },
        Category {
            name: "rare_syntax_secret",
            expect: Credential,
            generate: rare_syntax_secret,
        },
        Category {
            name: "redacted:prefix_in_prose",
            expect: Range(Low, Low),
            generate: prefix_in_prose,
        },
        Category {
            name: "redacted:jwt_header_only",
            expect: Range(Low, Low),
            generate: jwt_header_only,
        },
        Category {
            name: "redacted:after_prefix",
            expect: Range(Low, Low),
            generate: redacted_after_prefix,
        },
        Category {
            name: "quiet:image_data_uri",
            expect: Quiet,
            generate: image_data_uri,
        },
    ]
}

// ---- measurement ------------------------------------------------------------------------------

pub struct CategoryResult {
    pub name: &'static str,
    pub expect: Expect,
    pub cases: usize,
    /// Credential: verdict >= medium; binary: a binary_hint finding; range: verdict in range.
    pub ok: usize,
    /// A finding on the secret's line (credentials and binaries).
    pub right_line: usize,
}

/// Whether a finding of family `kind` is personal data (left out of the count of negatives with
/// any finding: the goal is about filter risks, and contact data is low by design).
pub fn is_personal(kind: &str) -> bool {
    kind == "pii" || kind.starts_with("pii_")
}

pub struct Report {
    pub categories: Vec<CategoryResult>,
    pub negative_files: usize,
    pub negative_medium: usize,
    /// Negative files with any finding, personal data aside.
    pub negative_flagged: usize,
    /// (rule, count) of findings in negatives at >= medium files.
    pub negative_rules: Vec<(String, usize)>,
    /// (rule, count) of the findings (personal data aside) in negative files below medium.
    pub negative_low_rules: Vec<(String, usize)>,
    /// The first few failing texts per category (for the example's `--verbose`).
    pub misses: Vec<(&'static str, String)>,
}

fn filler(r: &mut Rng) -> Vec<String> {
    (0..r.range(1, 3)).map(|_| negative_line(r)).collect()
}

/// One case of `cat` between filler lines: the document, the line of its secret, the case.
fn document(r: &mut Rng, cat: &Category) -> (String, usize, Case) {
    let case = (cat.generate)(r);
    let (before, after) = (filler(r), filler(r));
    let doc = format!(
        "{}\n{}\n{}\n",
        before.join("\n"),
        case.text,
        after.join("\n")
    );
    let line = doc
        .find(&case.secret)
        .map(|at| doc[..at].matches('\n').count() + 1)
        .unwrap_or(0);
    (doc, line, case)
}

pub fn evaluate(c: &Classifier, per_category: usize, negatives: usize, seed: u64) -> Report {
    let mut r = Rng(seed);
    let mut out = Vec::new();
    let mut misses = Vec::new();
    for cat in categories() {
        let (mut ok, mut right_line) = (0, 0);
        for _ in 0..per_category {
            let (doc, line, case) = document(&mut r, &cat);
            let rep = risk_score(&doc, c);
            let on_line = rep
                .detected_patterns
                .iter()
                .any(|f| f.line as usize == line);
            let pass = match cat.expect {
                Expect::Credential => rep.verdict >= Verdict::Medium,
                Expect::Quiet => !rep
                    .detected_patterns
                    .iter()
                    .any(|f| f.line as usize == line && !is_personal(&f.kind)),
                Expect::Binary => rep
                    .detected_patterns
                    .iter()
                    .any(|f| f.kind == "binary_hint" && f.line as usize == line),
                Expect::Range(lo, hi) => rep.verdict >= lo && rep.verdict <= hi,
            };
            ok += usize::from(pass);
            right_line += usize::from(on_line);
            if !pass || (cat.expect == Expect::Credential && !on_line) {
                misses.push((cat.name, case.text.clone()));
            }
        }
        out.push(CategoryResult {
            name: cat.name,
            expect: cat.expect,
            cases: per_category,
            ok,
            right_line,
        });
    }
    let (mut negative_medium, mut negative_flagged) = (0, 0);
    let mut rules = std::collections::BTreeMap::<String, usize>::new();
    let mut low_rules = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..negatives {
        let f = negative_file(&mut r);
        let rep = risk_score(&f, c);
        let flags: Vec<_> = rep
            .detected_patterns
            .iter()
            .filter(|p| !is_personal(&p.kind))
            .collect();
        negative_flagged += usize::from(!flags.is_empty());
        if rep.verdict < Verdict::Medium {
            for p in &flags {
                *low_rules.entry(p.pattern.clone()).or_default() += 1;
            }
            if !flags.is_empty() {
                misses.push(("negative flagged low", f.clone()));
            }
        }
        if rep.verdict >= Verdict::Medium {
            negative_medium += 1;
            for p in &rep.detected_patterns {
                *rules.entry(p.pattern.clone()).or_default() += 1;
            }
            misses.push(("negative", f));
        }
    }
    Report {
        categories: out,
        negative_files: negatives,
        negative_medium,
        negative_flagged,
        negative_rules: rules.into_iter().collect(),
        negative_low_rules: low_rules.into_iter().collect(),
        misses,
    }
}

/// Writes the documents `evaluate` scores (the same seed draws the same ones) under `dir`, one
/// file each (`<category>/<n>.txt`, `negative/<n>.txt`), with `index.tsv` listing path,
/// category, expectation (`credential`, `binary`, `quiet`, `range:lo-hi`, `negative`) and the
/// secret's line: so that another build, or the `scan` command, can score the same texts
/// (`scripts/l0-recall-compare.py`).
pub fn write_documents(
    dir: &std::path::Path,
    per_category: usize,
    negatives: usize,
    seed: u64,
) -> std::io::Result<()> {
    let mut r = Rng(seed);
    let mut index = String::new();
    for cat in categories() {
        let sub = cat.name.replace(':', "_");
        std::fs::create_dir_all(dir.join(&sub))?;
        let expect = match cat.expect {
            Expect::Credential => "credential".to_string(),
            Expect::Binary => "binary".to_string(),
            Expect::Quiet => "quiet".to_string(),
            Expect::Range(lo, hi) => format!("range:{lo:?}-{hi:?}").to_lowercase(),
        };
        for n in 0..per_category {
            let (doc, line, _) = document(&mut r, &cat);
            let path = format!("{sub}/{n}.txt");
            std::fs::write(dir.join(&path), doc)?;
            index.push_str(&format!("{path}\t{}\t{expect}\t{line}\n", cat.name));
        }
    }
    std::fs::create_dir_all(dir.join("negative"))?;
    for n in 0..negatives {
        let path = format!("negative/{n}.txt");
        std::fs::write(dir.join(&path), negative_file(&mut r))?;
        index.push_str(&format!("{path}\tnegative\tnegative\t0\n"));
    }
    std::fs::write(dir.join("index.tsv"), index)
}

pub fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}
