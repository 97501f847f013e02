//! Behaviour of the L0 classifier, one behaviour per test. Secret-shaped strings are generated
//! from a seeded PRNG at run time (prefix + random body), never written out in this file.

use std::sync::OnceLock;

use super::*;

/// The evaluation corpus of the examples (`examples/l0_corpus`), for tests over many syntaxes.
#[path = "../../../../examples/l0_corpus/mod.rs"]
pub(in crate::classify) mod corpus;

pub(crate) const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(crate) const HEX: &[u8] = b"0123456789abcdef";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn chars(&mut self, set: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| set[(self.next() % set.len() as u64) as usize] as char)
            .collect()
    }
}

pub(crate) fn synth(prefix: &str, set: &[u8], n: usize) -> String {
    let mut r = Rng(prefix.len() as u64 * 7919 + n as u64);
    format!("{prefix}{}", r.chars(set, n))
}

pub(crate) fn clf() -> &'static Classifier {
    static C: OnceLock<Classifier> = OnceLock::new();
    C.get_or_init(Classifier::default)
}

pub(crate) fn score(s: &str) -> RiskReport {
    risk_score(s, clf())
}

pub(crate) fn patterns(s: &str) -> Vec<String> {
    score(s)
        .detected_patterns
        .into_iter()
        .map(|f| f.pattern)
        .collect()
}

fn pem(kind: &str, body_chars: usize) -> String {
    let body = synth("", B64, body_chars);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    format!(
        "-----BEGIN {kind}-----\n{}\n-----END {kind}-----\n",
        lines.join("\n")
    )
}

fn luhn_complete(prefix: &str, len: usize) -> String {
    let mut r = Rng(len as u64);
    let mut digits: Vec<u8> = prefix.bytes().map(|b| b - b'0').collect();
    while digits.len() < len - 1 {
        digits.push((r.next() % 10) as u8);
    }
    for check in 0..10 {
        let mut d = digits.clone();
        d.push(check);
        if pii::luhn(&d) {
            return d.iter().map(|x| (x + b'0') as char).collect();
        }
    }
    String::new()
}

