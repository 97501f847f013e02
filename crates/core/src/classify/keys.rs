//! What a key's name, and a UUID beside it, say about a value: the words of a benign key (a
//! digest, an id, a name, a length: random-looking values that are no secret), the words that
//! say a value is a secret, and the platforms whose keys are plain UUIDs (a UUID alone is an
//! identifier; beside `HEROKU_API_KEY` it is a key). Used by `verify`'s checks.

use std::sync::LazyLock;

use super::{entropy, vendors};

/// Words of a key whose value is not a secret even when it looks random (a digest, an id, a
/// name, a length). Compared against whole words of the key (`admin_password` is not `min`).
const BENIGN_KEY_WORDS: &[&str] = &[
    "hash",
    "hashed",
    "sha",
    "sha1",
    "sha256",
    "sha512",
    "md5",
    "digest",
    "checksum",
    "etag",
    "uuid",
    "guid",
    "fingerprint",
    "version",
    "url",
    "uri",
    "path",
    "file",
    "filename",
    "name",
    "type",
    "count",
    "length",
    "len",
    "size",
    "format",
    "header",
    "prefix",
    "suffix",
    "field",
    "endpoint",
    "ttl",
    "limit",
    "kind",
    "mode",
    "public",
    "pubkey",
    "policy",
    "reset",
    "input",
    "prompt",
    "label",
    "hint",
    "regex",
    "pattern",
    "rule",
    "strength",
    "salt",
    "encoder",
    "validator",
    "manager",
    "provider",
    "env",
    "min",
    "max",
    "id",
    "ids",
    "uid",
    "dir",
    "template",
    "timeout",
    "algorithm",
    "alg",
    "method",
    "cache",
    "sort",
    "partition",
    "primary",
    "foreign",
    "idempotency",
    "dedup",
    "lookup",
    "map",
    "row",
    "index",
    "hot",
    "shortcut",
    "placeholder",
    "class",
    "enabled",
    "required",
    "store",
    "storage",
    "next",
    "page",
    "paging",
    "continuation",
    "cursor",
    "marker",
    "lock",
    "change",
    "request",
    "starting",
    "s3",
    "object",
    "bucket",
    "arn",
    "kms",
    "websocket",
    "sec",
    "csrf",
    "xsrf",
    "recv",
    "keyserver",
    "keyring",
];
/// Word prefixes with the same meaning (`expires`, `tokenizer`, `validation`, `encoding`).
const BENIGN_KEY_PREFIXES: &[&str] = &["expir", "tokeniz", "valid", "encod", "hash"];

/// Whether `f` holds for a word of `key`: the key split at separators (non-alphanumeric
/// bytes) and camelCase humps (a capital after a lowercase letter or a digit). The words are
/// slices of the key as written; callers compare them case-insensitively (a split into
/// lowercased `String`s was an allocation per word on every keyed match).
pub(super) fn any_key_word(key: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let mut start: Option<usize> = None;
    let mut prev_lower = false;
    for (i, &b) in key.iter().enumerate() {
        if !b.is_ascii_alphanumeric() {
            if let Some(s) = start.take()
                && f(&key[s..i])
            {
                return true;
            }
            prev_lower = false;
            continue;
        }
        if b.is_ascii_uppercase()
            && prev_lower
            && let Some(s) = start.replace(i)
            && f(&key[s..i])
        {
            return true;
        }
        start.get_or_insert(i);
        prev_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
    }
    start.is_some_and(|s| f(&key[s..]))
}

/// Longest word of [`BENIGN_KEY_WORDS`] the search below can find (a test checks the list).
const BENIGN_WORD_MAX: usize = 16;

/// [`BENIGN_KEY_WORDS`] sorted, for a binary search of a lowercased word (a linear scan with
/// a case-insensitive comparison per listed word was most of what a keyed match's check cost).
static BENIGN_SORTED: LazyLock<Vec<&'static [u8]>> = LazyLock::new(|| {
    let mut v: Vec<&[u8]> = BENIGN_KEY_WORDS.iter().map(|w| w.as_bytes()).collect();
    v.sort_unstable();
    v
});

/// Whether the word `w` (any case) is a benign word or starts with a benign prefix.
fn benign_word(w: &[u8]) -> bool {
    let mut buf = [0u8; BENIGN_WORD_MAX];
    if let Some(lower) = buf.get_mut(..w.len()) {
        lower.copy_from_slice(w);
        lower.make_ascii_lowercase();
        if BENIGN_SORTED.binary_search(&&*lower).is_ok() {
            return true;
        }
    }
    BENIGN_KEY_PREFIXES.iter().any(|p| {
        w.get(..p.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(p.as_bytes()))
    })
}

/// A key one of whose words is a benign word or starts with a benign prefix (both lists are
/// lowercase; a test checks it).
pub(super) fn benign_key(key: &[u8]) -> bool {
    any_key_word(key, benign_word)
}

pub(super) fn is_uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// UUIDs that documentation prints as examples (RFC 4122's, the one on Wikipedia's page).
const EXAMPLE_UUIDS: &[&[u8]] = &[
    b"123e4567-e89b-12d3-a456-426614174000",
    b"123e4567-e89b-12d3-a456-426655440000",
    b"550e8400-e29b-41d4-a716-446655440000",
    b"f47ac10b-58cc-4372-a567-0e02b2c3d479",
];

