//! The stdio transport: MCP over the process's standard input and output. Every line goes
//! through the wire's front door ([`crate::wire`]) before rmcp parses it.

use crate::wire::{KEEP, oversize_stand_in, sanitize_line};
use rustix::fd::{AsFd, BorrowedFd};
use std::fs::File;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The process's standard input and output as the transport reads and writes them.
///
/// A pipe (what an MCP client spawns its server with) is read and written through the
/// runtime's reactor, non-blocking: a message costs no hand-off to a blocking thread and
/// back, which tokio's `stdin()`/`stdout()` pay on every read and write (two thread
/// wake-ups a message each way, about a tenth of a small write's time). Anything else (a
/// file, a terminal, `/dev/null`) goes through tokio's blocking readers. Dropping this puts
/// the pipes back in blocking mode (the descriptions may outlive the process).
pub struct Stdio {
    pub input: Box<dyn AsyncRead + Unpin + Send>,
    pub output: Box<dyn AsyncWrite + Unpin + Send>,
    pub restore: NonBlocking,
}

/// Standard streams this process made non-blocking, made blocking again when dropped (only
/// those that were blocking when it started).
#[derive(Default)]
pub struct NonBlocking {
    stdin: bool,
    stdout: bool,
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        let make_blocking = |fd: BorrowedFd<'_>| {
            if let Ok(flags) = rustix::fs::fcntl_getfl(fd) {
                let _ = rustix::fs::fcntl_setfl(fd, flags - rustix::fs::OFlags::NONBLOCK);
            }
        };
        if self.stdin {
            make_blocking(std::io::stdin().as_fd());
        }
        if self.stdout {
            make_blocking(std::io::stdout().as_fd());
        }
    }
}

/// A duplicate of `fd` when it is a pipe (shared with no other standard stream in `apart`).
fn pipe(fd: BorrowedFd<'_>, apart: &[BorrowedFd<'_>]) -> Option<File> {
    let st = rustix::fs::fstat(fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Fifo {
        return None;
    }
    // stderr sharing stdout's pipe (`2>&1`) must keep blocking writes for the log.
    let shared = apart.iter().any(|other| {
        rustix::fs::fstat(other).is_ok_and(|o| (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino))
    });
    if shared {
        return None;
    }
    fd.try_clone_to_owned().ok().map(File::from)
}

/// Whether `fd` is in blocking mode (a pipe the client made non-blocking stays so at exit).
fn blocking(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fcntl_getfl(fd).is_ok_and(|f| !f.contains(rustix::fs::OFlags::NONBLOCK))
}

/// The standard streams for the stdio transport (inside a runtime with I/O enabled).
pub fn stdio() -> Stdio {
    let streams = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let (stdin, stdout, stderr) = (streams.0.as_fd(), streams.1.as_fd(), streams.2.as_fd());
    let mut restore = NonBlocking::default();
    let (stdin_blocking, stdout_blocking) = (blocking(stdin), blocking(stdout));
    let input: Box<dyn AsyncRead + Unpin + Send> =
        match pipe(stdin, &[stdout, stderr]).map(tokio::net::unix::pipe::Receiver::from_file) {
            Some(Ok(pipe)) => {
                restore.stdin = stdin_blocking;
                Box::new(pipe)
            }
            _ => Box::new(tokio::io::stdin()),
        };
    let output: Box<dyn AsyncWrite + Unpin + Send> =
        match pipe(stdout, &[stdin, stderr]).map(tokio::net::unix::pipe::Sender::from_file) {
            Some(Ok(pipe)) => {
                restore.stdout = stdout_blocking;
                Box::new(pipe)
            }
            _ => Box::new(tokio::io::stdout()),
        };
    Stdio {
        input,
        output,
        restore,
    }
}

/// A reader that yields `input` with every line sanitised, and every line longer than
/// `max_line` bytes replaced by a small stand-in request (never buffered whole).
pub fn sanitized(
    input: impl AsyncRead + Unpin + Send + 'static,
    max_line: usize,
) -> impl AsyncRead + Unpin + Send {
    let (reader, mut writer) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let mut input = BufReader::with_capacity(1 << 20, input);
        let mut line = Vec::new();
        let mut tail: Vec<u8> = Vec::new();
        let mut total = 0usize;
        while let Ok(buf) = input.fill_buf().await {
            if buf.is_empty() {
                if !line.is_empty() && total <= max_line {
                    let _ = writer.write_all(&sanitize_line(&line)).await;
                }
                break;
            }
            let (take, complete) = match memchr::memchr(b'\n', buf) {
                Some(p) => (p + 1, true),
                None => (buf.len(), false),
            };
            total += take;
            if total <= max_line {
                line.extend_from_slice(&buf[..take]);
            } else {
                if line.len() > KEEP {
                    line.truncate(KEEP);
                }
                tail.extend_from_slice(&buf[..take]);
                if tail.len() > 2 * KEEP {
                    tail.drain(..tail.len() - KEEP);
                }
            }
            input.consume(take);
            if !complete {
                continue;
            }
            if total <= max_line {
                // Written as it is when clean (no copy of a megabyte line).
                if writer.write_all(&sanitize_line(&line)).await.is_err() {
                    break;
                }
                line.clear();
                total = 0;
                continue;
            }
            let out = {
                let stand_in = oversize_stand_in(&line, &tail, total, max_line);
                if stand_in.is_none() {
                    tracing::error!(bytes = total, "dropped an oversized message without an id");
                }
                stand_in
            };
            if let Some(out) = out
                && writer.write_all(&out).await.is_err()
            {
                break;
            }
            line.clear();
            tail.clear();
            total = 0;
        }
        let _ = writer.shutdown().await;
    });
    reader
}
