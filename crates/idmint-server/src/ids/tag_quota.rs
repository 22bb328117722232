//! Tag quotas: one tenant must not take every tag of a node, or of the store, from the others.
//!
//! A node serves at most `--max-tags` tags (loaded in memory), and before quotas one token
//! could fill that cap with new tags in seconds, locking every other tenant and the admin out,
//! and fill it again after a restart. Now:
//!
//! - **The admin reserve**: tokens of other scopes together load at most `--max-tags` minus
//!   `--admin-tag-reserve`; the rest is the admin scope's, so an operator can always create
//!   and serve a tag.
//! - **A quota per token** (`max_tags` in the tokens file, else [`default_share`] of
//!   `--max-tags`), counted twice: the tags it loads on this node (its first use of a tag
//!   already loaded costs nothing), and, before it creates a tag, the tags in the store its
//!   patterns match. The store count is the one that holds across restarts and nodes: a
//!   node's memory starts empty, the store does not. Creations of one token on one node run
//!   one at a time, so a node never overshoots; nodes creating at the same moment can each
//!   take the last place (one tag each at most).
//!
//! Tags already loaded keep working for everyone: nothing here is on the path of a tag a node
//! already serves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex, PoisonError};

use idmint_core::store::SegmentStore;
use idmint_core::{Clock, Error, Result, Tag};

use crate::auth::{Grant, Scope};

/// How long a token found full in the store is refused without asking the store again: a
/// flood of new tag names from a full token costs the store one listing per second.
const FULL_FOR_MS: u64 = 1_000;

/// Who asks for a tag: what the node's cap and the quotas allow it.
#[derive(Debug, Clone, Copy)]
pub enum Asker<'a> {
    /// The admin scope (or no token configured, or the node's own tools): no quota, and the
    /// whole of `--max-tags`.
    Operator,
    /// A token of another scope: its quota, and the node's cap less the admin reserve.
    Tenant(&'a Grant),
}

impl<'a> Asker<'a> {
    /// The asker a grant makes.
    pub fn of(grant: &'a Grant) -> Self {
        match grant.scope() {
            Scope::Admin => Asker::Operator,
            Scope::Mint | Scope::Metrics => Asker::Tenant(grant),
        }
    }
}

/// A token's default quota when the tokens file gives it none: a tenth of `--max-tags`
/// (at least 1). With the default admin reserve (another tenth), nine tenants at their default
/// quota fit in one node together, and no one of them takes more than a tenth of it.
pub fn default_share(max_tags: usize) -> usize {
    (max_tags / 10).max(1)
}

/// The default `--admin-tag-reserve`: a tenth of `--max-tags` (1,000 of the default 10,000).
pub fn default_admin_reserve(max_tags: usize) -> usize {
    max_tags / 10
}

/// One token's state on this node.
#[derive(Debug, Default)]
struct TokenState {
    /// Tags this token loaded first on this node (and that are loaded or loading).
    loaded: usize,
    /// Serializes its creations on this node; holds when it was last found full in the
    /// store (on the store's clock), if it was.
    creating: Arc<tokio::sync::Mutex<Option<u64>>>,
}

/// The quotas of every token on this node.
#[derive(Debug)]
pub(super) struct TagQuotas {
    default_share: usize,
    tokens: StdMutex<HashMap<Box<str>, TokenState>>,
}

impl TagQuotas {
    /// Quotas for a node of `--max-tags` `max_tags`.
    pub(super) fn new(max_tags: usize) -> Self {
        Self {
            default_share: default_share(max_tags),
            tokens: StdMutex::default(),
        }
    }

    /// The quota of `grant`.
    fn limit(&self, grant: &Grant) -> usize {
        grant.max_tags().unwrap_or(self.default_share)
    }

    /// Counts one more tag loaded by `asker` on this node, or refuses it when the token has
    /// its quota loaded already. Returns the token charged, to give back with [`Self::release`]
    /// when the load fails.
    pub(super) fn charge(&self, asker: Asker<'_>, tag: &Tag) -> Result<Option<Box<str>>> {
        let Asker::Tenant(grant) = asker else {
            return Ok(None);
        };
        let limit = self.limit(grant);
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        let state = tokens.entry(grant.name().into()).or_default();
        if state.loaded >= limit {
            return Err(quota(tag, grant, limit, "loaded on this node"));
        }
        state.loaded += 1;
        Ok(Some(grant.name().into()))
    }

    /// Gives back a charge whose load failed.
    pub(super) fn release(&self, token: &str) {
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = tokens.get_mut(token) {
            state.loaded = state.loaded.saturating_sub(1);
        }
    }

