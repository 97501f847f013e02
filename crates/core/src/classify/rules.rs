//! The built-in rule table of the L0 classifier: credential formats after the public rule sets of
//! gitleaks, Nosey Parker, detect-secrets and GitHub secret scanning, plus structural rules
//! (private-key blocks, JWTs, Basic/Bearer auth, URL credentials, netrc, docker and npm auth,
//! Kubernetes Secret data), entropy-gated generic assignments (in the syntaxes agents write:
//! `key = value` in a dozen languages, XML attributes and elements, Kubernetes env lists, CLI
//! flags, two-argument calls, prose, HTTP headers), and the detectors without a regex (PII
//! numbers, binary hints). The long tail of SaaS formats is `vendors`'s, the redacted-prefix
//! shapes `prefixes`'s.
//!
//! Every regex rule names the literal keywords that must occur near a match; one Aho-Corasick pass
//! over the content finds them, and a rule's regex only runs on the windows around its keywords.
//! A named group `s` marks the secret inside a match (what redaction replaces).

use super::spec::{Check, Gate, RuleSpec, Scanner, Tier, Window, rule, scanner, tok};

/// The rule whose capture groups the scan derives from its match span
/// (`derive::assignment_groups`) instead of a capture search.
pub(crate) const ASSIGNMENT_RULE: &str = "generic_secret_assignment";
/// The rule whose capture groups the scan derives from its match span
/// (`derive::userinfo_groups`): a password in a URL's userinfo.
pub(crate) const USERINFO_RULE: &str = "url_password";
/// The rule whose capture groups the scan derives from its match span
/// (`derive::prose_groups`): a credential named in prose.
pub(crate) const PROSE_RULE: &str = "prose_credential";

