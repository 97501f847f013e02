//! The server crate's architecture rules, checked on its source text (docs/ARCHITECTURE.md,
//! "Layers"): a module imports only lower ranks, so requests flow one way (transport → mcp →
//! dispatch → tools → the core), and only `cmd` reads the environment. The core crate's own
//! rules are `crates/core/tests/layers.rs`. For both crates, their tests and the examples: no
//! Rust file is longer than [`MAX_LINES`].

// The precondition scan is the core test's; this one uses the rest.
#[allow(dead_code)]
#[path = "../crates/core/tests/support/source_scan.rs"]
mod source_scan;

use source_scan::{code_of, crate_paths, env_reads, module_of, rust_files};
use std::path::{Path, PathBuf};

/// The most lines a Rust file of the project may have (issue 44): past it, split the module
/// (or the test file, by topic) rather than grow it.
const MAX_LINES: usize = 900;

/// The folders of the project's Rust files, under the workspace root.
const RUST_DIRS: &[&str] = &["src", "crates", "tests", "examples"];

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
    // renders the CLI and the tool catalogue into docs/reference/: nothing imports it
    ("reference", 7),
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

/// Every Rust file under `dirs` of `root` longer than [`MAX_LINES`], as `path: N lines`,
/// sorted; what git ignores there (`target/`, the agents' `node_modules/`) is left out.
fn files_over_the_limit(root: &Path, dirs: &[&str]) -> (usize, Vec<String>) {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    files.retain(|f| {
        !f.components()
            .any(|c| c.as_os_str() == "target" || c.as_os_str() == "node_modules")
    });
    let mut over = Vec::new();
    for file in &files {
        let lines = std::fs::read_to_string(file).unwrap().lines().count();
        if lines > MAX_LINES {
            let shown = file.strip_prefix(root).unwrap_or(file);
            over.push(format!("{}: {lines} lines", shown.display()));
        }
    }
    over.sort();
    (files.len(), over)
}

#[test]
fn no_rust_file_is_longer_than_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (read, over) = files_over_the_limit(root, RUST_DIRS);
    assert!(
        read > 200,
        "only {read} Rust files under {}",
        root.display()
    );
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines (split the module, or the test file by topic):\n{}",
        over.join("\n")
    );
}

#[test]
fn the_line_limit_names_a_planted_long_file_and_spares_one_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("deep")).unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    let lines = |n: usize| "fn f() {}\n".repeat(n);
    std::fs::write(src.join("at_limit.rs"), lines(MAX_LINES)).unwrap();
    std::fs::write(src.join("deep/long.rs"), lines(MAX_LINES + 1)).unwrap();
    std::fs::write(src.join("long.txt"), lines(MAX_LINES + 1)).unwrap();
    std::fs::write(dir.path().join("target/built.rs"), lines(MAX_LINES + 1)).unwrap();
    let (read, over) = files_over_the_limit(dir.path(), &["src", "target"]);
    assert_eq!(read, 2);
    assert_eq!(
        over,
        vec![format!("src/deep/long.rs: {} lines", MAX_LINES + 1)]
    );
}
