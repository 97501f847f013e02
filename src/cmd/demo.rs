//! `resilient-write demo`: the paper's motivating incident (section 1), replayed end to end
//! against the real server so a newcomer sees every layer work in one command.
//!
//! An agent drafts a report quoting an HTTP header whose bearer token has a vendor's prefix.
//! The demo spawns this binary as an MCP server over stdio in a throwaway workspace (removed
//! afterwards unless `--keep`) and drives it with [`crate::client`]: the draft is scored (L0),
//! the classified write is refused with a typed envelope (L3) and nothing lands, the draft is
//! redacted with the original deposited in the scratchpad (L4), the clean draft is written
//! (L1), a long document is written as chunks and composed (L2), a handoff is written and read
//! back (L5), and the journal is shown.
//!
//! Each call is printed (tool, key arguments, short result); colour only when stdout is a
//! terminal and `NO_COLOR` is unset. The token is generated (vendor prefix + characters derived
//! from the clock and pid), never printed whole, and checked to be nowhere in the workspace or
//! journal at the end except in its scratch blob. Any step that does not behave as the paper
//! says makes the command exit 1, naming the step, so the demo doubles as a test.

use crate::client::{ClientError, Launch, McpClient};
use crate::cmd::style::{self, paint};
use crate::dispatch::{Config, STATE_DIR_NAME};
use clap::Args;
use resilient_write_core::hash::sha256_hex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the throwaway workspace and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// The server binary to drive (default: this executable).
    #[arg(long, value_name = "PATH")]
    pub server: Option<PathBuf>,
}

/// The vendor prefix of the paper's incident (`Authorization: Bearer sk-ant-oat01-...`).
const TOKEN_PREFIX: &str = "sk-ant-oat01-";
/// Generated characters after the prefix.
const TOKEN_TAIL: usize = 96;
/// Characters shown of the token whenever it is mentioned.
const SHOWN: usize = 16;
/// Longest wait for any one answer from the server.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A step that did not behave as expected.
struct StepFailed(String);

impl From<ClientError> for StepFailed {
    fn from(e: ClientError) -> StepFailed {
        StepFailed(e.to_string())
    }
}

type Step<T = ()> = Result<T, StepFailed>;

fn expect(cond: bool, what: impl FnOnce() -> String) -> Step {
    if cond {
        Ok(())
    } else {
        Err(StepFailed(what()))
    }
}

/// Terminal output, coloured where the terminal takes it ([`crate::cmd::style`]).
struct Out;

impl Out {
    fn step(&self, n: usize, text: &str) {
        anstream::println!("\n{} {text}", paint(style::BOLD, &format!("{n}.")));
    }

    fn call(&self, tool: &str, args: &str) {
        anstream::println!(
            "   {} {} {args}",
            paint(style::CALL, "->"),
            paint(style::BOLD, tool)
        );
    }

    fn ok(&self, text: &str) {
        anstream::println!("   {} {text}", paint(style::GOOD, "<-"));
    }

    fn refused(&self, text: &str) {
        anstream::println!("   {} {text}", paint(style::WARNING, "<-"));
    }

    fn note(&self, text: &str) {
        anstream::println!("      {text}");
    }
}

/// A token-shaped string: the vendor prefix plus 96 characters derived from the clock and the
/// process id (the length of a real one, so the classifier's rule for it fires; not a
/// credential, and never typed into a file).
fn generated_token() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut state = sha256_hex(format!("{nanos}:{}", std::process::id()).as_bytes());
    let mut tail = String::with_capacity(TOKEN_TAIL);
    while tail.len() < TOKEN_TAIL {
        state = sha256_hex(state.as_bytes());
        for pair in state.as_bytes().chunks(2) {
            let byte = std::str::from_utf8(pair)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or(0);
            tail.push(char::from(ALPHABET[usize::from(byte) % ALPHABET.len()]));
        }
    }
    tail.truncate(TOKEN_TAIL);
    format!("{TOKEN_PREFIX}{tail}")
}

/// The first characters of a secret, never the whole of it.
fn masked(secret: &str) -> String {
    let shown: String = secret.chars().take(SHOWN).collect();
    format!("{shown}... ({} chars)", secret.chars().count())
}

fn short(sha: &Value) -> String {
    sha.as_str().unwrap_or("?").chars().take(12).collect()
}