    /// Creates `tag` with `create` when `asker` may: a tenant only while the store holds fewer
    /// tags its patterns match than its quota. One creation per token at a time on this node.
    pub(super) async fn create<T>(
        &self,
        asker: Asker<'_>,
        tag: &Tag,
        store: &dyn SegmentStore,
        clock: &dyn Clock,
        create: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let Asker::Tenant(grant) = asker else {
            return create.await;
        };
        let limit = self.limit(grant);
        let lock = {
            let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(&tokens.entry(grant.name().into()).or_default().creating)
        };
        let mut full_at = lock.lock().await;
        let now = clock.now_ms();
        if full_at.is_some_and(|at| now.saturating_sub(at) < FULL_FOR_MS) {
            return Err(quota(tag, grant, limit, "in the store"));
        }
        let held = store
            .list_tags()
            .await?
            .iter()
            .filter(|info| grant.allows_tag(info.tag.as_str().as_bytes()))
            .count();
        if held >= limit {
            *full_at = Some(now);
            return Err(quota(tag, grant, limit, "in the store"));
        }
        *full_at = None;
        create.await
    }
}

fn quota(tag: &Tag, grant: &Grant, limit: usize, place: &'static str) -> Error {
    Error::TagQuota {
        tag: tag.to_string(),
        token: grant.name().to_owned(),
        limit,
        place,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use idmint_core::store::{MemoryStore, TagSettings};
    use idmint_core::ManualClock;

    use super::*;

    fn tag(name: &str) -> Tag {
        let Ok(tag) = Tag::new(name) else {
            panic!("`{name}` is refused");
        };
        tag
    }

    fn orders(max_tags: Option<usize>) -> Grant {
        Grant::new("orders", Scope::Mint, vec!["orders-*".into()]).with_max_tags(max_tags)
    }

    #[test]
    fn a_token_loads_at_most_its_quota_and_gets_failed_loads_back() {
        let quotas = TagQuotas::new(30);
        let grant = orders(None);
        let tenant = Asker::Tenant(&grant);
        for _ in 0..default_share(30) {
            assert!(matches!(
                quotas.charge(tenant, &tag("orders-1")),
                Ok(Some(_))
            ));
        }
        assert!(matches!(
            quotas.charge(tenant, &tag("orders-4")),
            Err(Error::TagQuota {
                limit: 3,
                place: "loaded on this node",
                ..
            })
        ));
        quotas.release("orders");
        assert!(quotas.charge(tenant, &tag("orders-4")).is_ok());
        let admin = Grant::new("ops", Scope::Admin, vec![]);
        assert!(matches!(
            quotas.charge(Asker::of(&admin), &tag("x")),
            Ok(None)
        ));
    }

    #[tokio::test]
    async fn creations_count_the_tags_in_the_store_its_patterns_match() {
        let clock = ManualClock::shared(1_000);
        let store = MemoryStore::new(clock.clone());
        for name in [
            "orders-a",
            "orders-b",
            "payments-a",
            "payments-b",
            "payments-c",
        ] {
            assert!(store
                .create_tag(&tag(name), &TagSettings::default())
                .await
                .is_ok());
        }
        let quotas = TagQuotas::new(10_000);
        // Makes `name` as the admin (`None`) or as `orders` with that quota.
        let attempt = |quota: Option<usize>, name: &'static str| {
            let (quotas, store, clock) = (&quotas, &store, &*clock);
            async move {
                let name = tag(name);
                let grant = quota.map(|quota| orders(Some(quota)));
                let asker = grant.as_ref().map_or(Asker::Operator, Asker::Tenant);
                let settings = TagSettings::default();
                let create = store.create_tag(&name, &settings);
                quotas.create(asker, &name, store, clock, create).await
            }
        };
        // Two of three: one more is made, then none.
        assert!(attempt(Some(3), "orders-c").await.is_ok());
        assert!(matches!(
            attempt(Some(3), "orders-d").await,
            Err(Error::TagQuota {
                place: "in the store",
                ..
            })
        ));
        // The admin has no quota.
        assert!(attempt(None, "orders-e").await.is_ok());
        // A quota raised on reload counts again once the refusal's second has passed.
        assert!(attempt(Some(5), "orders-f").await.is_err());
        clock.advance(Duration::from_millis(FULL_FOR_MS));
        assert!(attempt(Some(5), "orders-f").await.is_ok());
        assert!(matches!(
            attempt(Some(5), "orders-g").await,
            Err(Error::TagQuota { limit: 5, .. })
        ));
    }
}
