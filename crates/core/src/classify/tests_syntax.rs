//! Unprefixed secrets assigned to secret-ish names in the less common syntaxes of issue 43:
//! HCL, TOML, Java properties, XML attributes and keyed elements, Kotlin, Swift, Go, Rust,
//! Gradle, C, Dockerfiles, SQL, R and make; and the same syntaxes holding no secret (empty
//! defaults, references, lengths, calls). Values are generated.

use super::testing::{ALNUM, HEX, patterns, score, synth};
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
