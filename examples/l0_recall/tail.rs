//! The categories of issue 43, where the paper's own incident lives: a vendor's key prefix named
//! in prose with no key after it (Markdown and LaTeX), a JWT reduced to its header, redacted
//! forms after a prefix, PaaS keys that are plain UUIDs beside the platform's key name, the long
//! tail of SaaS token formats (observability, feature flags, CI, CDNs, email and SMS, maps,
//! package registries, password managers, IaC), HTTP authentication in requests and logs, and
//! unprefixed secrets in HCL, TOML, Java properties, XML attributes, Kotlin, Swift and Go (the
//! long tail of SaaS tokens is `saas.rs`'s). Also
//! the negatives these rules must stay quiet on: image data URIs, prose about credentials that
//! names no prefix, UUIDs under identifier names, header placeholders.
//!
//! Token shapes follow the vendors' documented formats (prefix, charset, length); every body is
//! drawn from the seeded PRNG, never written out.

use super::values::{opaque_value, password_value};
use super::{ALNUM, Case, HEX, LOWER_ALNUM, Rng, URLSAFE, b64, b64url};

pub(super) const UPPER_ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub(super) const UPPER_HEX: &[u8] = b"0123456789ABCDEF";

pub(super) fn uuid(r: &mut Rng) -> String {
    let u = format!(
        "{}-{}-4{}-{}{}-{}",
        r.chars(HEX, 8),
        r.chars(HEX, 4),
        r.chars(HEX, 3),
        r.pick(&["8", "9", "a", "b"]),
        r.chars(HEX, 3),
        r.chars(HEX, 12)
    );
    if r.below(5) == 0 { u.to_uppercase() } else { u }
}

// ---- a vendor prefix named in prose ------------------------------------------------------------

/// Vendor key prefixes as their documentation names them.
pub(super) const VENDOR_PREFIXES: &[(&str, &str)] = &[
    ("Anthropic", "sk-ant-"),
    ("Anthropic", "sk-ant-api03-"),
    ("Anthropic", "sk-ant-oat01-"),
    ("OpenAI", "sk-proj-"),
    ("OpenAI", "sk-"),
    ("OpenAI", "sk-svcacct-"),
    ("GitHub", "ghp_"),
    ("GitHub", "gho_"),
    ("GitHub", "ghs_"),
    ("GitHub", "github_pat_"),
    ("GitLab", "glpat-"),
    ("GitLab", "glrt-"),
    ("Slack", "xoxb-"),
    ("Slack", "xoxp-"),
    ("Slack", "xapp-"),
    ("AWS", "AKIA"),
    ("Google", "AIza"),
    ("Hugging Face", "hf_"),
    ("npm", "npm_"),
    ("PyPI", "pypi-"),
    ("Stripe", "sk_live_"),
    ("Stripe", "sk_test_"),
    ("Stripe", "rk_live_"),
    ("Stripe", "whsec_"),
    ("Groq", "gsk_"),
    ("xAI", "xai-"),
    ("Perplexity", "pplx-"),
    ("Replicate", "r8_"),
    ("DigitalOcean", "dop_v1_"),
    ("Shopify", "shpat_"),
    ("Linear", "lin_api_"),
    ("Vault", "hvs."),
    ("Grafana", "glsa_"),
    ("Docker Hub", "dckr_pat_"),
    ("Sentry", "sntrys_"),
    ("SendGrid", "SG."),
    ("Doppler", "dp.pt."),
    ("Databricks", "dapi"),
    ("New Relic", "NRAK-"),
    ("Postman", "PMAK-"),
    ("Pulumi", "pul-"),
    ("SonarQube", "squ_"),
    ("Buildkite", "bkua_"),
    ("Brevo", "xkeysib-"),
    ("1Password", "ops_"),
    ("Dynatrace", "dt0c01."),
];

/// `_` as LaTeX wants it in running text (`\_`).
fn latex(s: &str) -> String {
    s.replace('_', "\\_")
}

