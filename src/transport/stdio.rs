//! The stdio transport: MCP over the process's standard input and output, one JSON-RPC
//! message per line. [`Lines`] reads the lines, puts each through the wire's front door
//! ([`crate::wire`]) and parses it; rmcp gets the parsed messages.

use crate::wire::{KEEP, oversize_stand_in, sanitize_line};
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rustix::fd::{AsFd, BorrowedFd};
use serde_json::Value;
use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

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
    widen(fd);
    fd.try_clone_to_owned().ok().map(File::from)
}

/// What a pipe of the transport is widened to: a megabyte message then crosses it in one
/// or two reads instead of sixteen (a pipe holds 64 KiB by default, and each time it is
/// full the writer sleeps until the reader has emptied it). 1 MiB is what Linux lets any
/// user ask for (`/proc/sys/fs/pipe-max-size`).
pub const PIPE_SIZE: usize = 1 << 20;

/// Widens the pipe `fd` to [`PIPE_SIZE`] where it is smaller; a pipe that cannot be (over
/// the user's pipe memory limit, say) stays as it was.
fn widen(fd: BorrowedFd<'_>) {
    if rustix::pipe::fcntl_getpipe_size(fd).is_ok_and(|size| size < PIPE_SIZE)
        && let Err(e) = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE)
    {
        tracing::debug!("could not widen a standard stream's pipe: {e}");
    }
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

/// The stdio transport's two halves: messages are read and parsed line by line here, and
/// written one line per message.
///
/// Why not rmcp's `AsyncRwTransport`: it looks for each line's end one byte at a time and
/// reads through an 8 KiB buffer, which was a fifth of a 1 MB write's CPU; here the end is
/// found with `memchr`, and the bytes go from the pipe straight into the buffer the line is
/// parsed from (no copy through a second buffer). Every line is sanitised
/// ([`sanitize_line`]); one longer than the message cap is never held whole: its start and
/// end are kept and it becomes a small stand-in request (`oversize_stand_in`) so the
/// client gets a typed `quota_exceeded` answer instead of silence.
///
/// A line that is not JSON is ignored (as the official SDKs do: answering what cannot be
/// parsed invites an error storm from a peer that echoes it back), and so is a notification
/// or response that is not a valid message (neither gets an answer in JSON-RPC); JSON that is
/// not a valid request gets `-32600 Invalid Request`, with its `id` when it has one.
pub struct Lines<R, W> {
    input: R,
    /// Bytes read and not yet taken: the current line's start is always at 0.
    buf: Vec<u8>,
    /// How far `buf` was already searched for a newline.
    searched: usize,
    /// Set while the rest of an oversized line is skipped: its start, its last bytes so
    /// far, and its length so far.
    oversized: Option<Oversized>,
    max_line: usize,
    output: Arc<tokio::sync::Mutex<Option<W>>>,
    /// Requests received and not yet answered ([`Lines::outstanding`]).
    outstanding: Arc<AtomicUsize>,
}

struct Oversized {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: usize,
}

