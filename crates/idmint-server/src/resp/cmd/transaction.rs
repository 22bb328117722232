//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`: transactions as Redis runs them.
//!
//! Clients use them more than one would think: redis-py's plain `pipeline()`, ioredis' and
//! node-redis' `multi()`, go-redis' `TxPipeline` and the Rust crate's `atomic()` all wrap their
//! commands in `MULTI`/`EXEC`. So:
//! - after `MULTI`, every command but these five, `QUIT` and `RESET` is answered `+QUEUED`
//!   and runs only at `EXEC`: nothing takes an ID before it;
//! - a command refused while queueing (unknown, wrong arity, before `AUTH`, or past the
//!   queue's bound) dooms the transaction: `EXEC` answers `-EXECABORT` and runs nothing;
//! - `EXEC` answers an array with one reply per queued command; a command failing there (a bad
//!   `COUNT`, a store that is down) is an error inside the array and takes no ID, the others
//!   run, as in Redis;
//! - idmint keeps no keys that could change, so `WATCH` has nothing to watch: it is accepted,
//!   and `EXEC` is never aborted for a watched key.
//!
//! The queue holds copies of the commands (not slices of the read buffer, which would keep
//! every read's buffer alive) and is bounded by [`MAX_QUEUED_BYTES`]; `EXEC`'s replies are
//! written by the connection loop, which flushes them as they grow.

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Command};

use crate::resp::connection::Session;

/// Most bytes of queued commands one transaction may hold (arguments plus
/// [`PER_ARGUMENT`] each): about 30,000 `INCR tag` commands. Past it the transaction is doomed,
/// so a client cannot make the server hold its commands without bound.
pub(in crate::resp) const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// What one queued argument costs beyond its bytes (its `Bytes` handle).
const PER_ARGUMENT: usize = 32;

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A transaction being queued: between `MULTI` and `EXEC` or `DISCARD`.
#[derive(Debug, Default)]
pub(in crate::resp) struct Transaction {
    queued: Vec<Command>,
    /// What the queued commands cost, as [`MAX_QUEUED_BYTES`] counts.
    bytes: usize,
    /// A command was refused while queueing: `EXEC` runs nothing.
    doomed: bool,
}

impl Transaction {
    /// Commands queued so far (`CLIENT INFO`'s `multi=`).
    pub(in crate::resp) fn len(&self) -> usize {
        self.queued.len()
    }
}

/// What a command costs in the queue.
fn cost(command: &Command) -> usize {
    command
        .args()
        .iter()
        .map(|arg| arg.len().saturating_add(PER_ARGUMENT))
        .fold(0, usize::saturating_add)
}

impl Session {
    /// Refuses the transaction being queued, if any, after a command was refused.
    pub(in crate::resp) fn doom_transaction(&mut self) {
        if let Some(transaction) = &mut self.transaction {
            transaction.doomed = true;
        }
    }

    /// Queues `command` in the open transaction: `+QUEUED`, or an error that dooms it when the
    /// queue is full.
    pub(super) fn queue(&mut self, command: &Command, out: &mut BytesMut) {
        let Some(transaction) = &mut self.transaction else {
            return encode::error(out, "ERR no transaction is open");
        };
        let cost = cost(command);
        if transaction.bytes.saturating_add(cost) > MAX_QUEUED_BYTES {
            transaction.doomed = true;
            return encode::error_fmt(
                out,
                format_args!(
                    "ERR transaction too large: at most {MAX_QUEUED_BYTES} bytes of queued \
                     commands; send EXEC sooner"
                ),
            );
        }
        let copy = command
            .args()
            .iter()
            .map(|arg| Bytes::copy_from_slice(arg))
            .collect();
        match Command::new(copy) {
            Some(copy) => {
                transaction.bytes += cost;
                transaction.queued.push(copy);
                encode::simple(out, "QUEUED");
            }
            // A decoded command always has a name; should one not, refuse it whole.
            None => {
                transaction.doomed = true;
                encode::error(out, "ERR empty command");
            }
        }
    }

    /// `MULTI`.
    pub(super) fn multi(&mut self, out: &mut BytesMut) {
        if self.transaction.is_some() {
            // As Redis: an error, but the open transaction goes on.
            return encode::error(out, "ERR MULTI calls can not be nested");
        }
        self.transaction = Some(Transaction::default());
        encode::ok(out);
    }

    /// `EXEC`: writes the reply array's header and hands the queued commands to the
    /// connection loop, which runs them in order and writes their replies.
    pub(super) fn exec(&mut self, out: &mut BytesMut) {
        let Some(transaction) = self.transaction.take() else {
            return encode::error(out, "ERR EXEC without MULTI");
        };
        if transaction.doomed {
            return encode::error(out, EXECABORT);
        }
        encode::array_header(out, transaction.queued.len());
        self.exec_queue = transaction.queued;
    }

    /// `DISCARD`.
    pub(super) fn discard(&mut self, out: &mut BytesMut) {
        if self.transaction.take().is_none() {
            return encode::error(out, "ERR DISCARD without MULTI");
        }
        encode::ok(out);
    }

    /// `WATCH key [key ...]`: there is nothing to watch, so outside a transaction it is
    /// accepted; inside one it is refused, as in Redis (the transaction goes on).
    pub(super) fn watch(&mut self, out: &mut BytesMut) {
        if self.transaction.is_some() {
            return encode::error(out, "ERR WATCH inside MULTI is not allowed");
        }
        encode::ok(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_costs_its_bytes_and_a_handle_per_argument() {
        let command = Command::new(vec!["INCR".into(), "orders".into()]);
        assert_eq!(command.as_ref().map(cost), Some(4 + 6 + 2 * PER_ARGUMENT));
        // `INCR` of a short tag: more than 10,000 fit.
        const { assert!(MAX_QUEUED_BYTES / (4 + 6 + 2 * PER_ARGUMENT) > 10_000) };
    }
}