/// The built-in rules, in precedence order within a tier.
pub(crate) fn builtin() -> Vec<RuleSpec> {
    let mut v: Vec<RuleSpec> = vec![
        // ---- private keys (family pem_block) ----
        rule("rsa_private_key", "pem_block", &["-----begin rsa private key"], r"-----BEGIN RSA PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("ec_private_key", "pem_block", &["-----begin ec private key"], r"-----BEGIN EC PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("dsa_private_key", "pem_block", &["-----begin dsa private key"], r"-----BEGIN DSA PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("openssh_private_key", "pem_block", &["-----begin openssh private key"], r"-----BEGIN OPENSSH PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("pkcs8_private_key", "pem_block", &["-----begin private key"], r"-----BEGIN PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("encrypted_private_key", "pem_block", &["-----begin encrypted private key"], r"-----BEGIN ENCRYPTED PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("pgp_private_key_block", "pem_block", &["-----begin pgp private key block"], r"-----BEGIN PGP PRIVATE KEY BLOCK-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("other_pem_private_key", "pem_block", &["private key-----"], r"-----BEGIN [A-Z0-9 ]{1,30} PRIVATE KEY-----")
            .check(Check::PrivateKey).tier(Tier::Structural),
        rule("private_key_redacted", "redacted_prefix", &["private key-----", "private key block-----"],
            r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
            .check(Check::PemRedacted).tier(Tier::Redacted),
        rule("putty_private_key", "pem_block", &["putty-user-key-file-"], r"PuTTY-User-Key-File-[0-9]: [a-z0-9-]+")
            .check(Check::Putty).tier(Tier::Structural).window(Window::Forward(16 * 1024)),
        rule("age_secret_key", "pem_block", &["age-secret-key-1"], &tok("AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")),
        // ---- GitHub (family github_pat) ----
        rule("github_classic_pat", "github_pat", &["ghp_"], &tok("ghp_[A-Za-z0-9]{36}")),
        rule("github_oauth_token", "github_pat", &["gho_"], &tok("gho_[A-Za-z0-9]{36}")),
        rule("github_user_to_server_token", "github_pat", &["ghu_"], &tok("ghu_[A-Za-z0-9]{36}")),
        rule("github_server_to_server_token", "github_pat", &["ghs_"], &tok("ghs_[A-Za-z0-9]{36}")),
        rule("github_refresh_token", "github_pat", &["ghr_"], &tok("ghr_[A-Za-z0-9]{36,76}")),
        rule("github_fine_grained_pat", "github_pat", &["github_pat_"], &tok("github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}")),
        // ---- GitLab ----
        rule("gitlab_pat", "api_key", &["glpat-"], &tok("glpat-[A-Za-z0-9_\\-]{20,}")),
        rule("gitlab_pipeline_trigger_token", "api_key", &["glptt-"], &tok("glptt-[0-9a-f]{40}")),
        rule("gitlab_runner_token", "api_key", &["glrt-"], &tok("glrt-[A-Za-z0-9_\\-]{20,}")),
        rule("gitlab_deploy_token", "api_key", &["gldt-"], &tok("gldt-[A-Za-z0-9_\\-]{20,}")),
        rule("gitlab_feed_token", "api_key", &["glft-"], &tok("glft-[A-Za-z0-9_\\-]{20,}")),
        rule("gitlab_oauth_app_secret", "api_key", &["gloas-"], &tok("gloas-[A-Za-z0-9_\\-]{64}")),
        // ---- AWS ----
        rule("aws_access_key_id", "api_key", &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
            r"(?:^|[^A-Za-z0-9])(?P<s>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})(?:[^A-Za-z0-9]|$)").cs(),
        rule("aws_secret_access_key", "aws_secret", &["secret_access_key", "secretaccesskey", "aws_secret", "secret-access-key", "secret_key"],
            r#"(?i)(?:aws_?)?secret[_\-]?(?:access[_\-]?)?key["']?\s{0,4}(?::=|=>|=|:)\s{0,4}["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#)
            .tier(Tier::Structural).gate(Gate::Assign),
        rule("aws_session_token", "aws_secret", &["session_token", "sessiontoken"],
            r#"(?i)(?:aws_?)?session_?token["']?\s{0,4}(?::=|=>|=|:)\s{0,4}["']?(?P<s>[A-Za-z0-9/+=]{100,})"#)
            .tier(Tier::Structural),
        rule("aws_secret_key_example", "api_key", &["EXAMPLEKEY"], &tok("[A-Za-z0-9/+]{30}EXAMPLEKEY"))
            .tier(Tier::Structural).cs(),
        rule("aws_mws_key", "api_key", &["amzn.mws."], &tok("amzn\\.mws\\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")),
        // ---- Google / GCP ----
        rule("gcp_api_key", "api_key", &["AIza"], &tok("AIza[0-9A-Za-z_\\-]{35}")).cs(),
        rule("gcp_service_account_key_id", "api_key", &["private_key_id"], r#""private_key_id"\s*:\s*"(?P<s>[0-9a-f]{40})""#),
        rule("gcp_oauth_client_secret", "api_key", &["gocspx-"], &tok("GOCSPX-[A-Za-z0-9_\\-]{28}")),
        rule("google_oauth_access_token", "api_key", &["ya29."], &tok("ya29\\.[0-9A-Za-z_\\-]{30,}")),
        rule("google_oauth_refresh_token", "api_key", &["1//0"], &tok("1//0[0-9A-Za-z_\\-]{40,}")),
        rule("firebase_cloud_messaging_key", "api_key", &["apa91b"], &tok("AAAA[A-Za-z0-9_\\-]{7}:APA91b[A-Za-z0-9_\\-]{130,}")),
        // ---- Azure ----
        rule("azure_storage_account_key", "connection_string", &["accountkey="],
            r"(?i)AccountKey=(?P<s>[A-Za-z0-9+/]{40,}={0,2})").tier(Tier::Structural),
        rule("azure_shared_access_key", "connection_string", &["sharedaccesskey="],
            r"(?i)SharedAccessKey=(?P<s>[A-Za-z0-9+/]{40,}={0,2})").tier(Tier::Structural),
        rule("azure_sas_token", "connection_string", &["sv="],
            r"(?i)sv=[0-9]{4}-[0-9]{2}-[0-9]{2}[^\s]{0,200}?[?&]sig=(?P<s>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})").tier(Tier::Structural),
        rule("azure_ad_client_secret", "api_key", &["Q~"],
            r"(?:^|[^A-Za-z0-9_~.\-])(?P<s>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})(?:[^A-Za-z0-9_~.\-]|$)").cs(),
        // ---- Slack ----
        rule("slack_bot_token", "api_key", &["xoxb-"], &tok("xoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]{24,34}")),
        rule("slack_user_token", "api_key", &["xoxp-", "xoxe-"], &tok("xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34}")),
        rule("slack_app_token", "api_key", &["xapp-"], &tok("xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,13}-[a-z0-9]{60,64}")),
        rule("slack_config_token", "api_key", &["xoxe.xox"], &tok("xoxe\\.xox[bp]-[0-9]-[A-Z0-9]{160,170}")),
        // older user and bot tokens: shorter digit groups, a lowercase hex-like tail
        rule("slack_legacy_user_token", "api_key", &["xoxp-", "xoxb-"], &tok("xox[bp](?:-[0-9]{4,13}){2,3}-[a-z0-9]{16,64}")),
        rule("slack_legacy_token", "api_key", &["xoxa-", "xoxr-", "xoxs-", "xoxo-"], &tok("xox[aors]-[0-9]{1,2}-[0-9A-Za-z\\-]{20,}")),
        rule("slack_webhook_url", "api_key", &["hooks.slack.com"],
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/+\-]{30,})"),
        // ---- payments ----
        rule("stripe_secret_key", "api_key", &["sk_live_", "sk_test_"], &tok("sk_(?:live|test)_[A-Za-z0-9]{20,247}")),
        rule("stripe_restricted_key", "api_key", &["rk_live_", "rk_test_"], &tok("rk_(?:live|test)_[A-Za-z0-9]{20,247}")),
        rule("stripe_webhook_secret", "api_key", &["whsec_"], &tok("whsec_[A-Za-z0-9]{32,}")),
        rule("square_access_token", "api_key", &["sq0atp-", "EAAA"], &tok("(?:sq0atp-[0-9A-Za-z_\\-]{22}|EAAA[A-Za-z0-9_+=\\-]{60})"))
            .cs().gate(Gate::TokenStart),
        rule("square_oauth_secret", "api_key", &["sq0csp-"], &tok("sq0csp-[0-9A-Za-z_\\-]{40,50}")),
        rule("twilio_api_key", "api_key", &["SK"], &tok("SK[0-9a-f]{32}")).cs(),
        rule("twilio_auth_token", "api_key", &["twilio"],
            r#"(?i)twilio[a-z_\-]{0,20}(?:auth|token|secret)[a-z_\-]{0,20}["']?\s{0,4}(?::=|=>|=|:)\s{0,4}["']?(?P<s>[0-9a-f]{32})(?:[^0-9a-f]|$)"#),
        // an account SID is an identifier; named as Twilio's next to a key name it is a credential
        rule("twilio_account_sid", "api_key", &["twilio", "account_sid", "accountsid", "account-sid"],
            r"(?i)(?:twilio|account[_\-]?sid)[^\n]{0,80}?(?:^|[^A-Za-z0-9])(?-i:(?P<s>AC[0-9a-f]{32}))(?:[^A-Za-z0-9]|$)"),
        rule("paypal_braintree_access_token", "api_key", &["access_token$production$"], &tok("access_token\\$production\\$[0-9a-z]{16}\\$[0-9a-f]{32}")),
        // ---- email / messaging ----
        rule("sendgrid_api_key", "api_key", &["SG."], &tok("SG\\.[A-Za-z0-9_\\-]{22}\\.[A-Za-z0-9_\\-]{43}")).cs(),
        rule("mailgun_api_key", "api_key", &["key-"], &tok("key-[0-9a-f]{32}")),
        rule("mailchimp_api_key", "api_key", &["-us"], &tok("[0-9a-f]{32}-us[0-9]{1,2}")),
        rule("telegram_bot_token", "api_key", &[":aa"], r"(?:^|[^0-9])(?P<s>[0-9]{8,10}:AA[0-9A-Za-z_\-]{33})(?:[^A-Za-z0-9_\-]|$)"),
        rule("discord_webhook_url", "api_key", &["discord"],
            r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<s>[A-Za-z0-9_\-]{60,70})"),
        // ---- package registries ----
        rule("npm_access_token", "api_key", &["npm_"], &tok("npm_[A-Za-z0-9]{36}")),
        rule("pypi_upload_token", "api_key", &["pypi-ageichlwas5vcmc"], &tok("pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\\-]{50,}")),
        rule("npmrc_auth", "password", &["_authtoken", "_auth", "_password"],
            r#"(?im)(?:^|:)\s{0,4}(?:_authToken|_auth|_password)\s{0,4}=\s{0,4}["']?(?P<s>[^\s"']{8,})"#)
            .check(Check::Credential(3.0)).tier(Tier::Structural).gate(Gate::Assign),
        // Maven settings-security.xml: the encrypted master password
        rule("maven_master_password", "password", &["<master>"],
            r"<master>\{(?P<s>[A-Za-z0-9+/=]{20,})\\?\}</master>").tier(Tier::Structural),
        rule("rubygems_api_key", "api_key", &["rubygems_"], &tok("rubygems_[0-9a-f]{48}")),
        rule("nuget_api_key", "api_key", &["oy2"], &tok("oy2[a-z0-9]{43}")).cs(),
        rule("docker_config_auth", "password", &["\"auth\""],
            r#""auth"\s*:\s*"(?P<s>[A-Za-z0-9+/]{12,}={0,2})""#).check(Check::BasicAuth).tier(Tier::Structural),
        rule("artifactory_api_key", "api_key", &["AKCp"], &tok("AKCp[A-Za-z0-9]{60,80}")).cs(),
        rule("artifactory_reference_token", "api_key", &["cmVmdGtu"], &tok("cmVmdGtu[A-Za-z0-9]{50,80}")).cs(),
        rule("dockerhub_pat", "api_key", &["dckr_pat_"], &tok("dckr_pat_[A-Za-z0-9_\\-]{27}")),
        // ---- AI vendors ----
        rule("anthropic_api_key", "api_key", &["sk-ant-api"], &tok("sk-ant-api[0-9]{2}-[A-Za-z0-9_\\-]{80,120}")),
        rule("anthropic_oauth_token", "api_key", &["sk-ant-oat"], &tok("sk-ant-oat[0-9]{2}-[A-Za-z0-9_\\-]{80,120}")),
        rule("anthropic_admin_key", "api_key", &["sk-ant-admin"], &tok("sk-ant-admin[0-9]{2}-[A-Za-z0-9_\\-]{80,120}")),
        rule("openai_project_key", "api_key", &["sk-proj-"], &tok("sk-proj-[A-Za-z0-9_\\-]{40,200}")),
        rule("openai_service_account_key", "api_key", &["sk-svcacct-"], &tok("sk-svcacct-[A-Za-z0-9_\\-]{40,200}")),
        rule("openai_admin_key", "api_key", &["sk-admin-"], &tok("sk-admin-[A-Za-z0-9_\\-]{40,200}")),
        rule("openai_legacy_key", "api_key", &["sk-"], &tok("sk-(?:[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48})")).cs(),
        rule("huggingface_token", "api_key", &["hf_"], &tok("hf_[A-Za-z0-9]{34,40}")),
        rule("huggingface_org_token", "api_key", &["api_org_"], &tok("api_org_[A-Za-z0-9]{34}")),
        rule("groq_api_key", "api_key", &["gsk_"], &tok("gsk_[A-Za-z0-9]{52}")),
        rule("replicate_api_token", "api_key", &["r8_"], &tok("r8_[A-Za-z0-9]{37}")),
        rule("perplexity_api_key", "api_key", &["pplx-"], &tok("pplx-[A-Za-z0-9]{48}")),
        rule("xai_api_key", "api_key", &["xai-"], &tok("xai-[A-Za-z0-9]{80}")),
        rule("langsmith_api_key", "api_key", &["lsv2_"], &tok("lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}")),
        // ---- developer platforms ----
        rule("datadog_client_token", "api_key", &["pub"], &tok("pub[0-9a-f]{32}")).cs(),
        rule("shopify_token", "api_key", &["shpat_", "shpss_", "shpca_", "shppa_"], &tok("shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32}")),
        rule("digitalocean_token", "api_key", &["dop_v1_", "doo_v1_", "dor_v1_"], &tok("do[opr]_v1_[a-f0-9]{64}")),
        rule("doppler_token", "api_key", &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."],
            &tok("dp\\.(?:pt|st|sa|ct|scim|audit)\\.(?:[A-Za-z0-9_\\-]{1,40}\\.)?[A-Za-z0-9]{40,44}")),
        rule("linear_api_key", "api_key", &["lin_api_"], &tok("lin_api_[A-Za-z0-9]{40}")),
        rule("atlassian_api_token", "api_key", &["atatt3"], &tok("ATATT3[A-Za-z0-9_\\-=]{150,200}")),
        rule("databricks_token", "api_key", &["dapi"], &tok("dapi[a-f0-9]{32}(?:-[0-9])?")).cs(),
        rule("postman_api_key", "api_key", &["pmak-"], &tok("PMAK-[a-f0-9]{24}-[a-f0-9]{34}")),
        rule("pulumi_access_token", "api_key", &["pul-"], &tok("pul-[a-f0-9]{40}")),
        rule("vault_token", "api_key", &["hvs.", "hvb."], &tok("hv[sb]\\.[A-Za-z0-9_\\-]{90,}")),
        rule("terraform_cloud_token", "api_key", &[".atlasv1."], &tok("[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=\\-]{60,70}")),
        rule("sentry_auth_token", "api_key", &["sntrys_", "sntryu_"], &tok("(?:sntrys_[A-Za-z0-9+/=_]{60,}|sntryu_[a-f0-9]{64})")),
        rule("newrelic_api_key", "api_key", &["nrak-"], &tok("NRAK-[A-Z0-9]{27}")),
        rule("grafana_token", "api_key", &["glsa_", "glc_"], &tok("(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})")),
        rule("facebook_access_token", "api_key", &["eaacedeose0cba"], &tok("EAACEdEose0cBA[0-9A-Za-z]{20,}")),
        rule("heroku_api_key", "api_key", &["heroku"],
            r#"(?i)(?P<k>heroku[a-z_\-]{0,20})["']?\s{0,4}(?::=|=>|=|:)\s{0,4}["']?(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#)
            .check(Check::PlatformUuid),
        rule("planetscale_token", "api_key", &["pscale_"], &tok("pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\\-.=]{32,64}")),
        rule("intra42_client_secret", "api_key", &["s-s4t2ud-", "s-s4t2af-"], &tok("s-s4t2(?:ud|af)-[0-9a-f]{64}")),
        rule("flyio_token", "api_key", &["fo1_"], &tok("fo1_[A-Za-z0-9_\\-]{43}")),
        // ---- structural credentials ----
        rule("jwt", "jwt", &["eyJ"], &tok("eyJ[A-Za-z0-9_\\-]{8,}\\.eyJ[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}"))
            .check(Check::Jwt).tier(Tier::Structural).cs(),
        // JWE compact serialisation: header, encrypted key (empty for `dir`), IV, ciphertext, tag
        rule("jwe", "jwt", &["eyJ"], &tok("eyJ[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]*\\.[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}"))
            .check(Check::Jwe).tier(Tier::Structural).cs(),
        rule("basic_auth_header", "password", &["basic"],
            r"(?i)\bbasic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=]|$)")
            .check(Check::BasicAuth).tier(Tier::Structural).gate(Gate::SpaceOrQuote),
        rule("bearer_token", "api_key", &["bearer"], r#"(?i)\bbearer(?:\s+|["'`]\s{0,4},\s{0,4}["'`])(?P<s>[A-Za-z0-9_~+/.=\-]{20,})"#)
            .check(Check::Credential(3.0)).tier(Tier::Generic).gate(Gate::SpaceOrQuote),
        rule(USERINFO_RULE, "connection_string", &["://"],
            r#"(?i)\b[a-z][a-z0-9+.\-]{1,20}://(?P<u>[^\s:@/"'<>]{0,64}):(?P<s>[^\s/"'<>]{3,128})@[A-Za-z0-9.\-\[]"#)
            .check(Check::UrlPassword).tier(Tier::Structural).gate(Gate::Userinfo),
        rule("jdbc_password", "connection_string", &["jdbc:"],
            r#"(?i)jdbc:[a-z0-9]+:[^\s"']{0,200}?[;?&]password=(?P<s>[^\s;&"']{4,})"#)
            .check(Check::Password).tier(Tier::Structural),
        rule("odbc_password", "connection_string", &["pwd=", "password="],
            r#"(?i)(?:server|data source|host)=[^;\n]{1,100};[^\n]{0,200}?(?:pwd|password)=(?P<s>[^;\s"']{4,})"#)
            .check(Check::Password).tier(Tier::Structural),
        rule("netrc_password", "password", &["machine"],
            r"(?s)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<s>\S+)")
            .check(Check::Password).tier(Tier::Structural).window(Window::Forward(512)),
        rule("kubernetes_secret_data", "generic_secret", &["kind: secret", "kind: \"secret\"", "kind: 'secret'"],
            r#"(?m)^kind:\s*["']?Secret["']?\s*$"#)
            .check(Check::K8sSecret).tier(Tier::Structural),
        // ---- generic, entropy-gated ----
        rule("password_assignment", "password", &["password", "passwd", "passphrase", "pwd", "pass"],
            r#"(?im)(?P<k>[a-z0-9_.\-]{0,30}(?:(?:password|passwd|passphrase|pwd)[a-z0-9_.\-]{0,12}|pass))(?:["'`]?\]?\s{0,4}(?:=>|:=|==|<-|\?=|:\s{0,4}&?(?:'static\s{1,4})?'?[a-z_][a-z0-9_<>]{0,24}\??\s{0,4}=|[ \t]{1,4}(?:string|\[\]byte)[ \t]{0,4}=|=|:))\s{0,4}(?:[bru@f]{0,2}["'`](?P<s>[^"'`\s]{6,128})["'`]|(?P<s2>[^\s"'`,;]{8,128})(?:[\s,;&]|$))"#)
            .check(Check::Password).tier(Tier::Generic).gate(Gate::Assign),
        rule(ASSIGNMENT_RULE, "generic_secret",
            &["secret", "token", "api_key", "apikey", "api-key", "access_key", "accesskey", "auth_key", "private_key", "credential", "key", "_pat", "-pat"],
            r#"(?i)(?P<k>[a-z0-9_.\-]{0,40}(?:(?:secret|token|api[_.\-]?key|access[_.\-]?key|auth[_.\-]?key|private[_.\-]?key|credential)s?[a-z0-9_.\-]{0,20}|[a-z0-9]{2,20}[_.\-]?key|[a-z0-9]{1,20}[_\-]pat))(?:["'`]?\]?\s{0,4}(?:=>|:=|==|<-|\?=|:\s{0,4}&?(?:'static\s{1,4})?'?[a-z_][a-z0-9_<>]{0,24}\??\s{0,4}=|[ \t]{1,4}(?:string|\[\]byte)[ \t]{0,4}=|=|:))\s{0,4}(?:[bru@f]{0,2}["'`](?P<s>(?:base64:)?[^"'`\s]{16,256})["'`]|(?P<s2>(?:base64:)?[A-Za-z0-9+/=_~\-]{16,256})(?:[\s,;]|$))"#)
            .check(Check::Entropy(3.5)).tier(Tier::Generic).gate(Gate::Assign),
        rule("call_pair_secret", "password", &["password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "api_key", "apikey", "api-key", "key"],
            r#"(?i)\(\s{0,4}["'`](?P<k>[a-z0-9_.\-]{0,40}(?:password|passwd|passphrase|pwd|pass|secret|token|api[_.\-]?key|[a-z0-9]{2,20}[_.\-]?key)[a-z0-9_.\-]{0,12})["'`]\s{0,4},\s{0,4}["'`](?P<s>[^"'`\s]{6,256})["'`]\s{0,4}\)"#)
            .check(Check::Password).tier(Tier::Generic).gate(Gate::CallPair),
        // Kotlin's pairs: `mapOf("client_secret" to "...")`
        rule("pair_to_secret", "password", &["\" to \"", "' to '"],
            r#"(?i)["'`](?P<k>[a-z0-9_.\-]{0,40}(?:password|passwd|passphrase|pwd|pass|secret|token|api[_.\-]?key|[a-z0-9]{2,20}[_.\-]?key)[a-z0-9_.\-]{0,12})["'`]\s{1,4}to\s{1,4}["'`](?P<s>[^"'`\s]{6,256})["'`]"#)
            .check(Check::Password).tier(Tier::Generic),
        rule("config_pair_secret", "password", &["value"],
            r#"(?i)(?:key|name)\s{0,2}=\s{0,2}"(?P<k>[^"\n]{0,40}(?:password|passwd|passphrase|pass|pwd|secret|token|[a-z0-9]{2,20}[_.\-]?key)[^"\n]{0,20})"\s{1,4}value\s{0,2}=\s{0,2}"(?P<s>[^"\n]{6,256})""#)
            .check(Check::Password).tier(Tier::Generic),
        rule("xml_element_secret", "password", &["password>", "passwd>", "passphrase>", "pass>", "pwd>", "secret>", "token>", "key>"],
            r#"(?i)<(?P<k>[a-z0-9_.:\-]{0,30}(?:password|passwd|passphrase|pass|pwd|secret|token|[a-z0-9]{2,20}[_.\-]?key)[a-z0-9_.\-]{0,12})>(?P<s>[^<\s]{6,256})</"#)
            .check(Check::Password).tier(Tier::Generic),
        // the element names its key in an attribute: `<entry key="api.secret">...</entry>`
        rule("xml_keyed_element_secret", "password", &["key=\"", "name=\"", "key='", "name='"],
            r#"(?i)<[a-z][a-z0-9_.:\-]{0,30}\s{1,4}(?:key|name)\s{0,2}=\s{0,2}["'](?P<k>[^"'\n]{0,40}(?:password|passwd|passphrase|pass|pwd|secret|token|credential|[a-z0-9]{2,20}[_.\-]?key)[^"'\n]{0,20})["']\s{0,4}>(?P<s>[^<\s]{6,256})</"#)
            .check(Check::Password).tier(Tier::Generic),
        // Gradle's build config: `buildConfigField("String", "API_KEY", "\"...\"")`
        rule("gradle_build_config_secret", "password", &["buildconfigfield", "resvalue"],
            r#"(?i)(?:buildConfigField|resValue)\s{0,4}\(?\s{0,4}["']String["']\s{0,4},\s{0,4}["'](?P<k>[a-z0-9_]{0,40}(?:password|passwd|secret|token|pwd|pass|[a-z0-9]{2,20}_?key)[a-z0-9_]{0,20})["']\s{0,4},\s{0,4}["'](?:\\["'])?(?P<s>[^"'\\\s]{6,256})(?:\\["'])?["']"#)
            .check(Check::Password).tier(Tier::Generic),
        // HCL: `variable "db_password" { default = "..." }`
        rule("hcl_variable_default_secret", "password", &["variable \""],
            r#"(?is)\bvariable\s{1,4}"(?P<k>[^"\n]{0,40}(?:password|passwd|secret|token|pwd|pass|credential|[a-z0-9]{2,20}_?key)[^"\n]{0,20})"\s{0,4}\{[^{}]{0,300}?\bdefault\s{0,4}=\s{0,4}"(?P<s>[^"\s]{6,256})""#)
            .check(Check::Password).tier(Tier::Generic).window(Window::Forward(512)),
        // C and Objective-C: `#define API_KEY "..."`; a Dockerfile's `ENV API_TOKEN ...`; SQL's
        // `IDENTIFIED BY '...'`
        rule("c_define_secret", "password", &["define"],
            r#"(?im)^[ \t]*#[ \t]*define[ \t]+(?P<k>[a-z0-9_]{0,40}(?:password|passwd|secret|token|api_?key|access_?key|auth_?key|private_?key|credential|pwd)[a-z0-9_]{0,20})[ \t]+@?"(?P<s>[^"\s]{6,256})""#)
            .check(Check::Password).tier(Tier::Generic),
        rule("dockerfile_env_secret", "password", &["ENV ", "ENV\t"],
            r#"(?m)^[ \t]*ENV[ \t]+(?P<k>(?i:[a-z0-9_]{0,40}(?:password|passwd|secret|token|api_?key|access_?key|auth_?key|private_?key|credential|pwd)[a-z0-9_]{0,20}))[ \t]+(?P<s>[^\s"']{8,256})[ \t]*\r?$"#)
            .check(Check::Password).tier(Tier::Generic).cs(),
        rule("sql_password", "password", &["identified by", "password '"],
            r#"(?i)\b(?:identified[ \t]+by|password)[ \t]+'(?P<s>[^'\s]{6,128})'"#)
            .check(Check::Password).tier(Tier::Generic),
        // a query string or a form body: `?api_key=...&`, `-d 'client_secret=...'`
        rule("form_param_secret", "generic_secret", &["secret=", "token=", "key=", "password=", "pwd=", "passwd="],
            r#"(?i)(?:^|[?&'"\s;])(?P<k>[a-z0-9_.\-]{0,40}(?:secret|token|api[_.\-]?key|access[_.\-]?key|auth[_.\-]?key|password|passwd|pwd))=(?P<s>[A-Za-z0-9+/_~.%!*@\-]{16,256}?=*)(?:[&'"\s#;]|$)"#)
            .check(Check::Entropy(3.0)).tier(Tier::Generic),
        rule("env_list_secret", "password", &["name:"],
            r#"(?i)name:\s{0,4}["']?(?P<k>[a-z0-9_.\-]{0,40}(?:password|passwd|pwd|pass|secret|token|key|credential|[a-z0-9]{1,20}[_\-]pat)[a-z0-9_.\-]{0,20})["']?[ \t]*\r?\n[ \t]*(?:-[ \t]+)?value:[ \t]*["']?(?P<s>[^\s"']{6,256})"#)
            .check(Check::Password).tier(Tier::Generic).window(Window::Forward(512)),
        rule("cli_flag_secret", "password", &["password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "api-key", "apikey", "key"],
            r#"(?i)(?:^|\s)--(?P<k>[a-z0-9\-]{0,30}(?:(?:password|passwd|passphrase|pass|pwd|secret|token|api-key|apikey)[a-z0-9\-]{0,12}|[a-z0-9]{2,20}-key))(?:=|[ \t]+)["']?(?P<s>[^\s"'`\-][^\s"'`]{5,255})"#)
            .check(Check::Password).tier(Tier::Generic).gate(Gate::CliFlag),
        rule("cli_user_password", "password", &["-u ", "-u'", "-u\"", "--user", "--proxy-user", "--auth"],
            r#"(?:^|\s)(?:-u|-U|--user|--proxy-user|--auth)(?:[ \t]+["']?|=["']?|["'])(?P<u>[A-Za-z0-9._@\-]{1,64}):(?P<s>[^\s"']{4,128})"#)
            .check(Check::UrlPassword).tier(Tier::Generic),
        rule(PROSE_RULE, "generic_secret",
            &["password", "passphrase", "passcode", "secret", "token", "api key", "api-key", "api_key", "access key"],
            r#"(?i)\b(?P<k>passwords?|passphrase|passcode|secret|token|api[ _\-]?key|access[ _\-]?key)\b(?:[ \t]+(?:for|of|on|to)[ \t]+[A-Za-z0-9 ._\-]{1,30}?)?(?:[ \t]+(?:is|was|=)|[ \t]*:)?[ \t]+["'`]?(?P<s>[^\s"'`]{8,128}?)["'`]?[.,;:!?)]*(?:\s|$)"#)
            .check(Check::Prose).tier(Tier::Generic).gate(Gate::Word),
        // ---- PII ----
        // ---- HTTP authentication beyond Basic and Bearer ----
        rule("authorization_scheme_token", "api_key", &["authorization"],
            r#"(?i)\b(?:proxy-)?authorization["'`]?\]?[ \t]{0,4}[:=,][ \t]{0,4}["'`]?[ \t]{0,2}(?:token|apikey|api-key|key|ssws|geniekey|splunk|sharedkey|dsn|app|klaviyo-api-key|zoho-oauthtoken)[ \t]+(?P<s>[A-Za-z0-9+/=_~.:\-]{12,512})"#)
            .check(Check::Credential(3.0)).tier(Tier::Generic),
        rule("nginx_header_secret", "api_key", &["proxy_set_header", "grpc_set_header", "add_header"],
            r#"(?i)\b(?:proxy_set_header|grpc_set_header|add_header)[ \t]+(?P<k>[a-z0-9\-]{0,60}(?:key|token|secret))[ \t]+["']?(?P<s>[^\s"';]{8,512})"#)
            .check(Check::Credential(3.0)).tier(Tier::Generic),
        rule("http_key_header", "api_key", &["-key:", "-token:", "-secret:", "apikey:", "-key :", "-token :"],
            r#"(?i)(?:^|[\s"'`,{(])(?P<k>[a-z0-9][a-z0-9\-]{0,60}(?:key|token|secret))[ \t]{0,2}:[ \t]{0,4}(?P<s>[^\s"'`<>,;]{8,512})"#)
            .check(Check::Credential(3.0)).tier(Tier::Generic),
        rule("email_address", "pii", &["@"],
            r"(?:^|[^A-Za-z0-9._%+\-])(?P<s>(?P<u>[A-Za-z0-9._%+\-]{1,64})@(?P<d>[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,24}))(?:[^A-Za-z0-9\-]|$)")
            .check(Check::Email).tier(Tier::Pii),
    ];
    v.extend(super::vendors::rules());
    v.extend(super::prefixes::rules());
    v.extend([
        scanner(
            "discord_bot_token",
            "api_key",
            Scanner::DiscordBot,
            Tier::Vendor,
        ),
        scanner("us_ssn", "pii_government_id", Scanner::Ssn, Tier::Pii),
        scanner(
            "credit_card_number",
            "pii_financial",
            Scanner::Card,
            Tier::Pii,
        ),
        scanner("iban", "pii_financial", Scanner::Iban, Tier::Pii),
        scanner("phone_number", "pii", Scanner::Phone, Tier::Pii),
        scanner(
            "base64_blob",
            "binary_hint",
            Scanner::Base64Blob,
            Tier::Hint,
        ),
        scanner(
            "base64_wrapped_blob",
            "binary_hint",
            Scanner::Base64Wrapped,
            Tier::Hint,
        ),
        scanner("hex_blob", "binary_hint", Scanner::HexBlob, Tier::Hint),
        scanner(
            "nonprintable_run",
            "binary_hint",
            Scanner::NonPrintable,
            Tier::Hint,
        ),
    ]);
    v
}

/// Names of the rules that detect one live credential format (for the coverage count).
pub(crate) fn credential_rule_names() -> Vec<String> {
    builtin()
        .into_iter()
        .filter(|r| {
            r.scanner.is_none() && !matches!(r.tier, Tier::Pii | Tier::Redacted | Tier::Hint)
        })
        .map(|r| r.name)
        .collect()
}