/// How much a read asks the pipe for at least (the pipe buffer is 64 KiB by default).
const READ_CHUNK: usize = 64 * 1024;

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The transport over `input` and `output`; lines longer than `max_line` bytes (the
    /// newline included) are answered with a stand-in (see the type's doc).
    pub fn new(input: R, output: W, max_line: usize) -> Lines<R, W> {
        Lines {
            input,
            buf: Vec::new(),
            searched: 0,
            oversized: None,
            max_line,
            output: Arc::new(tokio::sync::Mutex::new(Some(output))),
            outstanding: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The count of the client's requests received and not yet answered (a response or an
    /// error sent with their id), for [`crate::mcp::McpServer::inline_when_alone`]. A
    /// request that is never answered keeps it above one: calls then always take a
    /// blocking thread, the safe side.
    pub fn outstanding(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.outstanding)
    }

    /// The next whole line's bytes (without its newline), or `None` at the end of the input
    /// (a last line without a newline counts). Cancel-safe: what was read stays in `self`.
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(line) = self.take_line() {
                return Some(line);
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK {
                self.buf.reserve(READ_CHUNK.max(self.buf.len()));
            }
            match self.input.read_buf(&mut self.buf).await {
                Ok(0) => {
                    self.searched = 0;
                    let rest = std::mem::take(&mut self.buf);
                    if let Some(o) = self.oversized.take() {
                        return self.stand_in(o);
                    }
                    return (!rest.is_empty() && rest.len() <= self.max_line).then_some(rest);
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            }
        }
    }

    /// A whole line out of `buf` if one is there (or the stand-in for an oversized one that
    /// ended); otherwise notes how far it looked, and starts or goes on skipping a line that
    /// is already over the cap.
    fn take_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let end = memchr::memchr(b'\n', &self.buf[self.searched..]).map(|p| self.searched + p);
            let Some(end) = end else {
                self.searched = self.buf.len();
                if let Some(o) = &mut self.oversized {
                    o.skip(&self.buf);
                    self.buf.clear();
                    self.searched = 0;
                } else if self.buf.len() > self.max_line {
                    self.oversized = Some(Oversized::start(&self.buf));
                    self.buf.clear();
                    self.searched = 0;
                }
                return None;
            };
            let rest = self.buf.split_off(end + 1);
            let mut line = std::mem::replace(&mut self.buf, rest);
            self.searched = 0;
            if let Some(mut o) = self.oversized.take() {
                o.skip(&line);
                if let Some(stand_in) = self.stand_in(o) {
                    return Some(stand_in);
                }
                continue;
            }
            if line.len() > self.max_line {
                if let Some(stand_in) = self.stand_in(Oversized::start(&line)) {
                    return Some(stand_in);
                }
                continue;
            }
            line.pop();
            return Some(line);
        }
    }

    /// The stand-in request for an oversized line, or `None` (logged) when it had no id.
    fn stand_in(&self, o: Oversized) -> Option<Vec<u8>> {
        let out = oversize_stand_in(&o.head, &o.tail, o.total, self.max_line);
        if out.is_none() {
            tracing::error!(
                bytes = o.total,
                "dropped an oversized message without an id"
            );
        }
        out
    }

    /// Answers a line that is JSON but not a message rmcp can take (see the type's doc).
    fn refuse(&self, line: &[u8], e: &serde_json::Error) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let id = value
            .get("id")
            .filter(|id| id.is_string() || id.is_number());
        let request = value.get("method").is_some() && value.get("id").is_some();
        let unaddressed = value.get("method").is_none()
            && value.get("result").is_none()
            && value.get("error").is_none();
        if !request && !unaddressed {
            tracing::warn!("ignored a notification or response that is not valid: {e}");
            return;
        }
        tracing::warn!("answered a line that is not a valid request: {e}");
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id.cloned().unwrap_or(Value::Null),
            "error": {
                "code": -32600,
                "message": format!("Invalid Request: not a JSON-RPC 2.0 message ({e})"),
                "data": {"reason": "invalid_request"},
            },
        });
        let output = Arc::clone(&self.output);
        tokio::spawn(async move {
            let mut bytes = reply.to_string().into_bytes();
            bytes.push(b'\n');
            let _ = write_line(&output, &bytes).await;
        });
    }
}

impl Oversized {
    fn start(bytes: &[u8]) -> Oversized {
        let mut o = Oversized {
            head: bytes[..bytes.len().min(KEEP)].to_vec(),
            tail: Vec::new(),
            total: 0,
        };
        o.skip(bytes);
        o
    }

    /// Counts `bytes` as skipped, keeping the last [`KEEP`] to `2 * KEEP` of them.
    fn skip(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        self.tail
            .extend_from_slice(&bytes[bytes.len().saturating_sub(2 * KEEP)..]);
        if self.tail.len() > 2 * KEEP {
            self.tail.drain(..self.tail.len() - KEEP);
        }
    }
}

/// Writes one whole line (a message and its newline) and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(
    output: &tokio::sync::Mutex<Option<W>>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut guard = output.lock().await;
    let Some(out) = guard.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    out.write_all(line).await?;
    out.flush().await
}

/// A line's message bytes: without a trailing `\r`, a leading byte-order mark, or
/// surrounding whitespace (`None` when nothing is left).
fn message_bytes(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.trim_ascii();
    (!line.is_empty()).then_some(line)
}

