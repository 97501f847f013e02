//! The generated references (`docs/reference/`) and the failure declarations they list.
//!
//! - Each checked-in reference equals what the code renders now; `RW_BLESS=1 cargo test --test
//!   reference` rewrites them.
//! - The tools the running server lists are the ones the reference renders, with the same
//!   names, descriptions, annotations and schemas.
//! - Every failure code is claimed by a tool or by any call, and the failures real bad calls
//!   provoke are among their tool's declared ones.

mod common;

use common::Server;
use resilient_write::reference;
use resilient_write::tools::errors::{ANY_TOOL, FailureCode};
use resilient_write::tools::{self, ToolSpec};
use resilient_write_core::store::{Config, Store};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn docs(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/reference")
        .join(file)
}

/// Compare `file` with `rendered`, or rewrite it under `RW_BLESS=1`.
fn check_or_bless(file: &str, rendered: &str) {
    let path = docs(file);
    if std::env::var_os("RW_BLESS").is_some_and(|v| !v.is_empty()) {
        std::fs::write(&path, rendered).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    let name = format!("docs/reference/{file}");
    if let Some(msg) = reference::stale(&name, &checked_in, rendered) {
        panic!("{msg}");
    }
}

#[test]
fn tools_md_is_up_to_date() {
    check_or_bless("tools.md", &reference::tools_md().unwrap());
}

#[test]
fn cli_md_is_up_to_date() {
    check_or_bless("cli.md", &reference::cli_md().unwrap());
}

/// What the server lists, after enabling every toolset, is what the reference renders: the
/// catalogue and `rw_toolsets`, field for field.
#[test]
fn the_reference_renders_what_tools_list_returns() {
    let ws = common::Workspace::new();
    let mut s = Server::start(&ws.root, &[], &[]);
    let default: BTreeSet<String> = s.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let listed = s.list_every_tool();
    let specs = tools::ToolListing::Toolsets.listable();
    assert_eq!(listed.len(), specs.len());
    let md = reference::tools_md().unwrap();
    for t in &listed {
        let name = t["name"].as_str().unwrap();
        let spec = specs
            .iter()
            .find(|s| tools::listed_name(s.name, tools::ToolNames::Underscore) == name)
            .unwrap_or_else(|| panic!("{name} is listed but not rendered"));
        assert_eq!(t["description"], spec.description, "{name}");
        assert_eq!(t["title"], spec.title, "{name}");
        assert_eq!(t["inputSchema"], (spec.input_schema)(), "{name}");
        assert_eq!(t["outputSchema"], (spec.output_schema)(), "{name}");
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], spec.read_only, "{name}");
        assert_eq!(a["destructiveHint"], spec.destructive, "{name}");
        assert_eq!(a["idempotentHint"], spec.idempotent, "{name}");
        assert_eq!(a["openWorldHint"], false, "{name}");
        assert!(md.contains(&format!("\n### `{name}`\n")), "{name}");
        let by_default = md.contains(&format!(
            "\n### `{name}`\n\n**{}**. Also `{}`.\n\n",
            spec.title,
            tools::listed_name(spec.name, tools::ToolNames::Dotted)
        ));
        assert!(by_default, "{name}: heading, title and alias");
        let section = md.split(&format!("\n### `{name}`\n")).nth(1).unwrap();
        let says_default = section
            .lines()
            .find(|l| l.starts_with("- Listed in: "))
            .is_some_and(|l| l.starts_with("- Listed in: the default listing"));
        assert_eq!(says_default, default.contains(name), "{name}");
    }
}

#[test]
fn every_failure_is_claimed_by_a_tool_or_by_any_call() {
    let claimed: BTreeSet<FailureCode> = tools::ToolListing::Toolsets
        .listable()
        .iter()
        .flat_map(|t| t.error_codes())
        .chain(ANY_TOOL.iter().copied())
        .collect();
    let unclaimed: Vec<&str> = FailureCode::ALL
        .iter()
        .filter(|c| !claimed.contains(c))
        .map(|c| c.name())
        .collect();
    assert!(unclaimed.is_empty(), "claimed by no tool: {unclaimed:?}");
}

fn store(root: &Path) -> Arc<Store> {
    let mut c = Config::new(root.to_path_buf());
    c.workspaces = vec![root.to_path_buf()];
    c.scratch_get_disabled = None;
    resilient_write_core::startup::open(c).0
}

