//! Checkpoints: named snapshots of an agent's intermediate data, kept in
//! `.resilient_write/checkpoints/<name>.json|yaml|md` (an extension of the paper's L4/L5: state
//! that must survive a lost session without living in the workspace tree).
//!
//! This module is the pure part: names (`^[A-Za-z0-9_-]{1,64}$`), formats, TTLs (`session`,
//! `permanent`, or an ISO-8601 duration such as `PT30M`, `P1D`, `P1W`), the on-disk documents
//! and the cleanup rule. Files are read and written (through the pipeline) by [`super::disk`].
//!
//! On disk, compatible with the Python original: a json checkpoint is the original's envelope
//! `{created_at, data, format, name, ttl, updated_at}` (sorted keys, two-space indent); a yaml
//! checkpoint is the same mapping in YAML; a markdown checkpoint is YAML front-matter with the
//! metadata followed by the data (a string) exactly as given. The original wrote every format
//! as `<name>.json`; such files are read by their `format` field.

use crate::envelope::{Failure, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::io::{self, Write};

/// Subdirectory of the state directory.
pub const CHECKPOINT_DIR: &str = "checkpoints";

/// Above this many bytes a checkpoint is streamed into its file (reported `chunked: true`).
pub const CHUNK_THRESHOLD: u64 = 1_048_576;

/// Storage format of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Json,
    Yaml,
    Markdown,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Json, Format::Yaml, Format::Markdown];

    pub fn extension(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Markdown => "md",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Markdown => "markdown",
        }
    }

    fn from_label(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            "markdown" | "md" => Some(Format::Markdown),
            _ => None,
        }
    }

    /// The format a file name's extension stores.
    pub fn from_file_name(file: &str) -> Option<(String, Format)> {
        let (stem, ext) = file.rsplit_once('.')?;
        let f = match ext {
            "json" => Format::Json,
            "yaml" => Format::Yaml,
            "md" => Format::Markdown,
            _ => return None,
        };
        valid_name(stem).then(|| (stem.to_string(), f))
    }
}

/// How long a checkpoint lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Ttl {
    /// Until the next cleanup with include_session (the default).
    Session,
    /// Never removed by cleanup.
    Permanent,
    /// Removed by any cleanup once `seconds` have passed since its last update.
    Duration { text: String, seconds: f64 },
}

impl Ttl {
    pub fn parse(s: &str) -> Result<Ttl> {
        match s {
            "session" => Ok(Ttl::Session),
            "permanent" => Ok(Ttl::Permanent),
            _ => parse_iso_duration(s)
                .map(|seconds| Ttl::Duration {
                    text: s.to_string(),
                    seconds,
                })
                .ok_or_else(|| Failure::InvalidDocument {
                    what: "checkpoint".into(),
                    message: format!(
                        "ttl {s:?} is not session, permanent or an ISO-8601 duration \
                         (e.g. PT30M, P1D, P1W, P1DT12H)"
                    ),
                    line: None,
                    field: Some("ttl".into()),
                    missing_fields: Vec::new(),
                }),
        }
    }

    pub fn label(&self) -> &str {
        match self {
            Ttl::Session => "session",
            Ttl::Permanent => "permanent",
            Ttl::Duration { text, .. } => text,
        }
    }
}

/// Seconds in an ISO-8601 duration `P[nY][nM][nW][nD][T[nH][nM][n[.f]S]]` (years count 365
/// days and months 30, as the original does). `None` unless well-formed with at least one
/// component (and one after a `T`).
pub fn parse_iso_duration(s: &str) -> Option<f64> {
    let rest = s.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    fn units(part: &str, order: &[(char, f64)]) -> Option<(f64, usize)> {
        let mut total = 0.0;
        let mut count = 0;
        let mut next = 0;
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || (c == '.' && !num.is_empty() && !num.contains('.')) {
                num.push(c);
                continue;
            }
            let pos = order[next..].iter().position(|(u, _)| *u == c)? + next;
            if num.is_empty() || num.ends_with('.') {
                return None;
            }
            // Only the last (smallest) unit may carry a fraction, and only seconds do here.
            if num.contains('.') && c != 'S' {
                return None;
            }
            total += num.parse::<f64>().ok()? * order[pos].1;
            num.clear();
            count += 1;
            next = pos + 1;
        }
        num.is_empty().then_some((total, count))
    }
    let day = 86_400.0;
    let (d, dn) = units(
        date,
        &[
            ('Y', 365.0 * day),
            ('M', 30.0 * day),
            ('W', 7.0 * day),
            ('D', day),
        ],
    )?;
    let (t, tn) = match time {
        Some(t) => {
            let (v, n) = units(t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
            if n == 0 {
                return None;
            }
            (v, n)
        }
        None => (0.0, 0),
    };
    (dn + tn > 0).then_some(d + t)
}

