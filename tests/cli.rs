//! The command line for people (issue 20): completions, the man page, per-subcommand help,
//! `--since` in every spelling, `journal -n/--lines`, and colour that honours NO_COLOR.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn run(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_cli(cwd, args, env)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

const SUBCOMMANDS: [&str; 15] = [
    "serve",
    "journal",
    "history",
    "restore",
    "gc",
    "recover",
    "scan",
    "analytics",
    "demo",
    "init",
    "doctor",
    "hook",
    "validate",
    "completions",
    "man",
];

#[test]
fn completions_for_each_shell_name_every_subcommand() {
    let d = tmp();
    for shell in ["bash", "zsh", "fish"] {
        let o = run(d.path(), &["completions", shell], &[]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.len() > 2000, "{shell}: only {} bytes", text.len());
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
        assert!(text.contains("lines"), "{shell}: journal's --lines missing");
    }
    let o = run(d.path(), &["completions", "tcsh"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_bash_completion_parses_and_completes_subcommands() {
    let d = tmp();
    let script = d.path().join("rw.bash");
    let o = run(d.path(), &["completions", "bash"], &[]);
    std::fs::write(&script, &o.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&script).output();
    let Ok(check) = check else {
        common::missing_prerequisite("bash");
        return;
    };
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Sourced, the function completes `resilient-write jo` to `journal`.
    let probe = format!(
        "source {}; COMP_WORDS=(resilient-write jo); COMP_CWORD=1; COMP_LINE='resilient-write jo'; \
         COMP_POINT=${{#COMP_LINE}}; _resilient__write resilient-write jo resilient-write; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let o = Command::new("bash").arg("-c").arg(&probe).output().unwrap();
    let got = String::from_utf8_lossy(&o.stdout);
    assert!(
        got.lines().any(|l| l.trim() == "journal"),
        "{got}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_man_page_is_roff_with_a_section_per_subcommand() {
    let d = tmp();
    let o = run(d.path(), &["man"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH resilient-write 1"), "{}", &page[..200]);
    for sub in SUBCOMMANDS {
        let heading = format!(".SH \"RESILIENT-WRITE {}\"", sub.to_uppercase());
        assert!(page.contains(&heading), "no section {heading}");
    }
    // Subcommands' own flags are documented, escaped for roff.
    assert!(page.contains("\\-\\-lines"), "journal's --lines missing");
    assert!(page.contains("\\-\\-since"), "--since missing");
    assert!(
        page.contains("\\-\\-tool\\-names"),
        "serve's --tool-names missing"
    );
    if let Ok(m) = Command::new("man").arg("--version").output()
        && m.status.success()
    {
        let path = d.path().join("resilient-write.1");
        std::fs::write(&path, &o.stdout).unwrap();
        let shown = Command::new("man")
            .args(["-l", "-P", "cat"])
            .arg(&path)
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(text.contains("RESILIENT-WRITE JOURNAL"), "{text}");
        assert!(text.contains("--lines"), "{text}");
    }
}

fn help(args: &[&str]) -> String {
    let d = tmp();
    let o = run(d.path(), args, &[]);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn subcommand_help_shows_only_that_subcommands_options() {
    let serve_only = ["--tool-names", "--max-write-bytes", "--port", "--transport"];
    let state = ["--state-dir", "--workspace", "--log-level", "--log-file"];
    for sub in ["validate", "completions", "man"] {
        let h = help(&[sub, "--help"]);
        for flag in serve_only.iter().chain(&state).chain(&["--policy-file"]) {
            assert!(!h.contains(flag), "`{sub} --help` shows {flag}:\n{h}");
        }
    }
    for sub in ["scan", "demo"] {
        let h = help(&[sub, "--help"]);
        assert!(h.contains("--policy-file"), "{sub}: {h}");
        for flag in serve_only.iter().chain(&["--state-dir", "--workspace"]) {
            assert!(!h.contains(flag), "`{sub} --help` shows {flag}:\n{h}");
        }
    }
    for sub in [
        "journal",
        "history",
        "restore",
        "gc",
        "recover",
        "analytics",
        "init",
        "doctor",
        "hook",
    ] {
        let h = help(&[sub, "--help"]);
        for flag in state {
            assert!(h.contains(flag), "`{sub} --help` lacks {flag}:\n{h}");
        }
        for flag in serve_only {
            assert!(!h.contains(flag), "`{sub} --help` shows {flag}:\n{h}");
        }
    }
    // The bare invocation is serve: its help and serve's show serve's options.
    for args in [&["--help"][..], &["serve", "--help"]] {
        let h = help(args);
        for flag in serve_only.iter().chain(&state) {
            assert!(h.contains(flag), "{args:?} lacks {flag}");
        }
    }
}

#[test]
fn a_serve_option_before_another_subcommand_is_refused_not_ignored() {
    let d = tmp();
    for args in [
        &["--port", "1", "journal"][..],
        &["--max-write-bytes", "10", "gc"],
        &["--tool-names", "dotted", "validate", "x.json"],
    ] {
        let o = run(d.path(), args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{} is an option of `serve`", args[0])),
            "{}",
            stderr(&o)
        );
    }
    // Before `serve`, the HTTP options were never accepted: refused too, naming where they go.
    let o = run(d.path(), &["--port", "0", "serve"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("give it after `serve`"),
        "{}",
        stderr(&o)
    );
    // From the environment it is no error: RW_MAX_WRITE_BYTES serves every subcommand.
    let o = run(d.path(), &["journal"], &[("RW_MAX_WRITE_BYTES", "10")]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A state root whose journal holds rows 10 days, 2 days, 3 hours and 10 minutes old, and
/// one at a fixed date.
fn journal_fixture() -> (tempfile::TempDir, Vec<String>) {
    let d = tmp();
    let state = d.path().join(".resilient_write");
    std::fs::create_dir_all(&state).unwrap();
    let now = chrono::Utc::now();
    let ages = [
        chrono::Duration::days(10),
        chrono::Duration::days(2),
        chrono::Duration::hours(3),
        chrono::Duration::minutes(10),
    ];
    let mut names = Vec::new();
    let mut text = String::new();
    let mut row = |ts: String, name: String| {
        text += &serde_json::json!({
            "ts": ts, "path": name, "mode": "create", "bytes": 3,
            "sha256": "0".repeat(64), "caller": "test"
        })
        .to_string();
        text.push('\n');
        names.push(name);
    };
    row("2020-01-01T12:00:00Z".into(), "old.txt".into());
    for (i, age) in ages.iter().enumerate() {
        let ts = (now - *age).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        row(ts, format!("f{i}.txt"));
    }
    std::fs::write(state.join("journal.jsonl"), text).unwrap();
    (d, names)
}

fn journal_paths(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["journal", "--json"];
    all.extend_from_slice(args);
    let o = run(dir, &all, &[]);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["path"].as_str().unwrap().to_string()
        })
        .collect()
}

fn analytics_writes(dir: &Path, since: &str) -> u64 {
    let o = run(dir, &["analytics", "--json", "--since", since], &[]);
    assert!(o.status.success(), "{since}: {}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["total_writes"].as_u64().unwrap()
}

#[test]
fn since_takes_durations_dates_and_rfc3339_in_journal_and_analytics() {
    let (d, _) = journal_fixture();
    let dir = d.path();
    assert_eq!(journal_paths(dir, &[]).len(), 5);
    let cases: [(&str, &[&str]); 5] = [
        ("30m", &["f3.txt"]),
        ("24h", &["f2.txt", "f3.txt"]),
        ("7d", &["f1.txt", "f2.txt", "f3.txt"]),
        ("2021-01-01", &["f0.txt", "f1.txt", "f2.txt", "f3.txt"]),
        (
            "2020-01-01T11:59:59Z",
            &["old.txt", "f0.txt", "f1.txt", "f2.txt", "f3.txt"],
        ),
    ];
    for (since, want) in cases {
        assert_eq!(
            journal_paths(dir, &["--since", since]),
            want,
            "journal --since {since}"
        );
        assert_eq!(
            analytics_writes(dir, since),
            want.len() as u64,
            "analytics --since {since}"
        );
    }
    // A date is midnight UTC: everything of 2020-01-01 and after.
    assert_eq!(analytics_writes(dir, "2020-01-01"), 5);
    assert_eq!(analytics_writes(dir, "2020-01-02"), 4);
}

#[test]
fn a_bad_since_is_a_clear_usage_error_with_exit_2() {
    let (d, _) = journal_fixture();
    for sub in ["journal", "analytics"] {
        for bad in ["yesterday", "7", "7x", "2026-13-01", "-3d"] {
            let arg = format!("--since={bad}");
            let o = run(d.path(), &[sub, &arg], &[]);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{sub} --since {bad}: {}",
                stderr(&o)
            );
            let e = stderr(&o);
            assert!(e.contains("--since"), "{e}");
            assert!(e.contains("a duration back from now (30m, 24h, 7d"), "{e}");
            assert!(o.stdout.is_empty(), "{}", stdout(&o));
        }
    }
    // Nothing was touched: the journal reads as before.
    assert_eq!(journal_paths(d.path(), &[]).len(), 5);
}

#[test]
fn history_lines_is_spelled_as_journals_and_keeps_the_old_spelling() {
    let d = tmp();
    let state = d.path().join(".resilient_write");
    std::fs::create_dir_all(&state).unwrap();
    let mut text = String::new();
    for (i, c) in ["a", "b", "c"].iter().enumerate() {
        text += &serde_json::json!({
            "ts": format!("2026-12-0{}T12:00:00Z", i + 1), "path": "v.txt", "mode": "overwrite",
            "bytes": 1, "sha256": c.repeat(64), "caller": "test"
        })
        .to_string();
        text.push('\n');
    }
    std::fs::write(state.join("journal.jsonl"), text).unwrap();
    for args in [&["-n", "2"][..], &["--lines", "2"], &["--n", "2"]] {
        let mut all = vec!["history", "--json", "v.txt"];
        all.extend_from_slice(args);
        let o = run(d.path(), &all, &[]);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let shas: Vec<&str> = v["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["sha256"].as_str().unwrap()[..1])
            .collect();
        assert_eq!(shas, ["c", "b"], "{args:?}: {v}");
        assert_eq!(v["truncated"], true, "{v}");
    }
    let h = help(&["history", "--help"]);
    assert!(h.contains("-n, --lines <N>"), "{h}");
    assert!(!h.contains("--n <"), "the old spelling is hidden: {h}");
}

#[test]
fn journal_lines_has_a_short_form_and_keeps_the_old_spelling() {
    let (d, _) = journal_fixture();
    for args in [
        &["-n", "2"][..],
        &["--lines", "2"],
        &["--lines=2"],
        &["--n", "2"],
    ] {
        assert_eq!(
            journal_paths(d.path(), args),
            ["f2.txt", "f3.txt"],
            "{args:?}"
        );
    }
    let h = help(&["journal", "--help"]);
    assert!(h.contains("-n, --lines <N>"), "{h}");
    assert!(!h.contains("--n <"), "the old spelling is hidden: {h}");
}

#[test]
fn the_write_cap_and_tool_names_still_apply_when_typed_before_serve() {
    let ws = common::Workspace::new();
    // They were global options: `--tool-names dotted serve` lists dotted names.
    let mut s = common::Server::start(&ws.root, &["--tool-names", "dotted", "serve"], &[]);
    let tools = s.request("tools/list", serde_json::json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"rw.safe_write"), "{names:?}");
    s.shutdown();
    let mut s = common::Server::start(&ws.root, &["--max-write-bytes", "10", "serve"], &[]);
    let env = s.err(
        "rw_safe_write",
        serde_json::json!({"path": "big.txt", "content": "x".repeat(11)}),
    );
    assert_eq!(env["error"], "quota_exceeded", "{env}");
    s.shutdown();
}

#[test]
fn state_options_work_before_or_after_the_subcommand_and_the_subcommands_win() {
    let (a, _) = journal_fixture();
    let b = tmp();
    let elsewhere = tmp();
    let a_dir = a.path().to_str().unwrap();
    let b_dir = b.path().to_str().unwrap();
    let before = journal_paths(elsewhere.path(), &[]);
    assert!(before.is_empty(), "{before:?}");
    // Typed before the subcommand (every option used to be global), and after it.
    let o = run(
        elsewhere.path(),
        &["--state-dir", a_dir, "journal", "--json"],
        &[],
    );
    assert_eq!(stdout(&o).lines().count(), 5, "{}", stderr(&o));
    assert_eq!(
        journal_paths(elsewhere.path(), &["--state-dir", a_dir]).len(),
        5
    );
    // Both: the subcommand's own wins.
    let o = run(
        elsewhere.path(),
        &[
            "--state-dir",
            a_dir,
            "journal",
            "--json",
            "--state-dir",
            b_dir,
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 0, "{}", stdout(&o));
}

fn has_escape(o: &Output) -> bool {
    o.stdout.contains(&0x1b)
}

#[test]
fn doctor_colours_only_when_asked_and_never_under_no_color() {
    let d = tmp();
    // Not a terminal: plain.
    let plain = run(d.path(), &["doctor"], &[]);
    assert!(!has_escape(&plain), "{}", stdout(&plain));
    // Forced (as a terminal would get it): coloured.
    let forced = run(d.path(), &["doctor"], &[("CLICOLOR_FORCE", "1")]);
    assert!(has_escape(&forced), "{}", stdout(&forced));
    // NO_COLOR wins over everything.
    let no = run(
        d.path(),
        &["doctor"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(!has_escape(&no), "{:?}", stdout(&no));
    assert_eq!(plain.status.code(), no.status.code());
    // The same words, only the escapes differ.
    let stripped = String::from_utf8(forced.stdout.clone()).unwrap();
    let stripped = strip_ansi(&stripped);
    assert_eq!(stripped, stdout(&no));
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn demo_colours_only_when_asked_and_never_under_no_color() {
    let d = tmp();
    let forced = run(d.path(), &["demo"], &[("CLICOLOR_FORCE", "1")]);
    assert!(forced.status.success(), "{}", stdout(&forced));
    assert!(has_escape(&forced));
    let no = run(
        d.path(),
        &["demo"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(no.status.success(), "{}", stdout(&no));
    assert!(!has_escape(&no), "{}", stdout(&no));
    assert!(stdout(&no).contains("steps behaved as the paper describes"));
}

/// The key names after `expected` in a serde unknown-field error (`expected one of a, b`).
fn expected_keys(message: &str) -> Vec<String> {
    let tail = message
        .split_once("expected")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no list of expected keys in: {message}"));
    let tail = tail.trim_start().trim_start_matches("one of");
    // The message ends with where the parser stopped: ` (column N)`.
    let tail = tail.rsplit_once(" (column ").map_or(tail, |(t, _)| t);
    tail.split(',')
        .map(|k| k.trim().trim_matches('`').to_string())
        .filter(|k| !k.is_empty())
        .collect()
}

#[test]
fn every_policy_key_the_parser_accepts_is_documented_with_its_default() {
    use resilient_write_core::policy::Policy;
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/policy.md"))
            .unwrap();
    // The parser names what it accepts when it refuses an unknown key: the doc cannot fall
    // behind a key added to the parser.
    let top = Policy::from_yaml_str("zzz_unknown: 1\n")
        .unwrap_err()
        .to_string();
    let top = expected_keys(&top);
    assert!(top.len() >= 8, "{top:?}");
    for key in &top {
        assert!(
            doc.contains(&format!("### `{key}`")),
            "docs/guide/policy.md lacks a section for `{key}`"
        );
    }
    let nested = [
        "thresholds:\n  zzz_unknown: 1\n",
        "retry_budget:\n  zzz_unknown: 1\n",
        "extend_patterns:\n  - family: f\n    name: n\n    regex: x\n    zzz_unknown: 1\n",
    ];
    for yaml in nested {
        let e = Policy::from_yaml_str(yaml).unwrap_err().to_string();
        let keys = expected_keys(&e);
        assert!(!keys.is_empty(), "{e}");
        for key in keys {
            assert!(
                doc.contains(&format!("- `{key}`")),
                "docs/guide/policy.md lacks `{key}` ({yaml})"
            );
        }
    }
    // `history` is parsed by the retention layer, which lists its keys in its error.
    let e =
        resilient_write_core::history::Retention::from_policy(Some(&serde_json::json!({"zzz": 1})))
            .unwrap_err();
    let known = e.split_once("known: ").unwrap().1.trim_end_matches(')');
    for key in known.split(", ") {
        assert!(
            doc.contains(&format!("- `{key}`")),
            "docs/guide/policy.md lacks history `{key}`"
        );
    }
    // `idempotency` is parsed by the result log, which lists its keys in its error.
    let e = resilient_write_core::write::results::Expiry::from_policy(Some(
        &serde_json::json!({"zzz": 1}),
    ))
    .unwrap_err();
    let known = e.split_once("known: ").unwrap().1.trim_end_matches(')');
    for key in known.split(", ") {
        assert!(
            doc.contains(&format!("- `{key}`")),
            "docs/guide/policy.md lacks idempotency `{key}`"
        );
    }
    let max_age = resilient_write_core::write::results::DEFAULT_MAX_AGE.as_secs() / 86_400;
    assert!(doc.contains(&format!("- `max_age`: default `{max_age}d`")));
    for key in resilient_write::cmd::hook::POLICY_KEYS {
        assert!(
            doc.contains(&format!("- `{key}`")),
            "docs/guide/policy.md lacks hooks `{key}`"
        );
    }
    // The defaults stated are the code's.
    let d = Policy::default();
    for (k, v) in [
        ("high", d.thresholds.high),
        ("medium", d.thresholds.medium),
        ("low", d.thresholds.low),
    ] {
        assert!(
            doc.contains(&format!("- `{k}`: default `{v:.2}`")),
            "{k} {v}"
        );
    }
    assert!(doc.contains(&format!(
        "- `default`: default `{}`",
        d.retry_budget.default
    )));
    let r = resilient_write_core::history::Retention::default();
    assert!(doc.contains(&format!("- `keep_last`: default `{}`", r.keep_last)));
    assert!(doc.contains(&format!("({} bytes)", r.max_bytes)));
    assert!(doc.contains(&format!(
        "- `max_age`: default `{}d`",
        r.max_age.as_secs() / 86_400
    )));
    assert!(doc.contains(&format!(
        "Default `{}`",
        resilient_write_core::policy::POLICY_VERSION
    )));
    for (family, weight) in resilient_write_core::classify::DEFAULT_WEIGHTS {
        assert!(
            doc.contains(&format!("| `{family}` | {weight:.2} |")),
            "{family} {weight}"
        );
    }
    // The example at the top parses, and means what it says.
    let example = doc
        .split("```yaml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let p = Policy::from_yaml_str(example).unwrap();
    assert_eq!(p.disable_families, ["pii"]);
    assert_eq!(p.extend_patterns[0].weight, Some(0.6));
    assert_eq!(p.thresholds, d.thresholds);
}

#[test]
fn the_readme_shows_the_client_entries_init_writes() {
    let d = tmp();
    let project = d.path().join("p");
    let home = d.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let home_s = home.to_str().unwrap();
    let o = run(
        &project,
        &[
            "init",
            "--client",
            "claude",
            "--client",
            "codex",
            "--dry-run",
        ],
        &[("HOME", home_s)],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let project_s = project
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let bin = common::bin().to_string_lossy().into_owned();
    let shown = stdout(&o)
        .replace(&project_s, "/path/to/project")
        .replace(&bin, "/home/me/.cargo/bin/resilient-write");
    // Every line init adds to .mcp.json and config.toml is in the README as written.
    let added: Vec<&str> = shown
        .lines()
        .filter_map(|l| l.strip_prefix('+'))
        .filter(|l| l.contains("command") || l.contains("args") || l.contains("mcp_servers"))
        .collect();
    assert!(added.len() >= 4, "{shown}");
    for line in added {
        assert!(
            readme.contains(line),
            "README lacks the line init writes: {line}"
        );
    }
}
