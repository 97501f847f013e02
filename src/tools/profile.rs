//! Which tools a server lists and which calls it accepts ([`ToolListing`]). Every tool
//! definition an agent is shown costs it context tokens on every turn, so by default a session
//! is shown the original's tools and enables the rest in toolsets ([`super::toolsets`]) as it
//! needs them; every tool answers when called by name all the same (listing is not permission).
//!
//! A fixed profile (`serve --tools core|all|NAME,...`, `--read-only`) is a [`ToolProfile`]: only
//! its tools are listed, and a call to any other is refused with an envelope
//! ([`resilient_write_core::envelope::Failure::ToolNotEnabled`]), never run.

use super::{ToolSpec, catalog, toolsets};

/// What a server lists and accepts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolListing {
    /// The default: [`toolsets::ORIGINAL`] and the `toolsets` tool are listed, each session
    /// enables more with it; every tool answers when called by name.
    #[default]
    Toolsets,
    /// `--tools all|core|LIST` or `--read-only`: only these tools are listed and answered.
    Fixed(ToolProfile),
}

impl ToolListing {
    /// Parse `--tools`: `default` (the toolsets listing), or what [`ToolProfile::parse`] takes.
    pub fn parse(spec: &str) -> Result<ToolListing, String> {
        if spec.trim() == "default" {
            return Ok(ToolListing::Toolsets);
        }
        if spec.split(',').any(|item| item.trim() == "default") {
            return Err(
                "`default` (the original's tools, the rest in toolsets) stands alone; a fixed \
                list names all, core, toolsets or tools"
                    .into(),
            );
        }
        ToolProfile::parse(spec).map(ToolListing::Fixed)
    }

    /// The listing `--read-only` leaves: the read-only tools of a fixed profile, or of every
    /// tool for the default (a read-only server is a fixed list).
    pub fn read_only(self) -> ToolProfile {
        match self {
            ToolListing::Toolsets => ToolProfile::all().read_only(),
            ToolListing::Fixed(p) => p.read_only(),
        }
    }

    /// Whether a call to the tool with this bare name is answered.
    pub fn accepts(&self, name: &str) -> bool {
        match self {
            ToolListing::Toolsets => true,
            ToolListing::Fixed(p) => p.allows(name),
        }
    }

    /// Whether the tool with this bare name is listed to a session that enabled `enabled`
    /// (toolset names).
    pub fn lists(&self, name: &str, enabled: &[&str]) -> bool {
        match self {
            ToolListing::Toolsets => toolsets::listed(name, enabled),
            ToolListing::Fixed(p) => p.allows(name),
        }
    }

    /// Whether every tool is listed from the start (`--tools all` without `--read-only`).
    pub fn is_all(&self) -> bool {
        matches!(self, ToolListing::Fixed(p) if p.is_all())
    }

    /// The tools a session may ever be shown, in listing order: the catalogue and the
    /// `toolsets` tool for the default, the profile's tools for a fixed list.
    pub fn listable(&self) -> Vec<&'static ToolSpec> {
        match self {
            ToolListing::Toolsets => catalog()
                .iter()
                .chain(std::iter::once(&toolsets::TOOLSETS))
                .collect(),
            ToolListing::Fixed(p) => p.tools().collect(),
        }
    }

    /// The names of the tools a fixed profile answers (for the envelope refusing another).
    pub fn fixed_names(&self) -> &[&'static str] {
        match self {
            ToolListing::Toolsets => &[],
            ToolListing::Fixed(p) => p.names(),
        }
    }
}

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

    /// Parse a fixed `--tools`: `all`, `core`, or a comma-separated list of tool names (bare,
    /// `rw_x` or `rw.x`) that may also name `core`, `original` (the original's 21 tools, the
    /// default listing as a fixed list) and toolsets (`transactions`). An unknown name is an
    /// error listing the valid ones. The `toolsets` tool is no member of a fixed
    /// list: what a fixed list shows never changes.
    pub fn parse(spec: &str) -> Result<ToolProfile, String> {
        let mut names: Vec<&'static str> = Vec::new();
        let mut unknown = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "all" => names.extend(catalog().iter().map(|t| t.name)),
                "core" => names.extend(CORE.iter().copied()),
                "original" => names.extend(toolsets::ORIGINAL.iter().copied()),
                _ => match (toolsets::named(item), super::find(item)) {
                    (Some(set), _) => names.extend(set.tools.iter().copied()),
                    (None, Some(t)) => names.push(t.name),
                    _ => unknown.push(item),
                },
            }
        }
        if !unknown.is_empty() {
            let valid: Vec<&str> = catalog().iter().map(|t| t.name).collect();
            let sets: Vec<&str> = toolsets::SETS.iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown tool name(s): {}; use default, all, core, or a comma-separated list of \
                 original, toolsets ({}) and tools: {}",
                unknown.join(", "),
                sets.join(", "),
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
    fn original_and_toolsets_name_their_tools_in_a_fixed_list() {
        let p = ToolProfile::parse("original,undo").unwrap();
        assert_eq!(p.names().len(), 23);
        assert!(p.allows("chunk_compose") && p.allows("restore") && !p.allows("read"));
        assert!(ToolProfile::parse("toolsets").is_err());
        assert!(ToolListing::parse("default,stat").is_err());
        assert_eq!(ToolListing::parse(" default "), Ok(ToolListing::Toolsets));
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
