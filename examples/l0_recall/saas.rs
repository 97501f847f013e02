//! The long tail of SaaS tokens (issue 43): observability, feature flags, CI services, CDNs,
//! email and SMS, maps, package registries, password managers, IaC and cloud platforms, work
//! tools, each in the vendor's documented format (prefix, charset, length) or under its
//! documented key name, written in env files, YAML, JSON, TOML, Docker, Kubernetes env lists,
//! code, curl headers, CLI flags, logs and prose. Bodies come from the seeded PRNG.

use super::tail::{UPPER_ALNUM, UPPER_HEX, camel, uuid};
use super::{ALNUM, B64, Case, DIGITS, HEX, LOWER_ALNUM, Rng, URLSAFE, b64, b64url};

/// (key name, token, prefixed: the token names its vendor without a key name).
type Vendor = fn(&mut Rng) -> (&'static str, String, bool);

fn saas_vendors() -> Vec<Vendor> {
    vec![
        // observability
        |r| {
            let t = format!(
                "dt0c01.{}.{}",
                r.chars(UPPER_ALNUM, 24),
                r.chars(UPPER_ALNUM, 64)
            );
            ("DT_API_TOKEN", t, true)
        },
        |r| {
            (
                "NEW_RELIC_INSERT_KEY",
                format!("NRII-{}", r.chars(URLSAFE, 32)),
                true,
            )
        },
        |r| {
            (
                "NEW_RELIC_LICENSE_KEY",
                format!("{}NRAL", r.chars(HEX, 36)),
                true,
            )
        },
        |r| {
            (
                "POSTHOG_PERSONAL_API_KEY",
                format!("phx_{}", r.chars(ALNUM, 43)),
                true,
            )
        },
        |r| ("AXIOM_TOKEN", format!("xaat-{}", uuid(r)), true),
        |r| {
            let json = format!(
                "{{\"k\":\"{}\",\"n\":\"ci\",\"id\":{}}}",
                r.chars(ALNUM, 32),
                r.range(1, 999)
            );
            (
                "GRAFANA_API_KEY",
                b64(json.as_bytes()).replace('=', ""),
                true,
            )
        },
        |r| ("DD_API_KEY", r.chars(HEX, 32), false),
        |r| ("DATADOG_APP_KEY", r.chars(HEX, 40), false),
        |r| {
            (
                "SENTRY_AUTH_TOKEN",
                format!("sntryu_{}", r.chars(HEX, 64)),
                true,
            )
        },
        // feature flags
        |r| ("LAUNCHDARKLY_SDK_KEY", format!("sdk-{}", uuid(r)), true),
        |r| ("LD_API_KEY", format!("api-{}", uuid(r)), true),
        |r| {
            (
                "FLAGSMITH_SERVER_KEY",
                format!("ser.{}", r.chars(ALNUM, 22)),
                true,
            )
        },
        |r| {
            let t = format!(
                "configcat-sdk-1/{}/{}",
                r.chars(URLSAFE, 22),
                r.chars(URLSAFE, 22)
            );
            ("CONFIGCAT_SDK_KEY", t, true)
        },
        |r| {
            (
                "STATSIG_SERVER_SECRET",
                format!("secret-{}", r.chars(ALNUM, 43)),
                true,
            )
        },
        // CI services
        |r| {
            let t = format!("CCIPAT_{}_{}", r.chars(ALNUM, 22), r.chars(HEX, 40));
            ("CIRCLECI_TOKEN", t, true)
        },
        |r| {
            (
                "BUILDKITE_API_TOKEN",
                format!("bkua_{}", r.chars(HEX, 40)),
                true,
            )
        },
        |r| {
            let p = r.pick(&["squ_", "sqp_", "sqa_"]);
            ("SONAR_TOKEN", format!("{p}{}", r.chars(HEX, 40)), true)
        },
        |r| {
            let t = format!(
                "pat.{}.{}.{}",
                r.chars(URLSAFE, 22),
                r.chars(ALNUM, 24),
                r.chars(ALNUM, 20)
            );
            ("HARNESS_API_KEY", t, true)
        },
        |r| {
            (
                "GITLAB_CI_JOB_TOKEN",
                format!("glcbt-{}_{}", r.chars(ALNUM, 2), r.chars(URLSAFE, 20)),
                true,
            )
        },
        |r| {
            (
                "GITLAB_AGENT_TOKEN",
                format!("glagent-{}", r.chars(URLSAFE, 50)),
                true,
            )
        },
        |r| {
            (
                "GITLAB_RUNNER_REGISTRATION_TOKEN",
                format!("GR1348941{}", r.chars(URLSAFE, 20)),
                true,
            )
        },
        |r| {
            (
                "BITBUCKET_APP_PASSWORD",
                format!("ATBB{}", r.chars(ALNUM, 32)),
                true,
            )
        },
        |r| {
            (
                "OCTOPUS_API_KEY",
                format!("API-{}", r.chars(UPPER_ALNUM, 26)),
                true,
            )
        },
        |r| ("TRAVIS_TOKEN", r.chars(ALNUM, 22), false),
        // CDNs
        |r| {
            let t = format!("v1.0-{}-{}", r.chars(HEX, 24), r.chars(HEX, 146));
            ("CF_ORIGIN_CA_KEY", t, true)
        },
        |r| {
            let t = format!(
                "akab-{}-{}",
                r.chars(LOWER_ALNUM, 16),
                r.chars(LOWER_ALNUM, 16)
            );
            ("AKAMAI_CLIENT_TOKEN", t, true)
        },
        |r| ("CLOUDFLARE_API_TOKEN", r.chars(URLSAFE, 40), false),
        |r| ("FASTLY_API_TOKEN", r.chars(URLSAFE, 32), false),
        // email and SMS
        |r| {
            let t = format!("xkeysib-{}-{}", r.chars(HEX, 64), r.chars(ALNUM, 16));
            ("BREVO_API_KEY", t, true)
        },
        |r| {
            (
                "MAILERSEND_API_TOKEN",
                format!("mlsn.{}", r.chars(HEX, 64)),
                true,
            )
        },
        |r| {
            let t = format!("re_{}_{}", r.chars(ALNUM, 8), r.chars(ALNUM, 24));
            ("RESEND_API_KEY", t, true)
        },
        |r| {
            let t = format!("KEY{}_{}", r.chars(UPPER_HEX, 32), r.chars(ALNUM, 22));
            ("TELNYX_API_KEY", t, true)
        },
        |r| ("MAILJET_SECRET_KEY", r.chars(HEX, 32), false),
        |r| ("SPARKPOST_API_KEY", r.chars(HEX, 40), false),
        // maps
        |r| {
            let head = b64url(
                format!("{{\"u\":\"acme\",\"a\":\"{}\"}}", r.chars(LOWER_ALNUM, 25)).as_bytes(),
            );
            (
                "MAPBOX_SECRET_TOKEN",
                format!("sk.{head}.{}", r.chars(URLSAFE, 22)),
                true,
            )
        },
        |r| ("TOMTOM_API_KEY", r.chars(ALNUM, 32), false),
        // package registries
        |r| {
            (
                "CARGO_REGISTRY_TOKEN",
                format!("cio{}", r.chars(ALNUM, 32)),
                true,
            )
        },
        |r| {
            (
                "CLOJARS_TOKEN",
                format!("CLOJARS_{}", r.chars(HEX, 60)),
                true,
            )
        },
        // password managers and secret stores
        |r| {
            let json = format!(
                "{{\"signInAddress\":\"acme.1password.com\",\"userAuth\":{{\"method\":\"SRPg-4096\",\"alg\":\"PBES2g-HS256\",\"iterations\":650000,\"salt\":\"{}\"}},\"email\":\"{}@1passwordserviceaccounts.com\",\"srpX\":\"{}\",\"muk\":{{\"alg\":\"A256GCM\",\"ext\":true,\"k\":\"{}\",\"key_ops\":[\"encrypt\",\"decrypt\"],\"kty\":\"oct\",\"kid\":\"mp\"}},\"secretKey\":\"A3-{}\",\"throttleSecret\":{{\"seed\":\"{}\",\"deviceUuid\":\"{}\"}},\"deviceUuid\":\"{}\"}}",
                r.chars(URLSAFE, 22),
                r.chars(LOWER_ALNUM, 12),
                r.chars(HEX, 64),
                r.chars(URLSAFE, 43),
                r.chars(UPPER_ALNUM, 30),
                r.chars(HEX, 64),
                r.chars(LOWER_ALNUM, 26),
                r.chars(LOWER_ALNUM, 26)
            );
            (
                "OP_SERVICE_ACCOUNT_TOKEN",
                format!("ops_{}", b64(json.as_bytes()).replace('=', "")),
                true,
            )
        },
        |r| {
            let t = format!(
                "A3-{}-{}-{}-{}-{}-{}",
                r.chars(UPPER_ALNUM, 6),
                r.chars(UPPER_ALNUM, 6),
                r.chars(UPPER_ALNUM, 5),
                r.chars(UPPER_ALNUM, 5),
                r.chars(UPPER_ALNUM, 5),
                r.chars(UPPER_ALNUM, 5)
            );
            ("OP_SECRET_KEY", t, true)
        },
        |r| {
            let t = format!(
                "0.{}.{}:{}==",
                uuid(r).to_lowercase(),
                r.chars(ALNUM, 30),
                r.chars(B64, 22)
            );
            ("BWS_ACCESS_TOKEN", t, true)
        },
        |r| {
            let kind = r.pick(&["pt", "st", "sa", "ct", "scim", "audit"]);
            (
                "DOPPLER_TOKEN",
                format!("dp.{kind}.{}", r.chars(ALNUM, 43)),
                true,
            )
        },
        // IaC and cloud platforms
        |r| {
            (
                "HUBSPOT_ACCESS_TOKEN",
                format!("pat-{}-{}", r.pick(&["na1", "eu1"]), uuid(r).to_lowercase()),
                true,
            )
        },
        |r| {
            (
                "SUPABASE_ACCESS_TOKEN",
                format!("sbp_{}", r.chars(HEX, 40)),
                true,
            )
        },
        |r| {
            (
                "RENDER_API_KEY",
                format!("rnd_{}", r.chars(ALNUM, 32)),
                true,
            )
        },
        |r| {
            (
                "HEROKU_API_KEY",
                format!("HRKU-AA{}", r.chars(URLSAFE, 58)),
                true,
            )
        },
        |r| {
            (
                "FLY_API_TOKEN",
                format!("FlyV1 fm2_{}", r.chars(B64, 140)),
                true,
            )
        },
        |r| {
            (
                "PREFECT_API_KEY",
                format!("pnu_{}", r.chars(ALNUM, 36)),
                true,
            )
        },
        |r| {
            (
                "SCALINGO_API_TOKEN",
                format!("tk-us-{}", r.chars(URLSAFE, 48)),
                true,
            )
        },
        // work tools and AI gateways
        |r| {
            (
                "NOTION_TOKEN",
                format!("ntn_{}{}", r.chars(DIGITS, 11), r.chars(ALNUM, 35)),
                true,
            )
        },
        |r| {
            (
                "AIRTABLE_TOKEN",
                format!("pat{}.{}", r.chars(ALNUM, 14), r.chars(HEX, 64)),
                true,
            )
        },
        |r| {
            (
                "FIGMA_TOKEN",
                format!("figd_{}", r.chars(URLSAFE, 40)),
                true,
            )
        },
        |r| {
            (
                "OPENROUTER_API_KEY",
                format!("sk-or-v1-{}", r.chars(HEX, 64)),
                true,
            )
        },
        |r| {
            (
                "TAVILY_API_KEY",
                format!("tvly-{}", r.chars(ALNUM, 32)),
                true,
            )
        },
        |r| {
            (
                "EASYPOST_API_KEY",
                format!("EZAK{}", r.chars(ALNUM, 54)),
                true,
            )
        },
        |r| {
            (
                "SHIPPO_API_TOKEN",
                format!("shippo_live_{}", r.chars(HEX, 40)),
                true,
            )
        },
        |r| {
            (
                "README_API_KEY",
                format!("rdme_{}", r.chars(LOWER_ALNUM, 70)),
                true,
            )
        },
        |r| {
            (
                "OPENSHIFT_TOKEN",
                format!("sha256~{}", r.chars(URLSAFE, 43)),
                true,
            )
        },
        |r| {
            (
                "ALIBABA_ACCESS_KEY_ID",
                format!("LTAI{}", r.chars(ALNUM, 20)),
                true,
            )
        },
        |r| {
            (
                "OKTA_API_TOKEN",
                format!("00{}", r.chars(URLSAFE, 40)),
                false,
            )
        },
        |r| {
            (
                "HONEYBADGER_PERSONAL_TOKEN",
                format!("hbp_{}", r.chars(ALNUM, 36)),
                true,
            )
        },
        |r| {
            (
                "ARCGIS_API_KEY",
                format!("AAPK{}", r.chars(URLSAFE, 100)),
                true,
            )
        },
        |r| {
            let t = format!(
                "st.{}.{}.{}",
                r.chars(HEX, 24),
                r.chars(HEX, 32),
                r.chars(HEX, 32)
            );
            ("INFISICAL_TOKEN", t, true)
        },
        |r| {
            let t = format!(
                "eyJ0eXAiOiAiVENWMiJ9.{}.{}",
                r.chars(URLSAFE, 36),
                r.chars(URLSAFE, 48)
            );
            ("TEAMCITY_TOKEN", t, true)
        },
        |r| {
            (
                "AZURE_DEVOPS_PAT",
                r.chars(b"abcdefghijklmnopqrstuvwxyz234567", 52),
                false,
            )
        },
        |r| {
            (
                "MANDRILL_API_KEY",
                format!("md-{}", r.chars(URLSAFE, 22)),
                false,
            )
        },
    ]
}

pub(super) fn saas_long_tail(r: &mut Rng) -> Case {
    let vendors = saas_vendors();
    let (k, t, prefixed) = (vendors[r.below(vendors.len())])(r);
    let keyed = match r.below(8) {
        0 => format!("{k}={t}"),
        1 => format!("export {k}=\"{t}\""),
        2 => format!("  {}: {t}", k.to_lowercase()),
        3 => format!("{{ \"{}\": \"{t}\" }}", camel(k)),
        4 => format!("{} = \"{t}\"", k.to_lowercase()),
        5 => format!("docker run --rm -e {k}='{t}' acme/job"),
        6 => format!("env:\n  - name: {k}\n    value: {t}"),
        _ => format!("const {} = \"{t}\";", camel(k)),
    };
    let text = if !prefixed || r.below(2) == 0 {
        keyed
    } else {
        match r.below(9) {
            0 => format!("curl -H \"Authorization: Bearer {t}\" https://api.vendor.io/v2/me"),
            1 => format!("vendor login --token {t}"),
            2 => format!("The token {t} was revoked this morning."),
            3 => format!("| ci | `{t}` | owner: platform |"),
            4 => format!("client = Client(\"{t}\")"),
            5 => format!("2026-03-02 10:01:44 DEBUG using credential {t}"),
            6 => format!("<token>{t}</token>"),
            7 => format!("Paste `{t}` into the settings page."),
            _ => format!("# fallback: {t}"),
        }
    };
    let secret = t.trim_start_matches("FlyV1 ").to_string();
    Case { text, secret }
}
