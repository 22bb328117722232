//! How a worker lease is taken and its generator built: the clock policy (a worker ID whose
//! HWM is ahead of the clock is kept, switched for another or refused), and the wait at start
//! for a live lease to expire. Apart from the keeper (`keeper.rs`), which only calls
//! [`Settings::acquire`] and [`Settings::acquire_at_start`] and never looks inside them.

use std::sync::Arc;
use std::time::Duration;

use idmint_core::clock::Stopwatch;
use idmint_core::layout::format_ms_rfc3339;
use idmint_core::snowflake::Fence;
use idmint_core::store::{Lease, LeaseInfo, LeaseRequest, WorkerLeases};
use idmint_core::{Clock, Error, Layout, Result, SnowflakeConfig, SnowflakeGenerator};

use super::{duration_ms, ClockPolicy, LeaseConfig};
use crate::ids::id128::{Id128Generators, Id128Settings};

/// How many other worker IDs the `switch` policy tries before it settles for waiting.
const SWITCH_TRIES: usize = 8;

/// A held lease and the generator it fences.
#[derive(Debug)]
pub struct Holding {
    /// The lease.
    pub lease: Lease,
    /// The generator for its worker ID.
    pub generator: Arc<SnowflakeGenerator>,
    /// The 128-bit generators: with a node field, for its worker ID (see `ids::id128`).
    pub id128: Arc<Id128Generators>,
}

/// What the keeper needs to take a lease and build a generator: fixed for its lifetime.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) store: Arc<dyn WorkerLeases>,
    pub(super) layout: Layout,
    pub(super) datacenter: u64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) config: LeaseConfig,
    pub(super) snowflake: SnowflakeConfig,
    pub(super) id128: Id128Settings,
}

impl Settings {
    /// Takes a lease and builds its generator: the HWM is confirmed ahead of the start point
    /// first, and the generator starts above the previous holder's HWM and above the last tick
    /// this node issued on its `previous` lease, if any, so that its own IDs keep increasing
    /// when it changes worker ID. The 128-bit generators of `previous` are kept, or replaced
    /// above them when their node field changes with the worker ID.
    pub(super) async fn acquire(&self, previous: Option<&Holding>) -> Result<Holding> {
        let after_tick = previous.map(|holding| holding.generator.issued_tick());
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
        let id128 = self.id128.generators(
            lease.worker_id,
            self.first_ms(&lease),
            previous.map(|holding| &holding.id128),
        )?;
        tracing::info!(
            worker_id = lease.worker_id,
            previous_hwm_ms = lease.hwm_ms,
            granted_hwm_ms = renewal.hwm_ms,
            "worker lease acquired"
        );
        Ok(Holding {
            lease,
            generator: Arc::new(generator),
            id128,
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
    /// [`acquire`](Self::acquire) for [`LeaseKeeper::start`](super::LeaseKeeper::start): while
    /// every worker ID (or the static one) is held by a live lease, waits until just after the
    /// first of those leases expires and tries again, `worker_wait` at most in all; then fails
    /// with the store's last refusal, how long it waited and the lease it waited for. Any other
    /// error ends the wait at once. Nothing is held while waiting: both refusals come before a
    /// lease is taken (the clock policy only runs on a lease the store handed out).
    pub(super) async fn acquire_at_start(&self) -> Result<Holding> {
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

/// Removes and returns the lease with the lowest HWM: the one the clock reaches first.
fn take_lowest_hwm(leases: &mut Vec<Lease>) -> Option<Lease> {
    let index = leases
        .iter()
        .enumerate()
        .min_by_key(|(_, lease)| lease.hwm_ms)
        .map(|(index, _)| index)?;
    Some(leases.swap_remove(index))
}
