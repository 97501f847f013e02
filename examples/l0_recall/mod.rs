//! Labelled recall corpus for the L0 classifier, generated in memory (issue 18): the categories
//! where L0 was weak (credentials without a vendor prefix, framework secret keys, HTTP Basic
//! credentials, opaque bearer tokens, Discord bot tokens, spaced or dotted SSNs, Artifactory
//! tokens, binary payloads in data URIs), each written in many syntaxes (env, YAML, JSON, TOML,
//! INI, XML, shell, CLI flags, connection strings, URLs with userinfo, assignments in a dozen
//! languages, prose); redacted shapes with the verdict range they belong in; and negatives
//! (placeholders, variable references, lockfile hashes, UUIDs, ordinary code) that must stay
//! below `medium`.
//!
//! Every secret-shaped string is built here from a seeded PRNG (a public prefix at most plus
//! random characters): nothing is a real credential and none is written out literally. Key names
//! and syntaxes are drawn independently of the values, so a rule tuned to one string fails here.
//!
//! Used by `examples/l0_recall.rs` (prints the table) and `tests/l0_recall.rs` (asserts floors).

#![allow(dead_code)]

use base64::Engine;
use resilient_write::classify::{Classifier, Verdict, risk_score};

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
}

pub struct Category {
    pub name: &'static str,
    pub expect: Expect,
    pub generate: fn(&mut Rng) -> Case,
}

// ---- values ----------------------------------------------------------------------------------

/// A password as people set them: random with symbols, random alphanumeric, or a word with
/// digits and a symbol.
fn password_value(r: &mut Rng) -> String {
    match r.below(4) {
        0 | 1 => {
            let n = r.range(10, 24);
            // at least one digit and one letter, like every password policy asks
            format!(
                "{}{}{}",
                r.chars(PASSWORD, n / 2),
                r.chars(DIGITS, 1),
                r.chars(PASSWORD, n - n / 2)
            )
        }
        2 => {
            let n = r.range(14, 32);
            format!("{}{}", r.chars(ALNUM, n), r.chars(DIGITS, 1))
        }
        _ => {
            let words = [
                "Orchid", "Granite", "Velvet", "Harbor", "Maple", "Cobalt", "Falcon", "Juniper",
            ];
            format!(
                "{}{}{}{}",
                r.pick(&words),
                {
                    let n = r.range(2, 4);
                    r.chars(DIGITS, n)
                },
                r.pick(&["!", "#", "$", "%", "&", "*", "?"]),
                {
                    let n = r.range(2, 5);
                    r.chars(LOWER_ALNUM, n)
                }
            )
        }
    }
}

/// An opaque secret or token: hex, alphanumeric, base64 or base64url, 24 to 64 characters.
fn opaque_value(r: &mut Rng) -> String {
    match r.below(4) {
        0 => {
            let n = [32, 40, 48, 64][r.below(4)];
            r.chars(HEX, n)
        }
        1 => {
            let n = r.range(24, 48);
            format!("{}{}", r.chars(ALNUM, n), r.chars(DIGITS, 1))
        }
        2 => {
            let n = r.range(18, 40);
            let raw: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
            b64(&raw)
        }
        _ => {
            let n = r.range(18, 40);
            let raw: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
            b64url(&raw)
        }
    }
}

// ---- key names in each language's case -------------------------------------------------------

#[derive(Clone, Copy)]
enum Case_ {
    Snake,
    UpperSnake,
    Camel,
    Pascal,
    Kebab,
}

fn key_in(words: &[&str], c: Case_) -> String {
    match c {
        Case_::Snake => words.join("_"),
        Case_::UpperSnake => words.join("_").to_uppercase(),
        Case_::Kebab => words.join("-"),
        Case_::Camel | Case_::Pascal => words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 && matches!(c, Case_::Camel) {
                    w.to_string()
                } else {
                    let mut s = w.to_string();
                    if let Some(f) = s.get_mut(0..1) {
                        f.make_ascii_uppercase();
                    }
                    s
                }
            })
            .collect(),
    }
}

