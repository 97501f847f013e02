//! The core's architecture rules, checked on its source text (docs/ARCHITECTURE.md, "Layers"):
//!
//! 1. a module imports only modules of a lower rank (or, within one rank, the edges listed);
//! 2. nothing in the core reads the environment: the front end fills `store::Config`;
//! 3. the write-precondition failures (`StaleHash`, `TargetExists`, `TargetMissing`) are built
//!    only in `write::intent` (and the pipeline's create-only rename), in this crate or the
//!    server's.
//!
//! Comments and `#[cfg(test)]` modules are left out: tests may reach any module. Each failure
//! names the file and line.

#[path = "support/source_scan.rs"]
mod source_scan;

use source_scan::{
    code_of, crate_paths, env_reads, module_of, precondition_constructions, rust_files,
};
use std::path::{Path, PathBuf};

/// Ranks of the core's modules: a module may import a module of a lower rank only. A key
/// names a top-level module, or a submodule where the folder holds modules of several ranks.
const RANKS: &[(&str, u32)] = &[
    ("envelope", 0),
    ("hash", 0),
    ("layout", 0),
    ("notices", 0),
    ("progress", 0),
    ("util", 0),
    ("classify", 1),
    ("edit", 1),
    ("validate", 1),
    ("agent_session", 2),
    ("analytics", 2),
    ("handoff::doc", 2),
    ("retry", 1),
    ("policy", 2),
    ("workspace", 2),
    ("journal", 2),
    ("journal::paths", 1),
    ("objects", 2),
    ("checkpoint::doc", 3),
    ("journal::tail", 3),
    ("analytics::query", 3),
    ("policy::active", 3),
    ("client_session", 3),
    ("write::pipeline", 3),
    ("write::intent", 4),
    ("write::idempotency", 4),
    ("write::results", 4),
    ("write", 4),
    ("state", 4),
    ("store", 5),
    ("files", 6),
    ("chunks", 6),
    ("scratch", 6),
    ("tx", 6),
    ("checkpoint", 6),
    ("handoff", 6),
    ("history", 7),
    ("startup", 7),
    ("maint", 8),
    ("native", 8),
    ("read", 8),
];

/// Imports between modules of one rank that the design allows.
const SAME_RANK: &[(&str, &str)] = &[
    ("write::intent", "write::idempotency"),
    ("write::idempotency", "write::results"),
];

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn server_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src")
}

/// The ranked key a module path falls under (its longest prefix in [`RANKS`]).
fn key_of(path: &str) -> Option<&'static str> {
    RANKS
        .iter()
        .filter(|(k, _)| path == *k || path.starts_with(&format!("{k}::")))
        .max_by_key(|(k, _)| k.len())
        .map(|(k, _)| *k)
}

fn rank(key: &str) -> u32 {
    RANKS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(u32::MAX, |(_, r)| *r)
}

#[test]
fn every_core_module_imports_only_lower_ranks() {
    let root = core_src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "no sources under {}", root.display());
    let mut broken = Vec::new();
    for file in &files {
        let module = module_of(&root, file);
        if module.is_empty() {
            continue; // lib.rs: declarations and re-exports
        }
        // `tests.rs`, `tests_*.rs` and `testing.rs` are `#[cfg(test)]` modules: tests may
        // reach any module.
        let last = module.rsplit("::").next().unwrap_or(&module);
        if last.starts_with("tests") || last == "testing" {
            continue;
        }
        let Some(from) = key_of(&module) else {
            broken.push(format!(
                "{}: module `{module}` has no rank in tests/layers.rs",
                file.display()
            ));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for (line, path) in crate_paths(&code) {
            let Some(to) = key_of(&path) else {
                broken.push(format!(
                    "{}:{line}: `crate::{path}` is no ranked module",
                    file.display()
                ));
                continue;
            };
            let same_family = to == from
                || to.starts_with(&format!("{from}::"))
                || from.starts_with(&format!("{to}::"));
            let ok = same_family || rank(to) < rank(from) || SAME_RANK.contains(&(from, to));
            if !ok {
                broken.push(format!(
                    "{}:{line}: `{from}` (rank {}) imports `crate::{path}` (`{to}`, rank {})",
                    file.display(),
                    rank(from),
                    rank(to)
                ));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn nothing_in_the_core_reads_the_environment() {
    let root = core_src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for line in env_reads(&code) {
            found.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "the core reads the environment (put it in store::Config, filled by the server's cli):\n{}",
        found.join("\n")
    );
}

#[test]
fn write_precondition_failures_are_built_only_in_write_intent() {
    let mut files = Vec::new();
    rust_files(&core_src(), &mut files);
    rust_files(&server_src(), &mut files);
    let home = |f: &Path| {
        let s = f.to_string_lossy();
        s.ends_with("write/intent.rs")
            // the create-only rename's EEXIST: a file no lock could see appeared
            || s.contains("write/pipeline")
            // the enum itself and its one mapping to the envelope
            || s.ends_with("/envelope.rs")
            // one sample of each failure, rendered into docs/reference/tools.md, never returned
            || s.ends_with("src/tools/errors.rs")
    };
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !home(f)) {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for line in precondition_constructions(&code) {
            found.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "write-precondition failures built outside write::intent (use Precondition::check, \
         check_expected, existing_for_edit or missing):\n{}",
        found.join("\n")
    );
}

// The checks above must be able to fail: each is run on a planted breach.

#[test]
fn the_checks_see_a_planted_breach_and_ignore_comments_and_tests() {
    let code = code_of(
        "use crate::{envelope::Failure, tx::{self, stage}};\n\
         // use crate::chunks;\n\
         fn f() { let _ = std::env::var(\"X\"); }\n\
         fn g() -> Failure { Failure::StaleHash { path: p, expected: e, actual: None } }\n\
         fn h(f: &Failure) -> bool { matches!(f, Failure::TargetMissing { .. }) }\n\
         #[cfg(test)]\n\
         mod tests { use crate::startup; }\n",
    );
    let paths: Vec<String> = crate_paths(&code).into_iter().map(|(_, p)| p).collect();
    assert_eq!(paths, ["envelope::Failure", "tx::{self, stage}"]);
    assert_eq!(key_of("tx::{self, stage}"), Some("tx"));
    assert_eq!(key_of("write::pipeline::Existing"), Some("write::pipeline"));
    assert_eq!(
        key_of("pipeline::Existing"),
        None,
        "no alias: one path each"
    );
    assert_eq!(env_reads(&code), [3]);
    assert_eq!(precondition_constructions(&code), [4]);
    assert!(rank("store") > rank("write::pipeline"));
}
