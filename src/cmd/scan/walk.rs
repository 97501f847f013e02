//! The work-tree walk: ripgrep's rules through its `ignore` crate, in parallel. `.gitignore`
//! (inside a git repository), `.ignore`, `.git/info/exclude` and the global excludes file are
//! honoured and hidden files skipped, as ripgrep does; `--hidden` scans hidden files,
//! `--no-ignore` scans everything (ignore files off, hidden files in). `.git` and the state
//! directory `.resilient_write` (scratch blobs hold redacted secrets on purpose) are never
//! entered. Symlinks met in the walk are not followed (a named one is). A file named on the
//! command line is scanned even when an ignore rule matches it (pre-commit passes file names);
//! such a file (a regular one, not a symlink) is read without the walker. Files that look
//! binary (a NUL byte in the first 8 KiB) are skipped.

use super::report::{Filters, Scanned, Source, scan_text};
use ignore::{WalkBuilder, WalkState};
use resilient_write_core::classify::Classifier;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How much of a file is looked at to decide it is binary.
const BINARY_SNIFF: usize = 8192;
/// Directory names never entered.
const NEVER_ENTERED: &[&str] = &[".git", ".resilient_write"];

pub fn looks_binary(bytes: &[u8]) -> bool {
    memchr_nul(&bytes[..bytes.len().min(BINARY_SNIFF)])
}

fn memchr_nul(b: &[u8]) -> bool {
    b.contains(&0)
}

/// How to walk.
pub struct WalkOptions {
    pub hidden: bool,
    pub no_ignore: bool,
    /// Strip a leading `./` from shown paths (no path was given).
    pub strip_dot: bool,
}

/// Totals of a walk.
#[derive(Debug, Default)]
pub struct Totals {
    pub files: usize,
    pub bytes: u64,
    pub skipped_binary: usize,
}

/// `p` made absolute against `cwd` and normalised without touching the filesystem.
pub fn lexical_absolute(cwd: &Path, p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in cwd.join(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `p` relative to `root`, `/`-separated (absolute when outside it).
pub fn root_relative(root: &Path, cwd: &Path, p: &Path) -> String {
    let abs = lexical_absolute(cwd, p);
    match abs.strip_prefix(root) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => abs.to_string_lossy().into_owned(),
    }
}

/// Everything a walk found: per-text results, totals, and the paths it could not read.
pub struct Walked {
    pub scanned: Vec<Scanned>,
    pub totals: Totals,
    pub errors: Vec<(String, String)>,
}

/// Walk `paths` (relative to `cwd`, the process's working directory) and scan every text file.
///
/// Paths that name a regular file (not through a symlink) are scanned here, one after
/// another, without the walker: it yields such a path whatever its name or the ignore rules
/// (they apply below a path, never to the path itself), and building it (the ignore matchers,
/// its threads) cost a seventh of a one-file `scan`. Everything else (directories, symlinks,
/// paths that cannot be read) goes through the walker.
pub fn walk(
    paths: &[PathBuf],
    cwd: &Path,
    root: &Path,
    opts: &WalkOptions,
    classifier: &Classifier,
    filters: &Filters,
) -> Walked {
    let (files, rest): (Vec<&PathBuf>, Vec<&PathBuf>) = paths
        .iter()
        .partition(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file()));
    let visit = Visit {
        cwd,
        root,
        strip_dot: opts.strip_dot,
        classifier,
        filters,
        results: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
        files: AtomicUsize::new(0),
        bytes: AtomicU64::new(0),
        binary: AtomicUsize::new(0),
    };
    for path in files {
        visit.file(path);
    }
    if let Some((first, rest)) = rest.split_first() {
        walk_tree(first, rest, opts, &visit);
    }
    Walked {
        scanned: visit.results.into_inner().unwrap_or_default(),
        totals: Totals {
            files: visit.files.into_inner(),
            bytes: visit.bytes.into_inner(),
            skipped_binary: visit.binary.into_inner(),
        },
        errors: visit.errors.into_inner().unwrap_or_default(),
    }
}

/// What scanning a file needs, and what the scans found (shared by the walker's threads).
struct Visit<'a> {
    cwd: &'a Path,
    root: &'a Path,
    strip_dot: bool,
    classifier: &'a Classifier,
    filters: &'a Filters,
    results: Mutex<Vec<Scanned>>,
    errors: Mutex<Vec<(String, String)>>,
    files: AtomicUsize,
    bytes: AtomicU64,
    binary: AtomicUsize,
}

impl Visit<'_> {
    /// `p` as shown: as given, like ripgrep's (`scan .` shows `./src/a.py`), less the `./`
    /// when no path was given.
    fn shown(&self, p: &Path) -> String {
        let s = p.to_string_lossy().into_owned();
        if self.strip_dot {
            s.strip_prefix("./").map(str::to_string).unwrap_or(s)
        } else {
            s
        }
    }

    fn error(&self, path: String, message: String) {
        if let Ok(mut e) = self.errors.lock() {
            e.push((path, message));
        }
    }

    /// Read and scan the file at `path`: skipped when it looks binary, kept when it has a
    /// report, a baseline entry or a suppression.
    fn file(&self, path: &Path) {
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(err) => return self.error(self.shown(path), err.to_string()),
        };
        if looks_binary(&data) {
            self.binary.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.files.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        let source = Source {
            shown: self.shown(path),
            rel: root_relative(self.root, self.cwd, path),
            commit: None,
        };
        let scanned = scan_text(
            &super::text_of(&data),
            source,
            self.classifier,
            self.filters,
            None,
        );
        if (scanned.report.is_some()
            || !scanned.for_baseline.is_empty()
            || scanned.suppressed.inline > 0
            || scanned.suppressed.ignore_file > 0)
            && let Ok(mut r) = self.results.lock()
        {
            r.push(scanned);
        }
    }
}

/// The walker over `first` and `rest` (paths as given: the process's working directory is
/// the visit's `cwd`), in parallel, every regular file it yields scanned by `visit`.
fn walk_tree(first: &Path, rest: &[&PathBuf], opts: &WalkOptions, visit: &Visit<'_>) {
    let mut builder = WalkBuilder::new(first);
    for p in rest {
        builder.add(p);
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(12));
    builder
        .threads(threads)
        .hidden(!(opts.hidden || opts.no_ignore))
        .follow_links(false)
        .filter_entry(|e| {
            !(e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| NEVER_ENTERED.contains(&n)))
        });
    if opts.no_ignore {
        builder
            .ignore(false)
            .git_ignore(false)
            .git_global(false)
            .git_exclude(false)
            .parents(false);
    }
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => visit.file(e.path()),
                Ok(_) => {}
                Err(err) => {
                    let path = match &err {
                        ignore::Error::WithPath { path, .. } => visit.shown(path),
                        _ => String::new(),
                    };
                    visit.error(path, io_message(&err));
                }
            }
            WalkState::Continue
        })
    });
}

/// The message of a walk error without the path (shown separately).
fn io_message(err: &ignore::Error) -> String {
    match err {
        ignore::Error::WithPath { err, .. } => io_message(err),
        ignore::Error::WithDepth { err, .. } => io_message(err),
        ignore::Error::WithLineNumber { err, .. } => io_message(err),
        other => other.to_string(),
    }
}
