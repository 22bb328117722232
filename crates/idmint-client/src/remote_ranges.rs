//! The nodes as a [`RangeSource`]: what lets the client reuse idmint-core's segment buffer
//! (the same lock-free double buffer a node runs over its store) instead of a second one.
//!
//! Each range is `IDMINT.RANGE tag n ABOVE last`, `last` the end of the previous range this
//! client got for the tag. Nodes each hold their own part of a tag's sequence, so a node the
//! client fails over to may be behind the one it left; `ABOVE` makes it serve IDs above what
//! the client already holds (straight from its store when its own buffer is behind), so the
//! client's IDs keep increasing.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use idmint_core::{Error as CoreError, RangeSource, Tag};

use crate::nodes::{count_limit, Nodes};

/// Ranges from the nodes, per tag.
pub(crate) struct RemoteRanges {
    nodes: Arc<Nodes>,
    max_wait: Duration,
    /// Per tag: the last ID of the last range, and the node that gave it.
    last: Mutex<HashMap<Tag, (u64, usize)>>,
    /// The largest range the nodes grant (their `--max-count`), once one refused more.
    largest: AtomicU64,
}

impl std::fmt::Debug for RemoteRanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRanges").finish_non_exhaustive()
    }
}

impl RemoteRanges {
    pub(crate) fn new(nodes: Arc<Nodes>, max_wait: Duration) -> Self {
        Self {
            nodes,
            max_wait,
            last: Mutex::new(HashMap::new()),
            largest: AtomicU64::new(u64::MAX),
        }
    }

    fn last(&self) -> std::sync::MutexGuard<'_, HashMap<Tag, (u64, usize)>> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl RangeSource for RemoteRanges {
    async fn allocate(&self, tag: &Tag, step: u64) -> idmint_core::Result<Range<u64>> {
        let above = self.last().get(tag).map(|&(id, _)| id);
        let mut step = step.min(self.largest.load(Ordering::Relaxed));
        let (node, (first, last)) = loop {
            let mut cmd = redis::cmd("IDMINT.RANGE");
            cmd.arg(tag.as_str()).arg(step);
            if let Some(above) = above {
                cmd.arg("ABOVE").arg(above);
            }
            match self.nodes.call::<(u64, u64)>(&cmd, self.max_wait).await {
                Ok(answer) => break answer,
                // The nodes' `--max-count` is below the client's `max_step`: ask for less, from
                // now on, rather than fail every refill once the rate grows.
                Err(error) => match count_limit(&error).filter(|&n| n < step) {
                    Some(largest) => {
                        self.largest.store(largest, Ordering::Relaxed);
                        step = largest;
                    }
                    None => return Err(error),
                },
            }
        };
        let floor = above.unwrap_or(0);
        if first > last || first <= floor || last == u64::MAX || last - first >= step {
            // A node that breaks the contract: never hand its IDs out.
            let address = self.nodes.address(node);
            return Err(CoreError::store_invalid(format!(
                "{address} answered IDMINT.RANGE {tag} {step} with {first}..={last}, not a \
                 run of at most {step} above {floor}"
            )));
        }
        self.last().insert(tag.clone(), (last, node));
        self.nodes.stats.range(last - first + 1);
        Ok(first..last + 1)
    }

    async fn give_back(&self, tag: &Tag, unused: Range<u64>) -> idmint_core::Result<bool> {
        let Some(&(last, node)) = self.last().get(tag) else {
            return Ok(false);
        };
        if unused.is_empty() || unused.end != last + 1 {
            return Ok(false);
        }
        let mut cmd = redis::cmd("IDMINT.GIVEBACK");
        cmd.arg(tag.as_str()).arg(unused.start).arg(last);
        let taken: i64 = self.nodes.call_on(node, &cmd).await?;
        if taken == 1 {
            self.nodes.stats.given_back(unused.end - unused.start);
        }
        Ok(taken == 1)
    }
}
