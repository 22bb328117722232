//! The bounded wait of a caller whose buffers are empty.
//!
//! One [`Waiter`] serves one call (`next`, `next_many`, `take_contiguous`, `warm_up`): its
//! deadline is `max_wait` after the call first had to wait, whatever the number of segments it
//! went through, so every call ends within about `max_wait` of its first wait. The deadline is
//! measured with tokio's clock (the bounded wait is tokio's `timeout_at`), which tests pause and
//! advance; the fast path never reads any clock.

use std::time::Duration;

use tokio::time::Instant;

use super::advance::Advance;
use super::SegmentBuffer;
use crate::error::{Error, Result};

/// The waiting state of one call.
#[derive(Debug)]
pub(crate) struct Waiter<'a> {
    buffer: &'a SegmentBuffer,
    /// When the call first waited.
    started: Option<Instant>,
    /// The fetch this call waits on.
    waiting_on: Option<u64>,
    /// The run length the call needs (sizes the next fetch).
    pub(crate) wanted: u64,
}

impl<'a> Waiter<'a> {
    /// A call on `buffer` that needs runs of `wanted` IDs.
    pub(crate) fn new(buffer: &'a SegmentBuffer, wanted: u64) -> Self {
        Self {
            buffer,
            started: None,
            waiting_on: None,
            wanted,
        }
    }

    /// Handles a failed claim of generation `gen`: returns when the caller should claim again,
    /// or with the error that ends the call.
    pub(crate) async fn advance(&mut self, gen: u32) -> Result<()> {
        let (mut events, fetch) = match self.buffer.advance(gen, self.waiting_on, self.wanted) {
            Advance::Retry => return Ok(()),
            Advance::Closed => return Err(self.buffer.closed_error()),
            Advance::Failed(error) => return Err(error),
            Advance::Wait { events, fetch } => (events, fetch),
        };
        self.waiting_on = Some(fetch);
        let started = *self.started.get_or_insert_with(Instant::now);
        let deadline = started + self.buffer.config.max_wait;
        if Instant::now() >= deadline {
            return Err(self.buffer.unavailable(started.elapsed()));
        }
        match tokio::time::timeout_at(deadline, events.changed()).await {
            // A change (or a sender gone, which cannot happen while `self.buffer` lives):
            // look again.
            Ok(_) => Ok(()),
            Err(_) => Err(self.buffer.unavailable(started.elapsed())),
        }
    }
}

impl SegmentBuffer {
    /// The error of a call that waited `waited` in vain.
    pub(super) fn unavailable(&self, waited: Duration) -> Error {
        let cause = self.control().fetch.last_error.as_ref().map_or_else(
            || "timed out waiting for the store".to_owned(),
            Error::to_string,
        );
        Error::SegmentUnavailable {
            tag: self.tag.to_string(),
            waited,
            cause,
        }
    }

    /// The error of a call the tag's end cannot serve: its last range is used up (or holds
    /// fewer IDs than a run that must be served whole).
    pub(super) fn exhausted(&self) -> Error {
        Error::TagExhausted {
            tag: self.tag.to_string(),
        }
    }

    /// The error of a call on a buffer that was shut down.
    pub(super) fn closed_error(&self) -> Error {
        Error::SegmentUnavailable {
            tag: self.tag.to_string(),
            waited: Duration::ZERO,
            cause: "the segment buffer was shut down".to_owned(),
        }
    }
}
