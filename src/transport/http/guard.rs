//! Who may talk to the HTTP server. Three checks, in this order, before any body is read
//! (a request with two `Host`, `Origin`, `Authorization` or `Mcp-Session-Id` headers is
//! refused with 400 before any of them, whichever value is valid):
//!
//! 1. `Host` must name an allowed authority (DNS-rebinding defence: a page on
//!    `evil.example` that rebinds its name to 127.0.0.1 still sends `Host: evil.example`).
//! 2. `Origin`, when present, must be an allowed origin (a browser page of another site);
//!    a request without `Origin` (every non-browser client) passes.
//! 3. With a token configured, `Authorization: Bearer <token>`, compared in constant time.
//!
//! Host and Origin come first so that a foreign page learns nothing about whether a token is
//! set, and the token before the body so that an unauthenticated client cannot make the server
//! buffer a large body. The token itself is kept only as a SHA-256 digest and never logged.

use resilient_write_core::hash::sha256_hex;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A `host[:port]` pattern; no port matches any port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: String,
    port: Option<u16>,
}

/// A browser origin pattern: `scheme://host[:port]` (the port defaults by scheme) or `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPattern {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: u16,
    },
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Parse `host`, `host:port`, `[v6]` or `[v6]:port`.
pub fn parse_host(value: &str) -> Option<HostPattern> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let authority = axum::http::uri::Authority::try_from(value).ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    Some(HostPattern {
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    })
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Parse an `Origin` value (or an allow-list entry) into its (scheme, host, port) tuple.
pub fn parse_origin(value: &str) -> Option<OriginPattern> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(OriginPattern::Null);
    }
    let uri = axum::http::Uri::try_from(value).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || uri.path().len() > 1 || uri.query().is_some() {
        return None;
    }
    let port = authority.port_u16().or_else(|| default_port(&scheme))?;
    Some(OriginPattern::Tuple {
        scheme,
        host: normalize_host(authority.host()),
        port,
    })
}

/// The allow-lists and the token.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<HostPattern>,
    origins: Vec<OriginPattern>,
    token: Option<Token>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 400: a header that may appear once (`Host`, `Origin`, `Authorization`,
    /// `Mcp-Session-Id`) appears more often.
    Duplicate(&'static str),
    /// 403: the `Host` is not allowed (or missing).
    Host(String),
    /// 403: a present `Origin` is not allowed.
    Origin(String),
    /// 401: the bearer token is missing or wrong.
    Token,
}

/// Localhost spellings every loopback-bound server answers to.
const LOCAL_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl Guard {
    /// The default allow-lists for a server bound at `bound` (the localhost forms at its
    /// port, plus the bound address itself when it is a specific one), extended by the
    /// operator's `extra_hosts` and `extra_origins`.
    pub fn new(
        bound: SocketAddr,
        extra_hosts: &[String],
        extra_origins: &[String],
        token: Option<Token>,
    ) -> Result<Guard, String> {
        let port = bound.port();
        let mut names: Vec<String> = LOCAL_NAMES.iter().map(|s| s.to_string()).collect();
        if !bound.ip().is_unspecified() {
            let ip = bound.ip().to_string();
            if !names.contains(&ip) {
                names.push(ip);
            }
        }
        let mut hosts: Vec<HostPattern> = names
            .iter()
            .map(|h| HostPattern {
                host: h.clone(),
                port: Some(port),
            })
            .collect();
        let mut origins = Vec::new();
        for h in &names {
            for scheme in ["http", "https"] {
                origins.push(OriginPattern::Tuple {
                    scheme: scheme.into(),
                    host: h.clone(),
                    port,
                });
            }
        }
        for h in extra_hosts {
            hosts.push(
                parse_host(h).ok_or_else(|| {
                    format!("--allowed-host {h:?} is not a host name or host:port")
                })?,
            );
        }
        for o in extra_origins {
            origins.push(parse_origin(o).ok_or_else(|| {
                format!("--allowed-origin {o:?} is not an origin like http://example.com:8080")
            })?);
        }
        Ok(Guard {
            hosts,
            origins,
            token,
        })
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Check one request's `Host`, `Origin` and `Authorization` values (raw header bytes).
    pub fn check(
        &self,
        host: Option<&[u8]>,
        origin: Option<&[u8]>,
        authorization: Option<&[u8]>,
    ) -> Result<(), Refusal> {
        let shown = |v: &[u8]| {
            String::from_utf8_lossy(v)
                .chars()
                .take(100)
                .collect::<String>()
        };
        let Some(host) = host else {
            return Err(Refusal::Host("(none)".into()));
        };
        let parsed = std::str::from_utf8(host).ok().and_then(parse_host);
        let host_ok = parsed.is_some_and(|h| {
            self.hosts
                .iter()
                .any(|a| a.host == h.host && a.port.is_none_or(|p| h.port == Some(p)))
        });
        if !host_ok {
            return Err(Refusal::Host(shown(host)));
        }
        if let Some(origin) = origin {
            let parsed = std::str::from_utf8(origin).ok().and_then(parse_origin);
            if !parsed.is_some_and(|o| self.origins.contains(&o)) {
                return Err(Refusal::Origin(shown(origin)));
            }
        }
        if let Some(token) = &self.token {
            let presented = authorization
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| {
                    let (scheme, rest) = v.trim().split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
                });
            if !presented.is_some_and(|p| token.matches(p)) {
                return Err(Refusal::Token);
            }
        }
        Ok(())
    }
}

/// A bearer token, held only as its SHA-256 digest. Comparing digests in constant time also
/// hides the token's length.
#[derive(Clone)]
pub struct Token {
    digest: String,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from its text (surrounding whitespace, e.g. a file's final newline, is not
    /// part of it). Refuses an empty or non-printable token.
    pub fn new(text: &str) -> Result<Token, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the auth token is empty".into());
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the auth token must be printable ASCII without spaces".into());
        }
        Ok(Token {
            digest: sha256_hex(text.as_bytes()),
        })
    }

    pub fn matches(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        let other = sha256_hex(presented.as_bytes());
        self.digest.as_bytes().ct_eq(other.as_bytes()).into()
    }
}

