//! The long tail of SaaS token formats (`vendors.rs`) and keys that are plain UUIDs beside a
//! platform's key name: each format found at `medium` under its rule in several contexts, its
//! placeholders and look-alikes below `medium`. Tokens are generated (prefix + characters from
//! a seeded PRNG), never written out.

use super::testing::{ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, score, synth};
use super::*;

/// `token` is found at `medium` or above by `rule` in every context (a bare token in prose, an
/// env file, a JSON value, a curl header, a code literal).
fn assert_found_everywhere(token: &str, rule: &str) {
    for text in [
        format!("The token {token} was revoked this morning.\n"),
        format!("VENDOR_CREDENTIAL={token}\n"),
        format!("{{ \"credential\": \"{token}\" }}\n"),
        format!("curl -H \"Authorization: Bearer {token}\" https://api.vendor.io/v2/me\n"),
        format!("client = Client(\"{token}\")\n"),
    ] {
        let r = score(&text);
        assert!(
            r.verdict >= Verdict::Medium,
            "{text:?}: {:?}",
            r.detected_patterns
        );
        assert!(
            r.detected_patterns.iter().any(|f| f.pattern == rule),
            "{text:?}: {rule} not among {:?}",
            r.detected_patterns
        );
    }
}

/// `n` characters of `set`, drawn with `tag` as part of the seed (the tag itself left out).
fn part(tag: &str, set: &[u8], n: usize) -> String {
    synth(tag, set, n)[tag.len()..].to_string()
}