/// `key = value` in one of ~40 syntaxes agents write. `words` is the key (e.g. `["db",
/// "password"]`); each syntax spells it in its own case.
fn assignment(r: &mut Rng, words: &[&str], v: &str) -> String {
    use Case_::*;
    let host = r.pick(&[
        "db.internal",
        "10.0.3.17",
        "pg-main.prod.svc",
        "cache.local",
    ]);
    match r.below(36) {
        0 => format!("{}={v}", key_in(words, UpperSnake)),
        1 => format!("{}=\"{v}\"", key_in(words, UpperSnake)),
        2 => format!("export {}='{v}'", key_in(words, UpperSnake)),
        3 => format!("export {}=\"{v}\"", key_in(words, UpperSnake)),
        4 => format!("{}: {v}", key_in(words, Snake)),
        5 => format!("  {}: \"{v}\"", key_in(words, Snake)),
        6 => format!("service:\n  {}: '{v}'\n  port: 5432", key_in(words, Snake)),
        7 => format!(
            "{{\n  \"{}\": \"{v}\",\n  \"retries\": 3\n}}",
            key_in(words, Camel)
        ),
        8 => format!("  \"{}\": \"{v}\",", key_in(words, Snake)),
        9 => format!("[server]\n{} = \"{v}\"", key_in(words, Snake)),
        10 => format!("[client]\n{} = {v}", key_in(words, Snake)),
        11 => format!("<add key=\"{}\" value=\"{v}\" />", key_in(words, Pascal)),
        12 => format!("<{k}>{v}</{k}>", k = key_in(words, Camel)),
        13 => format!(
            "<property name=\"{}\" value=\"{v}\"/>",
            key_in(words, Snake).replace('_', ".")
        ),
        14 => format!(
            "tool deploy --{} {v} --region eu-west-1",
            key_in(words, Kebab)
        ),
        15 => format!("./run.sh --{}=\"{v}\"", key_in(words, Kebab)),
        16 => format!("{} = \"{v}\"", key_in(words, UpperSnake)),
        17 => format!(
            "client = connect(host=\"{host}\", {}=\"{v}\")",
            key_in(words, Snake)
        ),
        18 => format!("const {} = '{v}';", key_in(words, Camel)),
        19 => format!("  {}: '{v}',", key_in(words, Camel)),
        20 => format!("const {}: string = \"{v}\";", key_in(words, Camel)),
        21 => format!("{} := \"{v}\"", key_in(words, Camel)),
        22 => format!("var {} = \"{v}\"", key_in(words, Pascal)),
        23 => format!(
            "private static final String {} = \"{v}\";",
            key_in(words, UpperSnake)
        ),
        24 => format!(
            "props.setProperty(\"{}\", \"{v}\");",
            key_in(words, Snake).replace('_', ".")
        ),
        25 => format!("var {} = \"{v}\";", key_in(words, Camel)),
        26 => format!("public const string {} = @\"{v}\";", key_in(words, Pascal)),
        27 => format!("{} = '{v}'", key_in(words, UpperSnake)),
        28 => format!("config.{} = \"{v}\"", key_in(words, Snake)),
        29 => format!("${} = '{v}';", key_in(words, Camel)),
        30 => format!("    '{}' => '{v}',", key_in(words, Snake)),
        31 => format!("define('{}', '{v}');", key_in(words, UpperSnake)),
        32 => format!("let {} = \"{v}\";", key_in(words, Snake)),
        33 => format!("const {}: &str = \"{v}\";", key_in(words, UpperSnake)),
        34 => format!(
            "env:\n  - name: {}\n    value: \"{v}\"",
            key_in(words, UpperSnake)
        ),
        _ => format!("ENV {}={v}", key_in(words, UpperSnake)),
    }
}

fn password_words(r: &mut Rng) -> Vec<&'static str> {
    let lead = r.pick(&[
        "db", "database", "admin", "smtp", "redis", "mysql", "root", "ldap", "app", "service",
        "postgres", "mail", "keystore", "",
    ]);
    let tail = r.pick(&[
        "password",
        "password",
        "passwd",
        "pass",
        "pwd",
        "passphrase",
    ]);
    let mut w = Vec::new();
    if !lead.is_empty() {
        w.push(lead);
    }
    w.push(tail);
    w
}

