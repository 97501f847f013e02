//! Byte searches the rule tables' checks and the scan share, below all of them.

/// Haystacks shorter than this are searched by comparing each window: building a `memmem`
/// searcher costs more than such a search (most haystacks are a match's value).
const FIND_SUB_NAIVE: usize = 64;

/// The first occurrence of `needle` in `hay` (`None` for an empty needle).
pub(super) fn find_sub(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    if hay.len() < FIND_SUB_NAIVE {
        return hay.windows(needle.len()).position(|w| w == needle);
    }
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`find_sub`] finds the occurrence `memmem::find` (which it used for every haystack)
    /// finds, on haystacks of every length around [`FIND_SUB_NAIVE`], needles longer than the
    /// haystack, at its ends, repeated and overlapping.
    #[test]
    fn find_sub_is_memmem_find() {
        let mut next = crate::classify::testing::splitmix64(0x18_00b0);
        let needles: [&[u8]; 6] = [b"::", b"://", b"aa", b"-----END", b"a", b"\"alg\""];
        let mut found = 0;
        for _ in 0..20_000 {
            let len = (next() % 90) as usize;
            let hay: Vec<u8> = (0..len)
                .map(|_| b"a:/-\"lgEND"[(next() % 10) as usize])
                .collect();
            let needle = needles[(next() % 6) as usize];
            let want = memchr::memmem::find(&hay, needle);
            assert_eq!(find_sub(&hay, needle), want, "{hay:?} {needle:?}");
            found += usize::from(want.is_some());
        }
        assert!(found > 5000, "{found}");
        assert_eq!(find_sub(b"abc", b""), None);
    }
}
