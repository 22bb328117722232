//! The worker lease of this node, and the snowflake generator it fences.
//!
//! The invariant (docs/ARCHITECTURE.md, "Uniqueness", 1): a node issues only ticks at or below the HWM the
//! store confirmed for its lease token, and a new holder starts strictly above the stored HWM.
//! So the keeper:
//! - on acquire, confirms an HWM ahead of its start point *before* building the generator, which
//!   starts above the previous holder's HWM and may never pass the confirmed one;
//! - every `renew_every`, raises the stored HWM to `now + hwm_lead` (conditional on the token)
//!   and only then raises the generator's gate;
//! - when the store says the lease is lost, stops raising (the old generator halts at its gate,
//!   so callers still holding it stay safe), acquires again (maybe another worker ID) and swaps
//!   in a new generator fenced above that ID's HWM;
//! - on release, writes the highest tick issued and frees the worker ID.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use idmint_core::clock::Stopwatch;
use idmint_core::layout::format_ms_rfc3339;
use idmint_core::snowflake::Fence;
use idmint_core::store::{Lease, LeaseInfo, LeaseRequest, WorkerLeases};
use idmint_core::{Backoff, Clock, Error, Layout, Result, SnowflakeConfig, SnowflakeGenerator};
use tokio::sync::{watch, Mutex};

/// What a node does when the worker ID it was given has a high-water mark further ahead of its
/// clock than `max_lead` (docs/ARCHITECTURE.md, "Clock model"): typically a restart after the clock
/// stepped back, where the previous run issued IDs up to a time this clock has not reached.
/// Uniqueness holds under every policy (the generator starts above the HWM); they differ in
/// what is given up while the clock is behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockPolicy {
    /// Keep the worker ID; snowflake calls fail fast with `clock_behind` (and `/readyz` says
    /// so) until the clock passes the HWM. Segment IDs are served meanwhile.
    Wait,
    /// Take another worker ID whose HWM is below the clock, so snowflakes flow at once; IDs of
    /// the new worker sort below those the old one issued ahead of the clock. Falls back to
    /// `wait` (on the worker with the lowest HWM seen) when none is found after a few tries or
    /// with a static `--worker-id`. The default.
    #[default]
    Switch,
    /// Refuse: the node does not start (and a re-acquire after a lease loss keeps retrying),
    /// for operators who would rather be paged than run on a clock that went back.
    Fail,
}

impl ClockPolicy {
    /// The policy's name as in the settings.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockPolicy::Wait => "wait",
            ClockPolicy::Switch => "switch",
            ClockPolicy::Fail => "fail",
        }
    }
}

impl std::str::FromStr for ClockPolicy {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "wait" => Ok(ClockPolicy::Wait),
            "switch" => Ok(ClockPolicy::Switch),
            "fail" => Ok(ClockPolicy::Fail),
            other => Err(format!("`{other}` is not one of wait, switch, fail")),
        }
    }
}

/// How many other worker IDs the `switch` policy tries before it settles for waiting.
const SWITCH_TRIES: usize = 8;

/// How this node holds its worker ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// This node's stable name: it gets its previous worker ID back after a restart.
    pub node_name: String,
    /// A static worker ID (`--worker-id N`), or `None` for `auto`.
    pub worker_id: Option<u64>,
    /// How long the lease lasts unless renewed: how soon another node may take the worker ID
    /// of a node that died. Default 10 s.
    pub ttl: Duration,
    /// How often the lease is renewed and the HWM raised (a failed renewal is retried sooner,
    /// see [`LeaseKeeper::run`]). Default 2 s.
    pub renew_every: Duration,
    /// How far ahead of the clock the HWM is raised: how long snowflakes keep flowing while
    /// the store is down. Must exceed `renew_every`. Default 10 s.
    pub hwm_lead: Duration,
    /// What to do with a worker ID whose HWM is ahead of the clock. Default `switch`.
    pub clock_policy: ClockPolicy,
    /// The version of the namespace's ID space this node mints in: the store grants leases
    /// only under the space in force (see `idmint_core::id_space`). `None` skips the check.
    pub id_space: Option<u64>,
    /// No tick starting before this moment (ms since the Unix epoch) is issued: the moment
    /// the ID space came into force, below which the values of the previous space lie.
    pub issues_from_ms: u64,
    /// How long [`LeaseKeeper::start`] waits for a worker lease to expire when every worker ID
    /// (or the static one) is held by a live lease, before it fails. A node restarted right
    /// after it was killed (by a supervisor, say) finds the dead node's lease live for up to
    /// `ttl`: failing at once would make the restart fail too. Zero fails at once. Default
    /// 10 s, the default `ttl`: the longest a dead node's lease outlives it.
    pub worker_wait: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        Self {
            node_name: "idmint".into(),
            worker_id: None,
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(2),
            hwm_lead: Duration::from_secs(10),
            clock_policy: ClockPolicy::default(),
            id_space: None,
            issues_from_ms: 0,
            worker_wait: Duration::from_secs(10),
        }
    }
}

