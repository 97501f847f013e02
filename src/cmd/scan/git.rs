//! What git holds: the staged content (`--staged`: the index, not the work tree) and the lines
//! commits added (`--git [RANGE]`). Both run the `git` program and read its plumbing output
//! (`diff --cached --raw -z`, `cat-file --batch`, `log -p -U0`) rather than linking a git
//! library: the measured build cost of `gix` with the features this needs (docs/guide/scan.md,
//! "Why `git` and not a git library") was not worth the saving, and `git` is wherever these
//! modes make sense.
//!
//! Guarantees: staged files are read from their index blobs by object id, so what is scanned is
//! exactly what the commit will contain; submodules and symlinks are skipped. History is
//! streamed: each (commit, file) is scanned as soon as its diff is read, and only added lines
//! are scanned, each with its line in the new file, the commit id and the author.

use super::report::{Commit, Filters, Scanned, Source, scan_text};
use super::walk::looks_binary;
use resilient_write_core::classify::Classifier;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A `git` command with settings that keep its output parseable.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.quotePath=false",
            "-c",
            "diff.noprefix=false",
            "-c",
            "color.ui=false",
        ])
        .env("GIT_LITERAL_PATHSPECS", "1")
        .env_remove("GIT_EXTERNAL_DIFF")
        .stdin(Stdio::null());
    c
}

fn run_git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = git(dir)
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// The top level of the repository holding `cwd`.
pub fn toplevel(cwd: &Path) -> Result<PathBuf, String> {
    let out = run_git(cwd, &["rev-parse", "--show-toplevel"])?;
    let s = String::from_utf8_lossy(&out)
        .trim_end_matches('\n')
        .to_string();
    if s.is_empty() {
        return Err("not inside a git work tree".into());
    }
    Ok(PathBuf::from(s))
}

/// Staged files (added, copied, modified, renamed, type-changed) under `pathspecs` (relative
/// to the top level; empty = all): (path, index blob id).
fn staged_blobs(top: &Path, pathspecs: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut args = vec![
        "diff",
        "--cached",
        "--raw",
        "-z",
        "--no-abbrev",
        "--no-renames",
        "--diff-filter=ACMRT",
        "--",
    ];
    args.extend(pathspecs.iter().map(String::as_str));
    let out = run_git(top, &args)?;
    // records: ":<old mode> <new mode> <old id> <new id> <status>\0<path>\0"
    let mut fields = out.split(|&b| b == 0);
    let mut blobs = Vec::new();
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let Some(path) = fields.next() else { break };
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (Some(mode), Some(id)) = (parts.get(1), parts.get(3)) else {
            continue;
        };
        // regular files only: not submodules (160000) nor symlinks (120000)
        if mode.starts_with("100") {
            blobs.push((String::from_utf8_lossy(path).into_owned(), id.to_string()));
        }
    }
    Ok(blobs)
}

/// The contents of `ids`, in order, from one `git cat-file --batch`.
fn read_blobs(top: &Path, ids: &[String]) -> Result<Vec<Vec<u8>>, String> {
    let mut child = git(top)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("git cat-file: no stdin")?;
    let request: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(request.as_bytes());
    });
    let stdout = child.stdout.take().ok_or("git cat-file: no stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let mut header = String::new();
        reader
            .read_line(&mut header)
            .map_err(|e| format!("git cat-file: {e}"))?;
        let size: usize = header
            .split(' ')
            .nth(2)
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("git cat-file: no object {id}"))?;
        let mut buf = vec![0u8; size + 1];
        reader
            .read_exact(&mut buf)
            .map_err(|e| format!("git cat-file: {e}"))?;
        buf.truncate(size);
        out.push(buf);
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}

/// Totals of a git scan.
#[derive(Debug, Default)]
pub struct GitTotals {
    pub texts: usize,
    pub bytes: u64,
    pub skipped_binary: usize,
    pub commits: usize,
}

/// Scan the staged content of the files under `pathspecs`.
pub fn scan_staged(
    top: &Path,
    pathspecs: &[String],
    classifier: &Classifier,
    filters: &Filters,
    shown: impl Fn(&str) -> String,
) -> Result<(Vec<Scanned>, GitTotals), String> {
    let blobs = staged_blobs(top, pathspecs)?;
    let ids: Vec<String> = blobs.iter().map(|(_, id)| id.clone()).collect();
    let contents = if ids.is_empty() {
        Vec::new()
    } else {
        read_blobs(top, &ids)?
    };
    let mut totals = GitTotals::default();
    let mut out = Vec::new();
    for ((path, _), data) in blobs.iter().zip(contents) {
        if looks_binary(&data) {
            totals.skipped_binary += 1;
            continue;
        }
        totals.texts += 1;
        totals.bytes += data.len() as u64;
        let source = Source {
            shown: shown(path),
            rel: path.clone(),
            commit: None,
        };
        out.push(scan_text(
            &super::text_of(&data),
            source,
            classifier,
            filters,
            None,
        ));
    }
    Ok((out, totals))
}

/// The lines one commit added to one file.
struct Added {
    path: String,
    text: String,
    lines: Vec<u32>,
}

