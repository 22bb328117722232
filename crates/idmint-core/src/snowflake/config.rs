//! How a generator is tuned, and where it may start and stop in time.

use std::time::Duration;

use crate::layout::Layout;

/// Tuning of a [`SnowflakeGenerator`](super::SnowflakeGenerator).
///
/// Built from [`Default`] and the `with_` methods (`SnowflakeConfig::default()
/// .with_max_lead(Duration::from_secs(5))`), or by setting the fields of a default one: fields
/// may be added in later versions, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnowflakeConfig {
    /// How far ahead of the clock the generator may run when a tick's sequence is used up (or
    /// when it restarted above a high-water mark in the future). Borrowing keeps bursts from
    /// waiting; the bound keeps the time inside IDs honest. Default 1 s.
    pub max_lead: Duration,
    /// The longest a call waits (for the clock to catch up, or for the store to raise the
    /// high-water mark) before it fails with a typed error. Default 1 s.
    pub max_wait: Duration,
    /// Bits of the sequence to start each new tick at a pseudo-random offset, so the low
    /// digits of IDs spread evenly for `id % N` sharding even at one ID per tick. 0 (the
    /// default) starts every tick at 0; at most `seq_bits - 1`, so half a tick's capacity
    /// always remains.
    pub spread_bits: u32,
}

impl Default for SnowflakeConfig {
    fn default() -> Self {
        Self {
            max_lead: Duration::from_secs(1),
            max_wait: Duration::from_secs(1),
            spread_bits: 0,
        }
    }
}

impl SnowflakeConfig {
    /// With `max_lead`: how far ahead of the clock the generator may run.
    pub fn with_max_lead(mut self, max_lead: Duration) -> Self {
        self.max_lead = max_lead;
        self
    }

    /// With `max_wait`: the longest a call waits before it fails.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// With `spread_bits`: the bits of the sequence each tick starts at a pseudo-random offset.
    pub fn with_spread_bits(mut self, spread_bits: u32) -> Self {
        self.spread_bits = spread_bits;
        self
    }
}

/// The bounds a worker lease puts on a generator (docs/ARCHITECTURE.md, "Uniqueness", 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The highest tick any earlier holder of the worker ID may have used; the generator starts
    /// strictly above it. `None` when there was no earlier holder.
    pub after_tick: Option<u64>,
    /// The highest tick the store has confirmed for this holder: no ID is issued above it until
    /// [`SnowflakeGenerator::raise_granted_tick`](super::SnowflakeGenerator::raise_granted_tick).
    pub granted_tick: u64,
}

impl Fence {
    /// No store, no fence: a single process with a fixed worker ID, which is then the caller's
    /// responsibility to keep unique. Restarts are only safe if the clock moved forward.
    pub fn unfenced() -> Self {
        Self {
            after_tick: None,
            granted_tick: u64::MAX,
        }
    }

    /// The fence of a lease whose stored HWM is `stored_hwm_ms` and whose confirmed HWM is
    /// `granted_hwm_ms` (both ms since the Unix epoch, tick starts).
    pub fn from_hwm_ms(layout: &Layout, stored_hwm_ms: u64, granted_hwm_ms: u64) -> Self {
        Self {
            after_tick: layout.tick_at(stored_hwm_ms),
            granted_tick: layout.tick_at(granted_hwm_ms).unwrap_or(0),
        }
    }
}
