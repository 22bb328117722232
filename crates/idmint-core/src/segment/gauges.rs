//! Read-only figures for metrics and health checks: IDs buffered, rate, outage budget, step.
//!
//! They take the buffer's mutex (never the hot path's concern) and are consistent enough for
//! a gauge: a claim racing with the read may or may not be counted.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::control::Control;
use super::state_word::Claim;
use super::SegmentBuffer;

/// A metrics read samples the rate itself when the last sample is at least this old, so an
/// idle tag's rate (and so its outage budget) follows reality without any traffic.
const REFRESH_AFTER_MS: u64 = 1_000;

/// What a buffer holds, for an operator's page: the current range, the next if loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holdings {
    /// The range being handed out, as the store allocated it (empty before the first).
    pub current: std::ops::Range<u64>,
    /// The next range, when it is loaded (`None`: not fetched yet, or fetching).
    pub next: Option<std::ops::Range<u64>>,
}

impl SegmentBuffer {
    /// The ranges held now; both empty after shutdown.
    pub fn holdings(&self) -> Holdings {
        let control = self.control();
        if control.closed {
            return Holdings {
                current: 0..0,
                next: None,
            };
        }
        Holdings {
            current: control.current.allocated.clone(),
            next: control.next.as_ref().map(|n| n.allocated.clone()),
        }
    }

    /// IDs left in the current segment plus the loaded next one; 0 after shutdown.
    pub(super) fn buffered(&self, control: &Control) -> u64 {
        if control.closed {
            return 0;
        }
        let claim = Claim::unpack(self.state.0.load(Ordering::Acquire));
        let current = if claim.gen == control.gen {
            control.current.len.saturating_sub(claim.offset)
        } else {
            0
        };
        let next = control.next.as_ref().map_or(0, |next| next.len);
        current.saturating_add(next)
    }

    /// The tag's counter on this node, as Redis' `GET` shows a counter after `INCR`: the last
    /// ID handed out of the current segment, or the one before its first while none has been
    /// (so the next ID this node hands out is larger). `None` before the first range is loaded
    /// and after shutdown. A read: it takes no ID and calls no store.
    pub fn counter(&self) -> Option<u64> {
        let control = self.control();
        if control.closed || control.current.len == 0 {
            return None;
        }
        let claim = Claim::unpack(self.state.0.load(Ordering::Acquire));
        let range = &control.current;
        let used = if claim.gen == control.gen {
            claim.offset.min(range.len)
        } else {
            0
        };
        // `start` is at least 1 (an ID is never 0).
        Some(range.start.saturating_add(used).saturating_sub(1))
    }

    /// The averaged rate, sampled now if the last sample is old.
    pub(super) fn refreshed_rate(&self, control: &mut Control) -> Option<f64> {
        let now = self.clock.now_ms();
        let stale = control
            .rate
            .mark_ms()
            .is_some_and(|mark| now.saturating_sub(mark) >= REFRESH_AFTER_MS);
        if stale {
            let claim = Claim::unpack(self.state.0.load(Ordering::Acquire));
            if claim.gen == control.gen {
                let consumed = control.consumed_at(claim.offset);
                control.rate.observe(consumed, now);
            }
        }
        control.rate.rate()
    }

    /// See [`SegmentBuffer::outage_budget`](super::SegmentBuffer::outage_budget).
    pub(super) fn budget(&self) -> Option<Duration> {
        let mut control = self.control();
        let rate = self.refreshed_rate(&mut control)?;
        if rate <= 0.0 || !rate.is_finite() {
            return None;
        }
        let buffered = self.buffered(&control) as f64;
        Some(Duration::try_from_secs_f64(buffered / rate).unwrap_or(Duration::MAX))
    }
}
