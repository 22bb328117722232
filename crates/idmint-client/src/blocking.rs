//! The client for programs without a tokio runtime: it brings one thread of its own for the
//! background refills and blocks the caller only when no ID is in memory.

use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::client::{Client, TagIds};
use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::stats::ClientStats;

/// A [`Client`] with blocking methods. Thread safe; share it (or clone its handles) across
/// threads. Its methods must not be called from inside an async task (they block the thread).
/// Dropping it gives unused IDs back, waiting at most `max_wait` (drop it outside async code
/// too).
pub struct BlockingClient {
    client: Client,
    /// Taken only in `drop`.
    runtime: Option<Runtime>,
    handle: tokio::runtime::Handle,
    max_wait: Duration,
}

/// One tag's IDs, blocking: see [`TagIds`].
#[derive(Clone, Debug)]
pub struct BlockingTagIds {
    ids: TagIds,
    runtime: tokio::runtime::Handle,
}

impl BlockingTagIds {
    /// The next ID of the tag, from memory nearly always.
    #[inline]
    pub fn next(&self) -> Result<u64> {
        match self.ids.try_next() {
            Some(id) => Ok(id),
            None => self.runtime.block_on(self.ids.next_slow()),
        }
    }
}

impl BlockingClient {
    /// A client of `config.nodes` with its own runtime thread. Opens no connection yet.
    pub fn new(config: ClientConfig) -> Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("idmint-client")
            .enable_all()
            .build()
            .map_err(|source| Error::Runtime { source })?;
        let max_wait = config.max_wait;
        let handle = runtime.handle().clone();
        let client = Client::on(config, handle.clone())?;
        Ok(Self {
            client,
            runtime: Some(runtime),
            handle,
            max_wait,
        })
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }

    /// The next segment ID of `tag`; see [`Client::next`].
    pub fn next(&self, tag: &str) -> Result<u64> {
        if let Some(id) = self.client.try_next(tag) {
            return Ok(id);
        }
        let ids = self.client.tag(tag)?;
        self.block_on(ids.next_slow())
    }

    /// A handle on `tag` for drawing many IDs.
    pub fn tag(&self, tag: &str) -> Result<BlockingTagIds> {
        Ok(BlockingTagIds {
            ids: self.client.tag(tag)?,
            runtime: self.handle.clone(),
        })
    }

    /// One snowflake; see [`Client::snowflake`].
    pub fn snowflake(&self) -> Result<u64> {
        self.block_on(self.client.snowflake())
    }

    /// `n` snowflakes, increasing; see [`Client::snowflakes`].
    pub fn snowflakes(&self, n: usize) -> Result<Vec<u64>> {
        self.block_on(self.client.snowflakes(n))
    }

    /// A UUIDv7 made here; see [`Client::uuid7`].
    pub fn uuid7(&self) -> Result<idmint_core::Id128> {
        self.client.uuid7()
    }

    /// A ULID made here; see [`Client::ulid`].
    pub fn ulid(&self) -> Result<idmint_core::Id128> {
        self.client.ulid()
    }

    /// The client's counters.
    pub fn stats(&self) -> ClientStats {
        self.client.stats()
    }

    /// Gives unused IDs back and stops; see [`Client::close`].
    pub fn close(&self) -> usize {
        let wait = self.max_wait;
        self.block_on(async {
            tokio::time::timeout(wait, self.client.close())
                .await
                .unwrap_or(0)
        })
    }
}

impl Drop for BlockingClient {
    /// Gives unused IDs back (at most `max_wait`); the runtime stops after. Dropped inside
    /// async code, where it must not block, it gives nothing back and lets its runtime go
    /// without waiting.
    fn drop(&mut self) {
        if tokio::runtime::Handle::try_current().is_ok() {
            if let Some(runtime) = self.runtime.take() {
                runtime.shutdown_background();
            }
            return;
        }
        self.close();
    }
}