fn secret_words(r: &mut Rng) -> Vec<&'static str> {
    match r.below(3) {
        0 => {
            let lead = r.pick(&[
                "client", "app", "api", "webhook", "signing", "jwt", "oauth", "session", "shared",
                "",
            ]);
            let mut w = if lead.is_empty() {
                Vec::new()
            } else {
                vec![lead]
            };
            w.push("secret");
            w
        }
        1 => {
            let lead = r.pick(&[
                "auth", "access", "api", "refresh", "bot", "service", "deploy", "slack",
                "registry", "",
            ]);
            let mut w = if lead.is_empty() {
                Vec::new()
            } else {
                vec![lead]
            };
            w.push("token");
            w
        }
        _ => {
            let lead = r.pick(&["api", "service", "maps", "payment", "search", "analytics"]);
            vec![lead, "key"]
        }
    }
}

/// Prose an agent writes in notes and issue comments, with the secret inside.
fn prose(r: &mut Rng, what: &str, v: &str) -> String {
    match r.below(4) {
        0 => format!("The {what} for the staging box is {v} (rotate it after the demo)."),
        1 => format!("Note: the {what} is `{v}`; do not commit it."),
        2 => format!("- {what}: {v}"),
        _ => format!("I logged in with the {what} \"{v}\" and it worked."),
    }
}

// ---- positive categories ----------------------------------------------------------------------

fn generic_password(r: &mut Rng) -> Case {
    let v = password_value(r);
    let words = password_words(r);
    let text = if r.below(8) == 0 {
        prose(r, "password", &v)
    } else {
        assignment(r, &words, &v)
    };
    Case { text, secret: v }
}

fn generic_secret(r: &mut Rng) -> Case {
    let v = opaque_value(r);
    let words = secret_words(r);
    let text = if r.below(8) == 0 {
        let what = r.pick(&["API key", "access token", "client secret", "token"]);
        prose(r, what, &v)
    } else {
        assignment(r, &words, &v)
    };
    Case { text, secret: v }
}

fn connection_credentials(r: &mut Rng) -> Case {
    let v = password_value(r).replace(['@', '/', '?', '#', '%', ':'], "x");
    let user = r.pick(&["app", "svc_orders", "deploy", "analytics", "etl"]);
    let host = r.pick(&[
        "db.internal",
        "10.0.3.17",
        "pg-main.prod.svc",
        "cluster0.mongo.net",
    ]);
    let text = match r.below(8) {
        0 => format!("DATABASE_URL=postgres://{user}:{v}@{host}:5432/orders"),
        1 => format!("  url: \"mysql://{user}:{v}@{host}/shop\""),
        2 => format!("mongo_uri = \"mongodb+srv://{user}:{v}@{host}/prod?retryWrites=true\""),
        3 => format!("REDIS_URL=redis://:{v}@{host}:6379/0"),
        4 => format!("Server={host};Database=Orders;User Id={user};Password={v};"),
        5 => format!(
            "\"ConnectionStrings\": {{ \"Main\": \"Host={host};Username={user};Password={v}\" }}"
        ),
        6 => format!("jdbc:postgresql://{host}:5432/orders?user={user}&password={v}"),
        _ => format!("git clone https://{user}:{v}@git.{host}/team/repo.git"),
    };
    Case { text, secret: v }
}

fn framework_secret_key(r: &mut Rng) -> Case {
    let (text, v) = match r.below(8) {
        0 | 1 => {
            let v = if r.below(2) == 0 {
                format!("django-insecure-{}", r.chars(DJANGO, 50))
            } else {
                r.chars(DJANGO, 50)
            };
            let q = if v.contains('\'') { '"' } else { '\'' };
            (
                format!(
                    "# SECURITY WARNING: keep the secret key used in production secret!\nSECRET_KEY = {q}{v}{q}"
                ),
                v,
            )
        }
        2 => {
            let v = r.chars(HEX, 128);
            (format!("production:\n  secret_key_base: {v}"), v)
        }
        3 => {
            let v = r.chars(HEX, 128);
            (format!("config.secret_key_base = \"{v}\""), v)
        }
        4 => {
            let v = opaque_value(r);
            (format!("app.config['SECRET_KEY'] = '{v}'"), v)
        }
        5 => {
            let v = opaque_value(r);
            (format!("app.secret_key = b'{v}'"), v)
        }
        6 => {
            let raw: Vec<u8> = (0..32).map(|_| r.next() as u8).collect();
            let v = format!("base64:{}", b64(&raw));
            (format!("APP_NAME=Shop\nAPP_ENV=production\nAPP_KEY={v}"), v)
        }
        _ => {
            let v = r.chars(HEX, 32);
            (format!("APP_SECRET={v}"), v)
        }
    };
    Case { text, secret: v }
}