/// A sentence of Markdown or LaTeX that names a vendor's key prefix with no key after it.
pub(super) fn prefix_in_prose(r: &mut Rng) -> Case {
    let (vendor, p) = VENDOR_PREFIXES[r.below(VENDOR_PREFIXES.len())];
    let kind = r.pick(&[
        "API keys",
        "tokens",
        "access tokens",
        "secret keys",
        "credentials",
    ]);
    let text = if r.below(3) == 0 {
        let t = latex(p);
        match r.below(8) {
            0 => format!("Tokens of this kind always start with \\texttt{{{t}}}."),
            1 => format!("A string beginning \\verb|{p}| was pasted into the ticket."),
            2 => format!("\\item \\texttt{{{t}}}: {vendor} {kind}, rotated quarterly."),
            3 => format!("{vendor} {kind} are prefixed with {t}\\ldots{{}} and must be revoked."),
            4 => format!(
                "The filter rejected any draft containing {t} as a prefix\\footnote{{See the incident log.}}."
            ),
            5 => format!("\\paragraph{{Prefixes.}} {vendor} uses \\texttt{{{t}}} for {kind}."),
            6 => format!(
                "\\begin{{tabular}}{{ll}}\n{vendor} & \\texttt{{{t}}} \\\\\n\\end{{tabular}}"
            ),
            _ => format!("We redacted every occurrence of \\textbf{{{t}}} before submission."),
        }
    } else {
        let q = if r.below(3) == 0 { "" } else { "`" };
        match r.below(15) {
            11 => format!("Rotate any key that begins with {q}{p}{q} today."),
            12 => format!("* {vendor} {kind} (prefix: {q}{p}{q})"),
            13 => format!("<code>{p}</code> marks {vendor} {kind}."),
            14 => format!("If a log shows **{p}**, treat it as leaked."),
            0 => format!("Tokens of this kind always start with {q}{p}{q}."),
            1 => format!("A string beginning {q}{p}{q} was pasted into the ticket."),
            2 => format!("**Note:** {kind} prefixed **{p}** are production credentials."),
            3 => format!("- {q}{p}{q}: {vendor} {kind}"),
            4 => format!("| {vendor} | {q}{p}{q} | rotate every 90 days |"),
            5 => format!("> The leaked value started with {p} and was revoked within the hour."),
            6 => format!("## {vendor} {kind} ({q}{p}{q})"),
            7 => format!("The scanner flags anything matching `{p}*` in commits."),
            8 => format!("{vendor} {kind} look like {q}{p}{q} followed by random characters."),
            9 => format!("Search the history for \"{p}\" before publishing."),
            _ => format!("Our hook blocks {kind} whose prefix is '{p}'."),
        }
    };
    Case {
        text,
        secret: p.to_string(),
    }
}

// ---- a JWT reduced to its header ---------------------------------------------------------------

fn jwt_header(r: &mut Rng) -> String {
    let alg = r.pick(&[
        "HS256", "RS256", "ES256", "PS256", "EdDSA", "HS512", "RS384",
    ]);
    let json = match r.below(4) {
        0 => format!("{{\"alg\":\"{alg}\",\"typ\":\"JWT\"}}"),
        1 => format!("{{\"alg\":\"{alg}\"}}"),
        2 => format!("{{\"typ\":\"JWT\",\"alg\":\"{alg}\"}}"),
        _ => format!(
            "{{\"alg\":\"{alg}\",\"kid\":\"{}\",\"typ\":\"JWT\"}}",
            r.chars(HEX, 16)
        ),
    };
    b64url(json.as_bytes())
}

/// A JWT whose payload and signature were cut or redacted, as logs and tickets show it.
pub(super) fn jwt_header_only(r: &mut Rng) -> Case {
    let mut h = jwt_header(r);
    if r.below(6) == 0 {
        // cut short inside the header, an ellipsis after it
        let keep = r.range(10, h.len() - 1);
        h.truncate(keep);
        h.push_str("...");
    }
    let tail = r.pick(&[
        "",
        ".<redacted>.<redacted>",
        ".[REDACTED].[REDACTED]",
        ".REDACTED.REDACTED",
        ".***.***",
        ".<payload>.<signature>",
        "...",
        ".\u{2026}",
        ".",
        ".xxxxx.xxxxx",
    ]);
    let t = format!("{h}{tail}");
    let ts = format!("2026-01-{:02}T{:02}:14:07Z", r.range(1, 28), r.range(0, 23));
    let text = match r.below(8) {
        0 => format!("{ts} WARN auth: rejected token {t} (expired)"),
        1 => format!("{ts} DEBUG request headers: Authorization: Bearer {t}"),
        2 => format!("{{\"level\":\"warn\",\"msg\":\"invalid signature\",\"jwt\":\"{t}\"}}"),
        3 => format!("[{ts}] jwt={t} user=42 status=401"),
        4 => format!("The failing call sent `{t}` as its bearer token."),
        5 => format!("level=error msg=\"verify failed\" token=\"{t}\""),
        6 => format!("Authorization: Bearer {t}"),
        _ => format!("| 401 | {t} | clock skew |"),
    };
    Case { text, secret: h }
}

