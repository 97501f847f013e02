//! Tool profiles (`serve --tools core|all|NAME,...` and `--read-only`): which tools a server
//! lists and accepts. Every tool definition an agent is shown costs it context tokens before it
//! writes a byte; an agent that only needs the write path can be shown just that.
//!
//! A hidden tool is not listed, and a call to it is refused with an envelope
//! ([`crate::envelope::Failure::ToolNotEnabled`]), never run.

use super::{ToolSpec, catalog};

/// The `core` profile: the write path (write, edit, L0, read, undo).
pub const CORE: &[&str] = &[
    "safe_write",
    "safe_replace",
    "risk_score",
    "redact",
    "read",
    "history",
    "restore",
];

/// A set of tools, kept in catalogue order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolProfile {
    enabled: Vec<&'static str>,
}

impl Default for ToolProfile {
    fn default() -> ToolProfile {
        ToolProfile::all()
    }
}

impl ToolProfile {
    /// Every tool.
    pub fn all() -> ToolProfile {
        ToolProfile {
            enabled: catalog().iter().map(|t| t.name).collect(),
        }
    }

    /// The [`CORE`] tools.
    pub fn core() -> ToolProfile {
        ToolProfile::from_names(CORE.iter().copied())
    }

    fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> ToolProfile {
        let wanted: Vec<&str> = names.into_iter().collect();
        ToolProfile {
            enabled: catalog()
                .iter()
                .map(|t| t.name)
                .filter(|n| wanted.contains(n))
                .collect(),
        }
    }

    /// Parse `--tools`: `all`, `core`, or a comma-separated list of tool names (bare, `rw_x`
    /// or `rw.x`) that may also name `core`. An unknown name is an error listing the valid
    /// ones.
    pub fn parse(spec: &str) -> Result<ToolProfile, String> {
        let mut names: Vec<&'static str> = Vec::new();
        let mut unknown = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "all" => names.extend(catalog().iter().map(|t| t.name)),
                "core" => names.extend(CORE.iter().copied()),
                _ => match super::find(item) {
                    Some(t) => names.push(t.name),
                    None => unknown.push(item),
                },
            }
        }
        if !unknown.is_empty() {
            let valid: Vec<&str> = catalog().iter().map(|t| t.name).collect();
            return Err(format!(
                "unknown tool name(s): {}; use all, core, or a comma-separated list of: {}",
                unknown.join(", "),
                valid.join(", ")
            ));
        }
        if names.is_empty() {
            return Err(
                "no tools named; use all, core, or a comma-separated list of tool \
                names"
                    .into(),
            );
        }
        Ok(ToolProfile::from_names(names))
    }

    /// Only the tools whose annotations say read-only (`--read-only`).
    pub fn read_only(self) -> ToolProfile {
        ToolProfile {
            enabled: self
                .enabled
                .into_iter()
                .filter(|n| super::find(n).is_some_and(|t| t.read_only))
                .collect(),
        }
    }

    /// Whether the tool with this bare name is exposed.
    pub fn allows(&self, name: &str) -> bool {
        self.enabled.contains(&name)
    }

    /// The exposed tools' bare names, in catalogue order.
    pub fn names(&self) -> &[&'static str] {
        &self.enabled
    }

    /// The exposed tools, in catalogue order.
    pub fn tools(&self) -> impl Iterator<Item = &'static ToolSpec> + '_ {
        catalog().iter().filter(|t| self.allows(t.name))
    }

    /// Whether every tool is exposed (`--tools all` without `--read-only`).
    pub fn is_all(&self) -> bool {
        self.enabled.len() == catalog().len()
    }

    pub fn is_empty(&self) -> bool {
        self.enabled.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_is_the_write_path_in_catalogue_order() {
        let core = ToolProfile::parse("core").unwrap();
        assert_eq!(core.names().len(), CORE.len());
        for n in CORE {
            assert!(core.allows(n), "{n}");
            assert!(super::super::find(n).is_some(), "{n} is not a tool");
        }
        assert!(!core.allows("chunk_write"));
        assert_eq!(ToolProfile::parse("all").unwrap(), ToolProfile::all());
        assert_eq!(ToolProfile::all().names().len(), catalog().len());
    }

    #[test]
    fn a_list_takes_either_spelling_and_may_name_core() {
        let p = ToolProfile::parse("rw_stat, rw.chunk_write,safe_write").unwrap();
        assert_eq!(p.names(), ["safe_write", "stat", "chunk_write"]);
        let p = ToolProfile::parse("core,stat").unwrap();
        assert_eq!(p.names().len(), CORE.len() + 1);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let e = ToolProfile::parse("safe_write,nope").unwrap_err();
        assert!(e.contains("nope"), "{e}");
        assert!(e.contains("safe_replace") && e.contains("tx_commit"), "{e}");
        assert!(ToolProfile::parse(" , ").is_err());
    }

    #[test]
    fn read_only_keeps_only_read_only_tools() {
        let ro = ToolProfile::all().read_only();
        assert!(ro.allows("read") && ro.allows("stat") && ro.allows("history"));
        assert!(!ro.allows("safe_write") && !ro.allows("restore"));
        for t in ro.tools() {
            assert!(t.read_only, "{}", t.name);
        }
        let core_ro = ToolProfile::core().read_only();
        assert_eq!(core_ro.names(), ["read", "risk_score", "history"]);
    }
}