impl<R, W> rmcp::transport::Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = Arc::clone(&self.output);
        if matches!(
            item,
            rmcp::model::JsonRpcMessage::Response(_) | rmcp::model::JsonRpcMessage::Error(_)
        ) {
            // Never below zero (an error answering a line that was no request).
            let _ = self
                .outstanding
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            write_line(&output, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = self.next_line().await?;
            let Some(bytes) = message_bytes(&line) else {
                continue;
            };
            let clean = sanitize_line(bytes);
            match crate::wire::parse_message(&clean) {
                Ok(message) => {
                    if matches!(message, rmcp::model::JsonRpcMessage::Request(_)) {
                        self.outstanding.fetch_add(1, Ordering::AcqRel);
                    }
                    return Some(message);
                }
                Err(e) if e.classify() == serde_json::error::Category::Data => {
                    self.refuse(clean.as_bytes(), &e)
                }
                Err(e) => tracing::warn!("ignored a line that is not JSON: {e}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let taken = self.output.lock().await.take();
        if let Some(mut out) = taken {
            let _ = out.flush().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
    use rmcp::transport::Transport;
    use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

    const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

    /// A transport over in-memory pipes: the client's write end and read end.
    fn transport(
        max_line: usize,
    ) -> (
        Lines<DuplexStream, DuplexStream>,
        DuplexStream,
        DuplexStream,
    ) {
        let (client_out, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        (
            Lines::new(server_in, server_out, max_line),
            client_out,
            client_in,
        )
    }

    fn is_ping(m: &ClientJsonRpcMessage, id: i64) -> bool {
        matches!(m, ClientJsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::PingRequest(_))
                && serde_json::to_value(&r.id).unwrap() == id)
    }

    /// The `tools/call` arguments of a received message.
    fn arguments(m: &ClientJsonRpcMessage) -> serde_json::Map<String, Value> {
        match m {
            ClientJsonRpcMessage::Request(r) => match &r.request {
                ClientRequest::CallToolRequest(c) => c.params.arguments.clone().unwrap(),
                other => panic!("not a tool call: {other:?}"),
            },
            other => panic!("not a request: {other:?}"),
        }
    }

    async fn next_reply(client_in: &mut BufReader<DuplexStream>) -> Value {
        let mut line = String::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client_in.read_line(&mut line),
        )
        .await
        .expect("a reply in time")
        .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[tokio::test]
    async fn lines_split_across_reads_crlf_bom_and_blank_lines_all_arrive() {
        let (mut t, mut client, _client_in) = transport(1 << 20);
        let feed = format!("\n  \r\n\u{feff}{PING}\r\n{}", PING.replace("7", "8"));
        let (a, b) = feed.as_bytes().split_at(feed.len() / 2);
        client.write_all(a).await.unwrap();
        let first = tokio::spawn(async move {
            let m = t.receive().await.unwrap();
            (t, m)
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        client.write_all(b).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        let (mut t, m) = first.await.unwrap();
        assert!(is_ping(&m, 7), "{m:?}");
        assert!(is_ping(&t.receive().await.unwrap(), 8));
        drop(client);
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_still_read() {
        let (mut t, mut client, _client_in) = transport(1 << 20);
        client.write_all(PING.as_bytes()).await.unwrap();
        drop(client);
        assert!(is_ping(&t.receive().await.unwrap(), 7));
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn a_cancelled_receive_loses_nothing() {
        let (mut t, mut client, _client_in) = transport(1 << 20);
        client.write_all(&PING.as_bytes()[..10]).await.unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_millis(30), t.receive()).await;
        assert!(waited.is_err(), "no whole line yet");
        client.write_all(&PING.as_bytes()[10..]).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        assert!(is_ping(&t.receive().await.unwrap(), 7));
    }

    #[tokio::test]
    async fn lone_surrogates_are_sanitised_before_parsing() {
        let (mut t, mut client, _client_in) = transport(1 << 20);
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rw_safe_write","arguments":{"content":"a\ud800b"}}}"#;
        client
            .write_all(format!("{call}\n").as_bytes())
            .await
            .unwrap();
        let args = arguments(&t.receive().await.unwrap());
        assert_eq!(
            args["content"],
            format!("a{}b", crate::wire::BAD_UNICODE_SENTINEL)
        );
    }

    #[tokio::test]
    async fn an_oversized_line_becomes_a_stand_in_with_its_id_and_the_next_line_is_read() {
        let max = 4096;
        let (mut t, mut client, _client_in) = transport(max);
        let head = r#"{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"rw_safe_write","arguments":{"path":"a","content":""#;
        let body = "x".repeat(3 * KEEP);
        let line = format!("{head}{body}\"}}}}}}\n{PING}\n");
        let writer = tokio::spawn(async move {
            // In small pieces, so the line is over the cap long before its end arrives.
            for piece in line.as_bytes().chunks(1000) {
                client.write_all(piece).await.unwrap();
            }
            client
        });
        let m = t.receive().await.unwrap();
        let _client = writer.await.unwrap();
        let ClientJsonRpcMessage::Request(r) = &m else {
            panic!("{m:?}")
        };
        assert_eq!(serde_json::to_value(&r.id).unwrap(), "big-1");
        let args = arguments(&m);
        let total = head.len() + body.len() + 5;
        assert_eq!(args[crate::wire::OVERSIZE_KEY], total);
        assert_eq!(args[crate::wire::OVERSIZE_LIMIT_KEY], max);
        assert!(is_ping(&t.receive().await.unwrap(), 7));
        // One over the cap when it arrives whole in one read.
        let (mut t, mut client, _client_in) = transport(PING.len());
        client
            .write_all(format!("{PING}\n{PING}\n").as_bytes())
            .await
            .unwrap();
        let m = t.receive().await.unwrap();
        assert_eq!(arguments(&m)[crate::wire::OVERSIZE_KEY], PING.len() + 1);
    }

    #[tokio::test]
    async fn junk_is_ignored_and_an_invalid_request_is_answered_with_its_id() {
        let (mut t, mut client, client_in) = transport(1 << 20);
        let mut client_in = BufReader::new(client_in);
        let lines = [
            "this is not json",
            r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":7}"#,
            r#"{"jsonrpc":"2.0","id":99,"error":"not an error object"}"#,
            r#"{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":"not an object"}"#,
            PING,
        ];
        for l in lines {
            client.write_all(format!("{l}\n").as_bytes()).await.unwrap();
        }
        let m = t.receive().await.unwrap();
        // The only answer is the invalid request's, before the ping was even handled.
        let reply = next_reply(&mut client_in).await;
        assert_eq!(reply["id"], "q-1");
        assert_eq!(reply["error"]["code"], -32600);
        assert!(is_ping(&m, 7), "{m:?}");
        // An object that is no message at all gets an answer with a null id.
        client.write_all(b"{\"hello\":1}\n").await.unwrap();
        client
            .write_all(format!("{PING}\n").as_bytes())
            .await
            .unwrap();
        assert!(is_ping(&t.receive().await.unwrap(), 7));
        let reply = next_reply(&mut client_in).await;
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn requests_count_as_outstanding_until_answered() {
        let (mut t, mut client, _client_in) = transport(1 << 20);
        let outstanding = t.outstanding();
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let response = r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#;
        for l in [PING, note, response, &PING.replace('7', "8")] {
            client.write_all(format!("{l}\n").as_bytes()).await.unwrap();
        }
        for _ in 0..4 {
            t.receive().await.unwrap();
        }
        assert_eq!(outstanding.load(Ordering::Acquire), 2, "two pings, no more");
        let answer = |id: i64| -> TxJsonRpcMessage<RoleServer> {
            serde_json::from_value(serde_json::json!({"jsonrpc":"2.0","id":id,"result":{}}))
                .unwrap()
        };
        t.send(answer(7)).await.unwrap();
        assert_eq!(outstanding.load(Ordering::Acquire), 1);
        let error: TxJsonRpcMessage<RoleServer> = serde_json::from_value(serde_json::json!(
            {"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no"}}))
        .unwrap();
        t.send(error).await.unwrap();
        assert_eq!(outstanding.load(Ordering::Acquire), 0);
        // A request of the server's own is not an answer; nothing goes below zero.
        let request: TxJsonRpcMessage<RoleServer> = serde_json::from_value(
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"roots/list"}),
        )
        .unwrap();
        t.send(request).await.unwrap();
        t.send(answer(9)).await.unwrap();
        assert_eq!(outstanding.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn messages_are_sent_one_per_line_and_none_after_close() {
        let (mut t, _client, client_in) = transport(1 << 20);
        let mut client_in = BufReader::new(client_in);
        let reply: TxJsonRpcMessage<RoleServer> =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap();
        t.send(reply.clone()).await.unwrap();
        t.send(reply.clone()).await.unwrap();
        assert_eq!(next_reply(&mut client_in).await["id"], 3);
        assert_eq!(next_reply(&mut client_in).await["id"], 3);
        t.close().await.unwrap();
        assert!(t.send(reply).await.is_err());
    }
}