/// `+++ b/path` (or a C-quoted `"b/pa\th"`) to the path; `None` for `/dev/null`.
fn new_path(rest: &str) -> Option<String> {
    let rest = rest.trim_end_matches(['\n', '\r']);
    if rest == "/dev/null" {
        return None;
    }
    let unquoted = if rest.starts_with('"') && rest.ends_with('"') && rest.len() >= 2 {
        unquote_c(&rest[1..rest.len() - 1])
    } else {
        rest.to_string()
    };
    Some(
        unquoted
            .strip_prefix("b/")
            .map(str::to_string)
            .unwrap_or(unquoted),
    )
}

/// Git's C-style quoting (`\t`, `\n`, `\"`, `\\`, octal bytes) undone.
fn unquote_c(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let c = b[i + 1];
            let simple = match c {
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                b'a' => Some(7),
                b'b' => Some(8),
                b'f' => Some(12),
                b'v' => Some(11),
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                _ => None,
            };
            if let Some(v) = simple {
                out.push(v);
                i += 2;
                continue;
            }
            if i + 3 < b.len() && b[i + 1..i + 4].iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `@@ -a,b +c,d @@` to `c`.
fn hunk_start(line: &str) -> Option<u32> {
    let plus = line.split(' ').find(|w| w.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

/// The marker opening each commit in our `git log` format.
const COMMIT_MARK: &str = "\u{1}rw-commit\u{1}";

/// Scan the lines added by the commits of `range` (a `git log` revision range), under
/// `pathspecs`. Merge commits add nothing of their own (their parents' diffs hold the lines).
pub fn scan_history(
    top: &Path,
    range: &str,
    pathspecs: &[String],
    classifier: &Classifier,
    filters: &Filters,
    mut each: impl FnMut(Scanned),
) -> Result<GitTotals, String> {
    if range.starts_with('-') {
        return Err(format!("--git: `{range}` is not a revision range"));
    }
    let format = format!("--format={COMMIT_MARK}%H%x01%an <%ae>%x01%aI");
    let mut args: Vec<&str> = vec![
        "log",
        "-p",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        &format,
        range,
        "--",
    ];
    args.extend(pathspecs.iter().map(String::as_str));
    let mut child = git(top)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let stdout = child.stdout.take().ok_or("git log: no stdout")?;
    let mut stderr = child.stderr.take().ok_or("git log: no stderr")?;
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut reader = BufReader::new(stdout);
    let mut totals = GitTotals::default();
    let mut commit: Option<Commit> = None;
    let mut current: Option<Added> = None;
    let mut next_line: u32 = 0;
    let mut in_header = true;
    let mut flush = |added: Option<Added>, commit: &Option<Commit>, totals: &mut GitTotals| {
        let Some(a) = added else { return };
        if a.lines.is_empty() {
            return;
        }
        totals.texts += 1;
        totals.bytes += a.text.len() as u64;
        let source = Source {
            shown: a.path.clone(),
            rel: a.path.clone(),
            commit: commit.clone(),
        };
        each(scan_text(
            &a.text,
            source,
            classifier,
            filters,
            Some(&a.lines),
        ));
    };
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| format!("git log: {e}"))?;
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&raw);
        if let Some(rest) = line.strip_prefix(COMMIT_MARK) {
            flush(current.take(), &commit, &mut totals);
            let mut parts = rest.trim_end_matches('\n').splitn(3, '\u{1}');
            commit = Some(Commit {
                id: parts.next().unwrap_or("").to_string(),
                author: parts.next().unwrap_or("").to_string(),
                date: parts.next().unwrap_or("").to_string(),
            });
            totals.commits += 1;
            in_header = true;
            continue;
        }
        if line.starts_with("diff --git ") {
            flush(current.take(), &commit, &mut totals);
            in_header = true;
            continue;
        }
        if in_header {
            if let Some(rest) = line.strip_prefix("+++ ") {
                current = new_path(rest).map(|path| Added {
                    path,
                    text: String::new(),
                    lines: Vec::new(),
                });
            } else if line.starts_with("Binary files ") {
                totals.skipped_binary += 1;
            } else if line.starts_with("@@") {
                in_header = false;
                next_line = hunk_start(&line).unwrap_or(1);
            }
            continue;
        }
        if line.starts_with("@@") {
            next_line = hunk_start(&line).unwrap_or(1);
        } else if let Some(added) = line.strip_prefix('+') {
            if let Some(a) = current.as_mut() {
                a.text.push_str(added.trim_end_matches('\n'));
                a.text.push('\n');
                a.lines.push(next_line);
            }
            next_line = next_line.saturating_add(1);
        }
        // `-` lines and `\ No newline at end of file` add nothing
    }
    flush(current.take(), &commit, &mut totals);
    let status = child.wait().map_err(|e| format!("git log: {e}"))?;
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("git log {range} failed: {}", stderr.trim()));
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_headers_are_parsed() {
        assert_eq!(hunk_start("@@ -0,0 +12,3 @@ fn x"), Some(12));
        assert_eq!(hunk_start("@@ -4 +5 @@"), Some(5));
        assert_eq!(new_path("b/src/a.rs\n").as_deref(), Some("src/a.rs"));
        assert_eq!(new_path("/dev/null\n"), None);
        assert_eq!(
            new_path("\"b/a\\tb\\303\\251\"\n").as_deref(),
            Some("a\tbé")
        );
    }
}
