//! Opening the server's own state files (`.resilient_write/...`, the policy file) when the
//! repository around them may be hostile.
//!
//! Guarantees: no open blocks (`O_NONBLOCK`: a named pipe planted in place of the journal, a
//! chunk part or a checkpoint would otherwise hang the call until a writer appears); a final
//! symlink is not followed (`O_NOFOLLOW`); anything but a regular file (pipe, socket, device,
//! directory) is refused with an error naming the file and what it is ([`not_regular`]), which
//! the envelope reports as `policy_violation` and `doctor` as a problem. Line-oriented state is
//! read with a cap per line ([`LineReader`]), so one planted 100 MB line costs no more memory
//! than the cap and is reported as a bad line instead of parsed.
//!
//! `O_NONBLOCK` changes nothing for a regular file's reads and writes on Linux or macOS, so the
//! handles are returned as they are.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use rustix::fd::AsFd;
use rustix::fs::{FileType, Mode, OFlags};

/// The longest line read from a line-oriented state file (journal, scratch index, WAL op log,
/// chunk records). Real rows are far shorter (a journal row is under 5 KB); a longer line is
/// reported as bad and skipped without being held in memory.
pub const MAX_STATE_LINE: usize = 1 << 20;

/// The error for a state path that is not a regular file: `InvalidInput`, naming the kind.
pub fn not_regular(path: &Path, kind: FileType) -> io::Error {
    let what = match kind {
        FileType::Fifo => "a named pipe (FIFO)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        _ => "not a regular file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}, not a regular file: remove it by hand",
            path.display()
        ),
    )
}

fn open_checked(path: &Path, flags: OFlags, mode: Mode) -> io::Result<File> {
    open_checked_at(rustix::fs::CWD, path, path, flags, mode)
}

fn open_checked_at<D: AsFd>(
    dir: D,
    name: &Path,
    shown: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<File> {
    let path = shown;
    let fd = match rustix::fs::openat(
        dir.as_fd(),
        name,
        flags | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    ) {
        Ok(fd) => fd,
        // ELOOP under O_NOFOLLOW: the last component is a symlink; ENXIO: a socket, or a FIFO
        // opened for writing with no reader. All are planted objects: name what is there.
        Err(e) if e == rustix::io::Errno::LOOP => {
            return Err(not_regular(path, FileType::Symlink));
        }
        Err(e) if e == rustix::io::Errno::NXIO => {
            let kind = rustix::fs::statat(dir.as_fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))
                .unwrap_or(FileType::Unknown);
            return Err(not_regular(path, kind));
        }
        Err(e) => return Err(io::Error::from(e)),
    };
    regular(fd, path)
}

/// `fd` as a file if it is a regular file; else the [`not_regular`] error naming `shown`.
pub fn regular(fd: rustix::fd::OwnedFd, shown: &Path) -> io::Result<File> {
    let st = rustix::fs::fstat(&fd).map_err(io::Error::from)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(not_regular(shown, kind));
    }
    Ok(File::from(fd))
}

/// Opens a state file for reading (see the module's guarantees).
pub fn open_read(path: &Path) -> io::Result<File> {
    open_checked(path, OFlags::RDONLY, Mode::empty())
}

/// Opens `name` in the directory `dir` for reading; errors name `shown` (its full path).
pub fn open_read_at<D: AsFd>(dir: D, name: &Path, shown: &Path) -> io::Result<File> {
    open_checked_at(dir, name, shown, OFlags::RDONLY, Mode::empty())
}

/// Opens a state file with `flags` (`RDWR | APPEND | CREATE` for the journal), creating it
/// with `mode` (before the umask) when `flags` has `CREATE`.
pub fn open_with(path: &Path, flags: OFlags, mode: u32) -> io::Result<File> {
    open_checked(path, flags, Mode::from_raw_mode(mode))
}

/// Opens a state file for reading and writing (the journal's tail repair).
pub fn open_read_write(path: &Path) -> io::Result<File> {
    open_checked(path, OFlags::RDWR, Mode::empty())
}

