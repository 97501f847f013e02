//! Values and syntaxes of the generated recall corpus: passwords and opaque secrets as people
//! and vendors make them, key names in each language's case, `key = value` in about 40 syntaxes,
//! and prose around a secret.

use super::{ALNUM, DIGITS, HEX, LOWER_ALNUM, PASSWORD, Rng, b64, b64url};

// ---- values ----------------------------------------------------------------------------------

/// A password as people set them: random with symbols, random alphanumeric, or a word with
/// digits and a symbol.
pub(super) fn password_value(r: &mut Rng) -> String {
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
pub(super) fn opaque_value(r: &mut Rng) -> String {
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
pub(super) enum Case_ {
    Snake,
    UpperSnake,
    Camel,
    Pascal,
    Kebab,
}

pub(super) fn key_in(words: &[&str], c: Case_) -> String {
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
pub(super) fn assignment(r: &mut Rng, words: &[&str], v: &str) -> String {
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

pub(super) fn password_words(r: &mut Rng) -> Vec<&'static str> {
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

pub(super) fn secret_words(r: &mut Rng) -> Vec<&'static str> {
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
pub(super) fn prose(r: &mut Rng, what: &str, v: &str) -> String {
    match r.below(4) {
        0 => format!("The {what} for the staging box is {v} (rotate it after the demo)."),
        1 => format!("Note: the {what} is `{v}`; do not commit it."),
        2 => format!("- {what}: {v}"),
        _ => format!("I logged in with the {what} \"{v}\" and it worked."),
    }
}