fn draft(token: &str) -> String {
    format!(
        "\\section{{What leaves your workstation}}\n\
         Every request the CLI sends carries the same headers:\n\
         \\begin{{verbatim}}\n\
         POST /v1/messages HTTP/1.1\n\
         Host: api.example.invalid\n\
         Authorization: Bearer {token}\n\
         Content-Type: application/json\n\
         \\end{{verbatim}}\n\
         The token is sent on every call, including telemetry.\n"
    )
}

/// Sections of the long document, written one chunk each.
fn sections() -> Vec<String> {
    let titles = ["Introduction", "Six layers", "Evaluation", "Discussion"];
    titles
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut s = format!("## {}. {t}\n\n", i + 1);
            for p in 0..12 {
                s.push_str(&format!(
                    "Paragraph {p} of section {}: a write that fails must say why, keep the \
                     draft, and never leave a file half written.\n",
                    i + 1
                ));
            }
            s.push('\n');
            s
        })
        .collect()
}

struct Demo {
    client: McpClient,
    out: Out,
    root: PathBuf,
    token: String,
}

impl Demo {
    fn incident(&mut self) -> Step<String> {
        let content = draft(&self.token);
        self.out.step(
            1,
            "An agent drafts report.tex. The draft quotes an HTTP header whose bearer token \
             has a vendor's prefix.",
        );
        self.out
            .note(&format!("Authorization: Bearer {}", masked(&self.token)));
        self.out.call(
            "rw_risk_score",
            &format!(
                "content=<draft, {} bytes, {} lines>",
                content.len(),
                content.lines().count()
            ),
        );
        let r = self.client.call(
            "rw_risk_score",
            json!({"content": content, "target_path": "report.tex"}),
        )?;
        let patterns = r["detected_patterns"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let found: Vec<String> = patterns
            .iter()
            .map(|p| {
                format!(
                    "{} {:?} line {}",
                    p["kind"].as_str().unwrap_or("?"),
                    p["match"].as_str().unwrap_or(""),
                    p["line"]
                )
            })
            .collect();
        self.out.ok(&format!(
            "score {:.2}, verdict {}: {}",
            r["score"].as_f64().unwrap_or(0.0),
            r["verdict"].as_str().unwrap_or("?"),
            found.join("; ")
        ));
        let verdict = r["verdict"].as_str().unwrap_or("");
        expect(matches!(verdict, "medium" | "high"), || {
            format!("risk_score should rate the draft medium or high, got {verdict:?}")
        })?;
        expect(
            patterns.iter().all(|p| {
                p["match"]
                    .as_str()
                    .is_none_or(|m| m.chars().count() <= SHOWN)
            }),
            || "a detected pattern carried more than 16 characters".into(),
        )?;
        Ok(content)
    }

    fn refused_write(&mut self, content: &str) -> Step {
        self.out.step(
            2,
            "It writes the draft with classify=true, refusing at medium (where a host's filter \
             dropped it silently); here the refusal is a typed envelope and nothing lands.",
        );
        self.out.call(
            "rw_safe_write",
            "path=report.tex classify=true classify_reject_at=medium content=<draft>",
        );
        let outcome = self.client.call(
            "rw_safe_write",
            json!({"path": "report.tex", "content": content, "classify": true,
                   "classify_reject_at": "medium"}),
        );
        let env = match outcome {
            Err(ClientError::Tool { envelope, .. }) => envelope,
            Ok(_) => {
                return Err(StepFailed(
                    "safe_write with classify=true accepted the draft; it should be refused".into(),
                ));
            }
            Err(e) => return Err(e.into()),
        };
        self.out.refused(&format!(
            "refused: error={} reason_hint={} suggested_action={} retry_budget={}",
            env["error"].as_str().unwrap_or("?"),
            env["reason_hint"].as_str().unwrap_or("?"),
            env["suggested_action"].as_str().unwrap_or("?"),
            env["retry_budget"]
        ));
        expect(env["error"] == "blocked", || {
            format!("expected error=blocked, got {}", env["error"])
        })?;
        expect(env["reason_hint"] == "content_filter", || {
            format!(
                "expected reason_hint=content_filter, got {}",
                env["reason_hint"]
            )
        })?;
        expect(env["suggested_action"] == "redact", || {
            format!(
                "expected suggested_action=redact, got {}",
                env["suggested_action"]
            )
        })?;
        let exists = self.root.join("report.tex").exists();
        self.out.note(if exists {
            "report.tex exists"
        } else {
            "report.tex was not written: the agent can branch on the envelope instead of retrying"
        });
        expect(!exists, || "report.tex exists after a refused write".into())
    }

    fn redact_and_write(&mut self, content: &str) -> Step<Value> {
        self.out.step(
            3,
            "It redacts the draft in one call; the original goes to the scratchpad, outside \
             the tree.",
        );
        self.out.call("rw_redact", "content=<draft> deposit=true");
        let r = self
            .client
            .call("rw_redact", json!({"content": content, "deposit": true}))?;
        let items = r["replacements"].as_array().cloned().unwrap_or_default();
        let clean = r["content"].as_str().unwrap_or("").to_string();
        let placeholders: Vec<String> = items
            .iter()
            .map(|i| {
                format!(
                    "{{REDACTED:{}}} line {} (original in scratch {})",
                    i["rule"].as_str().unwrap_or("?"),
                    i["line"],
                    short(&i["sha256"])
                )
            })
            .collect();
        self.out.ok(&format!(
            "{} replacement(s): {}",
            items.len(),
            placeholders.join("; ")
        ));
        expect(!items.is_empty(), || "redact replaced nothing".into())?;
        expect(!clean.contains(&self.token), || {
            "the redacted draft still holds the token".into()
        })?;
        expect(r["deposited"] == true, || {
            format!("the originals were not deposited: {}", r["note"])
        })?;

        self.out
            .step(4, "It writes the redacted draft, still classified.");
        self.out.call(
            "rw_safe_write",
            "path=report.tex classify=true classify_reject_at=medium content=<redacted draft>",
        );
        let w = self.client.call(
            "rw_safe_write",
            json!({"path": "report.tex", "content": clean, "classify": true,
                   "classify_reject_at": "medium"}),
        )?;
        self.out.ok(&format!(
            "written: {} bytes, sha256 {}, mode {}, journal_id {}",
            w["bytes"],
            short(&w["sha256"]),
            w["mode_applied"].as_str().unwrap_or("?"),
            w["journal_id"].as_str().unwrap_or("?")
        ));
        let on_disk = std::fs::read(self.root.join("report.tex"))
            .map_err(|e| StepFailed(format!("report.tex cannot be read back: {e}")))?;
        expect(w["sha256"] == sha256_hex(&on_disk), || {
            "the sha256 reported differs from the file on disk".into()
        })?;
        self.out
            .note("the file on disk hashes to the sha256 reported (read back and compared)");
        Ok(w)
    }

    fn chunks(&mut self) -> Step<Value> {
        let parts = sections();
        let total: usize = parts.iter().map(String::len).sum();
        self.out.step(
            5,
            &format!(
                "A long document ({total} bytes) goes in {} chunks, resumable after a crash, \
                 then is composed in one atomic write.",
                parts.len()
            ),
        );
        for (i, part) in parts.iter().enumerate() {
            let index = i + 1;
            self.out.call(
                "rw_chunk_write",
                &format!(
                    "session=paper index={index} total_expected={} content=<{} bytes>",
                    parts.len(),
                    part.len()
                ),
            );
            let c = self.client.call(
                "rw_chunk_write",
                json!({"session": "paper", "index": index, "content": part,
                       "total_expected": parts.len()}),
            )?;
            self.out.ok(&format!(
                "{} ({} bytes)",
                c["chunk_path"].as_str().unwrap_or("?"),
                c["bytes"]
            ));
        }
        self.out.call(
            "rw_chunk_compose",
            "session=paper output_path=paper.md cleanup=true",
        );
        let c = self.client.call(
            "rw_chunk_compose",
            json!({"session": "paper", "output_path": "paper.md", "cleanup": true}),
        )?;
        self.out.ok(&format!(
            "paper.md: {} chunks, {} bytes, sha256 {}",
            c["chunk_count"],
            c["bytes"],
            short(&c["sha256"])
        ));
        let expected = sha256_hex(parts.concat().as_bytes());
        let on_disk = std::fs::read(self.root.join("paper.md"))
            .map_err(|e| StepFailed(format!("paper.md cannot be read back: {e}")))?;
        expect(
            c["sha256"] == expected.as_str() && sha256_hex(&on_disk) == expected,
            || "paper.md is not the concatenation of its chunks".into(),
        )?;
        self.out
            .note("paper.md is byte for byte the concatenation of the chunks");
        Ok(c)
    }

    fn handoff(&mut self, report: &Value, paper: &Value) -> Step {
        self.out.step(
            6,
            "The session ends: a handoff records what is done and what is next; the next \
             session reads it back and checks the files have not drifted.",
        );
        let envelope = json!({
            "task_id": "telemetry-report",
            "status": "partial",
            "agent": "resilient-write demo",
            "summary": "report.tex written with the token redacted; paper.md composed from 4 chunks",
            "next_steps": ["Review the redacted header in report.tex", "Add the evaluation figures to paper.md"],
            "last_good_state": [
                {"path": "report.tex", "sha256": report["sha256"], "bytes": report["bytes"]},
                {"path": "paper.md", "sha256": paper["sha256"], "bytes": paper["bytes"]}
            ]
        });
        self.out.call(
            "rw_handoff_write",
            "path=HANDOFF.md envelope={task_id: telemetry-report, status: partial, ...}",
        );
        let w = self.client.call(
            "rw_handoff_write",
            json!({"envelope": envelope, "body": "Notes for the next session.\n"}),
        )?;
        self.out.ok(&format!(
            "{}: {} bytes, sha256 {}",
            w["handoff_path"].as_str().unwrap_or("?"),
            w["bytes"],
            short(&w["sha256"])
        ));
        self.out.call("rw_handoff_read", "path=HANDOFF.md");
        let r = self.client.call("rw_handoff_read", json!({}))?;
        let drift = r["drift"].as_array().map_or(0, Vec::len);
        self.out.ok(&format!(
            "task {} ({}), {} next step(s), {} file(s) in last_good_state, drift: {}",
            r["envelope"]["task_id"].as_str().unwrap_or("?"),
            r["envelope"]["status"].as_str().unwrap_or("?"),
            r["envelope"]["next_steps"].as_array().map_or(0, Vec::len),
            r["envelope"]["last_good_state"]
                .as_array()
                .map_or(0, Vec::len),
            if drift == 0 {
                "none".to_string()
            } else {
                drift.to_string()
            }
        ));
        expect(r["envelope"]["task_id"] == "telemetry-report", || {
            "handoff_read returned another task".into()
        })?;
        expect(drift == 0, || {
            format!("handoff_read reported drift: {}", r["drift"])
        })
    }

    fn journal(&mut self) -> Step {
        self.out.step(
            7,
            "Every write left a journal row (hashes and sizes, never content).",
        );
        self.out.call("rw_journal_tail", "n=20");
        let j = self.client.call("rw_journal_tail", json!({"n": 20}))?;
        let rows = j["entries"].as_array().cloned().unwrap_or_default();
        self.out.ok(&format!("{} row(s):", rows.len()));
        for r in &rows {
            // Relative to the workspace root, as the journal records it.
            let path = r["path"].as_str().unwrap_or("");
            // Scratch blobs are named by their 64-digit hash: show its start.
            let path = match path.rsplit_once('/') {
                Some((dir, name)) if name.len() > 64 && name.ends_with(".bin") => {
                    format!("{dir}/{}...bin", &name[..12])
                }
                _ => path.to_string(),
            };
            self.out.note(&format!(
                "{:<10} {:<15} {:>6}  {}  {path}",
                r["mode"].as_str().unwrap_or("?"),
                r["tool"].as_str().unwrap_or("?"),
                r["bytes"].as_u64().unwrap_or(0),
                short(&r["sha256"]),
            ));
        }
        let has = |mode: &str, file: &str| {
            rows.iter()
                .any(|r| r["mode"] == mode && r["path"].as_str().is_some_and(|p| p.ends_with(file)))
        };
        expect(has("create", "report.tex"), || {
            "no journal row for report.tex".into()
        })?;
        expect(has("compose", "paper.md"), || {
            "no compose row for paper.md".into()
        })?;
        expect(has("create", "HANDOFF.md"), || {
            "no journal row for HANDOFF.md".into()
        })
    }

    /// The token is nowhere in the workspace (files, journal, manifests) except its blob.
    fn token_contained(&mut self) -> Step {
        self.out.step(8, "Where is the token now?");
        let scratch = self.root.join(STATE_DIR_NAME).join("scratch");
        let mut holders = Vec::new();
        let mut in_scratch = 0;
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| StepFailed(format!("cannot list {}: {e}", dir.display())))?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if std::fs::read(&path).is_ok_and(|b| contains(&b, self.token.as_bytes())) {
                    if path.starts_with(&scratch) {
                        in_scratch += 1;
                    } else {
                        holders.push(path);
                    }
                }
            }
        }
        self.out.ok(&format!(
            "in {in_scratch} scratch blob(s) under {STATE_DIR_NAME}/scratch/ (0600), in no \
             workspace file, journal row or manifest"
        ));
        expect(holders.is_empty(), || {
            format!("the token was found in {holders:?}")
        })?;
        expect(in_scratch == 1, || {
            format!("expected the original in one scratch blob, found {in_scratch}")
        })
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Run the demo; the exit code says whether every step behaved as expected.
pub fn run(config: &Config, args: &DemoArgs) -> ExitCode {
    let out = Out;
    let dir = match tempfile::Builder::new()
        .prefix("resilient-write-demo-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("resilient-write demo: cannot create a throwaway workspace: {e}");
            return ExitCode::FAILURE;
        }
    };
    let root = dir
        .path()
        .canonicalize()
        .unwrap_or_else(|_| dir.path().to_path_buf());
    anstream::println!(
        "{}",
        paint(
            style::BOLD,
            "resilient-write demo: the paper's motivating incident, against the real server"
        )
    );
    println!(
        "workspace {} ({})",
        root.display(),
        if args.keep {
            "kept afterwards"
        } else {
            "removed afterwards; --keep keeps it"
        }
    );
    let result = drive(config, args, &root, out);
    let code = match result {
        Ok(n) => {
            anstream::println!(
                "\n{}",
                paint(
                    style::GOOD,
                    &format!("All {n} steps behaved as the paper describes.")
                )
            );
            ExitCode::SUCCESS
        }
        Err(StepFailed(why)) => {
            anstream::println!("\n{} {why}", paint(style::PROBLEM, "DEMO FAILED:"));
            ExitCode::FAILURE
        }
    };
    if args.keep {
        let kept = dir.keep();
        println!("kept: {}", kept.display());
    } else if let Err(e) = dir.close() {
        eprintln!("resilient-write demo: could not remove the workspace: {e}");
    }
    code
}