/// A UUID that can be a key: not a placeholder (`00000000-...`, `12345678-1234-...`) and not a
/// documentation example.
pub(super) fn is_live_uuid(v: &[u8]) -> bool {
    is_uuid(v)
        && !entropy::is_token_placeholder(v)
        && !EXAMPLE_UUIDS.iter().any(|e| v.eq_ignore_ascii_case(e))
}

/// Words of a key that say its value is a secret.
const SECRET_KEY_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "auth",
    "credential",
    "credentials",
    "apikey",
    "hapikey",
    "geniekey",
    "pat",
];

/// A key naming a platform whose keys are UUIDs and a secret (`HEROKU_API_KEY`,
/// `railwayToken`), no identifier (`HEROKU_APP_ID`).
pub(super) fn platform_uuid_key(key: &[u8]) -> bool {
    vendors::names_uuid_platform(key) && secret_key(key)
}

/// A key naming a secret (`api_key`, `token`), no identifier (`app_id`, `token_type`).
pub(super) fn secret_key(key: &[u8]) -> bool {
    any_key_word(key, |w| {
        SECRET_KEY_WORDS
            .iter()
            .any(|s| w.eq_ignore_ascii_case(s.as_bytes()))
    }) && !benign_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split into lowercased words as it was: the reference of the test below.
    fn key_words(key: &[u8]) -> Vec<String> {
        let mut words = Vec::new();
        let mut cur = String::new();
        let mut prev_lower = false;
        for &b in key {
            if !b.is_ascii_alphanumeric() {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                prev_lower = false;
                continue;
            }
            if b.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
            cur.push(b.to_ascii_lowercase() as char);
        }
        if !cur.is_empty() {
            words.push(cur);
        }
        words
    }

    fn benign_key_lowercased(key: &[u8]) -> bool {
        key_words(key).iter().any(|w| {
            BENIGN_KEY_WORDS.contains(&w.as_str())
                || BENIGN_KEY_PREFIXES.iter().any(|p| w.starts_with(p))
        })
    }

    /// The word test as it was, a case-insensitive comparison with each listed word: the
    /// reference of the test below.
    fn benign_word_linear(w: &[u8]) -> bool {
        BENIGN_KEY_WORDS
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k.as_bytes()))
            || BENIGN_KEY_PREFIXES.iter().any(|p| {
                w.get(..p.len())
                    .is_some_and(|h| h.eq_ignore_ascii_case(p.as_bytes()))
            })
    }

    /// The sorted search finds what the linear scan it replaced found: every listed word and
    /// prefix in random case, with a byte added, removed or changed, words longer than
    /// [`BENIGN_WORD_MAX`], and random words.
    #[test]
    fn the_benign_word_search_agrees_with_the_linear_scan() {
        assert!(BENIGN_KEY_WORDS.iter().all(|w| w.len() <= BENIGN_WORD_MAX));
        let mut next = crate::classify::testing::splitmix64(0x18_0080);
        let mut words: Vec<Vec<u8>> = Vec::new();
        for w in BENIGN_KEY_WORDS.iter().chain(BENIGN_KEY_PREFIXES) {
            for _ in 0..20 {
                let mut v: Vec<u8> = w
                    .bytes()
                    .map(|b| {
                        if next().is_multiple_of(2) {
                            b.to_ascii_uppercase()
                        } else {
                            b
                        }
                    })
                    .collect();
                match next() % 5 {
                    0 => v.push(b"as9Z"[(next() % 4) as usize]),
                    1 => {
                        v.pop();
                    }
                    2 if !v.is_empty() => {
                        let k = (next() % v.len() as u64) as usize;
                        v[k] = b"aeiouxZ0"[(next() % 8) as usize];
                    }
                    3 => v.extend_from_slice(b"zzzzzzzzzzzzzzzzz"),
                    _ => {}
                }
                words.push(v);
            }
        }
        for _ in 0..5000 {
            let len = (next() % 20) as usize;
            words.push((0..len).map(|_| b'a' + (next() % 26) as u8).collect());
        }
        let mut benign = 0;
        for w in &words {
            let want = benign_word_linear(w);
            assert_eq!(benign_word(w), want, "{:?}", String::from_utf8_lossy(w));
            benign += usize::from(want);
        }
        assert!(
            benign > 300 && benign < words.len() - 1000,
            "{benign} of {}",
            words.len()
        );
    }

    #[test]
    fn benign_key_lists_are_lowercase() {
        for w in BENIGN_KEY_WORDS.iter().chain(BENIGN_KEY_PREFIXES) {
            assert_eq!(*w, w.to_ascii_lowercase(), "{w}");
        }
    }

    #[test]
    fn benign_keys_agree_with_the_lowercased_word_split() {
        // reproducible keys made of benign words, prefixes, other words, humps
        // and separators in any case
        let mut next = crate::classify::testing::splitmix64(0xBE61);
        let parts = [
            "hash",
            "Sha256",
            "ID",
            "expiry",
            "Tokenizer",
            "VALID",
            "min",
            "admin",
            "password",
            "Secret",
            "key",
            "api",
            "2",
            "x",
            "_",
            "-",
            ".",
            "__",
            " ",
            "aB",
            "Ab",
        ];
        let (mut benign, mut not) = (0, 0);
        for _ in 0..20_000 {
            let key: String = (0..1 + next() % 5)
                .map(|_| parts[(next() % parts.len() as u64) as usize])
                .collect();
            let want = benign_key_lowercased(key.as_bytes());
            assert_eq!(benign_key(key.as_bytes()), want, "{key}");
            if want { benign += 1 } else { not += 1 }
        }
        assert!(benign > 1000 && not > 1000, "{benign} benign, {not} not");
    }
}