fn uuid(seed: &str) -> String {
    let h = synth(seed, HEX, 32);
    let h = &h[seed.len()..];
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

#[test]
fn the_long_tail_of_documented_token_formats_is_found() {
    let cases: Vec<(String, &str)> = vec![
        (
            format!(
                "dt0c01.{}.{}",
                synth("", UPPER_ALNUM, 24),
                part("a", UPPER_ALNUM, 64)
            ),
            "dynatrace_api_token",
        ),
        (synth("NRII-", URLSAFE, 32), "newrelic_insert_key"),
        (
            format!("{}NRAL", synth("", HEX, 36)),
            "newrelic_license_key",
        ),
        (synth("phx_", ALNUM, 43), "posthog_personal_api_key"),
        (format!("xaat-{}", uuid("ax")), "axiom_token"),
        (format!("sdk-{}", uuid("ld")), "launchdarkly_key"),
        (synth("ser.", ALNUM, 22), "flagsmith_server_key"),
        (
            format!(
                "configcat-sdk-1/{}/{}",
                synth("", URLSAFE, 22),
                part("c", URLSAFE, 22)
            ),
            "configcat_sdk_key",
        ),
        (synth("secret-", ALNUM, 43), "statsig_server_secret"),
        (
            format!("CCIPAT_{}_{}", synth("", ALNUM, 22), part("h", HEX, 40)),
            "circleci_token",
        ),
        (synth("bkua_", HEX, 40), "buildkite_token"),
        (synth("sqp_", HEX, 40), "sonarqube_token"),
        (
            format!(
                "pat.{}.{}.{}",
                synth("", URLSAFE, 22),
                part("b", ALNUM, 24),
                part("c", ALNUM, 20)
            ),
            "harness_token",
        ),
        (synth("glagent-", URLSAFE, 50), "gitlab_other_token"),
        (synth("ATBB", ALNUM, 32), "bitbucket_app_password"),
        (synth("API-", UPPER_ALNUM, 26), "octopus_api_key"),
        (
            format!("v1.0-{}-{}", synth("", HEX, 24), part("d", HEX, 146)),
            "cloudflare_origin_ca_key",
        ),
        (
            format!(
                "akab-{}-{}",
                synth("", LOWER_ALNUM, 16),
                part("e", LOWER_ALNUM, 16)
            ),
            "akamai_token",
        ),
        (
            format!("xkeysib-{}-{}", synth("", HEX, 64), part("f", ALNUM, 16)),
            "brevo_api_key",
        ),
        (synth("mlsn.", HEX, 64), "mailersend_token"),
        (
            format!("re_{}_{}", synth("", ALNUM, 8), part("g", ALNUM, 24)),
            "resend_api_key",
        ),
        (
            format!(
                "KEY{}_{}",
                synth("", b"0123456789ABCDEF", 32),
                part("h", ALNUM, 22)
            ),
            "telnyx_api_key",
        ),
        (synth("cio", ALNUM, 32), "crates_io_token"),
        (synth("CLOJARS_", HEX, 60), "clojars_token"),
        (
            synth("ops_eyJ", B64, 300),
            "onepassword_service_account_token",
        ),
        (
            format!(
                "A3-{}-{}-{}-{}-{}-{}",
                synth("", UPPER_ALNUM, 6),
                part("i", UPPER_ALNUM, 6),
                part("j", UPPER_ALNUM, 5),
                part("k", UPPER_ALNUM, 5),
                part("l", UPPER_ALNUM, 5),
                part("m", UPPER_ALNUM, 5)
            ),
            "onepassword_secret_key",
        ),
        (
            format!(
                "0.{}.{}:{}==",
                uuid("bw"),
                synth("", ALNUM, 30),
                part("n", B64, 22)
            ),
            "bitwarden_access_token",
        ),
        (synth("dp.st.", ALNUM, 43), "doppler_token"),
        (
            format!("pat-na1-{}", uuid("hs")),
            "hubspot_private_app_token",
        ),
        (synth("sbp_", HEX, 40), "supabase_access_token"),
        (synth("rnd_", ALNUM, 32), "render_api_key"),
        (synth("HRKU-AA", URLSAFE, 58), "heroku_api_key_v2"),
        (synth("fm2_", B64, 140), "flyio_macaroon"),
        (synth("pnu_", ALNUM, 36), "prefect_api_key"),
        (synth("tk-us-", URLSAFE, 48), "scalingo_token"),
        (
            format!(
                "ntn_{}{}",
                synth("", b"0123456789", 11),
                part("o", ALNUM, 35)
            ),
            "notion_token",
        ),
        (
            format!("pat{}.{}", synth("", ALNUM, 14), part("p", HEX, 64)),
            "airtable_pat",
        ),
        (synth("figd_", URLSAFE, 40), "figma_token"),
        (synth("sk-or-v1-", HEX, 64), "openrouter_api_key"),
        (synth("tvly-", ALNUM, 32), "tavily_api_key"),
        (synth("EZAK", ALNUM, 54), "easypost_api_key"),
        (synth("shippo_live_", HEX, 40), "shippo_api_token"),
        (synth("rdme_", LOWER_ALNUM, 70), "readme_api_key"),
        (synth("sha256~", URLSAFE, 43), "openshift_token"),
        (synth("LTAI", ALNUM, 20), "alibaba_access_key_id"),
        (synth("hbp_", ALNUM, 36), "honeybadger_token"),
        (synth("AAPK", URLSAFE, 100), "arcgis_api_key"),
        (
            format!(
                "st.{}.{}.{}",
                synth("", HEX, 24),
                part("q", HEX, 32),
                part("r", HEX, 32)
            ),
            "infisical_service_token",
        ),
    ];
    for (token, rule) in &cases {
        assert_found_everywhere(token, rule);
    }
}

#[test]
fn long_tail_placeholders_and_look_alikes_stay_below_medium() {
    for text in [
        format!(
            "DT_API_TOKEN=dt0c01.{}.{}\n",
            "X".repeat(24),
            "X".repeat(64)
        ),
        format!("BUILDKITE_API_TOKEN=bkua_{}\n", "x".repeat(40)),
        format!("SONAR_TOKEN=squ_{}\n", "0".repeat(40)),
        // identifiers that start like a short prefix
        "ser.serializeStructVariant(x)\n".to_string(),
        "let v = secret-sharing-protocol-version-two-for-the-cluster-nodes-1;\n".to_string(),
        "x = re_abcdefgh_ijklmnopqrstuvwxyzabcdefgh\n".to_string(),
        "cioabcdefghijklmnopqrstuvwxyzabcdef\n".to_string(),
        "API-GATEWAYDEFAULTINTEGRATIONTIMEOUT\n".to_string(),
        // a UUID after a prefix-like word that is no key's
        format!("see https://docs.io/api-v2-{}\n", uuid("doc")),
    ] {
        let r = score(&text);
        assert!(
            r.verdict < Verdict::Medium,
            "{text:?}: {:?}",
            r.detected_patterns
        );
    }
}

#[test]
fn a_uuid_beside_a_platforms_key_name_is_a_key() {
    let v = uuid("paas");
    for text in [
        format!("HEROKU_API_KEY={v}\n"),
        format!("export RAILWAY_TOKEN=\"{v}\"\n"),
        format!("env:\n  SNYK_TOKEN: {v}\n"),
        format!("{{\n  \"postmarkServerToken\": \"{v}\"\n}}\n"),
        format!("{{\n  \"scwSecretKey\": \"{v}\"\n}}\n"),
        format!("Set `CODECOV_TOKEN` to `{v}` in the dashboard.\n"),
        format!("The Heroku API key is {v}, rotate it.\n"),
        format!("env:\n  - name: OPSGENIE_API_KEY\n    value: \"{v}\"\n"),
        format!("web: LOGGLY_TOKEN={v} bundle exec puma\n"),
        format!("machine api.heroku.com\n  login me@acme-mail.io\n  password {v}\n"),
        format!("Authorization: Bearer {v}\n"),
        format!("Authorization: GenieKey {v}\n"),
        format!("export VAULT_TOKEN={v}\n"),
        format!("CONSUL_HTTP_TOKEN: \"{v}\"\n"),
        format!("SAUCE_ACCESS_KEY={v}\n"),
        format!("{{\n  \"heroku\": {{\n    \"apiKey\": \"{v}\"\n  }}\n}}\n"),
        format!("railway:\n  project: shop\n  token: {v}\n"),
        format!("curl -H 'X-Postmark-Server-Token: {v}' https://api.postmarkapp.com/email\n"),
    ] {
        let r = score(&text);
        assert!(
            r.verdict >= Verdict::Medium,
            "{text:?}: {:?}",
            r.detected_patterns
        );
    }
}

#[test]
fn a_uuid_under_an_identifier_or_a_placeholder_uuid_is_not_a_key() {
    let v = uuid("ids");
    for text in [
        format!("HEROKU_APP_ID={v}\n"),
        format!("RAILWAY_PROJECT_ID={v}\n"),
        format!("VAULT_ROLE_ID={v}\n"),
        format!("heroku:\n  app_id: {v}\n"),
        format!("{{\"snyk\": {{\"orgId\": \"{v}\"}}}}\n"),
        format!("consul_node_id = \"{v}\"\n"),
        format!("\"snykOrgId\": \"{v}\"\n"),
        format!("SNYK_ORG={v}\n"),
        format!("X-Request-Id: {v}\n"),
        format!("Idempotency-Key: {v}\n"),
        format!("session_id = \"{v}\"\n"),
        format!("id = \"{v}\"\n"),
        "HEROKU_API_KEY=00000000-0000-0000-0000-000000000000\n".to_string(),
        "RAILWAY_TOKEN=12345678-1234-1234-1234-123456789012\n".to_string(),
        "Authorization: Bearer 123e4567-e89b-12d3-a456-426614174000\n".to_string(),
    ] {
        let r = score(&text);
        assert!(
            r.verdict < Verdict::Medium,
            "{text:?}: {:?}",
            r.detected_patterns
        );
    }
}
