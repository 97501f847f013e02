//! The credential formats of issue 19 that ripsecrets found and L0 missed (Square, older Slack
//! tokens, Twilio account SIDs beside a key name, Maven's master password, 42 intra secrets,
//! JWE), their placeholders, and card-shaped integer constants in code. Secret-shaped strings
//! are generated (prefix + characters from a seeded PRNG), never written out.

use super::testing::{
    ALNUM, DIGITS, HEX, LOWER_ALNUM, URLSAFE, assert_below_medium, b64url, luhn_number, score,
    synth,
};
use super::*;

/// The rules reported at the verdict `medium` or above, or nothing when the text scores lower.
fn credential_rules(s: &str) -> Vec<String> {
    let r = score(s);
    if r.verdict < Verdict::Medium {
        return Vec::new();
    }
    r.detected_patterns.into_iter().map(|f| f.pattern).collect()
}

fn assert_found(text: &str, rule: &str) {
    let got = credential_rules(text);
    assert!(
        got.iter().any(|p| p == rule),
        "{rule} not found at >= medium: {got:?}"
    );
}

#[test]
fn square_secrets_of_every_length_square_issues_are_found() {
    for n in [40, 43, 47, 50] {
        assert_found(
            &format!("SQUARE_SECRET={}\n", synth("sq0csp-", URLSAFE, n)),
            "square_oauth_secret",
        );
    }
    // access tokens: EAAA + 60 characters, `+` and `=` included
    let body = format!(
        "{}+{}={}",
        synth("", ALNUM, 30),
        synth("", ALNUM, 20),
        synth("", ALNUM, 8)
    );
    assert_found(&format!("token: EAAA{body}\n"), "square_access_token");
    assert_found(
        &format!("token: {}\n", synth("sq0atp-", URLSAFE, 22)),
        "square_access_token",
    );
}

#[test]
fn square_placeholders_stay_below_medium() {
    assert_below_medium(&format!("SQUARE_SECRET=sq0csp-{}\n", "x".repeat(43)));
    assert_below_medium(&format!("token: EAAA{}\n", "X".repeat(60)));
    // one character short of a secret
    assert_below_medium(&format!("s = {}\n", synth("sq0csp-", URLSAFE, 39)));
}

#[test]
fn slack_tokens_with_short_digit_groups_are_found() {
    for groups in [2, 3] {
        let digits: Vec<String> = (0..groups).map(|k| synth("", DIGITS, 6 + k)).collect();
        let t = format!("xoxp-{}-{}", digits.join("-"), synth("", LOWER_ALNUM, 32));
        assert_found(&format!("SLACK_TOKEN={t}\n"), "slack_legacy_user_token");
    }
}

#[test]
fn slack_placeholders_stay_below_medium() {
    assert_below_medium(&format!("SLACK_TOKEN=xoxp-{}\n", "x".repeat(40)));
    assert_below_medium(&format!(
        "SLACK_TOKEN=xoxp-000000-000000-000000-{}\n",
        "x".repeat(32)
    ));
    assert_below_medium(&format!(
        "url = https://hooks.slack.com/services/T{}/B{}/{}\n",
        "x".repeat(8),
        "x".repeat(8),
        "x".repeat(24)
    ));
    // a real-shaped webhook is found (the placeholder above differs only in its characters)
    assert_found(
        &format!(
            "url = https://hooks.slack.com/services/T{}/B{}/{}\n",
            synth("", ALNUM, 8),
            synth("", ALNUM, 8),
            synth("", ALNUM, 24)
        ),
        "slack_webhook_url",
    );
}

#[test]
fn twilio_account_sid_beside_a_key_name_is_found() {
    let sid = synth("AC", HEX, 32);
    assert_found(&format!("TWILIO_ACCOUNT_SID={sid}\n"), "twilio_account_sid");
    assert_found(
        &format!("\"accountSid\": \"{sid}\",\n"),
        "twilio_account_sid",
    );
    assert_found(
        &format!("client = twilio.Client(\"{sid}\", auth)\n"),
        "twilio_account_sid",
    );
}

