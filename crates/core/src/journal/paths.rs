//! The `path` of a journal row: relative to the workspace root, with `/` separators, as the
//! original writes it, so state both versions write and read stays one journal.
//!
//! - A workspace file is recorded relative to the root it lies beneath. A server with several
//!   roots also records `root` (the root's absolute path); so does a row that would otherwise
//!   be read against the wrong root.
//! - A file in the state directory is recorded relative to the state root (the directory
//!   holding `.resilient_write/`): `.resilient_write/chunks/<session>/part-001.txt`, the form
//!   the original's analytics recognise. Such a row needs no `root`: a relative path under
//!   `.resilient_write/` is read against the root of the journal's own state directory.
//! - Reading: a relative row without `root` lies beneath the home root (the root of the
//!   working directory); earlier versions wrote absolute paths, which are shown in the
//!   relative form when they lie beneath a known root ([`JournalPaths::shown`]), and matched
//!   to a file in either form ([`JournalPaths::needles`], [`JournalPaths::names`]).

use crate::layout::STATE_DIR_NAME;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// The `path` a journal row records for a file, and its `root` when the row needs one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowPath {
    pub path: String,
    pub root: Option<String>,
}

impl RowPath {
    /// A file of the state directory: `rel` is `.resilient_write/...`.
    pub fn state(rel: String) -> RowPath {
        RowPath {
            path: rel,
            root: None,
        }
    }
}

/// How the journal's paths relate to the filesystem for one server: its workspace roots,
/// the home root and the state root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalPaths {
    /// The directory holding `.resilient_write/`.
    state_root: PathBuf,
    /// What a relative row without `root` (not under `.resilient_write/`) is relative to.
    home: PathBuf,
    /// Every workspace root, longest first (the most specific wins).
    roots: Vec<PathBuf>,
}

/// `rel`'s components joined with `/` (the journal's separator on every platform).
pub fn slash_path(rel: &Path) -> String {
    let mut out = String::new();
    for c in rel.components() {
        if let Component::Normal(n) = c {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&n.to_string_lossy());
        }
    }
    out
}