fn http_basic(r: &mut Rng) -> Case {
    let user = r.pick(&["admin", "ci-bot", "deploy", "api", "jenkins"]);
    let pw = password_value(r).replace(':', "x");
    let cred = b64(format!("{user}:{pw}").as_bytes());
    let text = match r.below(8) {
        0 => format!("curl -H \"Authorization: Basic {cred}\" https://api.internal/v1/items"),
        1 => format!("GET /v1/items HTTP/1.1\nHost: api.internal\nAuthorization: Basic {cred}"),
        2 => format!("headers = {{\"Authorization\": \"Basic {cred}\"}}"),
        3 => format!("fetch(url, {{ headers: {{ Authorization: 'Basic {cred}' }} }});"),
        4 => format!("req.Header.Set(\"Authorization\", \"Basic {cred}\")"),
        5 => format!("proxy_set_header Authorization \"Basic {cred}\";"),
        6 => {
            return Case {
                text: format!("curl -u {user}:{pw} https://registry.internal/v2/_catalog"),
                secret: pw,
            };
        }
        _ => {
            return Case {
                text: format!("Fetch https://{user}:{pw}@registry.internal/v2/ first."),
                secret: pw,
            };
        }
    };
    Case { text, secret: cred }
}

fn bearer_token(r: &mut Rng) -> Case {
    let v = match r.below(3) {
        0 => r.chars(HEX, 40),
        1 => {
            let n = r.range(30, 60);
            format!("{}{}", r.chars(ALNUM, n), r.chars(DIGITS, 1))
        }
        _ => {
            let raw: Vec<u8> = {
                let n = r.range(24, 48);
                (0..n).map(|_| r.next() as u8)
            }
            .collect();
            b64url(&raw)
        }
    };
    let text = match r.below(7) {
        0 => format!("curl -H 'Authorization: Bearer {v}' https://api.internal/me"),
        1 => format!("Authorization: Bearer {v}"),
        2 => format!("headers = {{'Authorization': f'Bearer {v}'}}"),
        3 => format!("axios.get(url, {{ headers: {{ Authorization: `Bearer {v}` }} }});"),
        4 => format!(
            "request.Headers.Authorization = new AuthenticationHeaderValue(\"Bearer\", \"{v}\");"
        ),
        5 => format!("http GET api.internal/me \"Authorization:Bearer {v}\""),
        _ => format!("  -H \"authorization: bearer {v}\" \\"),
    };
    Case { text, secret: v }
}

fn discord_bot_token(r: &mut Rng) -> Case {
    let id = format!("{}{}", r.range(1, 9), {
        let n = r.range(16, 18);
        r.chars(DIGITS, n)
    });
    let head = b64url(id.as_bytes());
    let v = format!("{head}.{}.{}", r.chars(URLSAFE, 6), {
        let n = r.range(27, 38);
        r.chars(URLSAFE, n)
    });
    let text = match r.below(6) {
        0 => format!("DISCORD_TOKEN={v}"),
        1 => format!("client.run('{v}')"),
        2 => format!("bot.login(\"{v}\");"),
        3 => format!("{{ \"token\": \"{v}\", \"prefix\": \"!\" }}"),
        4 => format!("The bot token is {v}, keep it out of git."),
        _ => format!("await client.login(`{v}`)"),
    };
    Case { text, secret: v }
}

fn us_ssn_spaced(r: &mut Rng) -> Case {
    let area = r.range(1, 899);
    let area = if area == 666 { 667 } else { area };
    let sep = r.pick(&[" ", "."]);
    let v = format!(
        "{area:03}{sep}{:02}{sep}{:04}",
        r.range(1, 99),
        r.range(1, 9999)
    );
    let text = match r.below(6) {
        0 => format!("SSN: {v}"),
        1 => format!("Employee SSN {v} on file."),
        2 => format!("\"ssn\": \"{v}\","),
        3 => format!("social security number: {v}"),
        4 => format!("| Jane Roe | {v} | payroll |"),
        _ => format!("ssn = '{v}'"),
    };
    Case { text, secret: v }
}

