//! The operator's log (stderr, or `--log-file`), which never carries a secret whole (SPEC
//! section 10), at every level:
//!
//! - What the log says of a call is ours: `dispatch` logs the tool, the arguments' size and
//!   hash, the outcome and the time; never argument or file content.
//! - The libraries below us print requests whole at `debug` and `trace` (rmcp logs every
//!   `tools/call` with its arguments), so their events under `info` are dropped, whatever the
//!   level or `RUST_LOG` asks for. Their `info` and above name no content.
//! - Every line is passed through L0's redaction before it is written, so a secret that
//!   reaches the log by another road (an error message quoting input) is replaced by its
//!   typed placeholder.
//!
//! Logs go to stderr or are appended to the file; never to stdout, which carries MCP over stdio.

use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, filter};

use resilient_write_core::classify::Classifier;

/// Installs the process's logger: `level` (or `RUST_LOG`) as the filter, `file` as the sink.
pub fn init(level: &str, file: Option<&Path>) -> Result<(), String> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .map_err(|e| format!("--log-level {level:?} is not a log filter: {e}"))?;
    let sink = match file {
        None => Sink::Stderr,
        // The operator's log, not a workspace file: an append-only stream like the journal,
        // outside the write pipeline.
        Some(path) => Sink::File(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?,
        )),
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(Redacting(sink))
        .with_filter(filter::filter_fn(names_no_content))
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}

/// False for the events and spans that may print a request whole: another crate's, below
/// `info`. (In `tracing`, more verbose levels compare greater.)
fn names_no_content(meta: &Metadata<'_>) -> bool {
    keeps(*meta.level(), meta.target())
}

fn keeps(level: Level, target: &str) -> bool {
    level <= Level::INFO || is_ours(target)
}

fn is_ours(target: &str) -> bool {
    target == "resilient_write"
        || target.starts_with("resilient_write::")
        || target == "resilient_write_core"
        || target.starts_with("resilient_write_core::")
}

enum Sink {
    Stderr,
    File(Mutex<std::fs::File>),
}

/// Hands the formatter a buffer per event; the buffer is redacted and written when dropped.
struct Redacting(Sink);

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line {
            sink: &self.0,
            buf: Vec::new(),
        }
    }
}

/// One event's formatted text, on its way to the sink.
struct Line<'a> {
    sink: &'a Sink,
    buf: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = redact_line(&String::from_utf8_lossy(&self.buf));
        // A log that cannot be written is not worth failing a call over.
        let _ = match self.sink {
            Sink::Stderr => io::stderr().lock().write_all(text.as_bytes()),
            Sink::File(f) => match f.lock() {
                Ok(mut f) => f.write_all(text.as_bytes()),
                Err(_) => Ok(()),
            },
        };
    }
}

/// `text` with every L0 finding replaced by its placeholder. The built-in rules are compiled
/// on the first line written, not at start.
fn redact_line(text: &str) -> String {
    static L0: OnceLock<Classifier> = OnceLock::new();
    resilient_write_core::classify::redact(text, L0.get_or_init(Classifier::default)).content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_events_pass_below_info() {
        for (target, level, kept) in [
            ("resilient_write::dispatch", Level::DEBUG, true),
            ("resilient_write_core::store", Level::TRACE, true),
            ("rmcp::service", Level::DEBUG, false),
            ("rmcp::service", Level::TRACE, false),
            ("hyper::proto", Level::TRACE, false),
            ("resilient_writer_other", Level::DEBUG, false),
            ("rmcp::service", Level::INFO, true),
            ("rmcp::service", Level::WARN, true),
        ] {
            assert_eq!(keeps(level, target), kept, "{target} at {level}");
        }
    }

    #[test]
    fn a_secret_in_a_line_is_replaced() {
        let body: String = (0..36u8)
            .map(|i| {
                char::from(
                    b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
                        [usize::from(i) * 7 % 57],
                )
            })
            .collect();
        let token = format!("{}{body}", "ghp_");
        let out = redact_line(&format!("ERROR failed near {token} in input\n"));
        assert!(!out.contains(&token), "{out}");
        assert!(out.contains("{REDACTED:"), "{out}");
        assert!(out.ends_with(" in input\n"), "{out}");
    }
}