impl LeaseConfig {
    /// Refuses settings that would stall the generator in normal running.
    pub fn validate(&self) -> Result<()> {
        let invalid = |reason: &str| Error::InvalidArgument {
            name: "lease",
            reason: reason.into(),
        };
        if self.renew_every.is_zero() || self.renew_every >= self.ttl {
            return Err(invalid("renew_every must be above zero and below ttl"));
        }
        if self.hwm_lead <= self.renew_every {
            return Err(invalid(
                "hwm_lead must exceed renew_every, or IDs stall between renewals",
            ));
        }
        Ok(())
    }
}

/// A held lease and the generator it fences.
#[derive(Debug)]
pub struct Holding {
    /// The lease.
    pub lease: Lease,
    /// The generator for its worker ID.
    pub generator: Arc<SnowflakeGenerator>,
}

/// What the keeper needs to take a lease and build a generator: fixed for its lifetime.
#[derive(Debug)]
struct Settings {
    store: Arc<dyn WorkerLeases>,
    layout: Layout,
    datacenter: u64,
    clock: Arc<dyn Clock>,
    config: LeaseConfig,
    snowflake: SnowflakeConfig,
}

impl Settings {
    /// Takes a lease and builds its generator: the HWM is confirmed ahead of the start point
    /// first, and the generator starts above the previous holder's HWM and above `after_tick`
    /// (the last tick this node issued on its previous worker ID, so that its own IDs keep
    /// increasing when it changes worker ID).
    async fn acquire(&self, after_tick: Option<u64>) -> Result<Holding> {
        let lease = self.acquire_within_policy().await?;
        let start_ms = self.clock.now_ms().max(self.first_ms(&lease));
        let target = start_ms.saturating_add(duration_ms(self.config.hwm_lead));
        let renewal = self.store.renew(&lease, target, self.config.ttl).await?;
        let after_hwm = (lease.hwm_ms > 0)
            .then(|| self.layout.tick_at(lease.hwm_ms))
            .flatten();
        let before_space = self
            .layout
            .tick_at(self.config.issues_from_ms)
            .and_then(|tick| tick.checked_sub(1));
        let fence = Fence {
            after_tick: after_hwm.max(before_space).max(after_tick),
            granted_tick: self.layout.tick_at(renewal.hwm_ms).unwrap_or(0),
        };
        let generator = SnowflakeGenerator::builder(self.layout.clone())
            .datacenter(self.datacenter)
            .worker(lease.worker_id)
            .clock(Arc::clone(&self.clock))
            .config(self.snowflake)
            .fence(fence)
            .build()?;
        tracing::info!(
            worker_id = lease.worker_id,
            previous_hwm_ms = lease.hwm_ms,
            granted_hwm_ms = renewal.hwm_ms,
            "worker lease acquired"
        );
        Ok(Holding {
            lease,
            generator: Arc::new(generator),
        })
    }
}

impl Settings {
    /// The earliest moment `lease` may issue a tick of: above the previous holder's HWM, and
    /// not before the ID space came into force.
    fn first_ms(&self, lease: &Lease) -> u64 {
        let above_hwm = lease.hwm_ms.saturating_add(self.layout.unit().millis());
        above_hwm.max(self.config.issues_from_ms)
    }

