//! The server crate's architecture rules, checked on its source text (docs/ARCHITECTURE.md,
//! "Layers"): a module imports only lower ranks, so requests flow one way (transport → mcp →
//! dispatch → tools → the core), and only `cmd` reads the environment. The core crate's own
//! rules are `crates/core/tests/layers.rs`.

// The precondition scan is the core test's; this one uses the rest.
#[allow(dead_code)]
#[path = "../crates/core/tests/support/source_scan.rs"]
mod source_scan;

use source_scan::{code_of, crate_paths, env_reads, module_of, rust_files};
use std::path::Path;

/// The server's modules by rank. The core is reached by its own name
/// (`resilient_write_core::...`), never through `crate::`: a `crate::` path naming no module
/// below is refused, so a core module and a server module never look alike.
const RANKS: &[(&str, u32)] = &[
    ("wire", 1),
    ("client", 1),
    ("tools", 2),
    ("dispatch", 3),
    ("mcp", 4),
    ("transport", 5),
    ("cmd", 6),
];

fn rank(path: &str) -> Option<(String, u32)> {
    let top = path.split("::").next().unwrap_or(path);
    RANKS
        .iter()
        .find(|(k, _)| *k == top)
        .map(|(k, r)| (k.to_string(), *r))
}

#[test]
fn every_server_module_imports_only_lower_ranks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut broken = Vec::new();
    for file in &files {
        let module = module_of(&root, file);
        if module.is_empty() || module == "main" {
            continue;
        }
        let Some((from, from_rank)) = rank(&module) else {
            broken.push(format!("{}: `{module}` has no rank", file.display()));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for (line, path) in crate_paths(&code) {
            match rank(&path) {
                Some((to, _)) if to == from => {}
                Some((_, r)) if r < from_rank => {}
                Some((to, r)) => broken.push(format!(
                    "{}:{line}: `{from}` (rank {from_rank}) imports `crate::{path}` (`{to}`, rank {r})",
                    file.display()
                )),
                None => broken.push(format!(
                    "{}:{line}: `crate::{path}` has no rank",
                    file.display()
                )),
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn only_the_commands_read_the_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(root.join("cmd"))) {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for line in env_reads(&code) {
            found.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "read the environment in cmd/ and pass it down in Config:\n{}",
        found.join("\n")
    );
}
