//! `--since` for `journal` and `analytics`: a duration back from now (`30m`, `24h`, `7d`,
//! `1h30m`), a date (`2026-12-01`, midnight UTC) or an RFC 3339 time
//! (`2026-12-01T10:00:00Z`).

use chrono::{DateTime, Duration, Utc};

/// What `--since` accepts, for its help and its error.
pub const FORMS: &str = "a duration back from now (30m, 24h, 7d, 2w, 1h30m; units s m h d w), \
    a date (2026-12-01, midnight UTC) or an RFC 3339 time (2026-12-01T10:00:00Z)";

/// The instant `--since` names, counted back from `now` for a duration.
pub fn parse_at(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let t = s.trim();
    if let Some(d) = duration(t) {
        return now
            .checked_sub_signed(d)
            .ok_or_else(|| format!("{s:?} reaches back before any representable time"));
    }
    resilient_write_core::analytics::parse_since(t).ok_or_else(|| format!("{s:?} is not {FORMS}"))
}

/// The clap value parser: [`parse_at`] from the current time.
pub fn parse(s: &str) -> Result<DateTime<Utc>, String> {
    parse_at(s, Utc::now())
}

/// `30m`, `24h`, `1h30m`: one or more number-and-unit pairs, nothing else.
fn duration(s: &str) -> Option<Duration> {
    let mut total = Duration::zero();
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: i64 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].chars().next()?;
        let secs_per = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return None,
        };
        total = total.checked_add(&Duration::try_seconds(n.checked_mul(secs_per)?)?)?;
        rest = &rest[digits + unit.len_utf8()..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-04T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn at(s: &str) -> String {
        parse_at(s, now()).unwrap().to_rfc3339()
    }

    #[test]
    fn durations_count_back_from_now() {
        assert_eq!(at("30m"), "2026-12-04T11:30:00+00:00");
        assert_eq!(at("24h"), "2026-12-03T12:00:00+00:00");
        assert_eq!(at("7d"), "2026-11-27T12:00:00+00:00");
        assert_eq!(at("2w"), "2026-11-20T12:00:00+00:00");
        assert_eq!(at("1h30m"), "2026-12-04T10:30:00+00:00");
        assert_eq!(at("45s"), "2026-12-04T11:59:15+00:00");
    }

    #[test]
    fn dates_are_midnight_utc_and_rfc3339_is_taken_as_written() {
        assert_eq!(at("2026-12-01"), "2026-12-01T00:00:00+00:00");
        assert_eq!(at("2026-12-01T10:00:00Z"), "2026-12-01T10:00:00+00:00");
        assert_eq!(at("2026-12-01T10:00:00+02:00"), "2026-12-01T08:00:00+00:00");
    }

    #[test]
    fn anything_else_is_refused_with_the_accepted_forms() {
        for bad in [
            "",
            "yesterday",
            "7",
            "d",
            "7x",
            "7d3",
            "-7d",
            "2026-13-01",
            "1.5h",
            "99999999999999999w",
        ] {
            let e = parse_at(bad, now()).unwrap_err();
            assert!(
                e.contains("duration") || e.contains("representable"),
                "{bad}: {e}"
            );
        }
    }
}