fn artifactory_token(r: &mut Rng) -> Case {
    let v = if r.below(2) == 0 {
        format!("AKCp{}", r.chars(ALNUM, 69))
    } else {
        format!("cmVmdGtuOjAxOj{}", r.chars(ALNUM, 50))
    };
    let text = match r.below(5) {
        0 => format!("ARTIFACTORY_API_KEY={v}"),
        1 => format!(
            "curl -H \"X-JFrog-Art-Api: {v}\" https://repo.internal/artifactory/api/repositories"
        ),
        2 => format!("  password: {v}"),
        3 => format!("jf c add --access-token {v}"),
        _ => format!("Use {v} for the upload."),
    };
    Case { text, secret: v }
}

fn data_uri_binary(r: &mut Rng) -> Case {
    let mime = r.pick(&[
        "image/png",
        "image/jpeg",
        "application/octet-stream",
        "application/pdf",
        "font/woff2",
        "application/zip",
        "image/gif",
    ]);
    let n = r.range(120, 600);
    let raw: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    let v = b64(&raw);
    let text = match r.below(4) {
        0 => format!("<img src=\"data:{mime};base64,{v}\" alt=\"logo\">"),
        1 => format!(".icon {{ background: url(data:{mime};base64,{v}); }}"),
        2 => format!("const blob = \"data:{mime};base64,{v}\";"),
        _ => format!("![chart](data:{mime};base64,{v})"),
    };
    Case { text, secret: v }
}

// ---- redacted shapes --------------------------------------------------------------------------

