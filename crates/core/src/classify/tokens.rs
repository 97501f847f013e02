//! Credential shapes without a literal to key on, found by a hand-written scan instead of a
//! regex over the whole draft: Discord bot tokens (`<user id in base64>.<6>.<27-38>`), which
//! carry no vendor prefix. The scan visits each `.` once (memchr), so it is linear and cheap.

use std::ops::Range;

use base64::Engine;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Whether `head` is a Discord user id (17-20 decimal digits, no leading zero) in unpadded
/// base64: what the first segment of a bot token is. This is what makes a three-segment token
/// a Discord token rather than any dotted identifier.
fn is_user_id(head: &[u8]) -> bool {
    let Ok(id) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(head) else {
        return false;
    };
    (17..=20).contains(&id.len()) && id[0] != b'0' && id.iter().all(u8::is_ascii_digit)
}

/// Discord bot tokens in `s`: a token of three dot-separated segments, the first 23-27
/// characters encoding a user id, the second 6, the third 27-38, with no token byte around.
pub(crate) fn scan_discord(s: &[u8], mut emit: impl FnMut(Range<usize>)) {
    let n = s.len();
    let mut resume = 0;
    for dot in memchr::memchr_iter(b'.', s) {
        // the dot ending the second segment first: the cheapest test, and most dots fail it
        if dot < resume || dot < 23 || s.get(dot + 7) != Some(&b'.') {
            continue;
        }
        // the first segment: 23-27 token bytes before the dot, starting a token
        let mut a = dot;
        while a > 0 && dot - a < 28 && is_token_byte(s[a - 1]) {
            a -= 1;
        }
        let head = dot - a;
        if !(23..=27).contains(&head) || (a > 0 && is_token_byte(s[a - 1])) {
            continue;
        }
        if !matches!(s[a], b'M' | b'N' | b'O') {
            continue;
        }
        // the second segment: exactly 6 token bytes, then a dot
        let mid = dot + 1;
        if mid + 7 > n || !s[mid..mid + 6].iter().all(|&b| is_token_byte(b)) || s[mid + 6] != b'.' {
            continue;
        }
        // the third: 27-38 token bytes ending the token
        let tail = mid + 7;
        let mut e = tail;
        while e < n && e - tail <= 38 && is_token_byte(s[e]) {
            e += 1;
        }
        if !(27..=38).contains(&(e - tail)) || (e < n && is_token_byte(s[e])) {
            continue;
        }
        if is_user_id(&s[a..dot]) {
            emit(a..e);
            resume = e;
        }
    }
}
