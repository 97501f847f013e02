//! The redacted shapes of issue 43 (`prefixes.rs`): a vendor's key prefix named in prose with
//! no key after it (Markdown, LaTeX with `\_`), a JWT cut down to its header, redacted forms
//! after a prefix; each low and naming the vendor, never medium by itself, and the near-misses
//! that stay quiet. Secret-shaped strings are generated, never written out.

use super::testing::{ALNUM, b64url, clf, patterns, score, synth};
use super::*;

/// `text` scores low with one finding of `rule`, of the `redacted_prefix` family.
fn assert_low_by(text: &str, rule: &str) {
    let r = score(text);
    assert_eq!(
        r.verdict,
        Verdict::Low,
        "{text:?}: {:?}",
        r.detected_patterns
    );
    assert!(
        r.detected_patterns
            .iter()
            .any(|f| f.pattern == rule && f.kind == "redacted_prefix"),
        "{text:?}: {rule} not among {:?}",
        r.detected_patterns
    );
}

/// `text` scores low with a redacted shape among its findings (with `only`, all of them).
fn assert_low_redacted(text: &str, only: bool) {
    let r = score(text);
    assert_eq!(
        r.verdict,
        Verdict::Low,
        "{text:?}: {:?}",
        r.detected_patterns
    );
    let redacted = |f: &Finding| f.kind == "redacted_prefix";
    let found = if only {
        r.detected_patterns.iter().all(redacted)
    } else {
        r.detected_patterns.iter().any(redacted)
    };
    assert!(found, "{text:?}: {:?}", r.detected_patterns);
}

#[test]
fn a_vendor_prefix_named_in_markdown_prose_is_low_and_names_the_vendor() {
    for (prefix, rule) in [
        ("sk-ant-", "anthropic_redacted_prefix"),
        ("sk-ant-api03-", "anthropic_redacted_prefix"),
        ("ghp_", "github_classic_redacted_prefix"),
        ("xoxb-", "slack_bot_redacted_prefix"),
        ("AKIA", "aws_access_key_redacted_prefix"),
        ("sk_live_", "stripe_live_redacted_prefix"),
        ("glpat-", "gitlab_redacted_prefix"),
        ("dt0c01.", "dynatrace_redacted_prefix"),
        ("eyJ", "jwt_redacted_prefix"),
    ] {
        for text in [
            format!("Tokens of this kind always start with `{prefix}`.\n"),
            format!("A string beginning {prefix} was pasted into the ticket.\n"),
            format!("**Note:** keys prefixed **{prefix}** are production credentials.\n"),
            format!("| vendor | `{prefix}` | rotate |\n"),
            format!("The scanner flags anything matching `{prefix}*`.\n"),
            format!("<code>{prefix}</code> marks them.\n"),
        ] {
            assert_low_by(&text, rule);
        }
    }
}

#[test]
fn a_vendor_prefix_named_in_latex_with_escaped_underscores_is_low() {
    for (latex, rule) in [
        ("sk\\_live\\_", "stripe_live_redacted_prefix"),
        ("github\\_pat\\_", "github_fine_grained_redacted_prefix"),
        ("ghp\\_", "github_classic_redacted_prefix"),
        ("hf\\_", "huggingface_redacted_prefix"),
        ("sk-ant-", "anthropic_redacted_prefix"),
    ] {
        for text in [
            format!("Tokens of this kind always start with \\texttt{{{latex}}}.\n"),
            format!("\\item \\texttt{{{latex}}}: the vendor's keys\n"),
            format!("keys prefixed with {latex}\\ldots{{}} are revoked\n"),
            format!("Authorization: Bearer {latex}\\{{REDACTED\\}}\n"),
        ] {
            assert_low_by(&text, rule);
        }
    }
    // `\verb` keeps the underscore as it is
    assert_low_by(
        "A string beginning \\verb|ghp_| was pasted.\n",
        "github_classic_redacted_prefix",
    );
}

#[test]
fn the_papers_incident_in_latex_is_low() {
    assert_low_by(
        "\\texttt{Authorization: Bearer sk-ant-oat01-\\{REDACTED\\}}\n",
        "anthropic_redacted_prefix",
    );
}

#[test]
fn many_prefixes_named_together_stay_low() {
    let text = "Prefixes: `sk-ant-`, `ghp_`, `xoxb-`, `AKIA`, `AIza`, `hf_`, `npm_`, `sk_live_`, \
                `glpat-`, `SG.`, `xai-`, `gsk_`.\n";
    let r = score(text);
    assert_eq!(r.verdict, Verdict::Low, "{:?}", r.detected_patterns);
    assert!(r.detected_patterns.len() >= 10, "{:?}", r.detected_patterns);
}

#[test]
fn words_and_identifiers_that_hold_a_prefix_are_not_named_prefixes() {
    for text in [
        "pip install sk-learn-extra\n",
        "task-runner --skip\n",
        "from huggingface_hub import hf_hub_download\n",
        "npm_config_cache=/tmp/npm\n",
        "let prefix_ghp = 1;\n",
        "The pul-\nmonary artery\n",
        "SOUTHEAST ASIA PACIFIC\n",
        "Region: ASIA/TOKYO\n",
        "DAPI staining\n",
        "const sk = 1; // sk-1 is next\n",
    ] {
        assert!(patterns(text).is_empty(), "{text:?}: {:?}", patterns(text));
    }
    // a prefix that is also a word is named only in quotes
    assert_low_by(
        "Temporary keys start with `ASIA`.\n",
        "aws_temporary_key_redacted_prefix",
    );
}