    /// How far `lease`'s HWM is ahead of the clock, beyond what `max_lead` lets the generator
    /// borrow: 0 when the generator can start at once.
    fn behind_ms(&self, lease: &Lease) -> u64 {
        let start_ms = self.first_ms(lease);
        let lead_ms = duration_ms(self.snowflake.max_lead);
        start_ms.saturating_sub(self.clock.now_ms().saturating_add(lead_ms))
    }

    /// Takes a worker ID, applying the clock policy when its HWM is ahead of the clock. The
    /// worker IDs tried and refused are held until the choice is made (so the store offers
    /// others) and then released with their HWM unchanged.
    async fn acquire_within_policy(&self) -> Result<Lease> {
        let request = LeaseRequest {
            node_name: self.config.node_name.clone(),
            worker_count: self.layout.worker_count(),
            worker_id: self.config.worker_id,
            ttl: self.config.ttl,
            id_space: self.config.id_space,
            partition: idmint_core::store::Partition::WHOLE,
        };
        let mut refused: Vec<Lease> = Vec::new();
        let chosen = loop {
            let lease = match self.store.acquire(&request).await {
                Ok(lease) => lease,
                // Out of worker IDs (or the store failed) while switching: settle for the best
                // one refused so far, if any.
                Err(error) => match take_lowest_hwm(&mut refused) {
                    Some(best) => break Ok(best),
                    None => break Err(error),
                },
            };
            let behind_ms = self.behind_ms(&lease);
            if behind_ms == 0 {
                break Ok(lease);
            }
            let policy = self.config.clock_policy;
            if self.config.issues_from_ms > lease.hwm_ms.saturating_add(self.layout.unit().millis())
            {
                // Not this worker's HWM but the start of the ID space: every worker ID shares
                // it, so switching cannot help; `switch` waits like `wait`.
                tracing::warn!(
                    worker_id = lease.worker_id,
                    space_starts_at = %format_ms_rfc3339(self.config.issues_from_ms),
                    behind_ms,
                    policy = policy.as_str(),
                    "the clock is behind the start of the namespace's ID space"
                );
                if policy == ClockPolicy::Fail {
                    let worker_id = lease.worker_id;
                    refused.push(lease);
                    break Err(Error::ClockBehindHwm {
                        worker_id,
                        behind_ms,
                    });
                }
                break Ok(lease);
            }
            tracing::warn!(
                worker_id = lease.worker_id,
                hwm_ms = lease.hwm_ms,
                behind_ms,
                policy = policy.as_str(),
                "the clock is behind this worker ID's high-water mark"
            );
            match policy {
                ClockPolicy::Wait => break Ok(lease),
                ClockPolicy::Fail => {
                    let worker_id = lease.worker_id;
                    refused.push(lease);
                    break Err(Error::ClockBehindHwm {
                        worker_id,
                        behind_ms,
                    });
                }
                ClockPolicy::Switch => {
                    refused.push(lease);
                    let tries_left = self.config.worker_id.is_none()
                        && refused.len() <= SWITCH_TRIES
                        && (refused.len() as u64) < request.worker_count;
                    if !tries_left {
                        if let Some(best) = take_lowest_hwm(&mut refused) {
                            tracing::warn!(
                                worker_id = best.worker_id,
                                "no worker ID below the clock found: waiting for the clock"
                            );
                            break Ok(best);
                        }
                    }
                }
            }
        };
        for lease in refused {
            // Unchanged HWM: nothing was issued under these tokens.
            if let Err(error) = self.store.release(&lease, lease.hwm_ms).await {
                tracing::warn!(worker_id = lease.worker_id, error = %error.with_causes(), "releasing a refused worker ID failed; it expires by itself");
            }
        }
        chosen
    }
}

/// How far past a lease's expiry (by this node's clock) the next try waits: the store's clock
/// decides when the lease expired, and it may be a little behind ours.
const PAST_EXPIRY: Duration = Duration::from_millis(50);

/// The shortest pause between two tries while waiting for a worker ID: when the clocks disagree
/// more than [`PAST_EXPIRY`], a lease already expired by ours is still live for the store, and
/// the tries must not spin.
const WORKER_RETRY_MIN: Duration = Duration::from_millis(100);