// ---- redacted forms after a prefix -------------------------------------------------------------

/// Prefixes of live formats beyond the issue-18 list: the long tail's too.
const REDACTED_PREFIXES: &[&str] = &[
    "sk-ant-api03-",
    "sk-ant-oat01-",
    "sk-proj-",
    "sk-",
    "ghp_",
    "gho_",
    "github_pat_",
    "glpat-",
    "glrt-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "hf_",
    "npm_",
    "pypi-",
    "sk_live_",
    "rk_live_",
    "whsec_",
    "gsk_",
    "xai-",
    "SG.",
    "dop_v1_",
    "shpat_",
    "lin_api_",
    "hvs.",
    "glsa_",
    "glc_",
    "dckr_pat_",
    "sntrys_",
    "NRAK-",
    "PMAK-",
    "pul-",
    "dp.pt.",
    "squ_",
    "bkua_",
    "xkeysib-",
    "dt0c01.",
    "CCIPAT_",
    "phx_",
    "sbp_",
    "ops_",
    "lsv2_pt_",
    "pscale_tkn_",
    "fo1_",
    "GOCSPX-",
    "ya29.",
    "AKCp",
];

pub(super) fn redacted_after_prefix(r: &mut Rng) -> Case {
    let p = r.pick(REDACTED_PREFIXES);
    let four = r.chars(ALNUM, 4);
    let t = match r.below(12) {
        0 => format!("{p}{{REDACTED}}"),
        1 => format!("{p}{}", "X".repeat(r.range(4, 40))),
        2 => format!("{p}{}", "x".repeat(r.range(4, 40))),
        3 => format!("{p}{four}..."),
        4 => format!("{p}{four}\u{2026}"),
        5 => format!("{p}{four}...{}", r.chars(ALNUM, 4)),
        6 => format!("{p}[REDACTED]"),
        7 => format!("{p}<redacted>"),
        8 => format!("{p}{}", "*".repeat(r.range(3, 24))),
        9 => format!("{p}{{redacted}}"),
        10 => format!("{p}{four}{}", "*".repeat(r.range(8, 20))),
        _ => format!("{p}{{REDACTED_{}}}", r.pick(&["KEY", "TOKEN", "SECRET"])),
    };
    let text = match r.below(9) {
        0 => format!("API_KEY={t}"),
        1 => format!("  token: \"{t}\""),
        2 => format!("Authorization: Bearer {t}"),
        3 => format!("{{\"apiKey\": \"{t}\"}}"),
        4 => format!("The key in the screenshot was {t}, already rotated."),
        5 => format!("| staging | `{t}` | revoked |"),
        6 => format!("2026-02-01 12:00:00 INFO loaded credential {t}"),
        7 => format!("curl -H \"X-Api-Key: {t}\" https://api.internal/v1"),
        _ => format!(
            "\\texttt{{{}}}",
            latex(&t).replace('{', "\\{").replace('}', "\\}")
        ),
    };
    Case { text, secret: t }
}

// ---- PaaS keys that are plain UUIDs ------------------------------------------------------------

/// Key names of platforms whose API keys or tokens are plain UUIDs.
const UUID_KEY_NAMES: &[&str] = &[
    "HEROKU_API_KEY",
    "RAILWAY_TOKEN",
    "RAILWAY_API_TOKEN",
    "SNYK_TOKEN",
    "CODECOV_TOKEN",
    "POSTMARK_SERVER_TOKEN",
    "POSTMARK_API_TOKEN",
    "OPSGENIE_API_KEY",
    "SCW_SECRET_KEY",
    "LOGGLY_TOKEN",
    "SPLUNK_HEC_TOKEN",
    "NPM_TOKEN",
];

pub(super) fn camel(upper: &str) -> String {
    let mut out = String::new();
    for (i, w) in upper.split('_').enumerate() {
        let w = w.to_lowercase();
        if i == 0 {
            out.push_str(&w);
        } else {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                out.push(f.to_ascii_uppercase());
                out.extend(c);
            }
        }
    }
    out
}

