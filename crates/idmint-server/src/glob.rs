//! Glob matching as Redis' `stringmatch`: `CONFIG GET`'s patterns (case ignored, as Redis
//! does) and the tag patterns of scoped tokens (case kept: `Orders` is another tag).

/// Whether letters that differ only in ASCII case match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// `A` matches `a` (`CONFIG GET`).
    Ignore,
    /// `A` matches only `A` (tag patterns).
    Keep,
}

/// Glob matching as Redis' `stringmatch`: `*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\x`.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8], case: Case) -> bool {
    let fold = |b: u8| match case {
        Case::Ignore => b.to_ascii_lowercase(),
        Case::Keep => b,
    };
    // (pattern, text) positions to resume from when the last `*` must swallow one more byte.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let c = text.get(t).map_or(0, |&b| fold(b));
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => class_match(pattern, p, c, fold),
            Some(b'\\') if p + 1 < pattern.len() => {
                pattern.get(p + 1).filter(|&&x| fold(x) == c).map(|_| 2)
            }
            Some(&x) if fold(x) == c => Some(1),
            _ => None,
        };
        match (step, star) {
            (Some(len), _) => {
                p += len;
                t += 1;
            }
            (None, Some((sp, st))) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            (None, None) => return false,
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b == b'*')
}

/// Matches `c` against the class starting at `pattern[start] == b'['`; returns the class's
/// length when it matches.
fn class_match(pattern: &[u8], start: usize, c: u8, fold: impl Fn(u8) -> u8) -> Option<usize> {
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(i) {
            // An unclosed class ends with the pattern, as in Redis.
            None => break,
            Some(b']') => {
                i += 1;
                break;
            }
            Some(b'\\') => {
                if pattern.get(i + 1).map(|&b| fold(b)) == Some(c) {
                    matched = true;
                }
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some() => {
                let hi = pattern.get(i + 2).map_or(0, |&b| fold(b));
                let lo = fold(lo);
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                i += 3;
            }
            Some(&x) => {
                if fold(x) == c {
                    matched = true;
                }
                i += 1;
            }
        }
    }
    (matched != negate).then_some(i.min(pattern.len()) - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_redis() {
        assert!(glob_match(b"save", b"save", Case::Ignore));
        assert!(glob_match(b"SAVE", b"save", Case::Ignore));
        assert!(glob_match(b"*", b"appendonly", Case::Ignore));
        assert!(glob_match(b"append*", b"appendonly", Case::Ignore));
        assert!(glob_match(b"*only", b"appendonly", Case::Ignore));
        assert!(glob_match(b"a*d*y", b"appendonly", Case::Ignore));
        assert!(glob_match(b"s?ve", b"save", Case::Ignore));
        assert!(glob_match(b"[rs]ave", b"save", Case::Ignore));
        assert!(glob_match(b"[a-z]ave", b"save", Case::Ignore));
        assert!(!glob_match(b"[^s]ave", b"save", Case::Ignore));
        assert!(glob_match(b"s\\ave", b"save", Case::Ignore));
        assert!(!glob_match(b"save*x", b"save", Case::Ignore));
        assert!(!glob_match(b"sav", b"save", Case::Ignore));
        assert!(!glob_match(b"", b"save", Case::Ignore));
        assert!(glob_match(b"**", b"", Case::Ignore));
        assert!(!glob_match(b"[", b"s", Case::Ignore));
        assert!(glob_match(b"orders-*", b"orders-eu", Case::Keep));
        assert!(!glob_match(b"orders-*", b"ORDERS-eu", Case::Keep));
        assert!(!glob_match(b"[a-z]x", b"Ax", Case::Keep));
    }
}
