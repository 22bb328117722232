//! Snowflakes in small batches that never get old.
//!
//! A snowflake carries the time it was made, and its use is to sort by it; a batch kept for
//! long would hand out IDs whose time lies in the past. So what is left of a batch is thrown
//! away unused once it is older than `snowflake_max_age` (counted from when it was asked for),
//! and a call that finds none fresh asks a node for a new one and takes its own share of the
//! answer whatever the round trip took (a node farther away than the bound still serves). Snowflakes one client hands out strictly
//! increase: any ID not above the last one handed out (a batch from another node whose clock
//! or worker ID sorts lower) is skipped.
//!
//! Unless the nodes hand out their IDs permuted (`serve --permutation-key-file`): then no ID
//! sorts by time, and keeping them in order would skip nearly all of them. The client asks
//! once, before its first batch, with `IDMINT.SPACE` (a node too old to know it hands out
//! plain IDs), and hands permuted batches out as they come.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::nodes::{count_limit, Nodes};

/// The most snowflakes one call may ask for: the nodes' default `--max-count`.
pub(crate) const MAX_SNOWFLAKES: usize = 10_000;

/// The batch in hand.
pub(crate) struct Snowflakes {
    batch_size: u64,
    max_age: Duration,
    max_wait: Duration,
    held: Mutex<Held>,
    /// The largest batch the nodes grant (their `--max-count`), once one refused more.
    largest: AtomicU64,
    /// One request for a batch at a time: callers that find the batch empty wait for it.
    asking: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Held {
    ids: VecDeque<u64>,
    asked_at: Option<Instant>,
    last: u64,
    /// Whether the nodes hand out permuted IDs; `None` until asked.
    permuted: Option<bool>,
}

impl Held {
    /// Moves up to `n - out.len()` fresh IDs into `out`.
    fn take(&mut self, n: usize, max_age: Duration, out: &mut Vec<u64>) {
        if self.asked_at.is_none_or(|at| at.elapsed() > max_age) {
            self.ids.clear();
        }
        self.take_own(n, out);
    }

    /// Moves up to `n - out.len()` IDs into `out`, however old: for the call that asked.
    fn take_own(&mut self, n: usize, out: &mut Vec<u64>) {
        while out.len() < n {
            let Some(id) = self.ids.pop_front() else {
                break;
            };
            if self.permuted == Some(true) {
                out.push(id);
            } else if id > self.last {
                self.last = id;
                out.push(id);
            }
        }
    }
}

impl Snowflakes {
    pub(crate) fn new(batch_size: u64, max_age: Duration, max_wait: Duration) -> Self {
        Self {
            batch_size,
            max_age,
            max_wait,
            held: Mutex::new(Held::default()),
            largest: AtomicU64::new(u64::MAX),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `n` snowflakes (`1..=MAX_SNOWFLAKES`), increasing, none from a batch kept past the
    /// bound.
    pub(crate) async fn take(&self, nodes: &Nodes, n: usize) -> Result<Vec<u64>> {
        if !(1..=MAX_SNOWFLAKES).contains(&n) {
            let reason = format!("between 1 and {MAX_SNOWFLAKES} at once, not {n}");
            let source = idmint_core::Error::InvalidArgument { name: "n", reason };
            return Err(Error::Refused { source });
        }
        let started = Instant::now();
        let mut out = Vec::with_capacity(n);
        self.held().take(n, self.max_age, &mut out);
        while out.len() < n {
            let _asking = self.asking.lock().await;
            self.held().take(n, self.max_age, &mut out);
            if out.len() == n {
                break;
            }
            let Some(left) = self.max_wait.checked_sub(started.elapsed()) else {
                return Err(unavailable(started, "no fresh snowflake batch in time"));
            };
            if self.held().permuted.is_none() {
                let permuted = ask_permuted(nodes, left)
                    .await
                    .map_err(|e| Error::from_core(e, started.elapsed()))?;
                self.held().permuted = Some(permuted);
            }
            let largest = self.largest.load(Ordering::Relaxed);
            let want = self.batch_size.max((n - out.len()) as u64).min(largest);
            let mut cmd = redis::cmd("IDMINT.SNOWFLAKE");
            cmd.arg("COUNT").arg(want);
            let asked_at = Instant::now();
            let ids = match nodes.call::<Vec<u64>>(&cmd, left).await {
                Ok((_, ids)) => ids,
                // The nodes' `--max-count` is below the batch: ask for that many from now on,
                // as ranges do, rather than fail every call.
                Err(error) => match count_limit(&error).filter(|&limit| limit < want) {
                    Some(limit) => {
                        self.largest.store(limit, Ordering::Relaxed);
                        continue;
                    }
                    None => return Err(Error::from_core(error, started.elapsed())),
                },
            };
            nodes.stats.snowflake_batch();
            let before = out.len();
            {
                let mut held = self.held();
                held.ids = ids.into();
                held.asked_at = Some(asked_at);
                held.take_own(n, &mut out);
            }
            if out.len() == before {
                // Every ID of the batch sorts below one handed out already (a node whose clock
                // is behind the last one's): let time pass before asking again.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        Ok(out)
    }
}

/// Whether the nodes hand out permuted IDs, from `IDMINT.SPACE`'s `permuted`; false from a
/// node that does not know the command (older than permuted IDs).
async fn ask_permuted(nodes: &Nodes, max_wait: Duration) -> idmint_core::Result<bool> {
    let cmd = redis::cmd("IDMINT.SPACE");
    match nodes
        .call::<HashMap<String, redis::Value>>(&cmd, max_wait)
        .await
    {
        Ok((_, space)) => Ok(matches!(space.get("permuted"), Some(redis::Value::Int(1)))),
        Err(error) if error.to_string().contains("unknown command") => Ok(false),
        Err(error) => Err(error),
    }
}

fn unavailable(started: Instant, why: &str) -> Error {
    Error::Unavailable {
        waited: started.elapsed(),
        source: idmint_core::Error::store_unavailable(why),
    }
}