fn spec(name: &str) -> &'static ToolSpec {
    tools::find(name)
        .or_else(|| (name == "toolsets").then_some(&tools::toolsets::TOOLSETS))
        .unwrap()
}

/// A secret-shaped string built at run time (never typed into a file).
fn token() -> String {
    let body: String = (0..36u8)
        .map(|i| {
            char::from(
                b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
                    [usize::from(i * 7 % 57)],
            )
        })
        .collect();
    format!("{}{body}", ["gh", "p_"].concat())
}

/// Bad calls of every tool, run in process: each failure's code must be one the tool
/// declares (or one of any call's). Also proves that the cases provoke the codes expected,
/// so a case that silently starts succeeding or failing otherwise is noticed.
#[test]
fn failures_bad_calls_provoke_are_declared_by_their_tool() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let store = store(&root);
    let run = |name: &str, args: Value| (spec(name).run)(&store, args);
    run("safe_write", json!({"path": "a.txt", "content": "hello\n"})).unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    let zeros = "0".repeat(64);
    let unknown_tx = format!("tx-{}", "0".repeat(32));
    run(
        "safe_write",
        json!({"path": "k.txt", "content": "1", "idempotency_key": "k1"}),
    )
    .unwrap();
    let tx = run("tx_begin", json!({}))
        .unwrap()
        .get("tx_id")
        .and_then(Value::as_str)
        .unwrap()
        .to_string();
    let cases: Vec<(&str, Value, FailureCode)> = vec![
        (
            "safe_write",
            json!({"path": "a.txt", "content": "x"}),
            FailureCode::TargetExists,
        ),
        (
            "safe_write",
            json!({"path": "../o.txt", "content": "x"}),
            FailureCode::OutsideWorkspace,
        ),
        (
            "safe_write",
            json!({"path": "d", "content": "x", "mode": "overwrite"}),
            FailureCode::IsDirectory,
        ),
        (
            "safe_write",
            json!({"path": "a.txt", "content": "x", "mode": "overwrite", "expected_prev_sha256": zeros}),
            FailureCode::StaleHash,
        ),
        (
            "safe_write",
            json!({"path": "b.txt", "content": "%%%", "encoding": "base64"}),
            FailureCode::Encoding,
        ),
        (
            "safe_write",
            json!({"path": "b.txt"}),
            FailureCode::BadArgument,
        ),
        (
            "safe_write",
            json!({"path": "b.txt", "content": format!("key = \"{}\"\n", token()), "classify": true, "classify_reject_at": "low"}),
            FailureCode::ContentBlocked,
        ),
        (
            "safe_write",
            json!({"path": "k.txt", "content": "2", "idempotency_key": "k1"}),
            FailureCode::IdempotencyConflict,
        ),
        (
            "safe_replace",
            json!({"path": "a.txt", "old_string": "nope", "new_string": "x"}),
            FailureCode::NoMatch,
        ),
        (
            "safe_replace",
            json!({"path": "a.txt", "old_string": "l", "new_string": "x"}),
            FailureCode::MatchCount,
        ),
        (
            "safe_replace",
            json!({"path": "gone.txt", "old_string": "a", "new_string": "b"}),
            FailureCode::TargetMissing,
        ),
        ("read", json!({"path": "d"}), FailureCode::IsDirectory),
        (
            "read",
            json!({"path": "../x"}),
            FailureCode::OutsideWorkspace,
        ),
        (
            "stat",
            json!({"path": "../x"}),
            FailureCode::OutsideWorkspace,
        ),
        (
            "journal_tail",
            json!({"n": "many"}),
            FailureCode::BadArgument,
        ),
        ("risk_score", json!({}), FailureCode::BadArgument),
        ("redact", json!({"content": 5}), FailureCode::BadArgument),
        (
            "chunk_write",
            json!({"session": "../bad", "index": 1, "content": "x"}),
            FailureCode::ChunkArgument,
        ),
        (
            "chunk_append",
            json!({"session": "../bad", "content": "x"}),
            FailureCode::ChunkArgument,
        ),
        (
            "chunk_compose",
            json!({"session": "nosuch", "output_path": "o.txt"}),
            FailureCode::ChunkSession,
        ),
        (
            "chunk_preview",
            json!({"session": "nosuch"}),
            FailureCode::ChunkSession,
        ),
        (
            "chunk_status",
            json!({"session": "../bad"}),
            FailureCode::ChunkArgument,
        ),
        (
            "chunk_reset",
            json!({"session": "../bad"}),
            FailureCode::ChunkArgument,
        ),
        (
            "scratch_put",
            json!({"content": "x", "encoding": "base64"}),
            FailureCode::Encoding,
        ),
        (
            "scratch_ref",
            json!({"sha256": zeros}),
            FailureCode::ScratchNotFound,
        ),
        (
            "scratch_get",
            json!({"sha256": zeros}),
            FailureCode::ScratchNotFound,
        ),
        (
            "validate",
            json!({"content": "%%", "encoding": "base64"}),
            FailureCode::Encoding,
        ),
        (
            "handoff_write",
            json!({"envelope": {"nonsense": true}}),
            FailureCode::InvalidDocument,
        ),
        (
            "handoff_read",
            json!({"path": "nosuch.md"}),
            FailureCode::TargetMissing,
        ),
        (
            "handoff_read",
            json!({"path": "../x.md"}),
            FailureCode::OutsideWorkspace,
        ),
        (
            "checkpoint",
            json!({"name": "../x", "data": {}}),
            FailureCode::InvalidDocument,
        ),
        (
            "checkpoint_read",
            json!({"name": "nosuch"}),
            FailureCode::TargetMissing,
        ),
        ("checkpoint_list", json!({"x": 1}), FailureCode::BadArgument),
        (
            "checkpoint_cleanup",
            json!({"include_session": "yes"}),
            FailureCode::BadArgument,
        ),
        (
            "analytics",
            json!({"since": "not a time"}),
            FailureCode::InvalidArguments,
        ),
        ("tx_begin", json!({"bogus": 1}), FailureCode::BadArgument),
        (
            "tx_write",
            json!({"tx_id": unknown_tx, "path": "x", "content": "y"}),
            FailureCode::TxNotOpen,
        ),
        (
            "tx_write",
            json!({"tx_id": tx, "path": "a.txt", "content": "y"}),
            FailureCode::TargetExists,
        ),
        (
            "tx_replace",
            json!({"tx_id": tx, "path": "a.txt", "old_string": "nope", "new_string": "x"}),
            FailureCode::NoMatch,
        ),
        (
            "tx_status",
            json!({"tx_id": unknown_tx}),
            FailureCode::TxNotOpen,
        ),
        (
            "tx_commit",
            json!({"tx_id": unknown_tx}),
            FailureCode::TxNotOpen,
        ),
        (
            "tx_rollback",
            json!({"tx_id": unknown_tx}),
            FailureCode::TxNotOpen,
        ),
        (
            "history",
            json!({"path": "../x"}),
            FailureCode::OutsideWorkspace,
        ),
        (
            "restore",
            json!({"path": "a.txt", "to_sha256": "deadbeef"}),
            FailureCode::VersionUnavailable,
        ),
        (
            "restore",
            json!({"session": "nosuch"}),
            FailureCode::SessionUnknown,
        ),
        (
            "restore",
            json!({"tx_id": unknown_tx}),
            FailureCode::TxNotOpen,
        ),
        ("restore", json!({}), FailureCode::InvalidArguments),
        (
            "toolsets",
            json!({"enable": ["files"]}),
            FailureCode::InvalidArguments,
        ),
    ];
    let mut undeclared = Vec::new();
    let mut unexpected = Vec::new();
    let mut provoked: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, args, want) in cases {
        let shown = args.to_string();
        let code = match run(name, args) {
            Ok(v) => {
                unexpected.push(format!("{name} {shown}: succeeded: {v}"));
                continue;
            }
            Err(f) => FailureCode::of(&f),
        };
        provoked.entry(name).or_default().insert(code.name());
        if !spec(name).error_codes().contains(&code) && !ANY_TOOL.contains(&code) {
            undeclared.push(format!("{name}: {}", code.name()));
        }
        if code != want {
            unexpected.push(format!(
                "{name} {shown}: {} (expected {})",
                code.name(),
                want.name()
            ));
        }
    }
    assert!(
        undeclared.is_empty(),
        "provoked but not declared: {undeclared:#?}"
    );
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    // Every tool has at least one bad call here.
    for t in tools::ToolListing::Toolsets.listable() {
        assert!(provoked.contains_key(t.name), "no bad call of {}", t.name);
    }
}