fn drive(config: &Config, args: &DemoArgs, root: &Path, out: Out) -> Step<usize> {
    let launch = match &args.server {
        Some(p) => Launch::new(p),
        None => Launch::current_exe()?,
    };
    let mut launch = launch
        .arg("serve")
        .arg("-w")
        .arg(root)
        .cwd(root)
        .client_name("resilient-write-demo")
        .timeout(CALL_TIMEOUT);
    if let Some(policy) = &config.store.policy_file {
        // Relative to where the demo was started, not to the throwaway workspace.
        launch = launch
            .arg("--policy-file")
            .arg(config.store.cwd.join(policy));
    }
    let client = launch.spawn()?;
    let server = &client.init_result()["serverInfo"];
    println!(
        "server {} {} over stdio (pid {})",
        server["name"].as_str().unwrap_or("?"),
        server["version"].as_str().unwrap_or("?"),
        client.pid()
    );
    let mut demo = Demo {
        client,
        out,
        root: root.to_path_buf(),
        token: generated_token(),
    };
    let draft = demo.incident()?;
    demo.refused_write(&draft)?;
    let report = demo.redact_and_write(&draft)?;
    let paper = demo.chunks()?;
    demo.handoff(&report, &paper)?;
    demo.journal()?;
    demo.token_contained()?;
    let status = demo.client.close()?;
    expect(status.success(), || {
        format!("the server exited with {status} after its input closed")
    })?;
    Ok(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_have_the_prefix_and_differ() {
        let a = generated_token();
        std::thread::sleep(Duration::from_millis(2));
        let b = generated_token();
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + TOKEN_TAIL);
        assert_ne!(a, b);
    }

    #[test]
    fn masked_never_shows_the_whole_secret() {
        let t = generated_token();
        let m = masked(&t);
        assert!(!m.contains(&t));
        assert!(m.starts_with(&t[..SHOWN]));
    }
}
