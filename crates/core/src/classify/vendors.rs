//! The long tail of SaaS token formats (issue 43): observability, feature flags, CI services,
//! CDNs, email and SMS, maps, package registries, password managers, IaC and cloud platforms,
//! work tools and AI gateways, each from the vendor's documented format (a prefix, a charset, a
//! length; the charset and length are the verifier where the vendor documents no checksum).
//! Also keys that are plain UUIDs beside a platform's key name (`HEROKU_API_KEY`,
//! `RAILWAY_TOKEN`, `SNYK_TOKEN`): a UUID alone is an identifier, beside such a name a key.
//!
//! A prefix that is short or a word (`ser.`, `cio`, `re_`, `secret-`) needs the body after it
//! not to read as an identifier ([`Check::Opaque`]); one before a UUID or a fixed separator has
//! its keyword gated on that shape ([`Gate::UuidAfter`], [`Gate::ByteAt`]), so ordinary text
//! that holds the prefix costs a byte test, not a regex search.

use super::spec::{Check, Gate, RuleSpec, Tier, Window, rule, tok};

/// A UUID in a regex (either case).
const UUID: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

/// Platforms whose API keys or tokens are plain UUIDs, as their key names spell them (the
/// keywords of [`PLATFORM_UUID_RULE`], and the names that make a UUID in a Kubernetes env list
/// a key).
pub(super) const UUID_PLATFORMS: &[&str] = &[
    "heroku",
    "railway",
    "snyk",
    "codecov",
    "postmark",
    "opsgenie",
    "geniekey",
    "scaleway",
    "scw",
    "loggly",
    "splunk",
    "npm_token",
    "npmtoken",
    "hapikey",
    "hubspot",
    "acquia",
    "saucelabs",
    "sauce_access",
    "vault_token",
    "consul",
    "nomad_token",
    "docusign",
];

/// The rule of a UUID beside a platform's key name.
pub(super) const PLATFORM_UUID_RULE: &str = "platform_uuid_key";
/// The rule of a UUID under a secret's key nested in the platform's (`heroku: {api_key: ...}`).
pub(super) const PLATFORM_UUID_NESTED_RULE: &str = "platform_uuid_key_nested";

/// Whether `key` names one of [`UUID_PLATFORMS`].
pub(super) fn names_uuid_platform(key: &[u8]) -> bool {
    let lower = key.to_ascii_lowercase();
    UUID_PLATFORMS
        .iter()
        .any(|p| lower.windows(p.len()).any(|w| w == p.as_bytes()))
}