#[test]
fn redacted_forms_after_a_prefix_are_low_and_never_medium() {
    let four = synth("", ALNUM, 4);
    for prefix in [
        "sk-proj-",
        "ghp_",
        "AKIA",
        "dop_v1_",
        "bkua_",
        "NRAK-",
        "xkeysib-",
        "xoxa-",
        "pscale_pw_",
        "sq0csp-",
    ] {
        for form in [
            format!("{prefix}{{REDACTED}}"),
            format!("{prefix}{{REDACTED_TOKEN}}"),
            format!("{prefix}[REDACTED]"),
            format!("{prefix}<redacted>"),
            format!("{prefix}(redacted)"),
            format!("{prefix}{{{{ redacted }}}}"),
            format!("{prefix}{}", "X".repeat(20)),
            format!("{prefix}{}", "x".repeat(8)),
            format!("{prefix}{}", "*".repeat(12)),
            format!("{prefix}{four}..."),
            format!("{prefix}{four}\u{2026}"),
            format!("{prefix}{four}...{four}"),
            format!("{prefix}{four}{}", "*".repeat(10)),
            format!("{prefix}\u{2022}\u{2022}\u{2022}\u{2022}"),
        ] {
            for text in [
                format!("API_KEY={form}\n"),
                format!("The key in the screenshot was {form}, already rotated.\n"),
                format!("curl -H \"X-Api-Key: {form}\" https://api.internal/v1\n"),
            ] {
                assert_low_redacted(&text, false);
            }
        }
    }
}

#[test]
fn a_jwt_cut_down_to_its_header_is_low_in_logs_and_headers() {
    for json in [
        r#"{"alg":"HS256","typ":"JWT"}"#,
        r#"{"alg":"RS256","kid":"3f9a0c1d2e4b5a6c"}"#,
        r#"{"typ":"JWT","alg":"EdDSA"}"#,
    ] {
        let h = b64url(json);
        for tail in [
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
        ] {
            let t = format!("{h}{tail}");
            for text in [
                format!("2026-01-04T12:00:01Z WARN auth: rejected token {t} (expired)\n"),
                format!("Authorization: Bearer {t}\n"),
                format!("{{\"level\":\"warn\",\"jwt\":\"{t}\"}}\n"),
                format!("level=error token={t} status=401\n"),
                format!("access_token: \"{t}\"\n"),
            ] {
                assert_low_redacted(&text, true);
            }
        }
    }
    // a header cut short inside, with an ellipsis
    let h = b64url(r#"{"alg":"HS256","typ":"JWT"}"#);
    assert_low_by(&format!("token {}...\n", &h[..14]), "jwt_redacted_prefix");
}

#[test]
fn a_whole_jwt_is_still_a_credential_and_base64_json_that_is_no_header_is_quiet() {
    let h = b64url(r#"{"alg":"HS256","typ":"JWT"}"#);
    let p = b64url(r#"{"sub":"1234567890","iat":1516239022}"#);
    let sig = synth(
        "",
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        43,
    );
    let r = score(&format!("Authorization: Bearer {h}.{p}.{sig}\n"));
    assert!(r.verdict >= Verdict::Medium, "{:?}", r.detected_patterns);
    assert!(r.detected_patterns.iter().any(|f| f.pattern == "jwt"));
    // a header and a signature with the claims cut is no header alone (nothing reports it
    // as one), and JSON in base64 that names no algorithm is no JWT
    assert!(
        !patterns(&format!("x {h}.{sig}\n")).contains(&"jwt_header_only".to_string()),
        "{:?}",
        patterns(&format!("x {h}.{sig}\n"))
    );
    let config = b64url(r#"{"theme":"dark","size":12}"#);
    assert!(patterns(&format!("\"config\": \"{config}\"\n")).is_empty());
}

#[test]
fn placeholders_after_a_prefix_stay_below_medium() {
    for text in [
        "TOKEN=ghp_your_token_here\n",
        "KEY=sk-ant-<your key>\n",
        "export OPENAI_API_KEY=sk-...\n",
        "AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX\n",
        "SLACK_TOKEN=xoxb-000000000000-000000000000-xxxxxxxxxxxxxxxxxxxxxxxx\n",
    ] {
        assert!(score(text).verdict < Verdict::Medium, "{text:?}");
    }
}

#[test]
fn every_placeholder_redaction_writes_is_quiet() {
    // redacting a redacted draft changes nothing: no rule matches its own placeholder
    let c = clf();
    for (name, _) in c.rules() {
        let text = format!("key = \"{{REDACTED:{name}}}\"\nx {{REDACTED:{name}}} y\n");
        assert!(patterns(&text).is_empty(), "{name}: {:?}", patterns(&text));
    }
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
