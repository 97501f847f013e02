//! Unprefixed secrets assigned to secret-ish names in the less common syntaxes of issue 43:
//! HCL, TOML, Java properties, XML attributes and keyed elements, Kotlin, Swift, Go, Rust,
//! Gradle, C, Dockerfiles, SQL, R and make; and the same syntaxes holding no secret (empty
//! defaults, references, lengths, calls). Values are generated.

use super::tests::{ALNUM, HEX, score, synth};
use super::*;

/// `text` reaches `medium` with a finding on the line that holds `secret`.
fn assert_found_on_its_line(text: &str, secret: &str) {
    let r = score(text);
    let line = text
        .find(secret)
        .map(|at| text[..at].matches('\n').count() + 1)
        .unwrap_or(0);
    assert!(
        r.verdict >= Verdict::Medium,
        "{text:?}: {:?}",
        r.detected_patterns
    );
    assert!(
        r.detected_patterns.iter().any(|f| f.line as usize == line),
        "{text:?}: nothing on line {line}: {:?}",
        r.detected_patterns
    );
}

#[test]
fn secrets_in_less_common_syntaxes_are_found_on_their_line() {
    let v = synth("", ALNUM, 32);
    let pw = format!("{}%{}!", synth("", ALNUM, 6), &synth("p", HEX, 5)[1..]);
    for (text, secret) in [
        // HCL
        (
            format!(
                "variable \"db_password\" {{\n  type      = string\n  default   = \"{pw}\"\n  sensitive = true\n}}\n"
            ),
            &pw,
        ),
        (
            format!("provider \"vendor\" {{\n  api_key = \"{v}\"\n}}\n"),
            &v,
        ),
        // TOML
        (format!("[service]\nauth_token = '{v}'\n"), &v),
        (
            format!("db = {{ user = \"app\", password = \"{pw}\" }}\n"),
            &pw,
        ),
        // Java properties, with symbols in the value
        (format!("app.smtp.password={pw}\n"), &pw),
        (format!("spring.datasource.password = {pw}\n"), &pw),
        // XML attributes and elements keyed by an attribute
        (
            format!("<credentials accessToken=\"{v}\" user=\"svc\"/>\n"),
            &v,
        ),
        (format!("<entry key=\"signing.secret\">{v}</entry>\n"), &v),
        (
            format!("<property name=\"db.password\">{pw}</property>\n"),
            &pw,
        ),
        (
            format!("<Setting name=\"ClientSecret\" value=\"{v}\" />\n"),
            &v,
        ),
        // Kotlin, Gradle
        (format!("private const val API_SECRET = \"{v}\"\n"), &v),
        (
            format!("val config = mapOf(\"client_secret\" to \"{v}\")\n"),
            &v,
        ),
        (
            format!("buildConfigField(\"String\", \"API_KEY\", \"\\\"{v}\\\"\")\n"),
            &v,
        ),
        // Swift
        (format!("static let clientSecret: String = \"{v}\"\n"), &v),
        (format!("let apiToken: String? = \"{v}\"\n"), &v),
        // Go, Rust
        (format!("var accessToken string = \"{v}\"\n"), &v),
        (
            format!("cfg := Config{{\n\tSigningSecret: \"{v}\",\n}}\n"),
            &v,
        ),
        (format!("const TOKEN: &'static str = \"{v}\";\n"), &v),
        // C, Dockerfile, SQL, R, make
        (format!("#define API_KEY \"{v}\"\n"), &v),
        (format!("ENV API_TOKEN {v}\n"), &v),
        (format!("CREATE USER app IDENTIFIED BY '{pw}';\n"), &pw),
        (format!("api_key <- \"{v}\"\n"), &v),
        (format!("AUTH_TOKEN ?= {v}\n"), &v),
        (format!("GITHUB_PAT={v}\n"), &v),
        (
            format!("env:\n  - name: AZURE_DEVOPS_PAT\n    value: {v}\n"),
            &v,
        ),
    ] {
        assert_found_on_its_line(&text, secret);
    }
}

#[test]
fn the_same_syntaxes_without_a_secret_stay_below_medium() {
    for text in [
        "variable \"db_password\" {\n  type      = string\n  sensitive = true\n}\n",
        "variable \"api_key\" {\n  default = \"\"\n}\n",
        "[service]\nauth_token = \"${AUTH_TOKEN}\"\n",
        "app.client.secret=${CLIENT_SECRET:changeme}\n",
        "<entry key=\"signing.secret\">${SIGNING_SECRET}</entry>\n",
        "<property name=\"db.password\"></property>\n",
        "val config = mapOf(\"client_secret\" to System.getenv(\"CLIENT_SECRET\"))\n",
        "buildConfigField(\"String\", \"API_KEY\", \"\\\"${apiKey}\\\"\")\n",
        "let apiToken: String? = nil\n",
        "var accessToken string = os.Getenv(\"ACCESS_TOKEN\")\n",
        "#define PASSWORD_MAX_LEN 64\n",
        "#define API_KEY_HEADER \"X-Api-Key\"\n",
        "ENV API_TOKEN_FILE /run/secrets/api_token\n",
        "ALTER USER app WITH PASSWORD 'changeme';\n",
        "api_key <- Sys.getenv(\"API_KEY\")\n",
        "AUTH_TOKEN ?= $(shell cat .token)\n",
        "file_path = \"/usr/share/app/config.toml\"\n",
    ] {
        let r = score(text);
        assert!(
            r.verdict < Verdict::Medium,
            "{text:?}: {:?}",
            r.detected_patterns
        );
    }
}