/// The rules of this module, in precedence order.
pub(super) fn rules() -> Vec<RuleSpec> {
    let uuid_after = |p: &str| format!("{p}{UUID}");
    vec![
        // ---- observability ----
        rule("dynatrace_api_token", "api_key", &["dt0c01."], &tok("dt0c01\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{64}")),
        rule("newrelic_insert_key", "api_key", &["NRII-"], &tok("NRII-[A-Za-z0-9_\\-]{32}")).cs(),
        rule("newrelic_license_key", "api_key", &["NRAL"], &tok("[a-fA-F0-9]{36}NRAL")).cs(),
        rule("posthog_personal_api_key", "api_key", &["phx_"], &tok("phx_[A-Za-z0-9]{43}")),
        rule("axiom_token", "api_key", &["xaat-", "xapt-"], &tok(&uuid_after("xa[ap]t-")))
            .gate(Gate::UuidAfter),
        rule("grafana_api_key", "api_key", &["eyJrIjoi"], &tok("eyJrIjoi[A-Za-z0-9+/]{40,400}={0,2}")).cs(),
        // ---- feature flags ----
        rule("launchdarkly_key", "api_key", &["sdk-", "api-", "mob-"], &tok(&uuid_after("(?:sdk|api|mob)-")))
            .gate(Gate::UuidAfter),
        rule("flagsmith_server_key", "api_key", &["ser."], &tok("ser\\.[A-Za-z0-9]{22}"))
            .check(Check::Opaque(4)).cs()
            .gate(Gate::RunAfter(22)),
        rule("configcat_sdk_key", "api_key", &["configcat-sdk-1/"],
            &tok("configcat-sdk-1/[A-Za-z0-9_\\-]{22}/[A-Za-z0-9_\\-]{22}")),
        rule("statsig_server_secret", "api_key", &["secret-"], &tok("secret-[A-Za-z0-9]{43}"))
            .check(Check::Opaque(7)).cs()
            .gate(Gate::RunAfter(43)),
        // ---- CI services ----
        rule("circleci_token", "api_key", &["ccipat_", "cciprj_"], &tok("CCIP(?:AT|RJ)_[A-Za-z0-9]{22}_[a-fA-F0-9]{40}")),
        rule("buildkite_token", "api_key", &["bkua_"], &tok("bkua_[a-fA-F0-9]{40}")),
        rule("sonarqube_token", "api_key", &["squ_", "sqp_", "sqa_"], &tok("sq[upa]_[a-fA-F0-9]{40}")),
        rule("harness_token", "api_key", &["pat.", "sat."],
            &tok("(?:pat|sat)\\.[A-Za-z0-9_\\-]{22}\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{20}"))
            .cs().gate(Gate::ByteAt(22, b'.')),
        rule("gitlab_other_token", "api_key", &["glcbt-", "glimt-", "glagent-", "glsoat-", "glffct-", "GR1348941"],
            &tok("(?:glcbt-[A-Za-z0-9]{1,5}_[A-Za-z0-9_\\-]{20,}|glimt-[A-Za-z0-9_\\-]{25,}|glagent-[A-Za-z0-9_\\-]{50,}|glsoat-[A-Za-z0-9_\\-]{20,}|glffct-[A-Za-z0-9_\\-]{20,}|GR1348941[A-Za-z0-9_\\-]{20,})"))
            .gate(Gate::TokenStart),
        rule("bitbucket_app_password", "api_key", &["ATBB"], &tok("ATBB[A-Za-z0-9_=.\\-]{32,}")).cs(),
        rule("octopus_api_key", "api_key", &["API-"], &tok("API-[A-Z0-9]{26,32}"))
            .check(Check::Opaque(4)).cs()
            .gate(Gate::RunAfter(26)),
        // ---- CDNs ----
        rule("cloudflare_origin_ca_key", "api_key", &["v1.0-"], &tok("v1\\.0-[a-f0-9]{24}-[a-f0-9]{146}")),
        rule("akamai_token", "api_key", &["akab-"], &tok("akab-[a-z0-9]{16}-[a-z0-9]{16}")),
        // ---- email and SMS ----
        rule("brevo_api_key", "api_key", &["xkeysib-", "xsmtpsib-"], &tok("x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}")),
        rule("mailersend_token", "api_key", &["mlsn."], &tok("mlsn\\.[a-f0-9]{64}")),
        rule("resend_api_key", "api_key", &["re_"], &tok("re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"))
            .check(Check::Opaque(3)).cs().gate(Gate::ByteAt(8, b'_')),
        rule("telnyx_api_key", "api_key", &["KEY0", "KEY1", "KEY2", "KEY3", "KEY4", "KEY5", "KEY6", "KEY7", "KEY8", "KEY9", "KEYA", "KEYB", "KEYC", "KEYD", "KEYE", "KEYF"],
            &tok("KEY[0-9A-F]{32}_[A-Za-z0-9]{22}")).cs().gate(Gate::TokenStart),
        // ---- maps ----
        rule("mapbox_secret_token", "api_key", &["sk.eyJ"], &tok("sk\\.eyJ[A-Za-z0-9_\\-]{20,}\\.[A-Za-z0-9_\\-]{20,}")).cs(),
        // ---- package registries ----
        rule("crates_io_token", "api_key", &["cio"], &tok("cio[A-Za-z0-9]{32}"))
            .check(Check::Opaque(3)).cs()
            .gate(Gate::RunAfter(32)),
        rule("clojars_token", "api_key", &["clojars_"], &tok("CLOJARS_[a-fA-F0-9]{60}")),
        // ---- password managers and secret stores ----
        rule("onepassword_service_account_token", "api_key", &["ops_eyJ"], &tok("ops_eyJ[A-Za-z0-9+/_\\-]{200,}={0,3}")).cs(),
        rule("onepassword_secret_key", "api_key", &["A3-"],
            &tok("A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}")).cs(),
        rule("bitwarden_access_token", "api_key", &["0."],
            &tok(&format!("0\\.{UUID}\\.[A-Za-z0-9]{{30}}:[A-Za-z0-9+/]{{22,24}}={{0,2}}")))
            .gate(Gate::UuidAfter),
        // ---- IaC and cloud platforms ----
        rule("hubspot_private_app_token", "api_key", &["pat-na", "pat-eu", "pat-ap"],
            &tok(&uuid_after("pat-(?:na|eu|ap)[0-9]-"))).gate(Gate::ByteAt(1, b'-')),
        rule("supabase_access_token", "api_key", &["sbp_"], &tok("sbp_[a-fA-F0-9]{40}")),
        rule("render_api_key", "api_key", &["rnd_"], &tok("rnd_[A-Za-z0-9]{32}")).check(Check::Opaque(4))
            .gate(Gate::RunAfter(32)),
        rule("heroku_api_key_v2", "api_key", &["HRKU-"], &tok("HRKU-AA[A-Za-z0-9_\\-]{58}")).cs(),
        rule("flyio_macaroon", "api_key", &["fm1a_", "fm1r_", "fm2_"], &tok("fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3}")),
        rule("prefect_api_key", "api_key", &["pnu_"], &tok("pnu_[A-Za-z0-9]{36}")),
        rule("scalingo_token", "api_key", &["tk-us-"], &tok("tk-us-[A-Za-z0-9_\\-]{48}")),
        // ---- work tools and AI gateways ----
        rule("notion_token", "api_key", &["ntn_", "secret_"], &tok("(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})"))
            .check(Check::Opaque(4)).cs()
            .gate(Gate::RunAfter(35)),
        rule("airtable_pat", "api_key", &["pat"], &tok("pat[A-Za-z0-9]{14}\\.[a-f0-9]{64}"))
            .cs().gate(Gate::ByteAt(14, b'.')),
        rule("figma_token", "api_key", &["figd_"], &tok("figd_[A-Za-z0-9_\\-]{40,}")),
        rule("openrouter_api_key", "api_key", &["sk-or-v1-"], &tok("sk-or-v1-[a-f0-9]{64}")),
        rule("tavily_api_key", "api_key", &["tvly-"], &tok("tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}")),
        rule("easypost_api_key", "api_key", &["EZAK", "EZTK"], &tok("EZ[AT]K[A-Za-z0-9]{54}")).cs(),
        rule("shippo_api_token", "api_key", &["shippo_"], &tok("shippo_(?:live|test)_[a-fA-F0-9]{40}")),
        rule("readme_api_key", "api_key", &["rdme_"], &tok("rdme_[a-z0-9]{70}")),
        rule("duffel_api_token", "api_key", &["duffel_"], &tok("duffel_(?:test|live)_[A-Za-z0-9_\\-=]{43}")),
        rule("frameio_token", "api_key", &["fio-u-"], &tok("fio-u-[A-Za-z0-9_\\-=]{64}")),
        rule("infracost_token", "api_key", &["ico-"], &tok("ico-[A-Za-z0-9]{32}")).check(Check::Opaque(4))
            .gate(Gate::RunAfter(32)),
        rule("adobe_client_secret", "api_key", &["p8e-"], &tok("p8e-[A-Za-z0-9]{32}")),
        rule("maxmind_license_key", "api_key", &["_mmk"], &tok("[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk")),
        rule("openshift_token", "api_key", &["sha256~"], &tok("sha256~[A-Za-z0-9_\\-]{43}")),
        rule("alibaba_access_key_id", "api_key", &["LTAI"], &tok("LTAI[A-Za-z0-9]{20}")).check(Check::Opaque(4)).cs()
            .gate(Gate::RunAfter(20)),
        rule("hex_sk_api_key", "api_key", &["sk-"], &tok("sk-[a-f0-9]{32}")).cs()
            .gate(Gate::RunAfter(32)),
        rule("honeybadger_token", "api_key", &["hbp_"], &tok("hbp_[A-Za-z0-9]{36}")),
        rule("arcgis_api_key", "api_key", &["AAPK", "AAPT"], &tok("AAP[KT][A-Za-z0-9_\\-]{80,}")).cs(),
        rule("infisical_service_token", "api_key", &["st."],
            &tok("st\\.[A-Za-z0-9]{20,40}\\.[A-Za-z0-9]{20,40}\\.[A-Za-z0-9]{20,40}")).cs(),
        rule("teamcity_token", "api_key", &["eyJ0eXAiOiAiVENWMiJ9"],
            &tok("eyJ0eXAiOiAiVENWMiJ9\\.[A-Za-z0-9_\\-]{20,}\\.[A-Za-z0-9_\\-]{20,}")).cs(),
        // ---- a UUID beside a platform's key name ----
        rule(PLATFORM_UUID_RULE, "api_key", UUID_PLATFORMS,
            &format!(r#"(?i)(?P<k>[a-z0-9_.\-]{{0,30}}(?:{})[a-z0-9_.\- ]{{0,30}}?)["'`]?\]?(?:\s{{0,4}}(?:=>|:=|=|:)|\s+(?:is|to|as)\b)\s{{0,4}}["'`]?(?P<s>{UUID})(?:[^0-9A-Za-z\-]|$)"#,
                UUID_PLATFORMS.join("|")))
            .check(Check::PlatformUuid).tier(Tier::Generic),
        // the platform's name on a parent key: `"heroku": {"apiKey": "..."}`, `railway:\n  token: ...`
        rule(PLATFORM_UUID_NESTED_RULE, "api_key", UUID_PLATFORMS,
            &format!(r#"(?is)(?:{})[a-z0-9_\-]{{0,20}}["']?\s{{0,4}}[:=]\s{{0,4}}\{{?[^{{}}]{{0,300}}?["']?(?P<k>[a-z0-9_\-]{{0,20}}(?:api[_.\-]?key|token|secret|auth[_.\-]?key|password|key))["']?\s{{0,4}}[:=]\s{{0,4}}["']?(?P<s>{UUID})(?:[^0-9A-Za-z\-]|$)"#,
                UUID_PLATFORMS.join("|")))
            .check(Check::PlatformUuid).tier(Tier::Generic).window(Window::Forward(512)),
    ]
}
