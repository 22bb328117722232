//! One way to wrap a store: a [`Layer`] is given every call of both store traits, as a future
//! it runs in its own way (measured, watched for corruption, moved to another runtime).
//! [`layered`] writes the forwarding of each trait method once, for every layer.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::store::{
    Lease, LeaseInfo, LeaseRequest, Partition, RangeRequest, Renewal, SegmentStore, SetMembership,
    TagInfo, TagSettings, TagUpdate, WorkerLeases,
};
use idmint_core::{IdSpaceRecord, Result, Tag};
use idmint_store::Store;

/// Which store trait a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calls {
    /// [`SegmentStore`]: range allocation and tags.
    Segments,
    /// [`WorkerLeases`]: the worker lease, its renewals, the ID space.
    Leases,
}

/// Something done around every store call.
pub trait Layer: std::fmt::Debug + Send + Sync + 'static {
    /// Runs `call`, the store operation `op` (`allocate`, `renew`, ...; the names of the
    /// `idmint_store_*` metrics) of `calls`. The call owns its arguments, so a layer may run it
    /// as a task of its own.
    fn around<T: Send + 'static>(
        &self,
        op: &'static str,
        calls: Calls,
        call: impl Future<Output = Result<T>> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send;
}

/// `store` with every call run through `layer`.
pub fn layered(store: Store, layer: impl Layer) -> Store {
    let layer = Arc::new(layer);
    Store {
        segments: Arc::new(Layered {
            inner: store.segments,
            layer: Arc::clone(&layer),
        }),
        leases: Arc::new(Layered {
            inner: store.leases,
            layer,
        }),
        display_url: store.display_url,
        set: store.set,
    }
}

/// One store trait of a store, with its calls run through a layer.
#[derive(Debug)]
struct Layered<S: ?Sized, L> {
    inner: Arc<S>,
    layer: Arc<L>,
}

impl<S: ?Sized, L: Layer> Layered<S, L> {
    /// Runs `op` through the layer, with the store and the call's own copy of its arguments.
    async fn call<T, F, Fut>(&self, op: &'static str, calls: Calls, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<S>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let call = call(Arc::clone(&self.inner));
        self.layer.around(op, calls, call).await
    }
}

#[async_trait]
impl<L: Layer> SegmentStore for Layered<dyn SegmentStore, L> {
    async fn allocate(&self, tag: &Tag, step: u64) -> Result<Range<u64>> {
        let tag = tag.clone();
        self.call("allocate", Calls::Segments, |store| async move {
            store.allocate(&tag, step).await
        })
        .await
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> Result<bool> {
        let tag = tag.clone();
        self.call("give_back", Calls::Segments, |store| async move {
            store.give_back(&tag, unused).await
        })
        .await
    }

    async fn compare_and_set_max_id(&self, tag: &Tag, expected: u64, new: u64) -> Result<bool> {
        let tag = tag.clone();
        self.call(
            "compare_and_set_max_id",
            Calls::Segments,
            |store| async move { store.compare_and_set_max_id(&tag, expected, new).await },
        )
        .await
    }

    async fn allocate_in(&self, tag: &Tag, request: RangeRequest) -> Result<Range<u64>> {
        let tag = tag.clone();
        self.call("allocate", Calls::Segments, |store| async move {
            store.allocate_in(&tag, request).await
        })
        .await
    }

    async fn create_tag(&self, tag: &Tag, settings: &TagSettings) -> Result<TagInfo> {
        let (tag, settings) = (tag.clone(), settings.clone());
        self.call("create_tag", Calls::Segments, |store| async move {
            store.create_tag(&tag, &settings).await
        })
        .await
    }

    async fn update_tag(&self, tag: &Tag, update: &TagUpdate) -> Result<TagInfo> {
        let (tag, update) = (tag.clone(), update.clone());
        self.call("update_tag", Calls::Segments, |store| async move {
            store.update_tag(&tag, &update).await
        })
        .await
    }

    async fn tag_info(&self, tag: &Tag) -> Result<Option<TagInfo>> {
        let tag = tag.clone();
        self.call("tag_info", Calls::Segments, |store| async move {
            store.tag_info(&tag).await
        })
        .await
    }

    async fn list_tags(&self) -> Result<Vec<TagInfo>> {
        self.call("list_tags", Calls::Segments, |store| async move {
            store.list_tags().await
        })
        .await
    }
}

#[async_trait]
impl<L: Layer> WorkerLeases for Layered<dyn WorkerLeases, L> {
    async fn acquire(&self, request: &LeaseRequest) -> Result<Lease> {
        let request = request.clone();
        self.call("acquire", Calls::Leases, |store| async move {
            store.acquire(&request).await
        })
        .await
    }

    async fn renew(&self, lease: &Lease, hwm_ms: u64, ttl: Duration) -> Result<Renewal> {
        let lease = lease.clone();
        self.call("renew", Calls::Leases, |store| async move {
            store.renew(&lease, hwm_ms, ttl).await
        })
        .await
    }

    async fn release(&self, lease: &Lease, final_hwm_ms: u64) -> Result<()> {
        let lease = lease.clone();
        self.call("release", Calls::Leases, |store| async move {
            store.release(&lease, final_hwm_ms).await
        })
        .await
    }

    async fn list_leases(&self) -> Result<Vec<LeaseInfo>> {
        self.call("list_leases", Calls::Leases, |store| async move {
            store.list_leases().await
        })
        .await
    }

    async fn clock_ms(&self) -> Result<u64> {
        self.call("clock", Calls::Leases, |store| async move {
            store.clock_ms().await
        })
        .await
    }

    async fn id_spaces(&self) -> Result<Vec<IdSpaceRecord>> {
        self.call("id_spaces", Calls::Leases, |store| async move {
            store.id_spaces().await
        })
        .await
    }

    async fn record_id_space(&self, record: &IdSpaceRecord, hwm_bound_ms: u64) -> Result<()> {
        let record = record.clone();
        self.call("record_id_space", Calls::Leases, |store| async move {
            store.record_id_space(&record, hwm_bound_ms).await
        })
        .await
    }

    fn stores(&self) -> usize {
        self.inner.stores()
    }

    async fn store_set(&self) -> Result<Option<SetMembership>> {
        self.call("store_set", Calls::Leases, |store| async move {
            store.store_set().await
        })
        .await
    }

    async fn join_store_set(&self, set_id: &str, partition: Partition) -> Result<SetMembership> {
        let set_id = set_id.to_owned();
        self.call("join_store_set", Calls::Leases, |store| async move {
            store.join_store_set(&set_id, partition).await
        })
        .await
    }
}
