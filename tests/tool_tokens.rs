//! What an agent pays for our tools (issues 20 and 46). Every request an agent sends its model
//! carries the tool definitions it lists: the name, description and input schema of each
//! ([`common::model_visible`]); output schemas and annotations stay with the client. This test
//! prints, for every profile, each toolset and the default with every toolset enabled, that
//! model-visible part in bytes and o200k_base tokens, beside the whole `tools/list` result,
//! and holds two budgets:
//! - the default listing (the original's 21 tools and `rw_toolsets`): at most 14 KB =
//!   14,336 bytes model-visible (about 1.35x the original's, which `tests/original_compat.rs`
//!   measures from the original's own code);
//! - the core profile's whole `tools/list` result under 3,000 tokens (issue 20).
//!
//! Run with `cargo test --test tool_tokens -- --nocapture` to see the table.

mod common;

use common::{Server, Workspace, model_visible};
use serde_json::{Value, json};

/// The default listing's budget: 14 KB of model-visible definitions.
const DEFAULT_BUDGET_BYTES: usize = 14 * 1024;

/// The core profile's budget: its whole `tools/list` result, in o200k_base tokens.
const CORE_BUDGET_TOKENS: usize = 3_000;

/// One measured listing.
struct Cost {
    label: String,
    tools: usize,
    visible_bytes: usize,
    visible_tokens: usize,
    listing_bytes: usize,
    listing_tokens: usize,
}

fn cost(label: &str, tools: &[Value], listing: &Value) -> Cost {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base ranks are built into the crate");
    let visible = model_visible(tools);
    let whole = serde_json::to_string(listing).expect("JSON");
    Cost {
        label: label.into(),
        tools: tools.len(),
        visible_bytes: visible.len(),
        visible_tokens: bpe.encode_ordinary(&visible).len(),
        listing_bytes: whole.len(),
        listing_tokens: bpe.encode_ordinary(&whole).len(),
    }
}

/// The `tools/list` result of `s` and its tools.
fn listing(s: &mut Server) -> (Value, Vec<Value>) {
    let result = s.request("tools/list", json!({}))["result"].clone();
    let tools = result["tools"].as_array().expect("tools").clone();
    (result, tools)
}

fn profile(ws: &Workspace, label: &str, args: &[&str]) -> Cost {
    let mut s = Server::start(&ws.root, args, &[]);
    let (result, tools) = listing(&mut s);
    cost(label, &tools, &result)
}

#[test]
fn every_listing_is_measured_and_the_default_and_core_stay_within_budget() {
    let ws = Workspace::new();
    let mut rows = vec![
        profile(&ws, "default", &["serve"]),
        profile(&ws, "core", &["serve", "--tools", "core"]),
        profile(
            &ws,
            "core --read-only",
            &["serve", "--tools", "core", "--read-only"],
        ),
        profile(&ws, "--read-only", &["serve", "--read-only"]),
        profile(&ws, "all", &["serve", "--tools", "all"]),
    ];
    // Each toolset: the definitions its enabling adds to the default listing.
    let mut s = Server::start(&ws.root, &["serve"], &[]);
    let sets = s.ok("rw_toolsets", json!({}))["toolsets"].clone();
    let (_, every) = listing(&mut Server::start(
        &ws.root,
        &["serve", "--tools", "all"],
        &[],
    ));
    for set in sets.as_array().expect("toolsets") {
        let names = set["tools"].as_array().expect("tools");
        let tools: Vec<Value> = every
            .iter()
            .filter(|t| names.contains(&t["name"]))
            .cloned()
            .collect();
        assert_eq!(tools.len(), names.len(), "{set}");
        let label = format!("toolset {}", set["name"].as_str().unwrap_or("?"));
        rows.push(cost(&label, &tools, &json!({"tools": tools})));
    }
    s.ok("rw_toolsets", json!({"enable": ["all"]}));
    let (result, tools) = listing(&mut s);
    rows.push(cost("default + all toolsets", &tools, &result));

    println!(
        "{:<24} {:>5} {:>14} {:>15} {:>14} {:>15}",
        "listing", "tools", "visible bytes", "visible tokens", "tools/list B", "tools/list tok"
    );
    for r in &rows {
        println!(
            "{:<24} {:>5} {:>14} {:>15} {:>14} {:>15}",
            r.label, r.tools, r.visible_bytes, r.visible_tokens, r.listing_bytes, r.listing_tokens
        );
    }
    let default = &rows[0];
    assert_eq!(default.tools, 22, "the original's 21 and rw_toolsets");
    assert!(
        default.visible_bytes <= DEFAULT_BUDGET_BYTES,
        "the default listing's model-visible definitions take {} bytes, over the budget of {}",
        default.visible_bytes,
        DEFAULT_BUDGET_BYTES
    );
    let core = &rows[1];
    assert!(
        core.listing_tokens < CORE_BUDGET_TOKENS,
        "core profile: {} tokens",
        core.listing_tokens
    );
}