/// Whether `name` is a valid checkpoint name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn check_name(name: &str) -> Result<()> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(Failure::InvalidDocument {
            what: "checkpoint".into(),
            message: format!(
                "name {:?} must match ^[A-Za-z0-9_-]{{1,64}}$",
                name.chars().take(80).collect::<String>()
            ),
            line: None,
            field: Some("name".into()),
            missing_fields: Vec::new(),
        })
    }
}

/// A checkpoint: metadata plus data.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub name: String,
    pub format: Format,
    pub ttl: String,
    pub created_at: String,
    pub updated_at: String,
    pub data: Value,
}

impl Checkpoint {
    fn meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("created_at".into(), json!(self.created_at));
        m.insert("format".into(), json!(self.format.label()));
        m.insert("name".into(), json!(self.name));
        m.insert("ttl".into(), json!(self.ttl));
        m.insert("updated_at".into(), json!(self.updated_at));
        m
    }

    /// Stream the file's content into `w`.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        let to_io = |e: String| io::Error::other(e);
        match self.format {
            Format::Json => {
                let mut m = self.meta();
                m.insert("data".into(), self.data.clone());
                serde_json::to_writer_pretty(&mut *w, &m).map_err(io::Error::from)?;
                w.write_all(b"\n")
            }
            Format::Yaml => {
                let mut m = self.meta();
                m.insert("data".into(), self.data.clone());
                let mut adapter = IoFmt(w, None);
                serde_saphyr::to_fmt_writer(&mut adapter, &m)
                    .map_err(|e| adapter.1.take().unwrap_or_else(|| to_io(e.to_string())))
            }
            Format::Markdown => {
                let text = self.data.as_str().unwrap_or_default();
                let yaml =
                    serde_saphyr::to_string(&self.meta()).map_err(|e| to_io(e.to_string()))?;
                w.write_all(b"---\n")?;
                w.write_all(yaml.trim_end().as_bytes())?;
                w.write_all(b"\n---\n")?;
                w.write_all(text.as_bytes())
            }
        }
    }

    /// Size of the file's content, without building it.
    pub fn encoded_len(&self) -> io::Result<u64> {
        let mut c = Counter(0);
        self.write_to(&mut c)?;
        Ok(c.0)
    }

    /// Parse a checkpoint file. `ext_format` is what the extension says; a json file's own
    /// `format` field wins (the original kept every format in .json).
    pub fn parse(
        bytes: &[u8],
        name: &str,
        ext_format: Format,
    ) -> std::result::Result<Self, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
        let (mut m, data) = match ext_format {
            Format::Json => {
                let v: Value =
                    serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
                let Value::Object(mut m) = v else {
                    return Err("not a JSON object".into());
                };
                let data = m.remove("data").ok_or("no data field")?;
                (m, data)
            }
            Format::Yaml => {
                let mut options = serde_saphyr::Options::default();
                options.strict_booleans = true;
                options.with_snippet = false;
                let v: Value = serde_saphyr::from_str_with_options(text, options)
                    .map_err(|e| format!("invalid YAML: {}", e.without_snippet()))?;
                let Value::Object(mut m) = v else {
                    return Err("not a YAML mapping".into());
                };
                let data = m.remove("data").ok_or("no data field")?;
                (m, data)
            }
            Format::Markdown => {
                let (front, body) = crate::handoff::doc::parse_front_matter(text, "checkpoint")
                    .map_err(|e| e.to_string())?;
                let Value::Object(m) = front else {
                    return Err("front-matter is not a mapping".into());
                };
                (m, Value::String(body))
            }
        };
        let s = |m: &mut Map<String, Value>, k: &str| match m.remove(k) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let format = s(&mut m, "format")
            .and_then(|f| Format::from_label(&f))
            .unwrap_or(ext_format);
        Ok(Checkpoint {
            name: s(&mut m, "name").unwrap_or_else(|| name.to_string()),
            format,
            ttl: s(&mut m, "ttl").unwrap_or_else(|| "session".into()),
            created_at: s(&mut m, "created_at").unwrap_or_default(),
            updated_at: s(&mut m, "updated_at").unwrap_or_default(),
            data,
        })
    }
}