pub(super) fn paas_uuid_key(r: &mut Rng) -> Case {
    let k = r.pick(UUID_KEY_NAMES);
    let v = uuid(r);
    let platform = k.split('_').next().unwrap_or("").to_lowercase();
    // nested under the platform's name only where the name is the platform's (not `npm`)
    let forms = if platform == "npm" { 11 } else { 13 };
    let text = match r.below(forms) {
        // the platform's name on a parent key
        11 => format!("{{\n  \"{platform}\": {{\n    \"apiKey\": \"{v}\"\n  }}\n}}"),
        12 => format!("{platform}:\n  region: eu\n  token: {v}"),
        0 => format!("{k}={v}"),
        1 => format!("export {k}=\"{v}\""),
        2 => format!("env:\n  {k}: {v}"),
        3 => format!("      {k}: '{v}'"),
        4 => format!("{{\n  \"{}\": \"{v}\"\n}}", camel(k)),
        5 => format!("heroku config:set {k}={v} -a shop-api"),
        6 => format!("Set `{k}` to `{v}` in the dashboard, then push."),
        7 => format!("env:\n  - name: {k}\n    value: \"{v}\""),
        8 => format!("[{platform}]\n{} = \"{v}\"", k.to_lowercase()),
        9 => format!("docker run -e {k}={v} ghcr.io/acme/worker"),
        _ => format!("web: {k}={v} bundle exec puma -C config/puma.rb"),
    };
    Case { text, secret: v }
}

// ---- HTTP authentication -----------------------------------------------------------------------

pub(super) fn http_auth(r: &mut Rng) -> Case {
    let user = r.pick(&["admin", "ci", "svc-deploy", "grafana", "alice"]);
    let host = r.pick(&["api.internal", "10.2.0.8:8443", "metrics.acme.io"]);
    let v = opaque_value(r);
    match r.below(14) {
        0 | 1 => {
            let pw = password_value(r).replace(':', "x");
            let cred = b64(format!("{user}:{pw}").as_bytes());
            let text = match r.below(5) {
                0 => format!("curl -H 'Authorization: Basic {cred}' https://{host}/v1/items"),
                1 => format!("Authorization: Basic {cred}"),
                2 => format!("{{\"headers\": {{\"Authorization\": \"Basic {cred}\"}}}}"),
                3 => format!(
                    "127.0.0.1 - - [02/Mar/2026:10:01:44 +0000] \"GET /v1 HTTP/1.1\" 200 - Authorization=Basic {cred}"
                ),
                _ => format!("Proxy-Authorization: Basic {cred}"),
            };
            Case { text, secret: cred }
        }
        2..=4 => {
            let h = r.pick(&[
                "X-API-Key",
                "X-Api-Key",
                "Api-Key",
                "X-Auth-Token",
                "X-Access-Token",
                "X-API-Token",
                "Private-Token",
                "X-Client-Secret",
                "Ocp-Apim-Subscription-Key",
                "X-RapidAPI-Key",
            ]);
            let v = if r.below(4) == 0 { uuid(r) } else { v };
            let text = match r.below(6) {
                0 => format!("curl -H '{h}: {v}' https://{host}/v1/items"),
                1 => format!("curl -s --header \"{h}: {v}\" https://{host}/status"),
                2 => format!("GET /v1/items HTTP/1.1\nHost: {host}\n{h}: {v}\nAccept: */*"),
                3 => format!("http GET https://{host}/v1 {h}:{v}"),
                4 => format!("proxy_set_header {h} \"{v}\";"),
                _ => format!("  -H \"{h}: {v}\" \\"),
            };
            Case { text, secret: v }
        }
        5 | 6 => {
            let scheme = r.pick(&[
                "Token", "token", "ApiKey", "Api-Key", "SSWS", "GenieKey", "Splunk", "Key",
            ]);
            let v = if r.below(3) == 0 { uuid(r) } else { v };
            let text = match r.below(5) {
                0 => format!("curl -H \"Authorization: {scheme} {v}\" https://{host}/api"),
                1 => format!("Authorization: {scheme} {v}"),
                2 => format!("headers = {{\"Authorization\": \"{scheme} {v}\"}}"),
                3 => format!("req.Header.Set(\"Authorization\", \"{scheme} {v}\")"),
                _ => format!("DEBUG outgoing Authorization: {scheme} {v}"),
            };
            Case { text, secret: v }
        }
        7 | 8 => {
            let pw = password_value(r).replace([':', '\'', '"'], "x");
            let text = match r.below(6) {
                0 => format!("curl -u {user}:{pw} https://{host}/v2/_catalog"),
                1 => format!("curl --user '{user}:{pw}' https://{host}/"),
                2 => format!("curl --user={user}:{pw} https://{host}/"),
                3 => format!("curl -fsSL -u \"{user}:{pw}\" -X POST https://{host}/hook"),
                4 => format!("curl -x proxy:3128 --proxy-user {user}:{pw} https://{host}/"),
                _ => format!("http --auth {user}:{pw} GET https://{host}/api"),
            };
            Case { text, secret: pw }
        }
        9 => {
            let text =
                format!("curl -H \"Authorization: Bearer {v}\" -X DELETE https://{host}/v1/x");
            Case { text, secret: v }
        }
        10 => {
            let text = format!(
                "curl -d 'grant_type=client_credentials&client_id={}&client_secret={v}' https://{host}/oauth/token",
                r.chars(LOWER_ALNUM, 12)
            );
            Case { text, secret: v }
        }
        11 => {
            let text = format!("wget --header=\"X-Auth-Token: {v}\" https://{host}/backup.tar");
            Case { text, secret: v }
        }
        12 => {
            let text = match r.below(3) {
                0 => format!("fetch(url, {{ headers: {{ \"X-API-Key\": \"{v}\" }} }})"),
                1 => format!("Authorization: App {v}"),
                _ => format!("https://{host}/v1/search?q=shoes&api_key={v}&limit=20"),
            };
            Case { text, secret: v }
        }
        _ => {
            let text = format!(
                "Invoke-RestMethod -Uri https://{host}/v1 -Headers @{{\"X-Api-Key\"=\"{v}\"}}"
            );
            Case { text, secret: v }
        }
    }
}

