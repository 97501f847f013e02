//! The built-in credential rules on drafts, through the public API: vendor tokens and their
//! documentation examples, private keys, structural secrets (URL passwords, Basic auth, netrc,
//! registries' auth, Kubernetes secrets, JWTs, bearer tokens, assignments), and the ordinary
//! content beside them that must stay quiet. Secret-shaped strings are generated (prefix +
//! characters from a seeded PRNG), never written out.

use super::testing::{ALNUM, B64, HEX, URLSAFE, clf, patterns, pem, score, synth};
use super::*;

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