/// True when every address a listener would get is loopback.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(token: Option<&str>) -> Guard {
        let bound: SocketAddr = "127.0.0.1:8123".parse().unwrap();
        Guard::new(
            bound,
            &["mcp.example.org".into()],
            &["https://app.example.org".into()],
            token.map(|t| Token::new(t).unwrap()),
        )
        .unwrap()
    }

    #[test]
    fn localhost_forms_at_the_bound_port_are_allowed_and_others_refused() {
        let g = guard(None);
        for host in [
            "localhost:8123",
            "127.0.0.1:8123",
            "[::1]:8123",
            "LOCALHOST:8123",
        ] {
            assert_eq!(g.check(Some(host.as_bytes()), None, None), Ok(()), "{host}");
        }
        for host in [
            "localhost:9999",
            "evil.example:8123",
            "127.0.0.1",
            "a@localhost:8123",
        ] {
            assert!(
                matches!(
                    g.check(Some(host.as_bytes()), None, None),
                    Err(Refusal::Host(_))
                ),
                "{host}"
            );
        }
        assert!(matches!(g.check(None, None, None), Err(Refusal::Host(_))));
        assert_eq!(g.check(Some(b"mcp.example.org:443"), None, None), Ok(()));
    }

    #[test]
    fn a_present_origin_must_be_allowed_and_an_absent_one_passes() {
        let g = guard(None);
        let host = Some(&b"localhost:8123"[..]);
        assert_eq!(g.check(host, Some(b"http://localhost:8123"), None), Ok(()));
        assert_eq!(
            g.check(host, Some(b"https://app.example.org"), None),
            Ok(())
        );
        assert_eq!(
            g.check(host, Some(b"https://app.example.org:443"), None),
            Ok(())
        );
        for origin in [
            "http://evil.example",
            "http://localhost:9",
            "null",
            "garbage",
        ] {
            assert!(
                matches!(
                    g.check(host, Some(origin.as_bytes()), None),
                    Err(Refusal::Origin(_))
                ),
                "{origin}"
            );
        }
    }

    #[test]
    fn the_token_is_required_and_compared_exactly() {
        let secret: String = (0..32)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let g = guard(Some(&format!("{secret}\n")));
        let host = Some(&b"localhost:8123"[..]);
        assert_eq!(g.check(host, None, None), Err(Refusal::Token));
        let wrong = format!("Bearer {}x", secret);
        assert_eq!(
            g.check(host, None, Some(wrong.as_bytes())),
            Err(Refusal::Token)
        );
        let basic = format!("Basic {secret}");
        assert_eq!(
            g.check(host, None, Some(basic.as_bytes())),
            Err(Refusal::Token)
        );
        let right = format!("bearer {secret}");
        assert_eq!(g.check(host, None, Some(right.as_bytes())), Ok(()));
        assert!(
            !format!("{g:?}").contains(&secret),
            "the token never shows in Debug"
        );
    }

    #[test]
    fn empty_tokens_and_bad_allow_list_entries_are_refused() {
        assert!(Token::new(" \n").is_err());
        let bound: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(Guard::new(bound, &["bad host".into()], &[], None).is_err());
        assert!(Guard::new(bound, &[], &["example.org".into()], None).is_err());
    }
}
