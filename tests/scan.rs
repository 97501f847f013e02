//! `resilient-write scan` as a secret scanner: the ripgrep walk (ignore files, hidden files,
//! `--no-ignore`), suppression (inline markers, the ignore file, baselines), the three output
//! formats (SARIF validated against the OASIS schema), `--staged` and `--git` in real temporary
//! repositories, `--redact`, exit codes, `init --pre-commit`, and that no output carries a whole
//! secret. Secret-shaped strings are generated, never typed.

mod common;

use common::{ALNUM, Workspace, bin, chars, github_token};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A scratch project with its own HOME (no user git config or global excludes leak in).
struct Project {
    ws: Workspace,
    home: tempfile::TempDir,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Project {
    fn new() -> Project {
        Project {
            ws: Workspace::new(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn git_repo() -> Project {
        let p = Project::new();
        p.git(&["init", "-q", "-b", "main"]);
        p.git(&["config", "user.name", "Test Author"]);
        p.git(&["config", "user.email", "author@example.com"]);
        p.git(&["config", "commit.gpgsign", "false"]);
        p
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.ws.path(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn env(&self, c: &mut Command) {
        c.current_dir(&self.ws.root)
            .env("HOME", self.home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("RW_POLICY_FILE")
            .env_remove("RW_STATE_DIR");
    }

    fn git(&self, args: &[&str]) -> String {
        let mut c = Command::new("git");
        self.env(&mut c);
        let out = c.args(args).output().expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn commit_all(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut c = Command::new(bin());
        self.env(&mut c);
        let mut child = c
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        {
            let mut input = child.stdin.take().unwrap();
            if let Some(text) = stdin {
                input.write_all(text.as_bytes()).unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn scan(&self, args: &[&str]) -> Out {
        let mut all = vec!["scan"];
        all.extend_from_slice(args);
        self.run(&all, None)
    }

    /// Paths of the files reported by `scan --format json ARGS`.
    fn reported(&self, args: &[&str]) -> Vec<String> {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let out = self.scan(&all);
        let mut v: Vec<String> = out.json()["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rel_path"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    }
}

fn code_with(secret: &str) -> String {
    format!("import os\n\nclient = Client(token=\"{secret}\")\nprint(client.user())\n")
}

fn private_key_block(seed: u64) -> String {
    let dashes = "-----";
    let body: Vec<String> = (0..12)
        .map(|i| chars(seed + i, ALNUM, 64))
        .collect::<Vec<_>>();
    format!(
        "{dashes}BEGIN PRIVATE KEY{dashes}\n{}\n{dashes}END PRIVATE KEY{dashes}\n",
        body.join("\n")
    )
}

fn fingerprints(out: &Out) -> Vec<String> {
    out.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["detected_patterns"].as_array().unwrap().clone())
        .map(|h| h["fingerprint"].as_str().unwrap().to_string())
        .collect()
}

// ---- suppression ------------------------------------------------------------------------------

#[test]
fn inline_markers_accept_the_findings_of_their_line_only() {
    let p = Project::new();
    let (a, b, c) = (github_token(1), github_token(2), github_token(3));
    p.write(
        "app.py",
        &format!(
            "a = \"{a}\"  # pragma: allowlist secret\nb = \"{b}\"\nc = \"{c}\"  # gitleaks:allow\n"
        ),
    );
    let out = p.scan(&["--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.all());
    let doc = out.json();
    let hits = doc["files"][0]["detected_patterns"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{doc}");
    assert_eq!(hits[0]["line"], 2);
    assert_eq!(doc["suppressed"]["inline"], 2);
    // both marked: clean
    p.write(
        "app.py",
        &format!("a = \"{a}\"  # pragma: allowlist secret\nc = \"{c}\"  # gitleaks:allow\n"),
    );
    assert_eq!(p.scan(&[]).code, 0);
}

#[test]
fn a_fingerprint_in_the_ignore_file_accepts_that_finding_wherever_its_line_moves() {
    let p = Project::git_repo();
    let (a, b) = (github_token(4), github_token(5));
    p.write("src/app.py", &format!("a = \"{a}\"\nb = \"{b}\"\n"));
    let out = p.scan(&["--format", "json"]);
    assert_eq!(out.code, 1);
    let fps = fingerprints(&out);
    assert_eq!(fps.len(), 2);
    // accept the first (with a comment after it, as people write them)
    p.write(
        ".resilient-write-ignore",
        &format!("# test fixtures\n{} src/app.py a\n", fps[0]),
    );
    let out = p.scan(&["--format", "json"]);
    assert_eq!(out.code, 1);
    assert_eq!(fingerprints(&out), vec![fps[1].clone()]);
    assert_eq!(out.json()["suppressed"]["ignore_file"], 1);
    // lines moved, and scanned from a subdirectory: same fingerprint, still accepted
    p.write(
        "src/app.py",
        &format!("\n\n# moved\nb = \"{b}\"\na = \"{a}\"\n"),
    );
    std::fs::create_dir_all(p.path("src")).unwrap();
    let mut c = Command::new(bin());
    p.env(&mut c);
    let out = c
        .current_dir(p.path("src"))
        .args(["scan", "--format", "json", "app.py"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hits = doc["files"][0]["detected_patterns"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{doc}");
    assert_eq!(hits[0]["fingerprint"], fps[1].as_str());
    assert_eq!(hits[0]["line"], 4);
    // both accepted: clean
    p.write(
        ".resilient-write-ignore",
        &format!("{}\n{}\n", fps[0], fps[1]),
    );
    assert_eq!(p.scan(&[]).code, 0);
}

#[test]
fn a_baseline_round_trip_reports_only_new_findings_and_records_no_secret() {
    let p = Project::git_repo();
    let (a, b) = (github_token(6), github_token(7));
    p.write("old.py", &code_with(&a));
    let out = p.scan(&["--write-baseline", ".rw-baseline.json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let text = std::fs::read_to_string(p.path(".rw-baseline.json")).unwrap();
    assert!(!text.contains(&a) && !text.contains(&a[..16]), "{text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["findings"].as_array().unwrap().len(), 1);
    assert_eq!(doc["findings"][0]["path"], "old.py");
    // nothing new: clean, and the old finding counted as accepted
    let out = p.scan(&["--baseline", ".rw-baseline.json", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(out.json()["suppressed"]["baseline"], 1);
    // the old secret moves down; a new one arrives: only the new one is reported
    p.write("old.py", &format!("# header\n\n{}", code_with(&a)));
    p.write("new.py", &code_with(&b));
    let out = p.scan(&["--baseline", ".rw-baseline.json", "--format", "json"]);
    assert_eq!(out.code, 1);
    let doc = out.json();
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, vec!["new.py"]);
    // a file that is not a baseline is a usage error, not a silent empty baseline
    p.write("bogus.json", "{\"findings\": []}");
    let out = p.scan(&["--baseline", "bogus.json"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bogus.json"), "{}", out.stderr);
}

// ---- formats ----------------------------------------------------------------------------------

fn sarif_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-schema-2.1.0.json"),
        )
        .unwrap(),
    )
    .unwrap();
    jsonschema::draft4::new(&schema).expect("the SARIF schema compiles")
}

fn assert_valid_sarif(doc: &Value) {
    let v = sarif_validator();
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0_with_rules_locations_and_fingerprints() {
    let p = Project::git_repo();
    let token = github_token(8);
    p.write("src/dir with space/app.py", &code_with(&token));
    p.write("keys/k.pem", &private_key_block(200));
    p.write("clean.rs", "fn main() {}\n");
    let out = p.scan(&["--format", "sarif"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_valid_sarif(&doc);
    assert_eq!(doc["version"], "2.1.0");
    let run = &doc["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "resilient-write");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{doc:#}");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert!(
            r["partialFingerprints"]["resilientWriteFingerprint/v1"]
                .as_str()
                .unwrap()
                .len()
                == 32
        );
    }
    let app = results
        .iter()
        .find(|r| r["ruleId"] == "github_classic_pat")
        .unwrap();
    let loc = &app["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        "src/dir%20with%20space/app.py"
    );
    assert_eq!(loc["region"]["startLine"], 3);
    assert_eq!(loc["region"]["startColumn"], 24);
    assert_eq!(app["level"], "warning");
    let key = results
        .iter()
        .find(|r| r["ruleId"] != "github_classic_pat")
        .unwrap();
    assert_eq!(key["level"], "error");

    // history findings carry their commit and author, and stay valid
    let id = p.commit_all("add");
    let out = p.scan(&["--git", "--format", "sarif"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_valid_sarif(&doc);
    let r = &doc["runs"][0]["results"][0];
    assert_eq!(r["properties"]["commit"], id.as_str());
    assert_eq!(
        r["properties"]["author"],
        "Test Author <author@example.com>"
    );

    // a clean tree: a valid log with no results
    let clean = Project::new();
    clean.write("a.txt", "hello\n");
    let out = clean.scan(&["--format", "sarif"]);
    assert_eq!(out.code, 0);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_valid_sarif(&doc);
    assert_eq!(doc["runs"][0]["results"].as_array().unwrap().len(), 0);
}

#[test]
fn the_sarif_validator_rejects_a_broken_log() {
    // the schema check above would catch a malformed log: a result without a message
    let bad = serde_json::json!({
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "r"}]}],
    });
    assert!(!sarif_validator().is_valid(&bad));
}

#[test]
fn no_output_format_carries_a_whole_secret() {
    let p = Project::git_repo();
    let secrets = [
        github_token(9),
        format!("sk_live_{}", chars(10, ALNUM, 24)),
        private_key_block(300),
    ];
    p.write("a.py", &code_with(&secrets[0]));
    p.write("b.py", &format!("STRIPE = \"{}\"\n", secrets[1]));
    p.write("c.pem", &secrets[2]);
    p.commit_all("secrets");
    let mut outputs = Vec::new();
    for args in [
        vec!["--format", "text"],
        vec!["--format", "json"],
        vec!["--format", "sarif"],
        vec!["--git", "--format", "text"],
        vec!["--git", "--format", "json"],
        vec!["--git", "--format", "sarif"],
    ] {
        let out = p.scan(&args);
        assert_eq!(out.code, 1, "{args:?}: {}", out.all());
        outputs.push(out.all());
    }
    p.scan(&["--write-baseline", "base.json"]);
    outputs.push(std::fs::read_to_string(p.path("base.json")).unwrap());
    for text in &outputs {
        for s in &secrets {
            // no whole secret, and no 17-character piece of one
            let chars: Vec<char> = s.chars().collect();
            for w in chars.windows(17) {
                let piece: String = w.iter().collect();
                if piece.contains('\n') || piece.contains('-') {
                    continue;
                }
                assert!(!text.contains(&piece), "{piece} leaked in:\n{text}");
            }
        }
    }
}

// ---- git: staged content and history -----------------------------------------------------------

#[test]
fn staged_scans_the_index_and_not_the_work_tree() {
    let p = Project::git_repo();
    p.write("README.md", "# project\n");
    p.commit_all("init");
    let token = github_token(11);
    // staged secret, cleaned in the work tree only: the commit would hold it
    p.write("app.py", &code_with(&token));
    p.git(&["add", "app.py"]);
    p.write("app.py", "print('clean')\n");
    let out = p.scan(&["--staged", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.all());
    let doc = out.json();
    assert_eq!(doc["files"][0]["path"], "app.py");
    assert_eq!(doc["files"][0]["detected_patterns"][0]["line"], 3);
    assert!(!out.all().contains(&token));
    // the work tree scan disagrees: it is clean
    assert_eq!(p.scan(&["app.py"]).code, 0);
    // staged clean, secret only in the work tree: nothing to refuse
    p.git(&["add", "app.py"]);
    p.write("app.py", &code_with(&token));
    assert_eq!(p.scan(&["--staged"]).code, 0);
    // files not staged at all are not scanned; paths limit the staged set
    p.write("other.py", &code_with(&github_token(12)));
    p.git(&["add", "other.py"]);
    assert_eq!(p.scan(&["--staged", "README.md"]).code, 0);
    assert_eq!(p.scan(&["--staged", "other.py"]).code, 1);
}

#[test]
fn staged_works_before_the_first_commit_and_fails_outside_a_repository() {
    let p = Project::git_repo();
    p.write("app.py", &code_with(&github_token(13)));
    p.git(&["add", "app.py"]);
    assert_eq!(p.scan(&["--staged"]).code, 1);
    let outside = Project::new();
    let out = outside.scan(&["--staged"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("git"), "{}", out.stderr);
}

#[test]
fn git_history_finds_a_secret_that_was_added_and_later_removed() {
    let p = Project::git_repo();
    p.write("app.py", "import os\nprint(1)\n");
    p.commit_all("start");
    let token = github_token(14);
    p.write(
        "app.py",
        &format!("import os\nprint(1)\nTOKEN = \"{token}\"\n"),
    );
    let added = p.commit_all("add token");
    p.write("app.py", "import os\nprint(1)\n");
    p.commit_all("remove token");
    // gone from the tree
    assert_eq!(p.scan(&[]).code, 0);
    // but in history
    let out = p.scan(&["--git", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.all());
    let doc = out.json();
    assert_eq!(doc["commits"], 3);
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{doc:#}");
    let hit = &files[0]["detected_patterns"][0];
    assert_eq!(files[0]["path"], "app.py");
    assert_eq!(hit["pattern"], "github_classic_pat");
    assert_eq!(hit["line"], 3, "the line in the file, not in the diff");
    assert_eq!(hit["commit"]["id"], added.as_str());
    assert_eq!(hit["commit"]["author"], "Test Author <author@example.com>");
    assert!(!out.all().contains(&token));
    // the text table names the commit and author too
    let out = p.scan(&["--git"]);
    let row = out.stdout.lines().find(|l| l.contains("app.py")).unwrap();
    assert!(
        row.contains(&added[..12]) && row.contains("Test Author"),
        "{row}"
    );
    // a range after the removal sees nothing; a range holding it sees it
    assert_eq!(p.scan(&["--git=HEAD~1..HEAD"]).code, 0);
    assert_eq!(p.scan(&["--git=HEAD~2..HEAD~1"]).code, 1);
    // the same fingerprint as a work-tree scan of that content: one baseline serves both
    let fp = hit["fingerprint"].as_str().unwrap().to_string();
    p.write(".resilient-write-ignore", &format!("{fp}\n"));
    assert_eq!(p.scan(&["--git"]).code, 0);
    // a bad range is an error
    let out = p.scan(&["--git=no-such-rev"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no-such-rev"), "{}", out.stderr);
}

// ---- the walk ---------------------------------------------------------------------------------

#[test]
fn gitignore_ignore_files_global_excludes_and_hidden_files_are_honoured() {
    let p = Project::git_repo();
    let secret = code_with(&github_token(15));
    for f in [
        "src/a.py",
        "target/a.py",
        "node_modules/x/a.py",
        "skipped/a.py",
        "local.secret",
        ".env.py",
        ".hidden/a.py",
        ".resilient_write/scratch/a.py",
    ] {
        p.write(f, &secret);
    }
    p.write(".gitignore", "target/\nnode_modules/\n");
    p.write(".ignore", "skipped/\n");
    p.write(".config/git/ignore", "*.secret\n");
    // .git itself is never entered (a secret in a hook sample stays unseen)
    p.write(".git/hooks/a.py", &secret);
    std::fs::rename(p.path(".config"), p.home.path().join(".config")).unwrap();
    assert_eq!(p.reported(&[]), vec!["src/a.py"]);
    assert_eq!(
        p.reported(&["--hidden"]),
        vec![".env.py", ".hidden/a.py", "src/a.py"]
    );
    assert_eq!(
        p.reported(&["--no-ignore"]),
        vec![
            ".env.py",
            ".hidden/a.py",
            "local.secret",
            "node_modules/x/a.py",
            "skipped/a.py",
            "src/a.py",
            "target/a.py"
        ]
    );
    // a file named on the command line is scanned even when ignored (pre-commit passes names)
    assert_eq!(p.reported(&["target/a.py"]), vec!["target/a.py"]);
}

/// Named regular files are scanned without the walker; what is reported must not change: a
/// named file is scanned wherever it is (ignored, hidden, inside `.git`), beside a walked
/// directory and a named symlink (which the walker follows, as before), each counted once.
#[test]
fn named_files_are_scanned_wherever_they_are_beside_walked_directories_and_symlinks() {
    let p = Project::git_repo();
    let secret = code_with(&github_token(20));
    for f in ["src/a.py", "target/b.py", ".hidden/c.py", ".git/hooks/d.py"] {
        p.write(f, &secret);
    }
    p.write(".gitignore", "target/\n");
    // bytes that are not UTF-8 before the secret: replaced, and the secret still found
    let mut bad = b"\xff\xfe x = 1\n".to_vec();
    bad.extend_from_slice(secret.as_bytes());
    std::fs::write(p.path("bad.py"), bad).unwrap();
    let mut binary = secret.clone().into_bytes();
    binary.insert(3, 0);
    std::fs::write(p.path("blob.py"), binary).unwrap();
    std::os::unix::fs::symlink("src/a.py", p.path("link.py")).unwrap();
    let named = [
        "target/b.py",
        ".hidden/c.py",
        ".git/hooks/d.py",
        "bad.py",
        "blob.py",
        "link.py",
        "src",
    ];
    assert_eq!(
        p.reported(&named),
        vec![
            ".git/hooks/d.py",
            ".hidden/c.py",
            "bad.py",
            "link.py",
            "src/a.py",
            "target/b.py"
        ]
    );
    let mut args = vec!["--format", "json"];
    args.extend(named);
    let out = p.scan(&args).json();
    assert_eq!(out["scanned"], 6, "{out}");
    assert_eq!(out["skipped_binary"], 1, "{out}");
}

#[test]
fn binary_files_are_skipped_and_counted() {
    let p = Project::new();
    let mut bytes = code_with(&github_token(16)).into_bytes();
    bytes.insert(10, 0);
    std::fs::write(p.path("blob.bin"), bytes).unwrap();
    let out = p.scan(&["--format", "json"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.json()["skipped_binary"], 1);
}

// ---- exit codes, redact -----------------------------------------------------------------------

#[test]
fn exit_codes_are_0_clean_1_findings_at_fail_at_2_usage_or_io_error() {
    let p = Project::new();
    p.write("clean.txt", "nothing here\n");
    assert_eq!(p.scan(&[]).code, 0);
    p.write("mail.txt", "write to someone@corp-mail.io\n");
    // an email is low: below the default medium, at --fail-at low
    assert_eq!(p.scan(&[]).code, 0);
    assert_eq!(p.scan(&["--fail-at", "low"]).code, 1);
    p.write("app.py", &code_with(&github_token(17)));
    assert_eq!(p.scan(&[]).code, 1);
    assert_eq!(p.scan(&["--fail-at", "high"]).code, 0);
    for args in [
        vec!["missing.txt"],
        vec!["--format", "xml"],
        vec!["--no-such-flag"],
        vec!["--staged", "--git"],
        vec!["--redact", "missing.txt"],
    ] {
        let out = p.scan(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.all());
    }
}

#[test]
fn redact_prints_the_file_with_every_finding_replaced() {
    let p = Project::new();
    let token = github_token(18);
    p.write("app.py", &code_with(&token));
    let out = p.scan(&["--redact", "app.py"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        code_with("{REDACTED:github_classic_pat}"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("1 replacement"), "{}", out.stderr);
    assert!(!out.all().contains(&token));
    // standard input too
    let out = p.run(&["scan", "--redact", "-"], Some(&code_with(&token)));
    assert_eq!(out.stdout, code_with("{REDACTED:github_classic_pat}"));
}

// ---- init --pre-commit -----------------------------------------------------------------------

#[test]
fn init_pre_commit_installs_a_hook_that_refuses_a_staged_secret_once_and_respects_foreign_hooks() {
    let p = Project::git_repo();
    let exe = bin().display().to_string();
    let out = p.run(&["init", "--pre-commit", "--command", &exe], None);
    assert_eq!(out.code, 0, "{}", out.all());
    let hook = p.path(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(text.contains("scan --staged"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o111,
        0o111
    );
    // idempotent
    let out = p.run(&["init", "--pre-commit", "--command", &exe], None);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("unchanged"), "{}", out.stdout);
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), text);
    // the hook works: a staged secret refuses the commit, a clean file passes
    p.write("app.py", &code_with(&github_token(19)));
    p.git(&["add", "app.py"]);
    let mut c = Command::new("git");
    p.env(&mut c);
    let refused = c.args(["commit", "-q", "-m", "leak"]).output().unwrap();
    assert!(!refused.status.success());
    p.write("app.py", "print('ok')\n");
    p.git(&["add", "app.py"]);
    p.git(&["commit", "-q", "-m", "clean"]);
    // a foreign hook is left alone, and the command says so
    std::fs::write(&hook, "#!/bin/sh\nmake lint\n").unwrap();
    let out = p.run(&["init", "--pre-commit", "--command", &exe], None);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("not ours"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\nmake lint\n"
    );
}

#[test]
fn the_pre_commit_hooks_file_names_the_scan_entry() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    let hooks: Vec<std::collections::BTreeMap<String, serde_json::Value>> = hook_entries(&text);
    assert!(hooks.iter().any(|h| h["id"] == "resilient-write"
        && h["entry"] == "resilient-write scan"
        && h["language"] == "rust"));
    assert!(hooks.iter().any(|h| h["language"] == "system"));
}

/// A minimal reader of the hooks file's flat list of maps (no YAML crate in the tests).
fn hook_entries(text: &str) -> Vec<std::collections::BTreeMap<String, Value>> {
    let mut out: Vec<std::collections::BTreeMap<String, Value>> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (new, body) = match line.strip_prefix("- ") {
            Some(b) => (true, b),
            None => (false, line.trim_start()),
        };
        if new {
            out.push(Default::default());
        }
        if let (Some((k, v)), Some(cur)) = (body.split_once(": "), out.last_mut()) {
            cur.insert(k.trim().to_string(), Value::String(v.trim().to_string()));
        }
    }
    out
}
