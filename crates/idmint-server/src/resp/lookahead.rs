//! A connection's pending requests, and the loading of a pipeline's new tags at once.
//!
//! A tag's first use costs store writes: its row, then its first range (two disk flushes on
//! SQLite). A client pipelining `INCR` on many new tags would wait for them one after the
//! other, though the store could take them together (SQLite's group commit, a pool of
//! connections elsewhere). So when a command is about to load a tag, the connection decodes
//! the rest of what it has read ([`Pending::decode_rest`]) and loads the new tags of the run
//! of minting commands that follows, [`LOAD_AT_ONCE`] at a time. The commands then run one by
//! one, in order, as before: only the loading moved ahead, and loading issues no ID.
//!
//! Loading ahead creates a tag only where the command itself would: the connection may mint
//! and may use that tag, no transaction is open, and the run stops at the first command that
//! is not `INCR tag`, `INCRBY tag n` or `IDMINT.NEXT tag [options]` with valid arguments, since
//! anything else (`AUTH`, `MULTI`, `QUIT`, `RESET`...) could change what the commands after it
//! may do. Which commands those are is read from the commands' own parses
//! ([`Parsed::loaded_tag`]). A load that fails stops loading ahead until the next read, so a
//! store outage costs no more store calls than the commands make themselves.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::BytesMut;
use idmint_core::Tag;
use idmint_resp::{Command, ProtocolError, RequestDecoder};
use tokio::task::JoinSet;

use super::cmd::{self, Parsed};
use super::session::Session;
use crate::ids::Asker;

/// New tags loaded at the same time by one connection.
const LOAD_AT_ONCE: usize = 32;

/// Most new tags one look ahead loads (what one read holds is bounded anyway).
const MOST_AHEAD: usize = 256;

/// The requests a connection has read: its buffer, and the commands decoded ahead of their
/// turn.
pub(super) struct Pending {
    decoder: RequestDecoder,
    /// Bytes read and not yet decoded.
    pub(super) inbuf: BytesMut,
    /// Commands decoded ahead, in order.
    ahead: VecDeque<Command>,
    /// The protocol error found while decoding ahead, reported after `ahead` has run.
    broken: Option<ProtocolError>,
    /// A load ahead failed since the last read: none until the next one.
    loads_failed: bool,
}

impl Pending {
    pub(super) fn new(decoder: RequestDecoder, inbuf: BytesMut) -> Self {
        Self {
            decoder,
            inbuf,
            ahead: VecDeque::new(),
            broken: None,
            loads_failed: false,
        }
    }

    /// The next command: decoded ahead, or from the buffer. `Ok(None)`: read more.
    #[inline]
    pub(super) fn next(&mut self) -> Result<Option<Command>, ProtocolError> {
        if let Some(command) = self.ahead.pop_front() {
            return Ok(Some(command));
        }
        if let Some(error) = self.broken.take() {
            return Err(error);
        }
        self.decoder.decode(&mut self.inbuf)
    }

    /// Called after each read: loading ahead may be tried again.
    pub(super) fn read_more(&mut self) {
        self.loads_failed = false;
    }

    /// Decodes every complete command left in the buffer into `ahead`, stopping at a
    /// protocol error (kept for its turn).
    fn decode_rest(&mut self) {
        while self.broken.is_none() {
            match self.decoder.decode(&mut self.inbuf) {
                Ok(Some(command)) => self.ahead.push_back(command),
                Ok(None) => break,
                Err(error) => self.broken = Some(error),
            }
        }
    }
}

impl Pending {
    /// Before the command `parsed` runs: when it would load a tag from the store, loads the
    /// new tags of the minting commands read after it at the same time (see the module's
    /// docs).
    pub(super) async fn load_tags_ahead(&mut self, session: &Session, parsed: &Parsed<'_>) {
        if self.loads_failed || !session.may_mint || session.transaction.is_some() {
            return;
        }
        let max_count = session.shared.options.max_count;
        let Some(first) = parsed.loaded_tag().and_then(|raw| new_tag(session, raw)) else {
            return;
        };
        self.decode_rest();
        let mut tags = vec![first];
        for next in &self.ahead {
            let parsed = cmd::parse(next, max_count);
            let Some(raw) = parsed.loaded_tag() else {
                break;
            };
            if let Some(tag) = new_tag(session, raw) {
                if !tags.contains(&tag) {
                    tags.push(tag);
                    if tags.len() == MOST_AHEAD {
                        break;
                    }
                }
            }
        }
        if tags.len() < 2 {
            return; // the command loads its one new tag itself
        }
        let mut loads = JoinSet::new();
        let mut failed = false;
        for tag in tags {
            if loads.len() >= LOAD_AT_ONCE {
                failed |= !matches!(loads.join_next().await, Some(Ok(true)));
            }
            let ids = Arc::clone(&session.shared.ids);
            let grant = session.grant.clone();
            loads.spawn(async move {
                let asker = grant.as_deref().map_or(Asker::Operator, Asker::of);
                match ids.segments().buffer(&tag, asker).await {
                    Ok(buffer) => buffer.current().warm_up().await.is_ok(),
                    Err(_) => false,
                }
            });
        }
        while let Some(loaded) = loads.join_next().await {
            failed |= !matches!(loaded, Ok(true));
        }
        // The commands report their own errors when they run.
        self.loads_failed = failed;
    }
}

/// The tag spelled `raw` when `session` may use it and neither it nor this node has its
/// buffer yet.
fn new_tag(session: &Session, raw: &[u8]) -> Option<Tag> {
    let allowed = session.grant.as_ref().is_some_and(|g| g.allows_tag(raw));
    if !allowed || session.tags.contains(raw) {
        return None;
    }
    let tag = Tag::new(std::str::from_utf8(raw).ok()?).ok()?;
    session
        .shared
        .ids
        .segments()
        .loaded(&tag)
        .is_none()
        .then_some(tag)
}