/// The pause between two tries when no live lease to wait for was found (the store could not
/// list them, or they changed between the refusal and the listing).
const WORKER_RETRY_BLIND: Duration = Duration::from_millis(500);

impl Settings {
    /// [`acquire`](Self::acquire) for [`LeaseKeeper::start`]: while every worker ID (or the
    /// static one) is held by a live lease, waits until just after the first of those leases
    /// expires and tries again, `worker_wait` at most in all; then fails with the store's last
    /// refusal, how long it waited and the lease it waited for. Any other error ends the wait at
    /// once. Nothing is held while waiting: both refusals come before a lease is taken (the
    /// clock policy only runs on a lease the store handed out).
    async fn acquire_at_start(&self) -> Result<Holding> {
        let waiting = Stopwatch::start();
        loop {
            let refusal = match self.acquire(None).await {
                Err(error @ (Error::NoWorkerFree { .. } | Error::WorkerHeld { .. })) => error,
                other => return other,
            };
            let first = self.first_to_expire(&refusal).await;
            let waited = waiting.elapsed();
            let left = self.config.worker_wait.saturating_sub(waited);
            if left.is_zero() {
                return Err(Error::WorkerWaitRanOut {
                    cause: Box::new(refusal),
                    waited: Duration::from_millis(duration_ms(waited)),
                    first_to_expire: first.as_ref().map(Into::into),
                });
            }
            let pause = match &first {
                Some(lease) => {
                    Duration::from_millis(lease.expires_at_ms.saturating_sub(self.clock.now_ms()))
                        .saturating_add(PAST_EXPIRY)
                }
                None => WORKER_RETRY_BLIND,
            }
            .max(WORKER_RETRY_MIN)
            .min(left);
            match &first {
                Some(lease) => tracing::warn!(
                    %refusal,
                    worker_id = lease.worker_id,
                    holder = %lease.node_name,
                    expires_at = %format_ms_rfc3339(lease.expires_at_ms),
                    retry_in = ?pause,
                    waited = ?waited,
                    worker_wait = ?self.config.worker_wait,
                    "waiting for this worker lease to expire"
                ),
                None => tracing::warn!(
                    %refusal,
                    retry_in = ?pause,
                    waited = ?waited,
                    worker_wait = ?self.config.worker_wait,
                    "waiting for a worker lease to expire"
                ),
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// The live lease that expires first among those `refusal` is about: the static worker ID
    /// of [`Error::WorkerHeld`], else any of the layout's worker IDs. `None` when the store
    /// cannot list them (the wait then retries blind) or none is live any more.
    async fn first_to_expire(&self, refusal: &Error) -> Option<LeaseInfo> {
        let leases = match self.store.list_leases().await {
            Ok(leases) => leases,
            Err(error) => {
                tracing::warn!(error = %error.with_causes(), "listing the worker leases failed");
                return None;
            }
        };
        let worker_count = self.layout.worker_count();
        leases
            .into_iter()
            .filter(|lease| lease.live)
            .filter(|lease| match refusal {
                Error::WorkerHeld { worker_id, .. } => lease.worker_id == *worker_id,
                _ => lease.worker_id < worker_count,
            })
            .min_by_key(|lease| lease.expires_at_ms)
    }
}

#[cfg(test)]
#[path = "worker_wait_tests.rs"]
mod worker_wait_tests;

#[cfg(test)]
#[path = "renewal_tests.rs"]
mod renewal_tests;

/// Removes and returns the lease with the lowest HWM: the one the clock reaches first.
fn take_lowest_hwm(leases: &mut Vec<Lease>) -> Option<Lease> {
    let index = leases
        .iter()
        .enumerate()
        .min_by_key(|(_, lease)| lease.hwm_ms)
        .map(|(index, _)| index)?;
    Some(leases.swap_remove(index))
}

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
        let settings = Settings {
            store,
            layout,
            datacenter,
            clock,
            config,
            snowflake,
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
        match self
            .settings
            .acquire(Some(old.generator.issued_tick()))
            .await
        {
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
                let issued = self.current.load().generator.issued_tick();
                match self.settings.acquire(Some(issued)).await {
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

fn duration_ms(duration: Duration) -> u64 {
    idmint_core::clock::duration_ms(duration)
}
