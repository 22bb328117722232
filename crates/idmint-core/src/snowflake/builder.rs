//! Building a [`SnowflakeGenerator`]: named settings with defaults for the common case, so a
//! caller cannot swap the datacenter and the worker ID (two adjacent `u64`s) unnoticed.

use std::sync::Arc;

use super::{Fence, SnowflakeConfig, SnowflakeGenerator};
use crate::clock::{Clock, SystemClock};
use crate::error::Result;
use crate::layout::Layout;

/// Settings of a [`SnowflakeGenerator`] under construction; see
/// [`SnowflakeGenerator::builder`].
///
/// Defaults: datacenter 0, worker 0, the system clock, [`SnowflakeConfig::default`], and no
/// fence ([`Fence::unfenced`]): then keeping the worker ID unique across processes, and
/// restarting only after the clock has moved past the last ID, are the caller's job. A store
/// lease (idmint-store, or `idmint serve`) does both.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SnowflakeBuilder {
    layout: Layout,
    datacenter: u64,
    worker: u64,
    clock: Option<Arc<dyn Clock>>,
    config: SnowflakeConfig,
    fence: Fence,
}

impl SnowflakeBuilder {
    pub(super) fn new(layout: Layout) -> Self {
        Self {
            layout,
            datacenter: 0,
            worker: 0,
            clock: None,
            config: SnowflakeConfig::default(),
            fence: Fence::unfenced(),
        }
    }

    /// The datacenter placed in every ID (layouts with a `dc` field). Default 0.
    pub fn datacenter(mut self, datacenter: u64) -> Self {
        self.datacenter = datacenter;
        self
    }

    /// The worker ID placed in every ID (layouts with a `worker` field). Default 0.
    pub fn worker(mut self, worker: u64) -> Self {
        self.worker = worker;
        self
    }

    /// The time source. Default: a new [`SystemClock`]; tests pass a
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Borrowing, waiting and spreading. Default [`SnowflakeConfig::default`].
    pub fn config(mut self, config: SnowflakeConfig) -> Self {
        self.config = config;
        self
    }

    /// The bounds of the worker lease this generator issues under. Default
    /// [`Fence::unfenced`].
    pub fn fence(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }

    /// The generator, starting strictly above the fence and at or after the clock's tick.
    ///
    /// Fails when the worker or datacenter does not fit the layout, the spread is as wide as
    /// the sequence, the epoch is in the future, or the layout has already run out.
    pub fn build(self) -> Result<SnowflakeGenerator> {
        let clock = match self.clock {
            Some(clock) => clock,
            None => Arc::new(SystemClock::new()),
        };
        SnowflakeGenerator::from_parts(
            self.layout,
            self.datacenter,
            self.worker,
            clock,
            &self.config,
            self.fence,
        )
    }
}
