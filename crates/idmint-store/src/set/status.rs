//! How each store of a set is doing: probed at once, each within a bound, for `/readyz` and
//! the `idmint_store_up` metric.

use std::sync::Arc;
use std::time::Duration;

use idmint_core::clock::Stopwatch;
use tokio::task::JoinSet;

use super::members::Members;

/// The stores of an open set, for health checks.
#[derive(Debug)]
pub struct SetStatus {
    pub(super) members: Arc<Members>,
}

/// One store's state at a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreState {
    /// Its place in the `--store` list.
    pub index: usize,
    /// Its URL, password hidden.
    pub url: String,
    /// Whether it is this node's home store (asked first).
    pub home: bool,
    /// Whether it answered the probe in time.
    pub up: bool,
    /// The probe's round trip in ms, when it answered.
    pub latency_ms: Option<u64>,
    /// Why it is down: not open yet, an error, or no answer in time.
    pub error: Option<String>,
}

impl SetStatus {
    /// How many stores the set has.
    pub fn len(&self) -> usize {
        self.members.list.len()
    }

    /// Always false: a set has at least two stores.
    pub fn is_empty(&self) -> bool {
        self.members.list.is_empty()
    }

    /// Asks every store for its clock at once, each within `timeout`. A store that is not
    /// open yet is reported down (and an open is started in the background).
    pub async fn probe(&self, timeout: Duration) -> Vec<StoreState> {
        let mut probes = JoinSet::new();
        let mut states: Vec<StoreState> = self
            .members
            .list
            .iter()
            .map(|member| StoreState {
                index: member.index,
                url: member.display.clone(),
                home: member.index == self.members.home(),
                up: false,
                latency_ms: None,
                error: Some("not open yet".into()),
            })
            .collect();
        for member in &self.members.list {
            let Some(store) = self.members.store_now(member) else {
                continue;
            };
            let index = member.index;
            probes.spawn(async move {
                let stopwatch = Stopwatch::start();
                let answer = tokio::time::timeout(timeout, store.leases.clock_ms()).await;
                (index, answer.map(|r| r.map(|_| stopwatch.elapsed())))
            });
        }
        while let Some(Ok((index, answer))) = probes.join_next().await {
            let state = &mut states[index];
            match answer {
                Ok(Ok(latency)) => {
                    state.up = true;
                    state.latency_ms = Some(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX));
                    state.error = None;
                }
                Ok(Err(error)) => state.error = Some(error.to_string()),
                Err(_) => {
                    state.error = Some(format!("no answer within {} ms", timeout.as_millis()))
                }
            }
        }
        states
    }
}