#[test]
fn twilio_placeholders_and_bare_ac_strings_stay_below_medium() {
    assert_below_medium(&format!("TWILIO_ACCOUNT_SID=AC{}\n", "x".repeat(32)));
    assert_below_medium("TWILIO_ACCOUNT_SID=${TWILIO_ACCOUNT_SID}\n");
    // no Twilio context: an `AC` + hex identifier is not a credential on its own
    assert_below_medium(&format!("id = {}\n", synth("AC", HEX, 32)));
    assert_below_medium(&format!("TWILIO_API_KEY=SK{}\n", "x".repeat(32)));
}

#[test]
fn npm_auth_token_placeholder_stays_below_medium() {
    assert_below_medium(&format!(
        "//registry.npmjs.org/:_authToken={}\n",
        "x".repeat(36)
    ));
    assert_below_medium("//registry.npmjs.org/:_authToken=<YOUR_TOKEN>\n");
    assert_found(
        &format!(
            "//registry.npmjs.org/:_authToken={}\n",
            synth("", URLSAFE, 36)
        ),
        "npmrc_auth",
    );
}

#[test]
fn maven_passwords_are_found_and_references_are_not() {
    let pw = synth("", ALNUM, 24);
    let settings = format!(
        "<settings>\n  <servers>\n    <server>\n      <id>central</id>\n      <username>deploy</username>\n      <password>{pw}</password>\n    </server>\n  </servers>\n</settings>\n"
    );
    assert_found(&settings, "xml_element_secret");
    assert_below_medium(&settings.replace(&pw, "${env.MAVEN_PASSWORD}"));
    assert_below_medium(&settings.replace(&pw, "<YOUR_PASSWORD>"));
    let master = format!(
        "<settingsSecurity>\n  <master>{{{}+{}=}}</master>\n</settingsSecurity>\n",
        synth("", ALNUM, 30),
        synth("", ALNUM, 12)
    );
    assert_found(&master, "maven_master_password");
    assert_below_medium(&format!("<master>{{{}}}</master>\n", "x".repeat(44)));
}

#[test]
fn intra42_secrets_are_found() {
    for prefix in ["s-s4t2ud-", "s-s4t2af-"] {
        assert_found(
            &format!("INTRA_SECRET={}\n", synth(prefix, HEX, 64)),
            "intra42_client_secret",
        );
    }
    assert_below_medium(&format!("INTRA_SECRET=s-s4t2ud-{}\n", "0".repeat(64)));
}

fn jwe(header: &[u8]) -> String {
    format!(
        "{}.{}.{}.{}.{}",
        b64url(header),
        synth("", URLSAFE, 342),
        synth("", URLSAFE, 22),
        synth("", URLSAFE, 120),
        synth("", URLSAFE, 22)
    )
}

#[test]
fn jwe_compact_tokens_are_found() {
    let t = jwe(br#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#);
    assert_found(&format!("token = \"{t}\"\n"), "jwe");
    // `dir`: the encrypted key segment is empty
    let h = b64url(br#"{"alg":"dir","enc":"A128CBC-HS256"}"#);
    let dir = format!(
        "{h}..{}.{}.{}",
        synth("", URLSAFE, 22),
        synth("", URLSAFE, 64),
        synth("", URLSAFE, 22)
    );
    assert_found(&format!("Authorization: {dir}\n"), "jwe");
}

#[test]
fn five_dotted_segments_without_a_json_header_are_not_a_jwe() {
    let t = format!(
        "eyJ{}.{}.{}.{}.{}",
        synth("", URLSAFE, 20),
        synth("", URLSAFE, 20),
        synth("", URLSAFE, 20),
        synth("", URLSAFE, 20),
        synth("", URLSAFE, 20)
    );
    assert!(
        !score(&format!("v = {t}\n"))
            .detected_patterns
            .iter()
            .any(|f| f.pattern == "jwe")
    );
}

// ---- card numbers: code literals are not cards, cards as people write them are ----

/// A Luhn-valid number of `len` digits under `prefix`, its free digits drawn from `seed`.
fn card(prefix: &str, len: usize, seed: u64) -> String {
    let mut x = seed;
    luhn_number(prefix, len, || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % 10) as u8
    })
}

