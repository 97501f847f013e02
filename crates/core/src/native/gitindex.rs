//! Git's index file read here, and two of them compared: the after-hook's "what changed"
//! without starting `write-tree` and `diff-tree` (two processes, a third of a hook's time on
//! a small repository when measured).

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// File modes git records that are not regular files: symlinks and submodules.
const SYMLINK: u32 = 0o120000;
const GITLINK: u32 = 0o160000;

/// One file that differs between two snapshots (a path relative to the top level).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: PathBuf,
    /// The blob before (`None`: created).
    pub old: Option<String>,
    /// Whether it exists after (`false`: deleted).
    pub exists_after: bool,
}

/// One entry of an index: its path, mode and object id, borrowed from the file's bytes
/// where the format allows (versions 2 and 3; version 4 compresses paths).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry<'a> {
    pub path: std::borrow::Cow<'a, [u8]>,
    pub mode: u32,
    pub oid: &'a [u8],
}

/// The bytes of the git index file at `path`.
pub fn read_index_file(path: &Path) -> io::Result<Vec<u8>> {
    crate::util::statefile::read(path)
}

/// The entries of a git index (its bytes; format versions 2 to 4; the extensions after the
/// entries are not read), in the index's order (sorted by path).
pub fn parse_index(data: &[u8], oid_len: usize) -> io::Result<Vec<IndexEntry<'_>>> {
    use std::borrow::Cow;
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("index: {what}"));
    let u32_at = |at: usize| -> io::Result<u32> {
        data.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| bad("cut short"))
    };
    if data.get(..4) != Some(b"DIRC") {
        return Err(bad("not an index file"));
    }
    let version = u32_at(4)?;
    if !(2..=4).contains(&version) {
        return Err(bad("unknown version"));
    }
    let count = u32_at(8)? as usize;
    let mut entries: Vec<IndexEntry<'_>> = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12;
    for _ in 0..count {
        let start = at;
        let mode = u32_at(at + 24)?;
        let oid = data
            .get(at + 40..at + 40 + oid_len)
            .ok_or_else(|| bad("cut short"))?;
        let flags_at = at + 40 + oid_len;
        let flags = data
            .get(flags_at..flags_at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| bad("cut short"))?;
        at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2; // extended flags
        }
        let rest = data.get(at..).unwrap_or(&[]);
        let path: Cow<'_, [u8]> = if version == 4 {
            // Prefix compression: how many bytes of the previous path to drop (a varint),
            // then the rest, NUL-terminated.
            let mut strip: usize = 0;
            let mut used = 0;
            loop {
                let b = *rest.get(used).ok_or_else(|| bad("cut short"))?;
                used += 1;
                strip = (strip << 7) | (b & 0x7f) as usize;
                if b & 0x80 == 0 {
                    break;
                }
                strip += 1;
            }
            let tail = &rest[used..];
            let len = memchr::memchr(0, tail).ok_or_else(|| bad("path"))?;
            let prev: &[u8] = entries.last().map_or(&[], |e| &e.path);
            let keep = prev
                .len()
                .checked_sub(strip)
                .ok_or_else(|| bad("path prefix"))?;
            let mut p = prev[..keep].to_vec();
            p.extend_from_slice(&tail[..len]);
            at += used + len + 1;
            Cow::Owned(p)
        } else {
            let len = memchr::memchr(0, rest).ok_or_else(|| bad("path"))?;
            let p = &rest[..len];
            // Entries are padded with NULs to a multiple of eight bytes.
            at = start + (at + len - start + 8) / 8 * 8;
            Cow::Borrowed(p)
        };
        entries.push(IndexEntry { path, mode, oid });
    }
    Ok(entries)
}

