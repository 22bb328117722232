//! What the test suites of several idmint crates share, written once: the store crate's tests,
//! the server's, the `idmint` binary's integration tests and its reliability scenarios.
//!
//! It depends on no idmint crate, so any crate's tests (unit tests included) can use it
//! without a dependency cycle; fixtures that need a store take what they need (a URL, a table
//! name) from the caller, who opened the store.
//!
//! Everything here panics on failure: it is for tests, where a failed fixture is a failed test.

// The workspace warns on `expect` for code reachable from input; here a panic is the report.
#![allow(clippy::expect_used)]

pub mod lease_timing;
pub mod sqlite_damage;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A store namespace no other test of this run, and no earlier run, uses, so a test starts from
/// empty tables in a database it shares with others (a long-lived server included).
///
/// `label` says which test made it, for whoever reads the database afterwards; it is cut to 12
/// characters so the whole stays within the store's `[a-z0-9_]{1,32}` (it must itself be
/// lowercase letters, digits and `_`). The middle part comes from std's `RandomState`, seeded
/// from the OS per process, so two runs never meet; the counter separates calls in one run.
pub fn namespace(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    assert!(
        label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "namespace label `{label}` must be [a-z0-9_]"
    );
    let label = &label[..label.len().min(12)];
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!(
        "t{label}_{:08x}_{}",
        hasher.finish() & 0xFFFF_FFFF,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The URL of a server store from the environment `scripts/with-stores` sets up
/// (`IDMINT_TEST_POSTGRES_URL`, `IDMINT_TEST_MYSQL_URL`, `IDMINT_TEST_REDIS_URL`). A missing
/// server fails the test: the suite must never pass by skipping a backend.
pub fn server_url(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!(
            "{variable} is not set: run the tests through scripts/test (or scripts/with-stores), \
             which starts the servers"
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn namespaces_are_distinct_and_fit_the_store_rule() {
        let a = super::namespace("a_rather_long_label_indeed");
        let b = super::namespace("a_rather_long_label_indeed");
        assert_ne!(a, b);
        for ns in [a, b] {
            assert!(ns.len() <= 32, "{ns}");
            assert!(ns
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'));
        }
    }
}
