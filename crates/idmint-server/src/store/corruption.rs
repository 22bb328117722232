//! Damaged store data makes the node not ready, for good.
//!
//! A store that reports corruption ([`Error::StoreCorrupt`]: a malformed SQLite page, PostgreSQL
//! `data_corrupted`, a crashed MySQL table) answers some calls and fails others, depending on
//! which page each one reads; its answers can no longer be trusted to keep IDs unique. So the
//! first such error seen by any store call of this node (a segment fetch, a lease renewal, an
//! admin route, the readiness probe) is latched here, and `/readyz` fails with it until the
//! process restarts: a load balancer takes the node out, and an operator sees the reason. The
//! latch never clears by itself: a call that happens to succeed later proves nothing about the
//! damaged pages, and the fix (restoring the store from a backup) means a restart anyway.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use idmint_core::{Error, Result};
use idmint_store::Store;

use super::layer::{layered, Calls, Layer};

/// The first corruption a store call reported, kept until the process ends.
#[derive(Debug, Default)]
pub struct CorruptionLatch {
    first: OnceLock<String>,
}

impl CorruptionLatch {
    /// The store's message of the first corruption seen, if any.
    pub fn reason(&self) -> Option<&str> {
        self.first.get().map(String::as_str)
    }

    /// Latches `result`'s error if it is a corruption (the first one only is kept and logged).
    fn observe<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error @ Error::StoreCorrupt { message, .. }) = &result {
            let message = match std::error::Error::source(error) {
                Some(cause) => format!("{message}: {cause}"),
                None => message.clone(),
            };
            if self.first.set(message.clone()).is_ok() {
                tracing::error!(
                    %message,
                    "the store reports damaged data: this node reports not ready until \
                     restarted; restore the store from a backup"
                );
            }
        }
        result
    }
}

/// `store` with every call watched by `latch`.
pub(crate) fn watched(store: Store, latch: &Arc<CorruptionLatch>) -> Store {
    layered(store, Watched(Arc::clone(latch)))
}

/// The [`Layer`] that passes every result through the latch.
#[derive(Debug)]
struct Watched(Arc<CorruptionLatch>);

impl Layer for Watched {
    async fn around<T: Send + 'static>(
        &self,
        _: &'static str,
        _: Calls,
        call: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        self.0.observe(call.await)
    }
}

#[cfg(test)]
mod tests {
    use idmint_core::store::{MemoryStore, TagSettings};
    use idmint_core::{ManualClock, Tag};

    use super::*;

    #[test]
    fn the_first_corruption_is_kept_and_nothing_else_latches() {
        let latch = CorruptionLatch::default();
        assert_eq!(latch.observe(Ok(1)), Ok(1));
        let down = Error::store_unavailable("down");
        assert_eq!(latch.observe::<()>(Err(down.clone())), Err(down));
        assert_eq!(latch.reason(), None);
        let first = Error::store_corrupt("page 7 is malformed");
        assert_eq!(latch.observe::<()>(Err(first.clone())), Err(first));
        let second = Error::store_corrupt("page 9 is malformed");
        assert_eq!(latch.observe::<()>(Err(second.clone())), Err(second));
        assert_eq!(latch.observe(Ok(2)), Ok(2));
        assert_eq!(latch.reason(), Some("page 7 is malformed"));
    }

    #[tokio::test]
    async fn a_watched_store_answers_like_the_store_it_wraps() {
        let memory = Arc::new(MemoryStore::new(ManualClock::shared(1_000)));
        let store = Store {
            segments: memory.clone(),
            leases: memory,
            display_url: "memory".into(),
            set: None,
        };
        let latch = Arc::new(CorruptionLatch::default());
        let store = watched(store, &latch);
        let Ok(tag) = Tag::new("t") else {
            panic!("a valid tag is refused");
        };
        assert!(store
            .segments
            .create_tag(&tag, &TagSettings::default())
            .await
            .is_ok());
        assert_eq!(store.segments.allocate(&tag, 3).await, Ok(1..4));
        assert_eq!(store.display_url, "memory");
        assert_eq!(latch.reason(), None);
    }
}