/// What changed between two indexes (both sorted by path): regular files created, changed
/// (another object or mode) or deleted. Symlinks and submodules on either side, and entries
/// of a merge in progress (stage above 0, same path repeated), are left out.
pub fn diff(before: &[IndexEntry<'_>], after: &[IndexEntry<'_>]) -> Vec<Change> {
    let regular = |e: &IndexEntry<'_>| e.mode & 0o170000 == 0o100000;
    let special = |e: &IndexEntry<'_>| e.mode == SYMLINK || e.mode == GITLINK;
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    let path = |p: &[u8]| PathBuf::from(OsString::from_vec(p.to_vec()));
    while i < before.len() || j < after.len() {
        let order = match (before.get(i), after.get(j)) {
            (Some(b), Some(a)) => b.path.cmp(&a.path),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                let b = &before[i];
                if regular(b) {
                    out.push(Change {
                        path: path(&b.path),
                        old: Some(hex::encode(b.oid)),
                        exists_after: false,
                    });
                }
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let a = &after[j];
                if regular(a) {
                    out.push(Change {
                        path: path(&a.path),
                        old: None,
                        exists_after: true,
                    });
                }
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (b, a) = (&before[i], &after[j]);
                if (b.oid != a.oid || b.mode != a.mode) && !special(b) && !special(a) {
                    out.push(Change {
                        path: path(&a.path),
                        old: Some(hex::encode(b.oid)),
                        exists_after: true,
                    });
                }
                i += 1;
                j += 1;
            }
        }
    }
    out.dedup_by(|x, y| x.path == y.path);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn entry<'a>(path: &'a str, mode: u32, oid: &'a str) -> IndexEntry<'a> {
        IndexEntry {
            path: std::borrow::Cow::Borrowed(path.as_bytes()),
            mode,
            oid: oid.as_bytes(),
        }
    }

    #[test]
    fn two_indexes_differ_by_created_changed_and_deleted_files_and_symlinks_are_left_out() {
        let before = [
            entry("a.txt", 0o100644, "1"),
            entry("dir/mod.py", 0o100644, "2"),
            entry("gone.txt", 0o100644, "3"),
            entry("link", 0o120000, "4"),
            entry("same.txt", 0o100644, "5"),
            entry("x.sh", 0o100644, "6"),
        ];
        let after = [
            entry("a.txt", 0o100644, "1"),
            entry("dir/mod.py", 0o100644, "9"),
            entry("link", 0o120000, "8"),
            entry("new.txt", 0o100644, "7"),
            entry("same.txt", 0o100644, "5"),
            entry("x.sh", 0o100755, "6"),
        ];
        let c = diff(&before, &after);
        let shown: Vec<(String, Option<&str>, bool)> = c
            .iter()
            .map(|c| {
                (
                    c.path.display().to_string(),
                    c.old.as_deref(),
                    c.exists_after,
                )
            })
            .collect();
        // Object ids as hex: the test's one-character ids are the bytes 0x32, 0x33, ...
        assert_eq!(
            shown,
            [
                ("dir/mod.py".into(), Some("32"), true),
                ("gone.txt".into(), Some("33"), false),
                ("new.txt".into(), None, true),
                ("x.sh".into(), Some("36"), true),
            ]
        );
    }

    /// The index git writes, versions 2 and 4, read back entry by entry.
    #[test]
    fn index_files_git_writes_are_read_in_versions_2_and_4() {
        if Command::new("git").arg("--version").output().is_err() {
            println!("SKIPPED: git is not installed");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(root)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            out.stdout
        };
        git(&["init", "-q"]);
        for (p, c) in [
            ("a.txt", "a"),
            ("dir/sub/b.txt", "b"),
            ("dir/sub/bb.txt", "bb"),
            ("z", "z"),
        ] {
            std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            std::fs::write(root.join(p), c).unwrap();
        }
        git(&["add", "-A"]);
        for version in ["2", "4"] {
            git(&["update-index", "--index-version", version]);
            let listed = String::from_utf8(git(&["ls-files", "-s"])).unwrap();
            let bytes = read_index_file(&root.join(".git/index")).unwrap();
            let read = parse_index(&bytes, 20).unwrap();
            let mine: Vec<String> = read
                .iter()
                .map(|e| {
                    format!(
                        "{:o} {} 0\t{}",
                        e.mode,
                        hex::encode(e.oid),
                        String::from_utf8_lossy(&e.path)
                    )
                })
                .collect();
            assert_eq!(
                mine,
                listed.lines().collect::<Vec<_>>(),
                "version {version}"
            );
        }
    }
}