/// What cleanup does with one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    Keep,
    /// Remove, with the reason reported (`session_cleanup`, `expired`).
    Remove(&'static str),
    /// Unreadable metadata: reported, kept for a person to look at.
    Corrupt(String),
}

/// The cleanup rule: permanent never goes; session goes when asked; a duration goes once
/// `updated_at + duration` is past `now`.
pub fn fate(cp: &Checkpoint, include_session: bool, now: chrono::DateTime<chrono::Utc>) -> Fate {
    match Ttl::parse(&cp.ttl) {
        Ok(Ttl::Permanent) => Fate::Keep,
        Ok(Ttl::Session) if include_session => Fate::Remove("session_cleanup"),
        Ok(Ttl::Session) => Fate::Keep,
        Ok(Ttl::Duration { seconds, .. }) => {
            match chrono::DateTime::parse_from_rfc3339(&cp.updated_at) {
                Ok(t) => {
                    let age = (now - t.with_timezone(&chrono::Utc)).num_milliseconds() as f64;
                    if age / 1000.0 > seconds {
                        Fate::Remove("expired")
                    } else {
                        Fate::Keep
                    }
                }
                Err(e) => Fate::Corrupt(format!("updated_at {:?}: {e}", cp.updated_at)),
            }
        }
        Err(_) => Fate::Corrupt(format!("unknown ttl {:?}", cp.ttl)),
    }
}

struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `fmt::Write` over an `io::Write`, keeping the I/O error that `fmt` cannot carry.
struct IoFmt<'a>(&'a mut dyn Write, Option<io::Error>);

impl std::fmt::Write for IoFmt<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write_all(s.as_bytes()).map_err(|e| {
            self.1 = Some(e);
            std::fmt::Error
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations() {
        assert_eq!(parse_iso_duration("PT30M"), Some(1800.0));
        assert_eq!(parse_iso_duration("P1D"), Some(86_400.0));
        assert_eq!(parse_iso_duration("P1DT1H"), Some(90_000.0));
        assert_eq!(parse_iso_duration("P1W"), Some(604_800.0));
        assert_eq!(parse_iso_duration("PT1.5S"), Some(1.5));
        for bad in [
            "", "P", "PT", "30M", "P1H", "PT1D", "P1M1Y", "P-1D", "P1.5D", "PTM",
        ] {
            assert_eq!(parse_iso_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_format_round_trips() {
        for format in Format::ALL {
            let data = if format == Format::Markdown {
                json!("# notes\n\nline: with colon\n---\nmore")
            } else {
                json!({"k": [1, "two", null, true], "nested": {"x": 1.5}})
            };
            let cp = Checkpoint {
                name: "n".into(),
                format,
                ttl: "PT30M".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                updated_at: "2026-01-02T00:00:00Z".into(),
                data,
            };
            let mut buf = Vec::new();
            cp.write_to(&mut buf).unwrap();
            assert_eq!(buf.len() as u64, cp.encoded_len().unwrap());
            let back = Checkpoint::parse(&buf, "n", format).unwrap();
            assert_eq!(back, cp, "{format:?}: {}", String::from_utf8_lossy(&buf));
        }
    }
}