fn iban(cc: &str, bban: &str) -> String {
    let rearranged = format!("{bban}{cc}00");
    let mut rem = 0u32;
    for c in rearranged.bytes() {
        let v = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    format!("{cc}{:02}{bban}", 98 - rem)
}

// ---- credentials ----

#[test]
fn one_github_classic_pat_scores_medium() {
    let r = score(&format!("token = \"{}\"\n", synth("ghp_", ALNUM, 36)));
    assert_eq!(r.verdict, Verdict::Medium, "{r:?}");
    assert_eq!(r.detected_patterns[0].kind, "github_pat");
    assert_eq!(r.detected_patterns[0].pattern, "github_classic_pat");
}

#[test]
fn github_fine_grained_pat_is_found() {
    let t = format!(
        "{}_{}",
        synth("github_pat_", ALNUM, 22),
        synth("", ALNUM, 59)
    );
    assert_eq!(
        patterns(&format!("GH_TOKEN={t}\n")),
        vec!["github_fine_grained_pat"]
    );
}

#[test]
fn aws_key_id_and_secret_in_ini_syntax_score_high() {
    let s = format!(
        "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
        synth("AKIA", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        synth("", B64, 40)
    );
    let r = score(&s);
    assert_eq!(r.verdict, Verdict::High, "{r:?}");
    let p: Vec<_> = r
        .detected_patterns
        .iter()
        .map(|f| f.pattern.as_str())
        .collect();
    assert_eq!(p, vec!["aws_access_key_id", "aws_secret_access_key"]);
}

#[test]
fn aws_secret_in_json_syntax_is_found() {
    let s = format!("{{\"SecretAccessKey\": \"{}\"}}", synth("", B64, 40));
    assert_eq!(patterns(&s), vec!["aws_secret_access_key"]);
}

/// AWS's documentation pair: an example, not a live credential.
const AWS_DOC_EXAMPLE: &str = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
    aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";

#[test]
fn vendor_documentation_example_keys_are_found_as_examples_and_score_low() {
    let r = score(AWS_DOC_EXAMPLE);
    let found: Vec<(&str, &str)> = r
        .detected_patterns
        .iter()
        .map(|f| (f.kind.as_str(), f.pattern.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            (EXAMPLE_FAMILY, "aws_access_key_id"),
            (EXAMPLE_FAMILY, "aws_secret_access_key")
        ],
        "{r:?}"
    );
    assert_eq!(r.verdict, Verdict::Low, "{r:?}");
}

#[test]
fn redaction_replaces_documentation_examples_too() {
    let out = redact(AWS_DOC_EXAMPLE, clf());
    assert!(
        !out.content.contains("AKIAIOSFODNN7EXAMPLE"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("EXAMPLEKEY"), "{}", out.content);
    assert!(
        out.content.contains("{REDACTED:aws_access_key_id}"),
        "{}",
        out.content
    );
    assert_eq!(out.replacements.len(), 2);
}

#[test]
fn an_example_beside_a_live_key_does_not_lower_the_verdict() {
    let live = synth("AKIA", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
    let r = score(&format!("{AWS_DOC_EXAMPLE}prod_key = {live}\n"));
    assert!(r.verdict >= Verdict::Medium, "{r:?}");
    assert!(
        r.detected_patterns.iter().any(|f| f.kind == "api_key"),
        "{r:?}"
    );
}

#[test]
fn placeholders_that_say_example_stay_placeholders() {
    assert!(
        patterns("aws_secret_access_key = YOUR_EXAMPLE_SECRET_KEY_HERE_0123456789ab\n").is_empty()
    );
}

#[test]
fn a_policy_can_turn_example_reporting_off() {
    let c = Classifier::build(
        &[EXAMPLE_FAMILY.to_string()],
        &[],
        std::collections::BTreeMap::new(),
        config::Thresholds::default(),
    )
    .unwrap();
    assert!(risk_score(AWS_DOC_EXAMPLE, &c).detected_patterns.is_empty());
}

#[test]
fn gcp_service_account_json_scores_high() {
    let body: String = synth("MII", B64, 600);
    let s = format!(
        "{{\n  \"type\": \"service_account\",\n  \"private_key_id\": \"{}\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n\"\n}}\n",
        synth("", HEX, 40),
        body
    );
    let r = score(&s);
    assert_eq!(r.verdict, Verdict::High, "{r:?}");
    assert!(
        r.detected_patterns
            .iter()
            .any(|f| f.pattern == "pkcs8_private_key")
    );
}

#[test]
fn azure_storage_connection_string_is_found() {
    let s = format!(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
        synth("", B64, 86)
    );
    assert_eq!(patterns(&s), vec!["azure_storage_account_key"]);
}

#[test]
fn slack_bot_token_and_webhook_are_found() {
    let bot = format!(
        "xoxb-{}-{}-{}",
        synth("", b"0123456789", 11),
        synth("", b"0123456789", 12),
        synth("", ALNUM, 24)
    );
    let hook = format!(
        "https://hooks.slack.com/services/T{}/B{}/{}",
        synth("", ALNUM, 10),
        synth("", ALNUM, 10),
        synth("", ALNUM, 24)
    );
    assert_eq!(
        patterns(&format!("{bot}\n{hook}\n")),
        vec!["slack_bot_token", "slack_webhook_url"]
    );
}

#[test]
fn stripe_live_secret_key_is_found() {
    assert_eq!(
        patterns(&format!("STRIPE={}", synth("sk_live_", ALNUM, 24))),
        vec!["stripe_secret_key"]
    );
}

#[test]
fn sendgrid_key_is_found() {
    let t = format!("{}.{}", synth("SG.", URLSAFE, 22), synth("", URLSAFE, 43));
    assert_eq!(patterns(&t), vec!["sendgrid_api_key"]);
}

#[test]
fn npm_and_pypi_tokens_are_found() {
    let s = format!(
        "{}\n{}\n",
        synth("npm_", ALNUM, 36),
        synth("pypi-AgEIcHlwaS5vcmc", URLSAFE, 70)
    );
    assert_eq!(patterns(&s), vec!["npm_access_token", "pypi_upload_token"]);
}

#[test]
fn anthropic_and_openai_keys_are_found() {
    let s = format!(
        "{}AA\n{}\n",
        synth("sk-ant-api03-", URLSAFE, 93),
        synth("sk-proj-", URLSAFE, 120)
    );
    assert_eq!(
        patterns(&s),
        vec!["anthropic_api_key", "openai_project_key"]
    );
}

#[test]
fn huggingface_token_is_found() {
    assert_eq!(
        patterns(&format!("HF_TOKEN={}", synth("hf_", ALNUM, 34))),
        vec!["huggingface_token"]
    );
}

#[test]
fn at_least_sixty_credential_formats_are_built_in() {
    let n = Classifier::credential_formats().len();
    assert!(n >= 60, "{n}");
}

// ---- private keys ----

#[test]
fn rsa_private_key_alone_scores_high() {
    let r = score(&pem("RSA PRIVATE KEY", 900));
    assert_eq!(r.verdict, Verdict::High);
    assert_eq!(r.detected_patterns.len(), 1, "{r:?}");
    assert_eq!(r.detected_patterns[0].pattern, "rsa_private_key");
}

#[test]
fn openssh_pgp_and_encrypted_keys_have_their_own_rules() {
    let s = format!(
        "{}{}{}",
        pem("OPENSSH PRIVATE KEY", 400),
        pem("PGP PRIVATE KEY BLOCK", 400),
        pem("ENCRYPTED PRIVATE KEY", 400)
    );
    assert_eq!(
        patterns(&s),
        vec![
            "openssh_private_key",
            "pgp_private_key_block",
            "encrypted_private_key"
        ]
    );
}

#[test]
fn putty_private_key_is_found() {
    let s = format!(
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\n{}\nPrivate-Lines: 1\n{}\nPrivate-MAC: {}\n",
        synth("", B64, 64),
        synth("", B64, 44),
        synth("", HEX, 64)
    );
    assert_eq!(patterns(&s), vec!["putty_private_key"]);
}

#[test]
fn private_key_header_without_body_is_a_redacted_shape_scoring_low() {
    let text = "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n";
    assert_eq!(patterns(text), vec!["private_key_redacted"]);
    let r = score(text);
    assert_eq!(r.verdict, Verdict::Low, "{r:?}");
    assert_eq!(r.detected_patterns[0].kind, "redacted_prefix");
}

#[test]
fn certificate_and_public_key_are_quiet() {
    let s = format!("{}{}", pem("CERTIFICATE", 1200), pem("PUBLIC KEY", 400));
    assert!(patterns(&s).is_empty(), "{:?}", patterns(&s));
}

#[test]
fn ssh_public_key_line_is_quiet() {
    let s = format!("ssh-rsa {} user@host\n", synth("AAAAB3NzaC1yc2E", B64, 360));
    assert!(
        score(&s)
            .detected_patterns
            .iter()
            .all(|f| f.kind != "binary_hint")
    );
}

// ---- structural ----

#[test]
fn password_in_url_is_found() {
    let s = format!(
        "DATABASE_URL=postgres://app:{}@db.internal:5432/app",
        synth("", ALNUM, 18)
    );
    let r = score(&s);
    assert_eq!(r.detected_patterns[0].pattern, "url_password");
    assert_eq!(r.verdict, Verdict::Medium);
}

#[test]
fn placeholder_password_in_url_is_not_a_finding() {
    assert!(
        patterns(
            "postgres://user:password@localhost/db\npostgres://postgres:postgres@localhost/db\n"
        )
        .is_empty()
    );
}

#[test]
fn basic_auth_header_is_found() {
    use base64::Engine;
    let cred = format!("alice:{}", synth("", ALNUM, 14));
    let b = base64::engine::general_purpose::STANDARD.encode(cred);
    assert_eq!(
        patterns(&format!("Authorization: Basic {b}\n")),
        vec!["basic_auth_header"]
    );
}

#[test]
fn netrc_password_is_found() {
    let s = format!(
        "machine api.github.com\n  login octo\n  password {}\n",
        synth("", ALNUM, 20)
    );
    assert_eq!(patterns(&s), vec!["netrc_password"]);
}

#[test]
fn docker_config_auth_is_found() {
    use base64::Engine;
    let b =
        base64::engine::general_purpose::STANDARD.encode(format!("bob:{}", synth("", ALNUM, 16)));
    let s = format!("{{\"auths\": {{\"registry.io\": {{\"auth\": \"{b}\"}}}}}}");
    assert_eq!(patterns(&s), vec!["docker_config_auth"]);
}

#[test]
fn npmrc_auth_token_is_found() {
    let s = format!(
        "//registry.npmjs.org/:_authToken={}\n",
        synth("", ALNUM, 36)
    );
    assert_eq!(patterns(&s), vec!["npmrc_auth"]);
}

#[test]
fn npmrc_env_reference_is_not_a_finding() {
    assert!(patterns("//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n").is_empty());
}

#[test]
fn kubernetes_secret_data_values_are_found() {
    let s = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  username: {}\n  password: {}\n",
        synth("", B64, 12),
        synth("", B64, 24)
    );
    let r = score(&s);
    let p: Vec<_> = r
        .detected_patterns
        .iter()
        .map(|f| (f.pattern.as_str(), f.line))
        .collect();
    assert_eq!(
        p,
        vec![("kubernetes_secret_data", 6), ("kubernetes_secret_data", 7)]
    );
    assert!(r.verdict >= Verdict::Medium);
}

#[test]
fn jwt_with_json_header_is_found() {
    use base64::Engine;
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let t = format!(
        "{}.{}.{}",
        e.encode("{\"alg\":\"HS256\",\"typ\":\"JWT\"}"),
        e.encode(format!("{{\"sub\":\"{}\"}}", synth("", ALNUM, 12))),
        synth("", URLSAFE, 43)
    );
    let r = score(&format!("token: {t}\n"));
    assert_eq!(r.detected_patterns[0].pattern, "jwt");
    assert_eq!(r.verdict, Verdict::Medium);
}

#[test]
fn eyj_triplet_that_is_not_json_is_not_a_jwt() {
    let t = format!(
        "{}.{}.{}",
        synth("eyJ", ALNUM, 20),
        synth("eyJ", ALNUM, 20),
        synth("", ALNUM, 20)
    );
    assert!(patterns(&t).iter().all(|p| p != "jwt"));
}

#[test]
fn bearer_token_is_found() {
    let s = format!("curl -H 'Authorization: Bearer {}'", synth("", ALNUM, 40));
    assert_eq!(patterns(&s), vec!["bearer_token"]);
}

#[test]
fn bearer_placeholder_is_not_a_finding() {
    assert!(patterns("Authorization: Bearer YOUR_TOKEN_HERE\nAuthorization: Bearer <your-access-token-goes-here>\n").is_empty());
}

#[test]
fn high_entropy_generic_assignment_is_found() {
    let s = format!("client_secret = \"{}\"\n", synth("", ALNUM, 32));
    let r = score(&s);
    assert_eq!(r.detected_patterns[0].pattern, "generic_secret_assignment");
    assert_eq!(r.verdict, Verdict::Medium);
}

#[test]
fn generic_assignment_of_code_or_placeholder_is_not_a_finding() {
    let s = "api_key = os.environ[\"API_KEY\"]\ntoken = tokenizer.encode(text)\nsecret_key = settings.SECRET_KEY_VALUE\napi_key: your-api-key-here\ntoken_hash = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n";
    assert!(patterns(s).is_empty(), "{:?}", patterns(s));
}

#[test]
fn password_literal_is_found_and_weak_placeholder_is_not() {
    let s = format!("db_password = \"{}\"\n", synth("", ALNUM, 12));
    assert_eq!(patterns(&s), vec!["password_assignment"]);
    assert!(
        patterns("password = \"changeme\"\npassword: ${DB_PASSWORD}\nPASSWORD = get_password()\n")
            .is_empty()
    );
}

// ---- redacted prefixes ----

#[test]
fn paper_incident_redacted_anthropic_prefix_is_reported_low() {
    let r = score("Authorization: Bearer sk-ant-oat01-{REDACTED}\n");
    assert_eq!(r.verdict, Verdict::Low, "{r:?}");
    assert_eq!(r.detected_patterns[0].pattern, "anthropic_redacted_prefix");
    assert_eq!(r.detected_patterns[0].kind, "redacted_prefix");
}

#[test]
fn redaction_markers_after_vendor_prefixes_are_reported() {
    for s in [
        "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "AKIA****************",
        "sk-proj-...",
        "xoxb-[REDACTED]",
    ] {
        let p = patterns(s);
        assert_eq!(p.len(), 1, "{s}: {p:?}");
        assert!(p[0].ends_with("_redacted_prefix"), "{s}: {p:?}");
    }
}

// ---- PII ----

#[test]
fn personal_email_is_low_and_example_domain_is_not_a_finding() {
    let r = score("contact: jane.doe@acme-mail.io\n");
    assert_eq!(r.verdict, Verdict::Low);
    assert_eq!(r.detected_patterns[0].pattern, "email_address");
    assert!(patterns("see alice@example.com and bob@example.org\n").is_empty());
}

#[test]
fn git_author_lines_are_at_most_low() {
    let r = score("Author: Jane Doe <jane@acme-mail.io>\nSigned-off-by: Bob <bob@corp-mail.net>\n");
    assert!(r.verdict <= Verdict::Low);
}

#[test]
fn ssn_of_valid_shape_is_medium() {
    let r = score("employee ssn: 219-45-7731\n");
    assert_eq!(r.detected_patterns[0].pattern, "us_ssn");
    assert_eq!(r.verdict, Verdict::Medium);
}

/// A Discord bot token: a user id (digits) in unpadded base64, 6 characters, 27-38 characters.
fn discord_token(r: &mut Rng, id_digits: usize, tail: usize) -> String {
    use base64::Engine;
    let id = format!(
        "{}{}",
        1 + r.next() % 9,
        r.chars(b"0123456789", id_digits - 1)
    );
    let head = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id);
    format!("{head}.{}.{}", r.chars(URLSAFE, 6), r.chars(URLSAFE, tail))
}

#[test]
fn discord_bot_tokens_without_a_key_name_are_found() {
    let mut r = Rng(0x0d15_c0bd);
    for (digits, tail) in [(17, 27), (18, 38), (19, 32), (18, 27)] {
        let t = discord_token(&mut r, digits, tail);
        for text in [
            format!("client.run('{t}')"),
            format!("The bot token is {t}, keep it out of git."),
            format!("DISCORD={t}"),
        ] {
            let rep = score(&text);
            let f = rep
                .detected_patterns
                .iter()
                .find(|f| f.pattern == "discord_bot_token")
                .unwrap_or_else(|| panic!("{text}: {:?}", rep.detected_patterns));
            assert_eq!(&text[f.span()], t);
            assert_eq!(rep.verdict, Verdict::Medium, "{text}");
        }
    }
    // the same shape whose first segment is not a user id, or with a wrong middle, is not one
    let not_id = format!(
        "M{}.{}.{}",
        r.chars(ALNUM, 23),
        r.chars(URLSAFE, 6),
        r.chars(URLSAFE, 30)
    );
    let t = discord_token(&mut r, 18, 30);
    let (head, rest) = t.split_once('.').unwrap();
    let long_mid = format!("{head}.x{rest}");
    let glued = format!("x{t}");
    for text in [not_id, long_mid, glued] {
        assert!(
            !patterns(&text).contains(&"discord_bot_token".to_string()),
            "{text}"
        );
    }
}

#[test]
fn ssn_with_spaces_or_dots_is_found_and_mixed_or_invalid_is_not() {
    for text in ["| Jane Roe | 219 45 7731 | payroll |", "SSN: 219.45.7731"] {
        let r = score(text);
        assert_eq!(patterns(text), ["us_ssn"], "{text}");
        assert_eq!(r.verdict, Verdict::Medium, "{text}");
    }
    for text in [
        "id 219 45-7731 x",
        "SSN: 000 45 7731",
        "v 666.45.7731",
        "n 219 00 7731",
    ] {
        assert!(
            !patterns(text).contains(&"us_ssn".to_string()),
            "{text}: {:?}",
            patterns(text)
        );
    }
}

#[test]
fn luhn_valid_card_is_found_and_invalid_is_not() {
    let card = luhn_complete("4", 16);
    assert_eq!(
        patterns(&format!("card {card}\n")),
        vec!["credit_card_number"]
    );
    let mut bad = card.into_bytes();
    bad[15] = if bad[15] == b'9' { b'0' } else { bad[15] + 1 };
    assert!(patterns(&format!("card {}\n", String::from_utf8_lossy(&bad))).is_empty());
}

#[test]
fn a_luhn_valid_number_of_a_length_its_issuer_never_uses_is_not_a_card() {
    // integer constants in code: a Mastercard prefix with 19 digits, a Visa prefix with 15 or 17
    for (prefix, len) in [("55", 19), ("52", 17), ("4", 15), ("4", 17), ("37", 16)] {
        let n = luhn_complete(prefix, len);
        assert!(
            patterns(&format!("pub const MAGIC: u64 = {n};\n")).is_empty(),
            "{prefix} x {len}"
        );
    }
    // the lengths each issuer does use are still cards
    for (prefix, len) in [
        ("4", 13),
        ("4", 19),
        ("2221", 16),
        ("34", 15),
        ("6011", 19),
        ("36", 14),
    ] {
        let n = luhn_complete(prefix, len);
        assert_eq!(
            patterns(&format!("card {n}\n")),
            vec!["credit_card_number"],
            "{prefix} x {len}"
        );
    }
}

#[test]
fn grouped_card_number_is_found() {
    let c = luhn_complete("51", 16);
    let grouped = format!("{} {} {} {}", &c[0..4], &c[4..8], &c[8..12], &c[12..16]);
    assert_eq!(patterns(&grouped), vec!["credit_card_number"]);
}

#[test]
fn checksum_valid_iban_is_found_and_invalid_is_not() {
    let good = iban("DE", "370400440532013000");
    assert_eq!(patterns(&format!("IBAN: {good}\n")), vec!["iban"]);
    let bad = good.replace("0532", "0533");
    assert!(patterns(&format!("IBAN: {bad}\n")).is_empty());
}

#[test]
fn phone_number_is_low() {
    let r = score("call +44 20 7946 0018 today\n");
    assert_eq!(r.detected_patterns[0].pattern, "phone_number");
    assert_eq!(r.verdict, Verdict::Low);
}

// ---- binary hints ----

#[test]
fn long_base64_run_is_a_binary_hint() {
    let r = score(&format!("blob = {}\n", synth("", B64, 400)));
    assert_eq!(
        r.detected_patterns
            .iter()
            .map(|f| f.pattern.as_str())
            .collect::<Vec<_>>(),
        vec!["base64_blob"]
    );
    assert_eq!(r.verdict, Verdict::Low);
    assert!(r.suggested_actions.iter().any(|a| a.action == "split"));
}

#[test]
fn base64_wrapped_at_64_and_76_columns_is_a_binary_hint() {
    for width in [64, 76] {
        let body = synth("", B64, width * 6 + 10);
        let wrapped: Vec<&str> = body
            .as_bytes()
            .chunks(width)
            .map(|c| std::str::from_utf8(c).unwrap_or(""))
            .collect();
        let p = patterns(&format!("payload:\n{}\n", wrapped.join("\n")));
        assert_eq!(p, vec!["base64_wrapped_blob"], "width {width}");
    }
}

#[test]
fn long_hex_blob_is_a_binary_hint() {
    assert_eq!(
        patterns(&format!("fw = \"{}\"", synth("", HEX, 400))),
        vec!["hex_blob"]
    );
}

#[test]
fn dense_non_printables_are_a_binary_hint() {
    let s: String = (0..64u8)
        .map(|i| {
            if i % 2 == 0 {
                char::from(i % 8 + 1)
            } else {
                'a'
            }
        })
        .collect();
    assert_eq!(patterns(&s), vec!["nonprintable_run"]);
}

#[test]
fn binary_data_uri_is_a_low_binary_hint_and_textual_or_image_one_is_quiet() {
    let mut r = Rng(0x0d47_a001);
    let payload = r.chars(B64, 160);
    for mime in [
        "application/zip",
        "font/woff2",
        "application/octet-stream",
        "application/pdf",
    ] {
        for shape in [
            format!(".icon {{ background: url(data:{mime};base64,{payload}); }}"),
            format!("<img src=\"data:{mime};base64,{payload}==\">"),
        ] {
            let rep = score(&shape);
            assert_eq!(patterns(&shape), ["base64_blob"], "{shape}");
            assert_eq!(rep.verdict, Verdict::Low, "{shape}");
            let f = &rep.detected_patterns[0];
            assert!(f.span().len() >= payload.len(), "{shape}");
        }
    }
    // an image is content a page shows (issue 43), text is text
    for mime in [
        "application/json;charset=utf-8",
        "image/svg+xml",
        "image/png",
        "image/jpeg",
        "text/css",
        "text/javascript",
        "",
    ] {
        let shape = format!("//# sourceMappingURL=data:{mime};base64,{payload}");
        assert!(
            patterns(&shape).is_empty(),
            "{shape}: {:?}",
            patterns(&shape)
        );
    }
    // below the data-URI length, and text that is not dense binary, stay quiet
    let short = format!("url(data:image/png;base64,{})", r.chars(B64, 60));
    assert!(patterns(&short).is_empty());
}

// ---- quiet on ordinary content ----

#[test]
fn uuids_and_digests_are_quiet() {
    let s = format!(
        "id = \"{}-{}-4{}-a{}-{}\"\ncommit {}\nsha256: {}\nchecksum = \"{}\"\n",
        synth("", HEX, 8),
        synth("", HEX, 4),
        synth("", HEX, 3),
        synth("", HEX, 3),
        synth("", HEX, 12),
        synth("", HEX, 40),
        synth("", HEX, 64),
        synth("", HEX, 64)
    );
    assert!(patterns(&s).is_empty(), "{:?}", patterns(&s));
}

#[test]
fn lockfile_integrity_hash_is_quiet() {
    let s = format!("\"integrity\": \"sha512-{}==\",\n", synth("", B64, 86));
    assert!(patterns(&s).is_empty());
}

#[test]
fn minified_js_scores_only_the_long_line_rule() {
    let chunk = "function(e,t){var n=t.token||e.password;return n?e.auth(n):null};";
    let s: String = chunk.repeat(60);
    let r = score(&s);
    assert!(r.detected_patterns.is_empty(), "{:?}", r.detected_patterns);
    assert_eq!(r.verdict, Verdict::Low);
    assert_eq!(r.score, 0.2);
}

// ---- scoring ----

#[test]
fn family_contribution_saturates_at_one_and_a_half() {
    assert_eq!(family_contribution(0.4, 0), 0.0);
    assert_eq!(family_contribution(0.4, 1), 0.4);
    assert!((family_contribution(0.4, 2) - 0.5).abs() < 1e-12);
    assert!((family_contribution(0.4, 9) - 0.6).abs() < 1e-12);
}

#[test]
fn repeated_identical_secret_counts_once() {
    let t = synth("ghp_", ALNUM, 36);
    let r = score(&format!("{t}\n{t}\n"));
    assert_eq!(r.detected_patterns.len(), 2);
    assert_eq!(r.score, 0.45);
}

#[test]
fn two_credentials_of_different_families_score_high() {
    let s = format!(
        "{}\n{}\n",
        synth("ghp_", ALNUM, 36),
        synth("sk_live_", ALNUM, 24)
    );
    assert_eq!(score(&s).verdict, Verdict::High);
}

#[test]
fn size_rules_add_their_increments() {
    let big = "x = 1\n".repeat(20_000);
    let r = score(&big);
    assert_eq!(r.line_count, 20_000);
    assert!((r.score - 0.25).abs() < 1e-9, "{}", r.score);
    assert!(
        r.suggested_actions
            .iter()
            .any(|a| a.reason.as_deref() == Some("total_bytes_120000_exceeds_100000"))
    );
}

#[test]
fn verdict_thresholds_are_inclusive() {
    let c = clf();
    assert_eq!(c.verdict(0.70), Verdict::High);
    assert_eq!(c.verdict(0.6999), Verdict::Medium);
    assert_eq!(c.verdict(0.40), Verdict::Medium);
    assert_eq!(c.verdict(0.10), Verdict::Low);
    assert_eq!(c.verdict(0.0999), Verdict::Safe);
}

#[test]
fn a_score_of_nothing_is_positive_zero_as_the_original_writes_it() {
    // A sum of no terms is -0.0 in Rust, which JSON writes as `-0.0`.
    for r in [score(""), score("plain words\n")] {
        assert!(r.score == 0.0 && r.score.is_sign_positive(), "{}", r.score);
        assert_eq!(serde_json::to_string(&r.score).unwrap(), "0.0");
    }
}

#[test]
fn empty_content_is_safe_with_zero_metrics() {
    let r = score("");
    assert_eq!(
        (r.score, r.verdict, r.bytes, r.line_count, r.max_line_len),
        (0.0, Verdict::Safe, 0, 0, 0)
    );
}

#[test]
fn max_line_len_counts_characters() {
    assert_eq!(score("héllo\nab").max_line_len, 5);
}

#[test]
fn line_count_follows_python_splitlines_of_newlines() {
    // (content, lines, longest line in characters), as the original's `len(content.split("\n"))`
    // minus a final empty piece
    for (content, lines, longest) in [
        ("a", 1, 1),
        ("a\n", 1, 1),
        ("\n\n", 2, 0),
        ("ab\ncdé\n\n", 3, 3),
        ("éééé\nabcde", 2, 5),
        ("abcde\néééé", 2, 5),
    ] {
        let r = score(content);
        assert_eq!(
            (r.line_count, r.max_line_len),
            (lines, longest),
            "{content:?}"
        );
    }
}

#[test]
fn findings_on_later_lines_get_their_own_line_numbers() {
    let key = synth("ghp_", ALNUM, 36);
    let s = format!(
        "x\n\n{key}\ny\nkey2 = {key}x\n\n\n{}\n",
        synth("glpat-", ALNUM, 20)
    );
    let lines: Vec<u32> = score(&s).detected_patterns.iter().map(|f| f.line).collect();
    assert_eq!(lines, vec![3, 8]);
}

#[test]
fn match_is_at_most_16_chars_and_never_the_whole_secret() {
    let pw = synth("", ALNUM, 10);
    let r = score(&format!(
        "password = \"{pw}\"\n{}\n",
        synth("ghp_", ALNUM, 36)
    ));
    for f in &r.detected_patterns {
        assert!(f.r#match.chars().count() <= 16, "{f:?}");
    }
    assert!(!r.detected_patterns[0].r#match.contains(&pw));
}

#[test]
fn line_numbers_are_one_based() {
    let r = score(&format!("a\nb\n{}\n", synth("ghp_", ALNUM, 36)));
    assert_eq!(r.detected_patterns[0].line, 3);
}

#[test]
fn verdict_serializes_lowercase_and_finding_as_match() {
    let r = score(&synth("ghp_", ALNUM, 36));
    let v = serde_json::to_value(&r).unwrap_or_default();
    assert_eq!(v["verdict"], "medium");
    assert!(v["detected_patterns"][0].get("match").is_some());
    assert!(v["detected_patterns"][0].get("span").is_none());
    assert_eq!(v["suggested_actions"][0]["targets"][0], "github_pat");
}

#[test]
fn report_schema_is_generated() {
    let s = schemars::schema_for!(RiskReport);
    let text = serde_json::to_string(&s).unwrap_or_default();
    assert!(text.contains("detected_patterns") && text.contains("\"match\""));
}

// ---- redaction ----

fn mixed_draft() -> String {
    format!(
        "const key = \"{}\";\nAuthorization: Bearer sk-ant-oat01-{{REDACTED}}\npassword = \"{}\"\n{}email: jane@acme-mail.io\n",
        synth("ghp_", ALNUM, 36),
        synth("", ALNUM, 14),
        pem("RSA PRIVATE KEY", 300)
    )
}

#[test]
fn redact_replaces_each_finding_with_a_typed_placeholder() {
    let d = mixed_draft();
    let r = redact(&d, clf());
    assert!(r.content.contains("{REDACTED:github_classic_pat}"));
    assert!(r.content.contains("{REDACTED:rsa_private_key}"));
    assert!(
        r.content
            .contains("password = \"{REDACTED:password_assignment}\"")
    );
    assert!(!r.content.contains("ghp_"));
    assert_eq!(r.replacements.len(), 5, "{:?}", r.replacements);
    assert!(risk_score(&r.content, clf()).detected_patterns.is_empty());
}

#[test]
fn redaction_keeps_originals_out_of_serialization() {
    let d = mixed_draft();
    let r = redact(&d, clf());
    let first = &r.replacements[0];
    assert!(first.original.expose().starts_with("ghp_"));
    let json = serde_json::to_string(&r).unwrap_or_default();
    assert!(!json.contains(first.original.expose()));
    assert!(!format!("{r:?}").contains(first.original.expose()));
}

#[test]
fn redacting_a_redacted_draft_changes_nothing() {
    let once = redact(&mixed_draft(), clf());
    let twice = redact(&once.content, clf());
    assert_eq!(twice.content, once.content);
    assert!(twice.replacements.is_empty());
}

#[test]
fn classifier_is_deterministic() {
    let d = mixed_draft();
    assert_eq!(score(&d), score(&d));
}

#[test]
fn pathological_equals_run_is_linear_enough() {
    let s = "=".repeat(200_000);
    let r = score(&s);
    assert!(r.detected_patterns.is_empty());
}

#[test]
fn tokens_separated_by_one_byte_are_both_found() {
    let s = format!(
        "{} {}\n{}",
        synth("ghp_", ALNUM, 36),
        synth("gho_", ALNUM, 36),
        synth("ghu_", ALNUM, 36)
    );
    assert_eq!(
        patterns(&s),
        vec![
            "github_classic_pat",
            "github_oauth_token",
            "github_user_to_server_token"
        ]
    );
}

#[test]
fn many_pem_headers_without_bodies_are_linear_and_only_redacted_shapes() {
    let s = "-----BEGIN PRIVATE KEY-----\n".repeat(2000);
    let p = patterns(&s);
    assert_eq!(p.len(), 2000);
    assert!(p.iter().all(|r| r == "private_key_redacted"), "{p:?}");
    assert_eq!(score(&s).verdict, Verdict::Low);
}

#[test]
fn unquoted_env_password_is_found_when_the_next_line_also_has_a_keyword() {
    let s = format!(
        "SMTP_PASSWORD={}\nSMTP_TOKEN_TTL=3600\n",
        synth("", ALNUM, 14)
    );
    assert_eq!(patterns(&s), vec!["password_assignment"]);
}

#[test]
fn builtin_rules_compile() {
    // built-in regexes compile on first use: every one of them must compile
    let c = super::Classifier::default();
    for r in &c.rules {
        if let Some(re) = &r.regex {
            assert!(re.get().is_some(), "{} does not compile", r.name);
        }
    }
}

#[test]
fn keyword_hit_filter_only_applies_where_the_keyword_starts_every_match() {
    use super::compile::keyword_starts_token;
    let rules = super::rules::builtin();
    let regex_of = |name: &str| {
        rules
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.regex.clone())
            .unwrap()
    };
    assert!(keyword_starts_token(
        &regex_of("github_classic_pat"),
        "ghp_"
    ));
    assert!(keyword_starts_token(&regex_of("sendgrid_api_key"), "SG."));
    assert!(keyword_starts_token(
        &regex_of("datadog_client_token"),
        "pub"
    ));
    // the keyword sits inside the token, or the literal is shorter than the keyword
    assert!(!keyword_starts_token(&regex_of("mailchimp_api_key"), "-us"));
    assert!(!keyword_starts_token(
        &regex_of("stripe_secret_key"),
        "sk_live_"
    ));
    assert!(!keyword_starts_token(
        &regex_of("aws_access_key_id"),
        "akia"
    ));
    assert!(!keyword_starts_token(
        &regex_of("generic_secret_assignment"),
        "token"
    ));
}

#[test]
fn a_token_glued_to_a_word_is_not_a_token_but_one_after_punctuation_is() {
    let token = synth("ghp_", ALNUM, 36);
    let glued = format!("x = \"prefix{token}\"\n");
    assert!(score(&glued).detected_patterns.is_empty());
    let quoted = format!("x = \"{token}\"\n");
    assert_eq!(
        score(&quoted).detected_patterns[0].pattern,
        "github_classic_pat"
    );
}

// ---- issue 18: credentials without a vendor prefix -------------------------------------------

#[test]
fn a_key_word_inside_another_word_does_not_make_a_key_benign() {
    // `admin` contains `min`, `passphrase` contains `hash`-free words: still passwords
    let v = format!("Q{}7x!", synth("", ALNUM, 12));
    assert_eq!(
        patterns(&format!("admin_password = \"{v}\"\n")),
        vec!["password_assignment"]
    );
    assert!(patterns(&format!("password_min_length = \"{v}\"\n")).is_empty());
}

#[test]
fn a_password_starting_with_a_symbol_is_found_but_a_reference_is_not() {
    let v = format!("%{}9!", synth("", ALNUM, 12));
    assert_eq!(
        patterns(&format!("DB_PASSWORD=\"{v}\"\n")),
        vec!["password_assignment"]
    );
    for r in [
        "$DB_PASSWORD",
        "${DB_PASSWORD}",
        "%DB_PASSWORD%",
        "%(password)s",
        "&password_ref",
    ] {
        assert!(patterns(&format!("password = \"{r}\"\n")).is_empty(), "{r}");
    }
}

#[test]
fn random_template_like_symbols_in_a_django_key_do_not_make_it_a_placeholder() {
    let v = format!(
        "django-insecure-{}%(x9+{}",
        synth("", ALNUM, 20),
        synth("", ALNUM, 20)
    );
    assert_eq!(
        patterns(&format!("SECRET_KEY = '{v}'\n")),
        vec!["generic_secret_assignment"]
    );
}

#[test]
fn typed_declarations_xml_env_lists_and_cli_flags_are_found() {
    let v = format!("{}7#{}", synth("", ALNUM, 8), synth("", ALNUM, 8));
    let cases = [
        (
            format!("const dbPassword: string = \"{v}\";"),
            "password_assignment",
        ),
        (
            format!("<add key=\"DbPassword\" value=\"{v}\" />"),
            "config_pair_secret",
        ),
        (
            format!("<dbPassword>{v}</dbPassword>"),
            "xml_element_secret",
        ),
        (
            format!("env:\n  - name: DB_PASSWORD\n    value: \"{v}\""),
            "env_list_secret",
        ),
        (
            format!("tool deploy --db-password {v} --region eu"),
            "cli_flag_secret",
        ),
        (
            format!("props.setProperty(\"db.password\", \"{v}\");"),
            "call_pair_secret",
        ),
        (
            format!("curl -u deploy:{v} https://h/x"),
            "cli_user_password",
        ),
        (
            format!("The password for staging is {v} (rotate it)."),
            "prose_credential",
        ),
    ];
    for (text, rule) in cases {
        assert_eq!(patterns(&format!("{text}\n")), vec![rule], "{text}");
    }
}

#[test]
fn code_paths_tuples_and_pagination_tokens_are_not_credentials() {
    for text in [
        "pub const USER_PASSWORD: crate::ObjectIdentifier = x;",
        "(\"http\", \"user/name\", \"password\", \"localhost:22\"),",
        "PKCS8_PRIV_KEY_INFO = pkcs8_priv_key_info_st",
        "private_key = ed25519.Ed25519PrivateKey.from_private_bytes(secret)",
        "\"NextToken\": \"eyJOZXh0VG9rZW4iOiBudWxsLCAiYm90b19\",",
        "aws waf update-rule --change-token 12cs345-67cd-890b-1cd2-c3a4567d89f1",
        "const META_KEY_CLIENT_INFO: &str = \"io.modelcontextprotocol/clientInfo\";",
    ] {
        assert!(patterns(&format!("{text}\n")).is_empty(), "{text}");
    }
}

#[test]
fn basic_credentials_in_any_header_syntax_are_found_when_they_decode_to_user_and_password() {
    use base64::Engine;
    let cred = base64::engine::general_purpose::STANDARD
        .encode(format!("deploy:{}", synth("", ALNUM, 14)));
    let text = format!("proxy_set_header Authorization \"Basic {cred}\";\n");
    assert_eq!(patterns(&text), vec!["basic_auth_header"]);
    assert!(patterns("Basic configuration is described below.\n").is_empty());
}

/// Built-in regexes compile on first use, and only those a keyword woke: scoring ordinary code
/// compiles none (but the rules without keywords), a GitHub token compiles its rule, and most
/// of the table is never compiled (the pre-commit path over a few files pays for a handful).
#[test]
fn builtin_regexes_compile_only_when_a_keyword_wakes_them() {
    let c = Classifier::default();
    let total = c.rules.iter().filter(|r| r.regex.is_some()).count();
    assert!(total > 100, "{total}");
    assert_eq!(c.compiled_regexes(), 0);
    risk_score(
        "fn main() {\n    let total: u64 = (1..=100).sum();\n}\n",
        &c,
    );
    assert_eq!(c.compiled_regexes(), c.unkeyed.len());
    let before = c.compiled_regexes();
    let text = format!("token = {}\n", synth("ghp_", ALNUM, 36));
    assert!(patterns(&text).contains(&"github_classic_pat".to_string()));
    risk_score(&text, &c);
    let github = c
        .rules
        .iter()
        .position(|r| r.name == "github_classic_pat")
        .unwrap();
    assert!(
        c.rules[github]
            .regex
            .as_ref()
            .is_some_and(|r| r.is_compiled())
    );
    let after = c.compiled_regexes();
    assert!(after > before && after < before + 8, "{before} -> {after}");
    // clones share what was compiled
    assert_eq!(c.clone().compiled_regexes(), after);
}

/// Inputs from the generated evaluation corpus: `per_case` of every credential case (each in
/// its syntaxes), then `lines` ordinary lines.
fn case_and_line_inputs(r: &mut corpus::Rng, per_case: usize, lines: usize) -> Vec<String> {
    let mut inputs = Vec::new();
    for (_, g) in corpus::credential_cases() {
        for _ in 0..per_case {
            inputs.push(g(r));
        }
    }
    for _ in 0..lines {
        inputs.push(corpus::ordinary_line(r));
    }
    inputs
}

/// The keyword gates (`rules::Gate`) only drop hits that cannot be inside a match: over
/// the generated evaluation corpus (every credential case in its syntaxes, and mixed
/// source with ordinary code around them) the findings are the same with and without them.
#[test]
fn keyword_gates_lose_no_finding() {
    let with = Classifier::default();
    let mut without = with.clone();
    without.gates = false;
    let mut r = corpus::Rng(0x18_0019);
    let mut inputs = case_and_line_inputs(&mut r, 8, 3000);
    inputs.push(corpus::mixed_source(&mut r, 400_000));
    let mut compared = 0;
    for input in &inputs {
        let a = findings(input, &with);
        let b = findings(input, &without);
        assert_eq!(a, b, "gates changed the findings of {input:?}");
        compared += b.len();
    }
    assert!(compared > 500, "only {compared} findings compared");
}

/// The gates' table of key-name bytes is the class the generic rules write as `[a-z0-9_.\-]`
/// (compiled case-insensitively), for every byte.
#[test]
fn the_name_byte_table_is_the_rules_name_class() {
    let class = regex::bytes::Regex::new(r"(?i-u)^[a-z0-9_.\-]$").unwrap();
    for c in 0..=255u8 {
        assert_eq!(
            super::gates::is_name_byte(c),
            class.is_match(&[c]),
            "byte {c:#04x}"
        );
    }
}

#[test]
fn keyword_gates_drop_hits_that_cannot_match() {
    use super::gates::gate_passes;
    use super::rules::Gate;
    let hit = |text: &str, kw: &str, gate: Gate| {
        let at = text
            .find(kw)
            .unwrap_or_else(|| panic!("{kw} not in {text}"));
        gate_passes(text.as_bytes(), at, at + kw.len(), gate)
    };
    assert!(hit("db_password_hash = x", "password", Gate::Assign));
    assert!(hit("\"apiToken\": \"x\"", "Token", Gate::Assign));
    assert!(hit("keys[\"secret\"] = x", "secret", Gate::Assign));
    assert!(!hit("fn token(&self) -> Token", "token", Gate::Assign));
    assert!(!hit("// the secret sauce", "secret", Gate::Assign));
    assert!(hit(
        "set(\"db.password\", \"x\")",
        "password",
        Gate::CallPair
    ));
    assert!(!hit("check_password(user, pw)", "password", Gate::CallPair));
    assert!(hit("run --db-password=x", "password", Gate::CliFlag));
    assert!(hit("run --token x", "token", Gate::CliFlag));
    assert!(!hit("let password = x", "password", Gate::CliFlag));
    assert!(hit("the passwords are", "password", Gate::Word));
    assert!(!hit("password_hash", "password", Gate::Word));
    assert!(!hit("mypassword is", "password", Gate::Word));
    assert!(hit("https://u:p@host", "://", Gate::Userinfo));
    assert!(!hit("https://host/a@b", "://", Gate::Userinfo));
    assert!(hit("Authorization: Basic x", "Basic", Gate::SpaceOrQuote));
    assert!(!hit("BasicAuth", "Basic", Gate::SpaceOrQuote));
    assert!(hit("x EAAAb", "EAAA", Gate::TokenStart));
    assert!(!hit("AAEAAAb", "EAAA", Gate::TokenStart));
}

/// The built-in rules' keywords, lowercased, each once, in rule order.
fn builtin_keywords() -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for spec in super::rules::builtin() {
        for kw in &spec.keywords {
            let w = kw.to_ascii_lowercase();
            if !words.contains(&w) {
                words.push(w);
            }
        }
    }
    words
}

/// A keyword scan: reports each `(pattern, start, end)` of `input` to `hit`.
type Scan<'a> = &'a mut dyn FnMut(usize, usize, usize);

/// Asserts that two keyword scans report the same hits in the same order over every input;
/// returns how many hits were compared.
fn same_hits(
    inputs: &[Vec<u8>],
    want: impl Fn(&[u8], Scan<'_>),
    got: impl Fn(&[u8], Scan<'_>),
) -> usize {
    let mut total = 0;
    for input in inputs {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        want(input, &mut |p, s, e| a.push((p, s, e)));
        got(input, &mut |p, s, e| b.push((p, s, e)));
        assert_eq!(b, a, "input {:?}", String::from_utf8_lossy(input));
        total += b.len();
    }
    total
}

/// The scan's own loop over the keyword DFA (`keywords::keyword_hits`) reports exactly what the
/// overlapping iterator of an `AhoCorasick` over the same keywords reports, in the same order:
/// over the generated corpus, random text dense in keyword fragments, and edge cases (keywords
/// at both ends, nested and overlapping keywords, mixed case, non-ASCII bytes).
#[test]
fn keyword_scan_reports_what_the_overlapping_iterator_reports() {
    use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
    let words = builtin_keywords();
    let reference = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&words)
        .unwrap();
    let kw = super::compile::build_ac(&words).unwrap();
    let dfa = &kw.reference_dfa();
    let mut inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"password".to_vec(),
        b"PASSWORD passwd PassPhrase pass pwd".to_vec(),
        b"secret_access_key=x;aws_secret_key:".to_vec(),
        b"-----BEGIN RSA PRIVATE KEY-----".to_vec(),
        b"x\xc3\xa9token\xff\x00key\xe2\x80\xa6sk-ant-api".to_vec(),
        b"@@@:://://sv=Q~eyJeyJ".to_vec(),
    ];
    inputs.extend(corpus_inputs(0x18_0020, 400, 200_000, &[]));
    // random text built from keyword fragments, in random case, with separators between
    let mut rng = Rng(0x18_0021);
    for _ in 0..300 {
        let mut s = Vec::new();
        for _ in 0..(rng.next() % 40) {
            let w = words[(rng.next() % words.len() as u64) as usize].as_bytes();
            let (a, b) = (
                (rng.next() % (w.len() as u64 + 1)) as usize,
                (rng.next() % (w.len() as u64 + 1)) as usize,
            );
            for &c in &w[a.min(b)..] {
                s.push(if rng.next().is_multiple_of(2) {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
            let seps: [&[u8]; 5] = [b"", b" ", b"_", b"\xc3\xa9", b"="];
            s.extend_from_slice(seps[(rng.next() % 5) as usize]);
        }
        inputs.push(s);
    }
    let total = same_hits(
        &inputs,
        |input, hit| {
            for m in reference.find_overlapping_iter(input) {
                hit(m.pattern().as_usize(), m.start(), m.end());
            }
        },
        |input, hit| super::keywords::keyword_hits(dfa, input, hit),
    );
    assert!(total > 5_000, "only {total} hits compared");
}

/// The dense keyword table is the DFA of its keywords, transition by transition (a walk of
/// both automata in step over every byte from every pair of states reached): for the built-in
/// keywords, and for random sets of short words over a small alphabet, where keywords are
/// prefixes, suffixes and infixes of each other, come in both cases and hold bytes outside
/// ASCII, so failure states chain deep.
#[test]
fn the_keyword_table_is_the_dfa_of_its_keywords() {
    let kw = super::compile::build_ac(&builtin_keywords()).unwrap();
    let pairs = kw.table_is_the_dfa().unwrap();
    assert!(pairs > 500, "only {pairs} state pairs checked");
    let mut rng = Rng(0x18_0040);
    let alphabet: &[&[u8]] = &[b"a", b"b", b"A", b"-", b"\xc3\xa9", b"k", b"K"];
    for _ in 0..200 {
        let words: Vec<String> = (0..1 + rng.next() % 12)
            .map(|_| {
                let mut w = Vec::new();
                for _ in 0..1 + rng.next() % 6 {
                    w.extend_from_slice(alphabet[(rng.next() % alphabet.len() as u64) as usize]);
                }
                String::from_utf8(w).unwrap()
            })
            .collect();
        let kw = super::compile::build_ac(&words).unwrap();
        assert!(kw.has_table());
        if let Err(e) = kw.table_is_the_dfa() {
            panic!("keywords {words:?}: {e}");
        }
    }
    // an empty keyword (no rule has one) is left to the crate's DFA, not put in the table
    let with_empty = super::compile::build_ac(&["ab".to_string(), String::new()]).unwrap();
    assert!(!with_empty.has_table());
    let mut hits = Vec::new();
    with_empty.hits(b"xab", |p, s, e| hits.push((p, s, e)));
    assert!(hits.contains(&(0, 1, 3)), "{hits:?}");
}

/// The dense keyword table (`keywords::Keywords::hits`) reports what the loop over the DFA's
/// own transitions (`keywords::keyword_hits`, the routine it replaced) reports, hit for hit and
/// in the same order: over the corpus, random keyword-dense text, and every keyword placed at
/// each offset around the 8-byte blocks of the scan (so matches straddle block edges and end
/// on the last byte). The built-in keywords fit the table, so it is the path `detect` takes.
#[test]
fn keyword_table_reports_what_the_dfa_loop_reports() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    assert!(
        kw.has_table(),
        "the built-in keywords no longer fit the dense table"
    );
    let dfa = kw.reference_dfa();
    let words = builtin_keywords();
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"x".to_vec(), b"\xff\x00".to_vec()];
    for w in &words {
        for pad in 0..17 {
            let mut s = vec![b'.'; pad];
            s.extend(w.bytes().map(|b| b.to_ascii_uppercase()));
            inputs.push(s.clone());
            s.extend_from_slice(b" key=");
            s.extend(w.bytes());
            inputs.push(s);
        }
    }
    inputs.extend(corpus_inputs(0x18_0030, 200, 200_000, &[]));
    let mut rng = Rng(0x18_0031);
    for _ in 0..300 {
        let mut s = Vec::new();
        for _ in 0..(rng.next() % 40) {
            let w = words[(rng.next() % words.len() as u64) as usize].as_bytes();
            let a = (rng.next() % (w.len() as u64 + 1)) as usize;
            for &c in &w[a / 2..] {
                s.push(if rng.next().is_multiple_of(2) {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
            let seps: [&[u8]; 6] = [b"", b" ", b"_", b"\xc3\xa9", b"=", b"\x00\xff"];
            s.extend_from_slice(seps[(rng.next() % 6) as usize]);
        }
        inputs.push(s);
    }
    let total = same_hits(
        &inputs,
        |input, hit| super::keywords::keyword_hits(&dfa, input, hit),
        |input, hit| kw.hits(input, hit),
    );
    assert!(total > 20_000, "only {total} hits compared");
}

/// At least `len` bytes of the built-in rules' keywords drawn at random, each followed by
/// nothing, a space or `=`: text where keywords overlap and straddle any split.
fn keyword_dense(rng: &mut Rng, len: usize) -> Vec<u8> {
    let words: Vec<&str> = super::rules::builtin()
        .iter()
        .flat_map(|s| s.keywords.clone())
        .collect();
    let mut s = Vec::new();
    while s.len() < len {
        s.extend(words[(rng.next() % words.len() as u64) as usize].bytes());
        s.extend_from_slice([&b""[..], b" ", b"="][(rng.next() % 3) as usize]);
    }
    s
}

/// The keyword scan split into two interleaved streams (`Table::split_rows` with one split,
/// taken for drafts of 4 KB to 16 KB) finds the match rows of one stream over the whole input, for every split from
/// the longest keyword to half the input, on keyword-dense text where keywords straddle the
/// split, and on the corpus.
#[test]
fn the_two_stream_keyword_scan_is_the_single_stream_one() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    let lead = kw.max_len();
    assert!(lead > 10, "{lead}");
    let mut rng = Rng(0x18_0033);
    let mut compared = 0;
    for _ in 0..40 {
        let s = keyword_dense(&mut rng, 300);
        let want = kw.hits_split(&s, None);
        for split in lead..=s.len() / 2 {
            assert_eq!(
                kw.hits_split(&s, Some(split)),
                want,
                "split {split} of {:?}",
                String::from_utf8_lossy(&s)
            );
            compared += 1;
        }
    }
    let mut r = corpus::Rng(0x18_0034);
    let big = corpus::mixed_source(&mut r, 50_000).into_bytes();
    let want = kw.hits_split(&big, None);
    for split in [lead, lead + 1, 4096, 20_001, big.len() / 2] {
        assert_eq!(kw.hits_split(&big, Some(split)), want, "split {split}");
    }
    assert!(
        compared > 3000 && want.len() > 500,
        "{compared} splits, {} rows",
        want.len()
    );
}

/// The four-stream keyword scan (drafts of 16 KB or more) finds the single stream's match
/// rows too: random splits on keyword-dense text, the tightest ones included, and the
/// quarters the scan itself takes on the corpus.
#[test]
fn the_four_stream_keyword_scan_is_the_single_stream_one() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    let lead = kw.max_len() - 1;
    let mut rng = Rng(0x18_0035);
    let mut compared = 0;
    for _ in 0..200 {
        let s = keyword_dense(&mut rng, 400);
        let want = kw.hits_split(&s, None);
        let n = s.len();
        for _ in 0..30 {
            // the first part, then each later one at least as long as it less `lead`
            let first = lead + (rng.next() as usize) % (n / 4 - lead);
            let room = |at: usize| at + first - lead;
            let s1 = first;
            let s2 = room(s1) + (rng.next() as usize) % (n - room(s1) - 2 * (first - lead)).max(1);
            let s3 = room(s2) + (rng.next() as usize) % (n - room(s2) - (first - lead)).max(1);
            if s3 + first - lead > n || s2 >= s3 {
                continue;
            }
            assert_eq!(
                kw.hits_split4(&s, [s1, s2, s3]),
                want,
                "splits {:?} of {:?}",
                [s1, s2, s3],
                String::from_utf8_lossy(&s)
            );
            compared += 1;
        }
        // the tightest: every part as short as allowed
        let t = [lead, 2 * lead.max(1), 3 * lead.max(1)];
        if t[2] + lead <= n {
            assert_eq!(kw.hits_split4(&s, t), want, "splits {t:?}");
        }
    }
    let mut r = corpus::Rng(0x18_0036);
    let big = corpus::mixed_source(&mut r, 80_000).into_bytes();
    let n = big.len();
    let want = kw.hits_split(&big, None);
    assert_eq!(kw.hits_split4(&big, [n / 4, n / 2, 3 * n / 4]), want);
    let mut through_hits = Vec::new();
    kw.hits(&big, |pid, start, end| through_hits.push((pid, start, end)));
    let mut single = Vec::new();
    super::keywords::keyword_hits(&kw.reference_dfa(), &big, |pid, start, end| {
        single.push((pid, start, end))
    });
    assert_eq!(
        through_hits, single,
        "the scan the classifier takes at {n} bytes"
    );
    assert!(
        compared > 3000 && want.len() > 500,
        "{compared} splits, {} rows",
        want.len()
    );
}

/// A keyword set too large for the dense table falls back to the DFA's own transitions and
/// still reports every hit.
#[test]
fn a_keyword_set_too_large_for_the_table_falls_back_to_the_dfa() {
    let mut rng = Rng(0x18_0032);
    let words: Vec<String> = (0..3000)
        .map(|_| {
            (0..12)
                .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
                .collect()
        })
        .collect();
    let kw = super::compile::build_ac(&words).unwrap();
    assert!(!kw.has_table());
    let text = format!("x {} y {}", words[7], words[2999].to_ascii_uppercase());
    let mut got = Vec::new();
    kw.hits(text.as_bytes(), |p, s, e| got.push((p, s, e)));
    assert_eq!(got, vec![(7, 2, 14), (2999, 17, 29)]);
}

/// The regex of the rule `name`, which takes its groups from the match span (`derive`).
fn derived_rule<'c>(
    c: &'c Classifier,
    name: &str,
    derive: super::compile::Derive,
) -> &'c super::compile::Regex {
    let rule = c.rules.iter().find(|r| r.name == name).unwrap();
    assert_eq!(rule.derive, derive);
    let (re, _) = rule.regex.as_ref().unwrap().get().unwrap();
    re
}

/// The equivalence tests' common inputs: `fixed`, then `lines` ordinary lines, one of each
/// generated credential, and `mixed` bytes of mixed source, all from the corpus generator
/// seeded with `seed`.
fn corpus_inputs(seed: u64, lines: usize, mixed: usize, fixed: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut inputs: Vec<Vec<u8>> = fixed.iter().map(|s| s.to_vec()).collect();
    let mut r = corpus::Rng(seed);
    for _ in 0..lines {
        inputs.push(corpus::ordinary_line(&mut r).into_bytes());
    }
    for (_, g) in corpus::credential_cases() {
        inputs.push(g(&mut r).into_bytes());
    }
    inputs.push(corpus::mixed_source(&mut r, mixed).into_bytes());
    inputs
}

/// The `email_address` rule's secret and `@` taken from a plain search (`derive::email_matches`)
/// are what the regex's capture groups give, match for match: over the generated corpus,
/// random text dense in address bytes, and edge cases (an address at either end of the text,
/// context bytes, non-ASCII bytes, dots and hyphens at the edges, several `@`).
#[test]
fn email_groups_from_a_plain_search_are_the_captured_ones() {
    let c = Classifier::default();
    let rule = c.rules.iter().find(|r| r.name == "email_address").unwrap();
    let (re, _) = rule.regex.as_ref().unwrap().get().unwrap();
    let captured = |hay: &[u8]| {
        let mut out = Vec::new();
        let mut at = 0;
        while at <= hay.len() {
            let Some(caps) = re.captures_at(hay, at) else {
                break;
            };
            let (s, u, d) = (
                caps.name("s").unwrap(),
                caps.name("u").unwrap(),
                caps.name("d").unwrap(),
            );
            assert_eq!((u.start(), d.end()), (s.start(), s.end()));
            out.push((s.range(), u.end()));
            at = s.end().max(at + 1);
        }
        out
    };
    let mut inputs: Vec<Vec<u8>> = [
        &b"a@b.co"[..],
        b"a@b.co.",
        b"-a@b.co-x",
        b"x a.b+c@d-e.f.gh, y@z.io\n",
        b"\xc3\xa9a@b.co\xc3\xa9",
        b"a@@b.co a@b@c.de",
        b"me@host.c0m me@host.museum1 me@x.y.zz",
        b"(mail: first.last@sub.example-mail.org).",
        b"git@github.com:acme/widgets.git",
        b"%@a.bc _@a-.b-c.de",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    let mut r = corpus::Rng(0x18_0022);
    for _ in 0..400 {
        inputs.push(corpus::ordinary_line(&mut r).into_bytes());
    }
    inputs.push(corpus::mixed_source(&mut r, 100_000).into_bytes());
    let mut rng = Rng(0x18_0023);
    let alphabet = b"ab9.-_%+@@@ .x\n\xc3";
    for _ in 0..3000 {
        let len = (rng.next() % 40) as usize;
        inputs.push(
            (0..len)
                .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    let mut total = 0;
    for input in &inputs {
        let mut got = Vec::new();
        super::derive::email_matches(re, input, |s, at| got.push((s, at)));
        assert_eq!(
            got,
            captured(input),
            "input {:?}",
            String::from_utf8_lossy(input)
        );
        total += got.len();
    }
    assert!(total > 150, "only {total} addresses compared");
}

/// The generic assignment rule's groups derived from its match span
/// (`derive::assignment_groups`) are what its capture search gives, match for match, and the
/// scan resumes where it would: over the generated corpus, random assignments in many
/// syntaxes (quotes, brackets, type annotations, `base64:` values, `=` inside values,
/// terminators, non-ASCII bytes) and random text dense in those bytes. Nine in ten matches of
/// the corpus must take the derived path (else the optimisation is gone).
#[test]
fn assignment_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(
        &c,
        super::rules::ASSIGNMENT_RULE,
        super::compile::Derive::Assignment,
    );
    let mut inputs = corpus_inputs(
        0x18_0030,
        400,
        100_000,
        &[
            &b"api_key = \"abcdefghijklmnop1234\""[..],
            b"api_key==abcdefghijklmnop1234 ",
            b"api_key=abcdefghijklmnop=1234",
            b"token: string = abcdefghijklmnop1234;",
            b"token: string=abcdefghijklmnop1234,",
            b"secret_key=base64:abcdefghijklmnop1234\n",
            b"secret_key = BASE64:abcdefghijklmnopq\"",
            b"cfg[\"api_key\"] = 'abcdefghijklmnop1234'",
            b"x.token := `abcdefghijklmnop1234` y",
            b"auth_key => b'abcdefghijklmnop1234'",
            b"TOKEN=abcdefghijklmnop1234",
            b"my_token:\xc3\xa9abcdefghijklmnop1234 ",
        ],
    );
    let generated = inputs.len();
    let mut rng = Rng(0x18_0031);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let names = [
        "api_key",
        "token",
        "SECRET",
        "db.secret_value",
        "x-auth-key",
        "aws_access_key",
        "credentials",
        "my2key",
        "privateKey",
        "a",
        "",
    ];
    let seps = [
        "=",
        " = ",
        "==",
        ":",
        ": ",
        ":=",
        "=>",
        " => ",
        "\"]=",
        "']: ",
        ": string = ",
        ": &'static str =",
        ":  Vec<u8>=",
        "\t=\t",
        "= ",
        "::",
        " ",
    ];
    let values = [
        "\"", "'", "`", "b\"", "f'", "base64:", "BASE64:", "=", "==", "/", "+", "~", "-", "_", ":",
        " ", ",", ";", "\n", ".", "\u{e9}", "]",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        for _ in 0..(1 + rng.next() % 3) {
            s.push_str(pick(&mut rng, &names));
            s.push_str(pick(&mut rng, &seps));
            for _ in 0..(rng.next() % 4) {
                s.push_str(pick(&mut rng, &values));
                let n = (4 + rng.next() % 36) as usize;
                s.push_str(&synth("", b"abcXYZ0189+/=_~-", n));
            }
            s.push_str(pick(&mut rng, &values));
        }
        inputs.push(s.into_bytes());
    }
    // (matches, derived) in the generated corpus, then in the random assignments
    let mut counts = [(0, 0), (0, 0)];
    for (i, input) in inputs.iter().enumerate() {
        let (total, derived) = &mut counts[usize::from(i >= generated)];
        let hay = input.as_slice();
        let mut at = 0;
        while at <= hay.len() {
            let Some(caps) = re.captures_at(hay, at) else {
                assert!(re.find_at(hay, at).is_none());
                break;
            };
            let whole = caps.get(0).unwrap().range();
            let m = re.find_at(hay, at).unwrap();
            assert_eq!(m.range(), whole);
            *total += 1;
            if let Some(d) = super::derive::assignment_groups(hay, m.start(), m.end()) {
                *derived += 1;
                let s = caps.name("s").map(|g| g.range());
                let s2 = caps.name("s2").map(|g| g.range());
                let want = super::derive::Assignment {
                    whole: whole.clone(),
                    key: caps.name("k").unwrap().range(),
                    secret: s.clone().or(s2).unwrap(),
                    quoted: s.is_some(),
                };
                assert_eq!(d, want, "input {:?}", String::from_utf8_lossy(hay));
            }
            let next = caps.name("s").map_or(whole.end, |g| g.end());
            at = next.max(at + 1);
        }
    }
    let [
        (corpus_total, corpus_derived),
        (random_total, random_derived),
    ] = counts;
    assert!(
        corpus_total > 80 && corpus_derived * 10 > corpus_total * 9,
        "{corpus_derived} of {corpus_total} corpus matches derived"
    );
    assert!(
        random_total > 3000 && random_derived > 1000,
        "{random_derived} of {random_total} random matches derived"
    );
}

/// The URL userinfo rule's groups derived from its match span (`derive::userinfo_groups`)
/// are what its capture search gives, match for match: over the generated corpus and random
/// URLs whose users and passwords hold `:`, `@`, `/`, quotes and spaces. Every match of the
/// rule is derivable.
#[test]
fn userinfo_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(
        &c,
        super::rules::USERINFO_RULE,
        super::compile::Derive::Userinfo,
    );
    let mut inputs = corpus_inputs(
        0x18_0032,
        300,
        100_000,
        &[
            &b"postgres://app:s3cr3t@db.local/x"[..],
            b"x redis://:pw:with:colons@[::1]:6379",
            b"amqp://u@ser:p@ss@host.example",
            b"git+ssh://me:abc@@host ftp://a:b:c@d",
            b"https://user:\xc3\xa9pass@h.io",
        ],
    );
    let mut rng = Rng(0x18_0033);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let schemes = [
        "postgres",
        "mongodb+srv",
        "redis",
        "x",
        "a.b-c",
        "HTTPS",
        "1http",
        "",
    ];
    let parts = [
        ":", "@", "/", "//", "://", "\"", "'", " ", "<", "[", ".", "-", "\u{e9}",
    ];
    for _ in 0..8000 {
        let mut s = String::new();
        for _ in 0..(1 + rng.next() % 3) {
            s.push_str(pick(&mut rng, &schemes));
            s.push_str("://");
            // user, `:`, password, `@`, host, each with a random part now and then
            for sep in [":", "@", ""] {
                let n = (rng.next() % 10) as usize;
                s.push_str(&synth("", b"abXY09_%!.-[", n));
                if rng.next().is_multiple_of(3) {
                    s.push_str(pick(&mut rng, &parts));
                    let n = (rng.next() % 5) as usize;
                    s.push_str(&synth("", b"abXY09_%!.-[", n));
                }
                s.push_str(sep);
            }
            s.push(' ');
        }
        inputs.push(s.into_bytes());
    }
    let mut total = 0;
    for input in &inputs {
        let hay = input.as_slice();
        let mut at = 0;
        while at <= hay.len() {
            let Some(caps) = re.captures_at(hay, at) else {
                break;
            };
            let m = re.find_at(hay, at).unwrap();
            assert_eq!(m.range(), caps.get(0).unwrap().range());
            let want = (
                caps.name("u").unwrap().range(),
                caps.name("s").unwrap().range(),
            );
            let got = super::derive::userinfo_groups(hay, m.start(), m.end());
            assert_eq!(
                got,
                Some(want.clone()),
                "input {:?}",
                String::from_utf8_lossy(hay)
            );
            total += 1;
            at = want.1.end.max(at + 1);
        }
    }
    assert!(total > 2000, "only {total} matches compared");
}

/// The prose rule's groups derived from its match span (`derive::prose_groups`) are what its
/// capture search gives, match for match: over the generated corpus and random sentences that
/// name a credential (every name, `for ...` clauses, `is`/`was`/`=`/`:`, quotes, closing
/// punctuation, short values, tabs and line ends). Nine in ten matches must take the derived
/// path.
#[test]
fn prose_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(&c, super::rules::PROSE_RULE, super::compile::Derive::Prose);
    let mut inputs = corpus_inputs(
        0x18_0034,
        300,
        100_000,
        &[
            &b"the password is hunter2hunter2."[..],
            b"Passwords: 'abc.def,ghi!' x",
            b"API key for the db was abcdefgh...\n",
            b"access-key = \"abcdefg\".. y",
            b"token:\tabcdefghijk)",
            b"secret abcdefg.,;",
            b"passcode is ab'cdefghij ",
        ],
    );
    let generated = inputs.len();
    let mut rng = Rng(0x18_0035);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let names = [
        "password",
        "Passwords",
        "passphrase",
        "passcode",
        "SECRET",
        "token",
        "api key",
        "api_key",
        "API-Key",
        "apikey",
        "access key",
        "accesskey",
        "passwordsx",
        "api",
    ];
    let clauses = ["", " for the db", " of prod", "\tto x.y-z", " on", " for"];
    let verbs = ["", " is", " was", " =", ":", " :", "\t:"];
    let gaps = [" ", "  ", "\t", " \"", " '", " `", "", "\n"];
    let tails = [
        "", ".", "...", ",", ")", "!?", "\"", "'.", "\"),", ":", " ", "\n", "x",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        if rng.next().is_multiple_of(2) {
            s.push_str("so the ");
        }
        s.push_str(pick(&mut rng, &names));
        s.push_str(pick(&mut rng, &clauses));
        s.push_str(pick(&mut rng, &verbs));
        s.push_str(pick(&mut rng, &gaps));
        let n = (4 + rng.next() % 16) as usize;
        s.push_str(&synth("", b"abXY09.,;:!?)-_/", n));
        if rng.next().is_multiple_of(6) {
            // a quote inside or right after the value
            s.push_str(pick(&mut rng, &["'", "\"", "`"]));
            let n = (rng.next() % 4) as usize;
            s.push_str(&synth("", b"abXY09.)", n));
        }
        s.push_str(pick(&mut rng, &tails));
        s.push_str(pick(&mut rng, &tails));
        if rng.next().is_multiple_of(2) {
            s.push_str(" and more");
        }
        inputs.push(s.into_bytes());
    }
    let mut counts = [(0, 0), (0, 0)];
    for (i, input) in inputs.iter().enumerate() {
        let (total, derived) = &mut counts[usize::from(i >= generated)];
        let hay = input.as_slice();
        let mut at = 0;
        while at <= hay.len() {
            let Some(caps) = re.captures_at(hay, at) else {
                break;
            };
            let m = re.find_at(hay, at).unwrap();
            assert_eq!(m.range(), caps.get(0).unwrap().range());
            let want = (
                caps.name("k").unwrap().range(),
                caps.name("s").unwrap().range(),
            );
            *total += 1;
            if let Some(got) = super::derive::prose_groups(hay, m.start(), m.end()) {
                *derived += 1;
                assert_eq!(got, want, "input {:?}", String::from_utf8_lossy(hay));
            }
            at = want.1.end.max(at + 1);
        }
    }
    let [
        (corpus_total, corpus_derived),
        (random_total, random_derived),
    ] = counts;
    assert!(
        corpus_total > 20 && corpus_derived * 10 > corpus_total * 9,
        "{corpus_derived} of {corpus_total} corpus matches derived"
    );
    assert!(
        random_total > 3000 && random_derived * 10 > random_total * 8,
        "{random_derived} of {random_total} random matches derived"
    );
}

/// The line count and longest line of the score (`score::size_metrics`, which jumps over
/// lines no longer than the longest so far) are those of the line-by-line routine it replaced:
/// over the corpus and random text of lines of every length, multi-byte characters (a line
/// longer in bytes but not in characters), empty lines, and with and without a final newline.
#[test]
fn size_metrics_agree_with_the_line_by_line_count() {
    let mut inputs: Vec<String> = ["", "\n", "\n\n", "a", "a\n", "\na", "é\nab\n", "ab\né"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut r = corpus::Rng(0x18_0050);
    inputs.push(corpus::mixed_source(&mut r, 100_000));
    for _ in 0..200 {
        inputs.push(corpus::negative_file(&mut r));
    }
    let mut rng = Rng(0x18_0051);
    let pieces = ["a", "bb", "é", "€", "\u{1F600}", " ", "\n", "\n\n", "\r\n"];
    for _ in 0..3000 {
        let mut s = String::new();
        for _ in 0..(rng.next() % 200) {
            let p = pieces[(rng.next() % pieces.len() as u64) as usize];
            for _ in 0..(rng.next() % 30) {
                s.push_str(p);
            }
        }
        inputs.push(s);
    }
    for s in &inputs {
        assert_eq!(
            super::score::size_metrics(s),
            super::score::size_metrics_by_line(s),
            "input {s:?}"
        );
    }
}

/// An operator's rule that does not compile is reported in the words of the `regex` crate,
/// as before the rules were built through its engine directly: a syntax error's own text, or
/// the size limit.
#[test]
fn an_invalid_custom_rule_reads_as_the_regex_crate_reports_it() {
    for pattern in [
        "acme_([",
        r"x\",
        "(?P<a>x)(?P<a>y)",
        r"\w{1000}{1000}",
        "a{4294967296}",
    ] {
        let ours = super::compile::build_regex(pattern, true, true)
            .err()
            .unwrap_or_else(|| panic!("{pattern} compiled"));
        let theirs = regex::bytes::RegexBuilder::new(pattern)
            .unicode(true)
            .size_limit(1 << 23)
            .dfa_size_limit(1 << 23)
            .build()
            .unwrap_err()
            .to_string();
        assert_eq!(ours, theirs, "{pattern}");
    }
}

/// A draft scanned on two threads (the scanners and the rules keyed by a plain literal, `@`
/// and `://`, on the second) has the findings, spans and lines it has on one: over the generated corpus, with
/// every input split (the threshold at 0), and over long mixed source at the default one.
/// Addresses are written around the windows' limits: at a draft's ends, on adjacent lines (one
/// merged window), 256 bytes and more into a long line.
#[test]
fn two_threads_find_what_one_finds() {
    use super::detect::SPLIT_CALLS;
    let one = Classifier::default().on_one_thread();
    let every = Classifier::default().split_from(0);
    let default = Classifier::default();
    let mut r = corpus::Rng(0x18_2a11);
    let mut inputs = case_and_line_inputs(&mut r, 6, 1500);
    for _ in 0..200 {
        let (n, m, k) = (1 + r.below(12), r.below(600), r.below(99));
        let user = r.chars(b"abcdefghij.", n);
        let pad = r.chars(b"ab c=\"", m);
        inputs.push(format!("{user}@example.dev"));
        inputs.push(format!(
            "{pad}redis://{user}:{pad}x{k}@h{k}/\nhttps://{user}:p{k}@h"
        ));
        inputs.push(format!("{pad} {user}@corp-{k}.io\nto: x{user}@b.co {pad}@"));
    }
    let splits_before = SPLIT_CALLS.with(std::cell::Cell::get);
    let (mut compared, mut emails, mut urls) = (0, 0, 0);
    for input in &inputs {
        let want = findings(input, &one);
        assert_eq!(findings(input, &every), want, "{input:?}");
        compared += want.len();
        emails += want.iter().filter(|f| f.pattern == "email_address").count();
        urls += want.iter().filter(|f| f.pattern == "url_password").count();
    }
    let long = corpus::mixed_source(&mut r, 300_000);
    let want = findings(&long, &one);
    assert_eq!(findings(&long, &default), want);
    emails += want.iter().filter(|f| f.pattern == "email_address").count();
    compared += want.len();
    assert!(
        compared > 1000 && emails > 300 && urls > 100,
        "{compared} findings, {emails} emails, {urls} URL passwords"
    );
    // every input went through the second thread, the long one at the default threshold too
    let splits = SPLIT_CALLS.with(std::cell::Cell::get) - splits_before;
    assert_eq!(splits, inputs.len() + 1);
}

/// Below the threshold, and with `on_one_thread`, no thread is spawned; when the spawn fails,
/// the calling thread runs the scanners itself and finds the same; `split_from` moves the
/// threshold.
#[test]
fn short_drafts_stay_on_one_thread_and_a_failed_spawn_loses_nothing() {
    use super::detect::{FAIL_SPAWN, SPLIT_CALLS};
    let calls = || SPLIT_CALLS.with(std::cell::Cell::get);
    let default = Classifier::default();
    let mut r = corpus::Rng(0x18_2a12);
    let short = corpus::mixed_source(&mut r, SPLIT_MIN / 2);
    let mut long = corpus::mixed_source(&mut r, SPLIT_MIN * 2);
    // an opaque base64 blob for the scanners (the corpus's data URIs are images: quiet)
    long.push_str(&format!("blob = \"{}\"\n", r.chars(corpus::B64, 400)));
    assert!(short.len() < SPLIT_MIN && long.len() >= SPLIT_MIN);
    let before = calls();
    findings(&short, &default);
    findings(&long, &default.clone().on_one_thread());
    assert_eq!(calls(), before);
    let want = findings(&long, &default);
    assert_eq!(calls(), before + 1);
    assert!(want.iter().any(|f| f.pattern == "email_address"));
    // and a finding of a scanner (the second thread's other work)
    let scanners: Vec<String> = super::rules::builtin()
        .into_iter()
        .filter(|r| r.scanner.is_some())
        .map(|r| r.name)
        .collect();
    assert!(
        want.iter().any(|f| scanners.contains(&f.pattern)),
        "{want:?}"
    );
    FAIL_SPAWN.with(|f| f.set(true));
    let got = findings(&long, &default);
    FAIL_SPAWN.with(|f| f.set(false));
    assert_eq!(calls(), before + 1);
    assert_eq!(got, want);
    // `split_from` moves the threshold both ways; `usize::MAX` is one thread
    assert_eq!(
        findings(&short, &default.clone().split_from(short.len())),
        findings(&short, &default)
    );
    assert_eq!(calls(), before + 2);
    findings(&long, &default.clone().split_from(long.len() + 1));
    assert_eq!(calls(), before + 2);
    assert!(default.clone().split_from(usize::MAX).is_on_one_thread());
    assert!(!default.is_on_one_thread());
}

/// The literals found without the keyword scan have no letter and cannot overlap themselves;
/// the email and URL userinfo rules are among the built-in rules keyed by one.
#[test]
fn plain_literal_keywords_are_letterless_and_overlap_free() {
    use super::compile::is_plain_literal;
    for yes in ["@", "://", "1//0", "-----BEGIN"] {
        assert_eq!(
            is_plain_literal(yes.as_bytes()),
            !yes.contains('B'),
            "{yes}"
        );
    }
    for no in ["", "aa", "--", "::", "/*/", "1//01", "@@"] {
        assert!(!is_plain_literal(no.as_bytes()), "{no}");
    }
    let c = Classifier::default();
    let keyed: Vec<&str> = c
        .literal_keyed
        .iter()
        .map(|(_, k)| c.rules[k.rule].name.as_str())
        .collect();
    for rule in ["email_address", "url_password"] {
        assert!(keyed.contains(&rule), "{keyed:?}");
    }
    assert!(
        c.rules
            .iter()
            .all(|r| r.literal_key == keyed.contains(&r.name.as_str()))
    );
}