// ---- unprefixed secrets in less common syntaxes ------------------------------------------------

pub(super) fn rare_syntax_secret(r: &mut Rng) -> Case {
    let name = r.pick(&[
        "db_password",
        "api_key",
        "client_secret",
        "auth_token",
        "signing_secret",
        "access_token",
        "smtp_password",
        "webhook_secret",
    ]);
    // a password as people set them, a key or a token as services issue them
    let v = if name.ends_with("password") {
        password_value(r).replace(['"', '\'', '\\', '$', '`'], "x")
    } else {
        opaque_value(r)
    };
    let camel_name = camel(&name.to_uppercase());
    let dotted = name.replace('_', ".");
    let upper = name.to_uppercase();
    let text = match r.below(28) {
        // C, Dockerfile, SQL, R, make
        22 => format!("#define {upper} \"{v}\""),
        23 => format!("ENV {upper} {v}"),
        24 if name.ends_with("password") => format!("CREATE USER app IDENTIFIED BY '{v}';"),
        24 => format!("ALTER USER app WITH PASSWORD '{v}';"),
        25 => format!("{name} <- \"{v}\""),
        26 => format!("{upper} ?= {v}"),
        27 => {
            let pat = opaque_value(r);
            return Case {
                text: format!("GITHUB_PAT={pat}"),
                secret: pat,
            };
        }
        // HCL
        0 => format!(
            "variable \"{name}\" {{\n  type      = string\n  default   = \"{v}\"\n  sensitive = true\n}}"
        ),
        1 => format!("provider \"vendor\" {{\n  {name} = \"{v}\"\n  region = \"eu-west-1\"\n}}"),
        2 => format!("locals {{\n  {name} = \"{v}\"\n}}"),
        // TOML
        3 => format!("[service]\n{name} = '{v}'"),
        4 => format!("db = {{ user = \"app\", {name} = \"{v}\" }}"),
        5 => format!("[auth]\n{dotted} = \"{v}\""),
        // Java properties
        6 => format!("app.{dotted}={v}"),
        7 => format!("app.{dotted} = {v}"),
        8 => format!("spring.{dotted}: {v}"),
        // XML attributes
        9 => format!("<credentials {camel_name}=\"{v}\" user=\"svc\"/>"),
        10 => format!("<entry key=\"{dotted}\">{v}</entry>"),
        11 => format!("<Setting name=\"{camel_name}\" value=\"{v}\" />"),
        12 => format!("<property name=\"{dotted}\">{v}</property>"),
        // Kotlin
        13 => format!("val {camel_name} = \"{v}\""),
        14 => format!("private const val {} = \"{v}\"", name.to_uppercase()),
        15 => format!(
            "buildConfigField(\"String\", \"{}\", \"\\\"{v}\\\"\")",
            name.to_uppercase()
        ),
        16 => format!("val config = mapOf(\"{name}\" to \"{v}\")"),
        // Swift
        17 => format!("static let {camel_name}: String = \"{v}\""),
        18 => format!("let {camel_name}: String? = \"{v}\""),
        // Go
        19 => format!("var {camel_name} string = \"{v}\""),
        20 => format!("cfg := Config{{\n\t{}: \"{v}\",\n}}", {
            let mut c = camel_name.clone();
            if let Some(f) = c.get_mut(0..1) {
                f.make_ascii_uppercase();
            }
            c
        }),
        _ => format!("const {camel_name} = `{v}`"),
    };
    Case { text, secret: v }
}