/// Whether a relative journal path names a file of the state directory.
fn in_state_dir(rel: &str) -> bool {
    rel.strip_prefix(STATE_DIR_NAME)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A row's `path` and `root` fields (`None` when it has no string `path`).
pub fn row_fields(row: &Map<String, Value>) -> Option<(&str, Option<&str>)> {
    let path = row.get("path")?.as_str()?;
    Some((path, row.get("root").and_then(Value::as_str)))
}

impl JournalPaths {
    /// `home` is the root of the working directory (`None`: the state root stands in).
    pub fn new(state_root: PathBuf, home: Option<PathBuf>, mut roots: Vec<PathBuf>) -> Self {
        roots.sort_by_key(|r| std::cmp::Reverse(r.as_os_str().len()));
        JournalPaths {
            home: home.unwrap_or_else(|| state_root.clone()),
            state_root,
            roots,
        }
    }

    /// Whether the server serves more than one root (its rows then carry `root`).
    pub fn several_roots(&self) -> bool {
        self.roots.len() > 1
    }

    /// What a relative row without `root` is relative to.
    fn default_root(&self, rel: &str) -> &Path {
        if in_state_dir(rel) {
            &self.state_root
        } else {
            &self.home
        }
    }

    /// The row path of the file at `rel` beneath workspace root `root`.
    pub fn record(&self, root: &Path, rel: &Path) -> RowPath {
        let path = slash_path(rel);
        let root = (self.several_roots() || self.default_root(&path) != root)
            .then(|| root.display().to_string());
        RowPath { path, root }
    }

    /// The absolute path a row names: an absolute `path` as it is (earlier versions), else
    /// `path` beneath `root`, or beneath the default root when the row has none.
    pub fn absolute(&self, path: &str, root: Option<&str>) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        match root {
            Some(r) => Path::new(r).join(p),
            None => self.default_root(path).join(p),
        }
    }

    /// The row path of an absolute path: relative to the state root inside the state
    /// directory, else to the most specific root it lies beneath (with `root` as
    /// [`JournalPaths::record`] gives it); `None` beneath no root.
    pub fn relative(&self, abs: &Path) -> Option<RowPath> {
        if let Ok(rel) = abs.strip_prefix(&self.state_root) {
            let shown = slash_path(rel);
            if in_state_dir(&shown) {
                return Some(RowPath::state(shown));
            }
        }
        let root = self.roots.iter().find(|r| abs.starts_with(r))?;
        let rel = abs.strip_prefix(root).ok()?;
        Some(self.record(root, rel))
    }

    /// A row's path as results show it: relative (an absolute path of an earlier version
    /// beneath a known root becomes relative), with the root when it is not the one a
    /// relative row without `root` is read against. Rows of one file show the same way
    /// whichever form they were written in (analytics merges them by it).
    pub fn shown<'a>(
        &self,
        path: &'a str,
        root: Option<&'a str>,
    ) -> (Cow<'a, str>, Option<Cow<'a, str>>) {
        if Path::new(path).is_absolute() {
            return match self.relative(Path::new(path)) {
                Some(rp) => {
                    let root = rp
                        .root
                        .filter(|r| Path::new(r) != self.default_root(&rp.path))
                        .map(Cow::Owned);
                    (Cow::Owned(rp.path), root)
                }
                None => (Cow::Borrowed(path), None),
            };
        }
        let root = root
            .filter(|r| Path::new(r) != self.default_root(path))
            .map(Cow::Borrowed);
        (Cow::Borrowed(path), root)
    }

    /// Rewrite a row written by an earlier version (absolute `path`) in the relative form,
    /// adding `root` when the row needs one. Rows already relative are left as they are.
    pub fn relativize_row(&self, row: &mut Map<String, Value>) {
        let Some((path, None)) = row_fields(row) else {
            return;
        };
        if !Path::new(path).is_absolute() {
            return;
        }
        if let Some(rp) = self.relative(Path::new(path)) {
            row.insert("path".into(), Value::from(rp.path));
            if let Some(r) = rp.root {
                row.insert("root".into(), Value::from(r));
            }
        }
    }

    /// The `path` values a row of the file at `abs` may carry: its absolute form (rows of
    /// earlier versions) and its relative one. A row names the file when [`names`] says so.
    ///
    /// [`names`]: JournalPaths::names
    pub fn forms(&self, abs: &Path) -> Vec<String> {
        let mut out = vec![abs.display().to_string()];
        if let Some(rp) = self.relative(abs)
            && !out.contains(&rp.path)
        {
            out.push(rp.path);
        }
        out
    }

    /// The raw-bytes needles ([`super::json_string_forms`]) of every form in
    /// [`JournalPaths::forms`]: a row of the file contains one of them.
    pub fn needles(&self, abs: &Path) -> Vec<String> {
        self.forms(abs)
            .iter()
            .flat_map(|f| super::json_string_forms(f))
            .collect()
    }

    /// Whether a row with `path` (and `root`) names the file at `abs`.
    pub fn names(&self, path: &str, root: Option<&str>, abs: &Path) -> bool {
        self.absolute(path, root) == abs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_root() -> JournalPaths {
        JournalPaths::new("/w".into(), Some("/w".into()), vec!["/w".into()])
    }

    #[test]
    fn a_single_root_records_relative_paths_without_root() {
        let p = one_root();
        assert_eq!(
            p.record(Path::new("/w"), Path::new("src/a.rs")),
            RowPath {
                path: "src/a.rs".into(),
                root: None
            }
        );
        assert_eq!(p.absolute("src/a.rs", None), Path::new("/w/src/a.rs"));
        assert_eq!(p.absolute("/w/src/a.rs", None), Path::new("/w/src/a.rs"));
        assert!(!p.several_roots());
    }

    #[test]
    fn several_roots_record_the_root_and_read_it_back() {
        let p = JournalPaths::new(
            "/a".into(),
            Some("/a".into()),
            vec!["/a".into(), "/b/c".into()],
        );
        let rp = p.record(Path::new("/b/c"), Path::new("x.txt"));
        assert_eq!(rp.root.as_deref(), Some("/b/c"));
        assert_eq!(
            p.absolute(&rp.path, rp.root.as_deref()),
            Path::new("/b/c/x.txt")
        );
        // the home root is recorded too (several roots), but shown without it
        let home = p.record(Path::new("/a"), Path::new("y.txt"));
        assert_eq!(home.root.as_deref(), Some("/a"));
        assert_eq!(p.shown("y.txt", Some("/a")), (Cow::from("y.txt"), None));
        let (path, root) = p.shown("x.txt", Some("/b/c"));
        assert_eq!((path.as_ref(), root.as_deref()), ("x.txt", Some("/b/c")));
        // an old absolute row beneath the other root
        let (path, root) = p.shown("/b/c/x.txt", None);
        assert_eq!((path.as_ref(), root.as_deref()), ("x.txt", Some("/b/c")));
    }

    #[test]
    fn state_files_are_relative_to_the_state_root_wherever_it_is() {
        let p = JournalPaths::new("/s".into(), Some("/w".into()), vec!["/w".into()]);
        let abs = Path::new("/s/.resilient_write/chunks/x/part-001.txt");
        let rp = p.relative(abs).unwrap();
        assert_eq!(rp.path, ".resilient_write/chunks/x/part-001.txt");
        assert_eq!(rp.root, None);
        assert_eq!(p.absolute(&rp.path, None), abs);
        // a workspace file whose relative path looks like state gets its root
        let rp = p.record(Path::new("/w"), Path::new(".resilient_write/f"));
        assert_eq!(rp.root.as_deref(), Some("/w"));
        // `.resilient_write_old/` is not the state directory
        assert_eq!(
            p.absolute(".resilient_write_old/f", None),
            Path::new("/w/.resilient_write_old/f")
        );
    }

    #[test]
    fn old_absolute_rows_show_relative_and_match_either_form() {
        let p = one_root();
        assert_eq!(p.shown("/w/src/a.rs", None).0, "src/a.rs");
        assert_eq!(p.shown("/elsewhere/a.rs", None).0, "/elsewhere/a.rs");
        assert_eq!(p.shown("src/a.rs", None).0, "src/a.rs");
        let abs = Path::new("/w/src/a.rs");
        assert_eq!(p.forms(abs), ["/w/src/a.rs", "src/a.rs"]);
        assert!(p.names("/w/src/a.rs", None, abs));
        assert!(p.names("src/a.rs", None, abs));
        assert!(!p.names("a.rs", None, abs));
        assert!(!p.names("src/a.rs", Some("/other"), abs));
        let mut row = Map::new();
        row.insert("path".into(), Value::from("/w/src/a.rs"));
        p.relativize_row(&mut row);
        assert_eq!(row["path"], "src/a.rs");
        assert!(row.get("root").is_none());
    }

    #[test]
    fn slash_path_joins_normal_components() {
        assert_eq!(slash_path(Path::new("a/./b")), "a/b");
        assert_eq!(slash_path(Path::new("")), "");
    }
}
