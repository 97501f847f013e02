//! HTTP authentication in requests and logs (issue 43): Basic credentials, custom key headers
//! (`X-API-Key`, `Api-Key`, `X-Auth-Token`) in curl, raw requests, wget and nginx, other
//! `Authorization` schemes, curl's user options, secrets in query strings and form bodies;
//! their placeholders and the headers that carry no secret. Values are generated.

use super::testing::{ALNUM, B64, assert_below_medium, b64, score, synth};
use super::*;

fn assert_medium_on_its_line(text: &str) {
    let r = score(text);
    assert!(
        r.verdict >= Verdict::Medium,
        "{text:?}: {:?}",
        r.detected_patterns
    );
}

#[test]
fn custom_key_headers_with_a_random_value_are_found_in_curl_requests_and_logs() {
    let v = synth("", ALNUM, 32);
    for h in [
        "X-API-Key",
        "Api-Key",
        "X-Auth-Token",
        "X-Access-Token",
        "Private-Token",
        "X-Client-Secret",
        "Ocp-Apim-Subscription-Key",
        "X-RapidAPI-Key",
    ] {
        for text in [
            format!("curl -H '{h}: {v}' https://api.internal/v1/items\n"),
            format!("curl -s --header \"{h}: {v}\" https://api.internal/status\n"),
            format!("GET /v1/items HTTP/1.1\nHost: api.internal\n{h}: {v}\nAccept: */*\n"),
            format!("wget --header=\"{h}: {v}\" https://api.internal/backup.tar\n"),
            format!("proxy_set_header {h} \"{v}\";\n"),
            format!("http GET https://api.internal/v1 {h}:{v}\n"),
        ] {
            assert_medium_on_its_line(&text);
        }
    }
}

#[test]
fn authorization_schemes_beyond_basic_and_bearer_are_found() {
    let v = synth("", ALNUM, 40);
    for scheme in [
        "Token", "token", "ApiKey", "Api-Key", "SSWS", "GenieKey", "Splunk", "Key", "App",
    ] {
        for text in [
            format!("Authorization: {scheme} {v}\n"),
            format!("curl -H \"Authorization: {scheme} {v}\" https://api.internal/api\n"),
            format!("headers = {{\"Authorization\": \"{scheme} {v}\"}}\n"),
            format!("req.Header.Set(\"Authorization\", \"{scheme} {v}\")\n"),
        ] {
            assert_medium_on_its_line(&text);
        }
    }
}

#[test]
fn basic_credentials_and_curl_user_options_are_found() {
    let pw = format!("{}7!", synth("", ALNUM, 12));
    let cred = b64(format!("deploy:{pw}"));
    for text in [
        format!("Authorization: Basic {cred}\n"),
        format!("Proxy-Authorization: Basic {cred}\n"),
        format!("curl -H 'Authorization: Basic {cred}' https://x.internal/\n"),
        format!("curl -u deploy:{pw} https://x.internal/\n"),
        format!("curl --user 'deploy:{pw}' https://x.internal/\n"),
        format!("curl --user=deploy:{pw} https://x.internal/\n"),
        format!("curl -x proxy:3128 --proxy-user deploy:{pw} https://x.internal/\n"),
        format!("http --auth deploy:{pw} GET https://x.internal/api\n"),
    ] {
        assert_medium_on_its_line(&text);
    }
}

#[test]
fn secrets_in_query_strings_and_form_bodies_are_found() {
    let v = synth("", ALNUM, 36);
    for text in [
        format!(
            "curl -d 'grant_type=client_credentials&client_id=abc&client_secret={v}' https://x/token\n"
        ),
        format!("https://api.internal/v1/search?q=shoes&api_key={v}&limit=20\n"),
        format!("GET /callback?access_token={v}#state HTTP/1.1\n"),
    ] {
        assert_medium_on_its_line(&text);
    }
}

#[test]
fn header_placeholders_references_and_headers_without_secrets_stay_below_medium() {
    let random = synth("", ALNUM, 32);
    let b64_json = b64("{\"theme\":\"dark\"}");
    for text in [
        "curl -H \"X-API-Key: $API_KEY\" https://x/\n".to_string(),
        "curl -H \"X-Auth-Token: <your-token>\" https://x/\n".to_string(),
        "curl -H \"Authorization: Token ${TOKEN}\" https://x/\n".to_string(),
        "curl -u \"$USER:$PASS\" https://x/\n".to_string(),
        "curl -u admin:${ADMIN_PASSWORD} https://x/\n".to_string(),
        "curl --user user:password https://example.com\n".to_string(),
        "X-Api-Key: YOUR_API_KEY_HERE\n".to_string(),
        "https://x/search?api_key=YOUR_API_KEY&q=1\n".to_string(),
        // headers whose value is no secret
        format!("X-CSRF-Token: {random}\n"),
        format!("    \"x-csrf-token\": \"{random}\",\n"),
        format!("Sec-WebSocket-Key: {}\n", synth("", B64, 22)),
        format!("X-Cache-Key: {random}\n"),
        format!("X-Config: {b64_json}\n"),
        "Authorization: Token short\n".to_string(),
    ] {
        assert_below_medium(&text);
    }
}