// ---- negatives ---------------------------------------------------------------------------------

/// A small image inlined as a data URI: content, not a filter risk.
pub(super) fn image_data_uri(r: &mut Rng) -> Case {
    let mime = r.pick(&[
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/x-icon",
        "image/avif",
    ]);
    let n = r.range(60, 1500);
    let raw: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    let v = b64(&raw);
    let text = match r.below(5) {
        0 => format!("<img src=\"data:{mime};base64,{v}\" alt=\"logo\" width=\"16\">"),
        1 => format!(".icon {{ background-image: url(data:{mime};base64,{v}); }}"),
        2 => format!("  background: url('data:{mime};base64,{v}') no-repeat;"),
        3 => format!("![badge](data:{mime};base64,{v})"),
        _ => format!("<link rel=\"icon\" href=\"data:{mime};base64,{v}\">"),
    };
    Case { text, secret: v }
}

/// Lines of the issue-43 kinds that must stay quiet: prose about credentials that names no
/// prefix, UUIDs under identifier names, header and auth placeholders, words that start like a
/// prefix, JSON in base64 that is not a JWT, Markdown and LaTeX underscores.
pub(super) fn quiet_line(r: &mut Rng) -> String {
    match r.below(16) {
        0 => r
            .pick(&[
                "Rotate the API key every 90 days and never paste it into a ticket.",
                "Tokens are scoped per project; ask an admin for one.",
                "The secret key lives in the vault, not in this repository.",
                "\\section{Credentials} Keys are issued per environment.",
            ])
            .to_string(),
        1 => format!(
            "{}={}",
            r.pick(&[
                "HEROKU_APP_ID",
                "RAILWAY_PROJECT_ID",
                "SNYK_ORG_ID",
                "CODECOV_REPO_ID",
                "POSTMARK_SERVER_ID"
            ]),
            uuid(r)
        ),
        2 => format!("X-Request-Id: {}", uuid(r)),
        3 => format!("Idempotency-Key: {}", uuid(r)),
        4 => format!(
            "curl -H \"{}\" https://api.internal/v1",
            r.pick(&[
                "X-API-Key: $API_KEY",
                "Authorization: Token ${TOKEN}",
                "X-Auth-Token: <your-token>",
                "Authorization: Basic $(echo -n $U:$P | base64)"
            ])
        ),
        5 => r
            .pick(&[
                "curl -u \"$USER:$PASS\" https://x.io",
                "curl -u admin:${ADMIN_PASSWORD} https://x.io",
                "curl --user user:password https://example.com",
            ])
            .to_string(),
        6 => r
            .pick(&[
                "pip install sk-learn-extra",
                "task-runner --skip",
                "from huggingface_hub import hf_hub_download",
                "npm_config_cache=/tmp/npm",
            ])
            .to_string(),
        7 => format!(
            "\"config\": \"{}\"",
            b64(format!("{{\"theme\":\"dark\",\"size\":{}}}", r.range(1, 99)).as_bytes())
        ),
        8 => format!(
            "The \\texttt{{max\\_retries}} and \\texttt{{api\\_timeout}} settings default to {}.",
            r.range(2, 9)
        ),
        9 => format!("| `retry_count` | {} | how often to retry |", r.range(1, 5)),
        10 => format!("    \"x-csrf-token\": \"{}\",", r.chars(URLSAFE, 32)),
        11 => format!("session_id = \"{}\"", uuid(r)),
        12 => format!(
            "<add key=\"{}\" value=\"true\" />",
            r.pick(&["EnableApiKeyAuth", "UseTokenCache"])
        ),
        13 => format!("ETag: \"{}\"", r.chars(HEX, 32)),
        14 => format!(
            "![diagram](data:image/png;base64,{})",
            b64(&(0..r.range(100, 400))
                .map(|_| r.next() as u8)
                .collect::<Vec<u8>>())
        ),
        _ => format!(
            "Content-Security-Policy: default-src 'self'; img-src data: https://cdn.{}.io",
            r.chars(LOWER_ALNUM, 6)
        ),
    }
}
