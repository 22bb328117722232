//! Glob matching as Redis' `stringmatch`, for `CONFIG GET` patterns.

/// Glob matching as Redis' `stringmatch` for `CONFIG GET`: `*`, `?`, `[abc]`, `[a-z]`,
/// `[^a]`, `\x`; ASCII case ignored.
pub(super) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    // (pattern, text) positions to resume from when the last `*` must swallow one more byte.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let c = text.get(t).map_or(0, u8::to_ascii_lowercase);
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => class_match(pattern, p, c),
            Some(b'\\') if p + 1 < pattern.len() => pattern
                .get(p + 1)
                .filter(|x| x.to_ascii_lowercase() == c)
                .map(|_| 2),
            Some(x) if x.to_ascii_lowercase() == c => Some(1),
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
fn class_match(pattern: &[u8], start: usize, c: u8) -> Option<usize> {
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
                if pattern.get(i + 1).map(u8::to_ascii_lowercase) == Some(c) {
                    matched = true;
                }
                i += 2;
            }
            Some(&lo) if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some() => {
                let hi = pattern.get(i + 2).map_or(0, u8::to_ascii_lowercase);
                let lo = lo.to_ascii_lowercase();
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                i += 3;
            }
            Some(&x) => {
                if x.to_ascii_lowercase() == c {
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
        assert!(glob_match(b"save", b"save"));
        assert!(glob_match(b"SAVE", b"save"));
        assert!(glob_match(b"*", b"appendonly"));
        assert!(glob_match(b"append*", b"appendonly"));
        assert!(glob_match(b"*only", b"appendonly"));
        assert!(glob_match(b"a*d*y", b"appendonly"));
        assert!(glob_match(b"s?ve", b"save"));
        assert!(glob_match(b"[rs]ave", b"save"));
        assert!(glob_match(b"[a-z]ave", b"save"));
        assert!(!glob_match(b"[^s]ave", b"save"));
        assert!(glob_match(b"s\\ave", b"save"));
        assert!(!glob_match(b"save*x", b"save"));
        assert!(!glob_match(b"sav", b"save"));
        assert!(!glob_match(b"", b"save"));
        assert!(glob_match(b"**", b""));
        assert!(!glob_match(b"[", b"s"));
    }
}