/// More failures, from a store with a tiny write cap, a write-only scratchpad and a policy
/// file that cannot be used, and from state changed behind a tool's back.
#[test]
fn failures_of_limits_policy_and_changed_state_are_declared_by_their_tool() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::write(root.join("policy.yaml"), "classifier: [unclosed\n").unwrap();
    let mut c = Config::new(root.clone());
    c.workspaces = vec![root.clone()];
    c.max_write_bytes = 8;
    c.scratch_get_disabled = Some("a test".into());
    c.policy_file = Some(root.join("policy.yaml"));
    let store = resilient_write_core::startup::open(c).0;
    let run = |name: &str, args: Value| (spec(name).run)(&store, args);
    run("safe_write", json!({"path": "a.txt", "content": "one\n"})).unwrap();
    let tx = run("tx_begin", json!({})).unwrap()["tx_id"]
        .as_str()
        .unwrap()
        .to_string();
    run(
        "tx_write",
        json!({"tx_id": tx, "path": "a.txt", "content": "two\n", "mode": "overwrite"}),
    )
    .unwrap();
    std::fs::write(root.join("a.txt"), "three\n").unwrap();
    let big = "x".repeat(64);
    std::fs::write(root.join("big.txt"), &big).unwrap();
    let cases: Vec<(&str, Value, FailureCode)> = vec![
        (
            "safe_write",
            json!({"path": "b.txt", "content": big}),
            FailureCode::TooLarge,
        ),
        (
            "safe_write",
            json!({"path": "b.txt", "content": "x", "classify": true}),
            FailureCode::PolicyInvalid,
        ),
        (
            "risk_score",
            json!({"content": "x"}),
            FailureCode::PolicyInvalid,
        ),
        (
            "redact",
            json!({"content": "x"}),
            FailureCode::PolicyInvalid,
        ),
        ("read", json!({"path": "big.txt"}), FailureCode::TooLarge),
        (
            "scratch_get",
            json!({"sha256": "0".repeat(64)}),
            FailureCode::ScratchGetDisabled,
        ),
        (
            "scratch_put",
            json!({"content": big}),
            FailureCode::TooLarge,
        ),
        (
            "chunk_write",
            json!({"session": "s", "index": 1, "content": big}),
            FailureCode::TooLarge,
        ),
        ("validate", json!({"content": big}), FailureCode::TooLarge),
        ("tx_commit", json!({"tx_id": tx}), FailureCode::TxConflict),
    ];
    let mut problems = Vec::new();
    for (name, args, want) in cases {
        let shown = args.to_string();
        match run(name, args) {
            Ok(v) => problems.push(format!("{name} {shown}: succeeded: {v}")),
            Err(f) => {
                let code = FailureCode::of(&f);
                if !spec(name).error_codes().contains(&code) && !ANY_TOOL.contains(&code) {
                    problems.push(format!("{name}: {} is not declared", code.name()));
                }
                if code != want {
                    problems.push(format!(
                        "{name} {shown}: {} (expected {})",
                        code.name(),
                        want.name()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The dispatcher's own refusals are of any call: a tool outside a fixed list, an unknown
/// tool, a retry budget spent.
#[test]
fn the_dispatchers_refusals_are_any_calls() {
    for code in [
        FailureCode::ToolNotEnabled,
        FailureCode::UnknownTool,
        FailureCode::RetryBudgetExhausted,
    ] {
        assert!(ANY_TOOL.contains(&code), "{}", code.name());
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let mut config = resilient_write::dispatch::Config::new(root.clone());
    config.store.workspaces = vec![root];
    config.tools = tools::ToolListing::parse("core").unwrap();
    let service = resilient_write::dispatch::Service::start(config);
    let refused = service
        .call("rw_chunk_status", json!({"session": "s"}))
        .unwrap_err();
    let sample = FailureCode::ToolNotEnabled.sample(false).envelope("t", 0);
    assert_eq!(
        (refused.error, refused.reason_hint, refused.suggested_action),
        (sample.error, sample.reason_hint, sample.suggested_action)
    );
    assert_eq!(refused.context["reason"], "tool_not_enabled");
}
