//! The positive categories of issues 18 and 19: credentials without a vendor prefix, framework
//! secret keys, HTTP Basic and bearer credentials, Discord bot tokens, spaced SSNs, Artifactory
//! tokens, binary payloads in data URIs, other scanners' formats, card numbers.

use super::values::{
    assignment, opaque_value, password_value, password_words, prose, secret_words,
};
use super::{ALNUM, B64, Case, DIGITS, DJANGO, HEX, LOWER_ALNUM, Rng, URLSAFE, b64, b64url};

// ---- positive categories ----------------------------------------------------------------------

pub(super) fn generic_password(r: &mut Rng) -> Case {
    let v = password_value(r);
    let words = password_words(r);
    let text = if r.below(8) == 0 {
        prose(r, "password", &v)
    } else {
        assignment(r, &words, &v)
    };
    Case { text, secret: v }
}

pub(super) fn generic_secret(r: &mut Rng) -> Case {
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

pub(super) fn connection_credentials(r: &mut Rng) -> Case {
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

pub(super) fn framework_secret_key(r: &mut Rng) -> Case {
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

pub(super) fn http_basic(r: &mut Rng) -> Case {
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

pub(super) fn bearer_token(r: &mut Rng) -> Case {
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

pub(super) fn discord_bot_token(r: &mut Rng) -> Case {
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

pub(super) fn us_ssn_spaced(r: &mut Rng) -> Case {
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

pub(super) fn artifactory_token(r: &mut Rng) -> Case {
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

/// A binary payload that is not an image in a data URI (an image is content: issue 43 made it
/// quiet, `tail::image_data_uri`), or a long base64 run that declares no media type at all.
pub(super) fn data_uri_binary(r: &mut Rng) -> Case {
    let mime = r.pick(&[
        "application/octet-stream",
        "application/pdf",
        "font/woff2",
        "application/zip",
        "application/wasm",
        "application/x-protobuf",
    ]);
    let n = r.range(160, 600);
    let raw: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    let v = b64(&raw);
    let text = match r.below(5) {
        0 => format!("<a href=\"data:{mime};base64,{v}\" download>report</a>"),
        1 => format!("@font-face {{ src: url(data:{mime};base64,{v}); }}"),
        2 => format!("const blob = \"data:{mime};base64,{v}\";"),
        3 => format!("[attachment](data:{mime};base64,{v})"),
        _ => format!("payload = \"{v}\""),
    };
    Case { text, secret: v }
}

/// Formats ripsecrets found in a source tree and L0 missed (issue 19): Square secrets, Slack
/// tokens with short digit groups, a Twilio account SID beside its key name, Maven's encrypted
/// master password, 42 intra secrets, JWE compact tokens.
pub(super) fn scanner_formats(r: &mut Rng) -> Case {
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
pub(super) fn card_number(r: &mut Rng) -> Case {
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
pub(super) fn card_shaped_constant(r: &mut Rng) -> String {
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
