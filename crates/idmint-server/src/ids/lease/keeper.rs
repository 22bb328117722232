//! The keeper's life once it holds a worker lease: renewing it (and raising the generator's
//! gate), taking another after a loss or a store's outage, and releasing it. How a lease is
//! taken is `take.rs`'s.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use idmint_core::clock::Stopwatch;
use idmint_core::store::{Lease, WorkerLeases};
use idmint_core::{Backoff, Clock, Error, Layout, Result, SnowflakeConfig, SnowflakeGenerator};
use tokio::sync::{watch, Mutex};

use super::take::{Holding, Settings};
use super::{duration_ms, LeaseConfig};
use crate::ids::id128::Id128Settings;

#[cfg(test)]
#[path = "renewal_tests.rs"]
mod renewal_tests;

/// The first pause before a failed renewal is tried again; it doubles (jittered) up to
/// [`RENEW_RETRY_MOST`] or `renew_every`, whichever is shorter.
const RENEW_RETRY_FIRST: Duration = Duration::from_millis(100);

/// The longest pause between two tries of a failed renewal: however long the store was away,
/// the node renews within this of its return (a try costs the store one failed call).
const RENEW_RETRY_MOST: Duration = Duration::from_millis(500);

/// Of the failed tries of a renewal in a row, the first and then one in this many are logged
/// (with the count): about one line every 10 s while the store stays away.
const RENEW_FAILURES_LOGGED: u64 = 20;

/// Keeps this node's worker lease and its generator.
#[derive(Debug)]
pub struct LeaseKeeper {
    settings: Settings,
    current: ArcSwap<Holding>,
    held: AtomicBool,
    /// Monotonic time since the keeper started, for [`is_held`](Self::is_held): the wall clock
    /// may step, a lease's age must not.
    started: Stopwatch,
    /// `started`'s reading just before the store last confirmed the lease (acquire or
    /// renew), in ms: the store's expiry is at least `ttl` after it.
    confirmed_ms: AtomicU64,
    stop: watch::Sender<bool>,
    /// Held across every store write of the lease (renew, re-acquire, release), so a renewal
    /// in flight can never land after the release and bring the lease back to life.
    writing: Mutex<()>,
    /// Why the keeper gave up for good (the namespace's ID space changed under it), if it did.
    retired: OnceLock<Error>,
}

impl LeaseKeeper {
    /// Acquires a worker ID, confirms a first HWM and builds the generator. Fails when the
    /// store refuses (store down, a static ID outside the layout), and when no worker ID is
    /// free or the static one is held by another node after waiting `worker_wait` for a lease to
    /// expire.
    pub async fn start(
        store: Arc<dyn WorkerLeases>,
        layout: Layout,
        datacenter: u64,
        clock: Arc<dyn Clock>,
        config: LeaseConfig,
        snowflake: SnowflakeConfig,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        let id128 = Id128Settings::new(
            config.id128_node,
            &layout,
            datacenter,
            Arc::clone(&clock),
            snowflake.max_lead,
        )?;
        let settings = Settings {
            store,
            layout,
            datacenter,
            clock,
            config,
            snowflake,
            id128,
        };
        let started = Stopwatch::start();
        let holding = settings.acquire_at_start().await?;
        Ok(Arc::new(Self {
            settings,
            current: ArcSwap::from_pointee(holding),
            held: AtomicBool::new(true),
            started,
            confirmed_ms: AtomicU64::new(0),
            stop: watch::Sender::new(false),
            writing: Mutex::new(()),
            retired: OnceLock::new(),
        }))
    }

    /// The generator of the current lease, owned: for callers that keep it (metrics, tests).
    /// After a lease loss a new one replaces it.
    pub fn generator(&self) -> Arc<SnowflakeGenerator> {
        Arc::clone(&self.current.load().generator)
    }

    /// The current holding, borrowed without touching its reference count: the per-request
    /// path, where cloning the `Arc` would make every thread write one shared counter twice.
    /// Do not keep the guard across an `.await`.
    pub fn holding(&self) -> arc_swap::Guard<Arc<Holding>> {
        self.current.load()
    }

