//! Checking a client's token, the same on both front ends (HTTP's `Authorization: Bearer`,
//! the Redis protocol's `AUTH`).

/// Whether `given` is the `expected` secret, in time that depends only on the two lengths,
/// never on where they first differ: a client cannot find the token byte by byte by timing
/// its guesses.
pub(crate) fn secret_eq(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_exactly() {
        assert!(secret_eq(b"s3cret", b"s3cret"));
        assert!(!secret_eq(b"s3cret", b"s3creT"));
        assert!(!secret_eq(b"s3cret", b"s3cre"));
        assert!(!secret_eq(b"", b"s3cret"));
        assert!(secret_eq(b"", b""));
    }
}