const PREFIXES: &[&str] = &[
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

fn prefix_ellipsis_prose(r: &mut Rng) -> Case {
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

fn pem_bodyless(r: &mut Rng) -> Case {
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

fn documentation_example(r: &mut Rng) -> Case {
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

fn ellipsis_or_braced_placeholder(r: &mut Rng) -> Case {
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

/// Formats ripsecrets found in a source tree and L0 missed (issue 19): Square secrets, Slack
/// tokens with short digit groups, a Twilio account SID beside its key name, Maven's encrypted
/// master password, 42 intra secrets, JWE compact tokens.
fn scanner_formats(r: &mut Rng) -> Case {
    let v = match r.below(7) {
        0 => format!("sq0csp-{}", {
            let n = r.range(40, 50);
            r.chars(URLSAFE, n)
        }),
        1 => format!("EAAA{}", r.chars(ALNUM, 60)),
        2 => format!(
            "xox{}-{}-{}-{}-{}",
            r.pick(&["p", "b"]),
            r.chars(DIGITS, 6),
            r.chars(DIGITS, 6),
            r.chars(DIGITS, 6),
            r.chars(LOWER_ALNUM, 32)
        ),
        3 => format!("AC{}", r.chars(HEX, 32)),
        4 => format!("{{{}=}}", r.chars(B64, 43)),
        5 => format!("s-s4t2{}-{}", r.pick(&["ud", "af"]), r.chars(HEX, 64)),
        _ => {
            let header = b64url(br#"{"alg":"RSA-OAEP-256","enc":"A256GCM"}"#);
            format!(
                "{header}.{}.{}.{}.{}",
                r.chars(URLSAFE, 342),
                r.chars(URLSAFE, 16),
                r.chars(URLSAFE, 80),
                r.chars(URLSAFE, 22)
            )
        }
    };
    let text = if v.starts_with("AC") {
        match r.below(3) {
            0 => format!("TWILIO_ACCOUNT_SID={v}"),
            1 => format!("  \"accountSid\": \"{v}\","),
            _ => format!("client = twilio.rest.Client(\"{v}\", auth_token)"),
        }
    } else if v.starts_with('{') {
        format!("  <master>{v}</master>")
    } else {
        match r.below(4) {
            0 => format!("TOKEN={v}"),
            1 => format!("  token: \"{v}\""),
            2 => format!("client = Client(\"{v}\")"),
            _ => format!("Use {v} to call the API."),
        }
    };
    let secret = v.trim_matches(|c| c == '{' || c == '}').to_string();
    Case { text, secret }
}

/// A card number as people write it: grouped, in prose, a JSON or YAML value, a log or a CSV
/// field, a test constant named as a card.
fn card_number(r: &mut Rng) -> Case {
    let (prefix, len) = [
        ("4", 16),
        ("51", 16),
        ("2221", 16),
        ("34", 15),
        ("6011", 16),
        ("4", 19),
    ][r.below(6)];
    let mut d: Vec<u8> = prefix.bytes().map(|b| b - b'0').collect();
    while d.len() < len - 1 {
        d.push(r.below(10) as u8);
    }
    let check = (0..10u8)
        .find(|&c| {
            let sum: u32 = d
                .iter()
                .chain(std::iter::once(&c))
                .rev()
                .enumerate()
                .map(|(k, &x)| {
                    let v = u32::from(x) * if k % 2 == 1 { 2 } else { 1 };
                    if v > 9 { v - 9 } else { v }
                })
                .sum();
            sum.is_multiple_of(10)
        })
        .unwrap_or(0);
    d.push(check);
    let n: String = d.iter().map(|x| (x + b'0') as char).collect();
    let sep = r.pick(&[" ", "-"]);
    let grouped: Vec<&str> = n
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    let grouped = grouped.join(sep);
    let (text, secret) = match r.below(8) {
        0 => (format!("Card: {grouped}"), grouped),
        1 => (format!("Please charge {grouped} for the renewal."), grouped),
        2 => (format!("  \"card_number\": \"{n}\","), n),
        3 => (format!("  cc: {n}"), n),
        4 => (
            format!("2026-01-04T12:00:01Z INFO payment ok pan={n} amount=12.00"),
            n,
        ),
        5 => (format!("jane,roe,{n},12/27"), n),
        6 => (format!("Paid with {n}, thanks."), n),
        _ => (format!("const TEST_VISA: &str = \"{n}\"; // test card"), n),
    };
    Case { text, secret }
}

/// An integer constant in code that passes Luhn under an issuer prefix at a length the issuer
/// uses: table rows, tuples, call arguments, constants (the false positives of issue 19).
fn card_shaped_constant(r: &mut Rng) -> String {
    let n = format!("4{}", r.chars(DIGITS, 18));
    match r.below(4) {
        0 => format!("    {n},"),
        1 => format!("    ({n}, {}),", r.chars(DIGITS, 19)),
        2 => format!("pub const POW: u64 = {n};"),
        _ => format!(
            "    check_normalize({n}, 446, 11, {}, 435);",
            r.chars(DIGITS, 17)
        ),
    }
}

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
    ]
}

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

fn negative_line(r: &mut Rng) -> String {
    let words = if r.below(2) == 0 {
        password_words(r)
    } else {
        secret_words(r)
    };
    match r.below(26) {
        24 => card_shaped_constant(r),
        25 => format!(
            "{}{}",
            r.pick(&[
                "TWILIO_ACCOUNT_SID=AC",
                "SLACK_TOKEN=xoxp-",
                "SQUARE_SECRET=sq0csp-",
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
fn reference_value(r: &mut Rng) -> &'static str {
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

pub struct Report {
    pub categories: Vec<CategoryResult>,
    pub negative_files: usize,
    pub negative_medium: usize,
    /// (rule, count) of findings in negatives at >= medium files.
    pub negative_rules: Vec<(String, usize)>,
    /// The first few failing texts per category (for the example's `--verbose`).
    pub misses: Vec<(&'static str, String)>,
}

fn filler(r: &mut Rng) -> Vec<String> {
    (0..r.range(1, 3)).map(|_| negative_line(r)).collect()
}

pub fn evaluate(c: &Classifier, per_category: usize, negatives: usize, seed: u64) -> Report {
    let mut r = Rng(seed);
    let mut out = Vec::new();
    let mut misses = Vec::new();
    for cat in categories() {
        let (mut ok, mut right_line) = (0, 0);
        for _ in 0..per_category {
            let case = (cat.generate)(&mut r);
            let (before, after) = (filler(&mut r), filler(&mut r));
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
            let rep = risk_score(&doc, c);
            let on_line = rep
                .detected_patterns
                .iter()
                .any(|f| f.line as usize == line);
            let pass = match cat.expect {
                Expect::Credential => rep.verdict >= Verdict::Medium,
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
    let mut negative_medium = 0;
    let mut rules = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..negatives {
        let f = negative_file(&mut r);
        let rep = risk_score(&f, c);
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
        negative_rules: rules.into_iter().collect(),
        misses,
    }
}

pub fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}