    /// Why this node can never hold a worker lease again until restarted (the namespace's ID
    /// space changed while it ran), if so: `/readyz` reports it.
    pub fn retired(&self) -> Option<&Error> {
        self.retired.get()
    }

    /// This node's name, as its leases record it.
    pub fn node_name(&self) -> &str {
        &self.settings.config.node_name
    }

    /// The current lease.
    pub fn lease(&self) -> Lease {
        self.current.load().lease.clone()
    }

    /// True while the store confirms our lease: false after a loss until re-acquired, after
    /// release, and once `ttl` passed since the last confirmation (the store cannot be reached,
    /// or this process was frozen: another node may hold the worker ID by now).
    pub fn is_held(&self) -> bool {
        let since_ms = self
            .age_ms()
            .saturating_sub(self.confirmed_ms.load(Ordering::SeqCst));
        self.held.load(Ordering::SeqCst) && since_ms < duration_ms(self.settings.config.ttl)
    }

    /// Monotonic ms since the keeper started.
    fn age_ms(&self) -> u64 {
        duration_ms(self.started.elapsed())
    }

    /// The renewal loop: runs until [`release`](Self::release). Spawn it once.
    ///
    /// Renewals come every `renew_every`, except after a failed one, retried after a short
    /// jittered back-off (from [`RENEW_RETRY_FIRST`] up to [`RENEW_RETRY_MOST`]), and after one that
    /// took longer than `renew_every`, done again at once: its target was set when it began,
    /// so the HWM it confirmed may already be behind the clock (a renewal that waited out a
    /// locked or restarting store). Either way the node serves snowflakes again within moments
    /// of the store's return, not a renewal period later.
    pub async fn run(self: Arc<Self>) {
        let mut stop = self.stop.subscribe();
        let renew_every = self.settings.config.renew_every;
        let retry_most = renew_every.min(RENEW_RETRY_MOST);
        let mut retry = Backoff::new(RENEW_RETRY_FIRST, retry_most);
        let mut pause = renew_every;
        let mut failed_tries: u64 = 0;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
            if *stop.borrow() {
                return;
            }
            pause = renew_every;
            let renewing = Stopwatch::start();
            match self.renew().await {
                Ok(()) => {
                    self.held.store(true, Ordering::SeqCst);
                    retry = Backoff::new(RENEW_RETRY_FIRST, retry_most);
                    failed_tries = 0;
                    if renewing.elapsed() >= renew_every {
                        pause = Duration::ZERO;
                    }
                }
                Err(Error::LeaseLost { worker_id }) => {
                    self.held.store(false, Ordering::SeqCst);
                    tracing::warn!(worker_id, "worker lease lost: acquiring a worker ID again");
                    self.reacquire(&mut stop).await;
                    if self.retired().is_some() {
                        return;
                    }
                }
                Err(error @ Error::StoreUnavailable { .. }) if self.may_move() => {
                    // A store set: another store leases other worker IDs, so the node need
                    // not wait for this one (the generator keeps issuing meanwhile, up to the
                    // HWM confirmed last time).
                    tracing::warn!(error = %error.with_causes(), worker_id = self.lease().worker_id, "renewing the worker lease failed: taking a lease from another store of the set");
                    self.move_lease().await;
                }
                Err(error) => {
                    // The generator keeps issuing up to the HWM confirmed last time.
                    pause = retry.next_pause();
                    failed_tries += 1;
                    // Tries come every 0.5 s at most while the store is away: the first
                    // failure of a run is logged, then one in RENEW_FAILURES_LOGGED, counted.
                    if failed_tries % RENEW_FAILURES_LOGGED == 1 {
                        tracing::warn!(error = %error.with_causes(), failed_tries, retry_in = ?pause, "renewing the worker lease failed; retrying");
                    }
                }
            }
        }
    }

    /// Stops renewing, closes the generator and frees the worker ID with the highest tick
    /// issued as its final HWM, so the next holder starts right above it. Idempotent.
    pub async fn release(&self) -> Result<()> {
        let _writing = self.writing.lock().await;
        if self.stop.send_replace(true) {
            return Ok(());
        }
        self.held.store(false, Ordering::SeqCst);
        let holding = self.current.load_full();
        let issued = holding.generator.close();
        if self.retired().is_some() {
            // The lease was fenced off by the ID-space change: there is nothing left to free.
            return Ok(());
        }
        let final_hwm_ms = self.settings.layout.tick_start_ms(issued);
        self.settings
            .store
            .release(&holding.lease, final_hwm_ms)
            .await
    }

    /// Raises the stored HWM ahead of the clock (and of what was issued), then the generator's
    /// gate to what the store confirmed.
    async fn renew(&self) -> Result<()> {
        let _writing = self.writing.lock().await;
        if *self.stop.borrow() {
            return Ok(());
        }
        let asked_ms = self.age_ms();
        let holding = self.current.load_full();
        let issued_ms = self
            .settings
            .layout
            .tick_start_ms(holding.generator.issued_tick());
        let target = self
            .settings
            .clock
            .now_ms()
            .max(issued_ms)
            .saturating_add(duration_ms(self.settings.config.hwm_lead));
        let renewal = self
            .settings
            .store
            .renew(&holding.lease, target, self.settings.config.ttl)
            .await?;
        if let Some(tick) = self.settings.layout.tick_at(renewal.hwm_ms) {
            holding.generator.raise_granted_tick(tick);
        }
        self.confirmed_ms.store(asked_ms, Ordering::SeqCst);
        Ok(())
    }

    /// Whether a failed renewal may move the node to another store's worker ID: a store set,
    /// and a worker ID the node chose (a static one belongs to one store).
    fn may_move(&self) -> bool {
        self.settings.store.stores() > 1 && self.settings.config.worker_id.is_none()
    }

    /// Takes a lease from another store of the set and swaps its generator in, starting above
    /// the last tick issued on the old worker ID. The old lease is left to expire in its store
    /// (which does not answer); its worker ID is never used again by this node meanwhile, and
    /// the worker IDs of two stores never meet. When no other store grants one, the node keeps
    /// its lease and retries at the next renewal.
    async fn move_lease(&self) {
        let _writing = self.writing.lock().await;
        if *self.stop.borrow() {
            return;
        }
        let old = self.current.load_full();
        let asked_ms = self.age_ms();
        match self.settings.acquire(Some(&old)).await {
            Ok(holding) => {
                tracing::warn!(
                    from_worker_id = old.lease.worker_id,
                    to_worker_id = holding.lease.worker_id,
                    "moved to another store of the set"
                );
                metrics::counter!(crate::telemetry::LEASE_MOVES).increment(1);
                self.confirmed_ms.store(asked_ms, Ordering::SeqCst);
                self.current.store(Arc::new(holding));
                self.held.store(true, Ordering::SeqCst);
            }
            Err(error) => {
                tracing::warn!(error = %error.with_causes(), "no other store of the set granted a lease; retrying at the next renewal")
            }
        }
    }

    /// Acquires again after a loss, with a jittered back-off (nodes that lost their leases in
    /// one outage do not retry together), until it works or the keeper stops.
    async fn reacquire(&self, stop: &mut watch::Receiver<bool>) {
        let mut backoff =
            Backoff::new(Duration::from_millis(100), self.settings.config.renew_every);
        loop {
            {
                let _writing = self.writing.lock().await;
                if *self.stop.borrow() {
                    return;
                }
                let asked_ms = self.age_ms();
                let previous = self.current.load_full();
                match self.settings.acquire(Some(&previous)).await {
                    Ok(holding) => {
                        self.confirmed_ms.store(asked_ms, Ordering::SeqCst);
                        self.current.store(Arc::new(holding));
                        self.held.store(true, Ordering::SeqCst);
                        return;
                    }
                    // The namespace moved to another ID space: no retry can succeed, and this
                    // node must not issue under the old one. It stays up (not ready) for its
                    // operator to restart it with the new settings.
                    Err(error @ Error::IdSpaceChanged { .. }) => {
                        tracing::error!(error = %error.with_causes(), "this node issues no more snowflakes");
                        let _ = self.retired.set(error);
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(error = %error.with_causes(), "acquiring a worker ID failed; retrying")
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff.next_pause()) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
        }
    }
}