#[test]
fn card_shaped_integer_constants_in_code_are_not_cards() {
    for (seed, (prefix, len)) in [("4", 19), ("4", 16), ("51", 16), ("37", 15), ("6011", 16)]
        .into_iter()
        .enumerate()
    {
        let n = card(prefix, len, seed as u64);
        let m = card(prefix, len, seed as u64 + 100);
        for text in [
            format!("pub const MAGIC: u64 = {n};\n"),
            format!("static TABLE: [u64; 3] = [\n    {n},\n    {m},\n    1,\n];\n"),
            format!("    ({n}, {m}),\n"),
            format!("    check_normalize({n}, 446, 11, {m}, 435);\n"),
            format!("let mask = {n} & bits;\n"),
            format!("x = {n}\n"),
            format!("if v > {n} {{\n"),
        ] {
            assert!(
                !score(&text)
                    .detected_patterns
                    .iter()
                    .any(|f| f.pattern == "credit_card_number"),
                "{prefix} x {len}: {text}"
            );
        }
    }
}

#[test]
fn cards_as_people_write_them_are_still_found() {
    for (seed, (prefix, len)) in [("4", 16), ("52", 16), ("34", 15), ("6011", 16), ("4", 13)]
        .into_iter()
        .enumerate()
    {
        let n = card(prefix, len, seed as u64 + 7);
        let grouped: Vec<&str> = n
            .as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect();
        for text in [
            format!("card: {}\n", grouped.join(" ")),
            format!("{}\n", grouped.join("-")),
            format!("Paid with {n}, thanks.\n"),
            format!("{{\"cardNumber\": {n}, \"exp\": \"12/27\"}}\n"),
            format!("{{\"number\": \"{n}\"}}\n"),
            format!("number: {n}\n"),
            format!("2026-01-04 12:00:01 INFO charge ok pan={n} amount=12.00\n"),
            format!("jane,doe,{n},12/27\n"),
            format!("const TEST_CARD: u64 = {n}; // visa test card\n"),
            format!("{n}\n"),
        ] {
            assert_found(&text, "credit_card_number");
        }
    }
}

#[test]
fn integer_literals_named_like_secrets_are_not_credentials() {
    // constants of API bindings (windows-sys): a name holding PASSWORD or KEY, a literal value
    for text in [
        "pub const ERROR_WSMAN_CERTMAPPING_PASSWORDBLANK: u32 = 2150859115u32;\n",
        "pub const STATUS_WRONG_PASSWORD_CORE: NTSTATUS = 0xC0000149_u32 as _;\n",
        "pub const CLUSCTL_RESOURCE_NETNAME_SET_PWD_INFO: CLUSCTL_RESOURCE_CODES = 16777594i32;\n",
        "#define LOGON_ZERO_PASSWORD_BUFFER 0x80000000UL\npassword = 0x80000000UL\n",
        "    mut builder: onepass::Builder,\n",
        "pub const PrivateKeyHelloLogonKey: X509CertificateTemplatePrivateKeyFlag = 2097152i32;\n",
    ] {
        assert_below_medium(text);
    }
    // a password with digits and letters is still one
    assert_found(
        &format!("DB_PASSWORD = {}\n", synth("", ALNUM, 14)),
        "password_assignment",
    );
}

#[test]
fn numeric_literal_shapes() {
    for yes in [
        "16384u32",
        "0xC0000149_u32",
        "0x1F",
        "42UL",
        "0b1010_u8",
        "1_000i64",
    ] {
        assert!(verify::is_numeric_literal(yes.as_bytes()), "{yes}");
    }
    let eth = synth("0x", HEX, 64);
    for no in [
        "12345678",
        "abc123u32",
        "0xZZ",
        "u32",
        "7Kq9u32x",
        "1234567a",
        eth.as_str(),
    ] {
        assert!(!verify::is_numeric_literal(no.as_bytes()), "{no}");
    }
}