/// Opens a state file for appending, creating it with `mode` (before the umask) if missing.
pub fn open_append(path: &Path, mode: u32) -> io::Result<File> {
    open_checked(
        path,
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
        Mode::from_raw_mode(mode),
    )
}

/// The whole of a state file (like `std::fs::read`, with the module's guarantees).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = open_read(path)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

/// The whole of a state file as UTF-8 (like `std::fs::read_to_string`).
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The whole of a file the user may have made a symlink (the policy file, a `.gitignore`) as
/// UTF-8: a symlink is followed, but the open never blocks and what it reaches must be a
/// regular file.
pub fn read_to_string_following(path: &Path) -> io::Result<String> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)?;
    let mut f = regular(fd, path)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One line of a line-oriented state file.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes, without the newline; `complete` is false for a last line without one
    /// (a torn append).
    Text { bytes: Vec<u8>, complete: bool },
    /// A line longer than the cap: its length, never its bytes.
    TooLong { len: u64 },
}

impl Line {
    /// A line of `len` bytes that ended (with a newline when `complete`): its bytes, or only
    /// its length when it went over the cap.
    fn ended(bytes: Vec<u8>, len: u64, too_long: bool, complete: bool) -> Line {
        if too_long {
            Line::TooLong { len }
        } else {
            Line::Text { bytes, complete }
        }
    }
}

/// Reads lines of at most `max` bytes each; longer lines are skipped, not buffered.
pub struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    /// 1-based number of the last line returned.
    pub line: u64,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R, max: usize) -> LineReader<R> {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, inner),
            max,
            line: 0,
        }
    }

    /// The next line, or `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut bytes = Vec::new();
        let mut len: u64 = 0;
        let mut too_long = false;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if len == 0 {
                    return Ok(None);
                }
                self.line += 1;
                return Ok(Some(Line::ended(bytes, len, too_long, false)));
            }
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            len += chunk.len() as u64;
            if !too_long {
                if bytes.len() + chunk.len() > self.max {
                    too_long = true;
                    bytes = Vec::new();
                } else {
                    bytes.extend_from_slice(chunk);
                }
            }
            let used = done.unwrap_or(buf.len());
            self.inner.consume(used);
            if done.is_some() {
                self.line += 1;
                return Ok(Some(Line::ended(bytes, len, too_long, true)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    #[test]
    fn a_fifo_is_refused_at_once_for_reading_and_appending() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("journal.jsonl");
        mkfifo(&p);
        let e = open_read(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert!(e.to_string().contains("journal.jsonl"), "{e}");
        let e = open_append(&p, 0o644).unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert!(read(&p).is_err());
    }

    #[test]
    fn a_socket_a_directory_and_a_symlink_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let sock = t.path().join("s");
        let _l = UnixListener::bind(&sock).unwrap();
        assert!(open_read(&sock).unwrap_err().to_string().contains("socket"));
        assert!(
            open_read(t.path())
                .unwrap_err()
                .to_string()
                .contains("directory")
        );
        let real = t.path().join("real");
        std::fs::write(&real, "x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(
            open_read(&link)
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        let dev = t.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &dev).unwrap();
        assert!(open_read(&dev).is_err());
        assert_eq!(read(&real).unwrap(), b"x");
    }

    #[test]
    fn a_line_over_the_cap_is_reported_by_length_not_kept() {
        let mut text = b"{\"a\":1}\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 5000));
        text.extend_from_slice(b"\n{\"b\":2}\ntorn");
        let mut r = LineReader::new(&text[..], 100);
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Text {
                bytes: b"{\"a\":1}".to_vec(),
                complete: true
            })
        );
        assert_eq!(r.next_line().unwrap(), Some(Line::TooLong { len: 5000 }));
        assert_eq!(r.line, 2);
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Text {
                bytes: b"{\"b\":2}".to_vec(),
                complete: true
            })
        );
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Text {
                bytes: b"torn".to_vec(),
                complete: false
            })
        );
        assert_eq!(r.next_line().unwrap(), None);
    }
}
