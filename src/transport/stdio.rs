//! The stdio transport: MCP over the process's standard input and output. Every line goes
//! through the wire's front door ([`crate::wire`]) before rmcp parses it.

use crate::wire::{KEEP, oversize_stand_in, sanitize_line};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};

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
