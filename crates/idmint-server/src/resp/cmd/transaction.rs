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
//! every read's buffer alive) and is bounded twice: [`MAX_QUEUED_BYTES`] per transaction, and
//! [`MAX_QUEUED_BYTES_ALL`] for the open transactions of every connection together, so that
//! many connections each filling a queue cannot take the server's memory either. `EXEC`'s
//! replies are written by the connection loop, which flushes them as they grow.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use idmint_resp::{encode, Command};

use crate::resp::connection::Session;

/// Most bytes of queued commands one transaction may hold (arguments plus
/// [`PER_ARGUMENT`] each): about 14,000 `INCR tag` commands. Past it the transaction is doomed,
/// so a client cannot make the server hold its commands without bound.
pub(in crate::resp) const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Most bytes the open transactions of all connections may hold together (64 MiB): past it,
/// a command queued anywhere dooms its transaction until others finish.
pub(in crate::resp) const MAX_QUEUED_BYTES_ALL: usize = 64 * 1024 * 1024;

/// What one queued argument costs beyond its bytes (its `Bytes` handle).
const PER_ARGUMENT: usize = 32;

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A transaction being queued: between `MULTI` and `EXEC` or `DISCARD`.
#[derive(Debug)]
pub(in crate::resp) struct Transaction {
    queued: Vec<Command>,
    /// What the queued commands cost, as [`MAX_QUEUED_BYTES`] counts; also counted in the
    /// listener's total until the transaction ends.
    bytes: usize,
    /// A command was refused while queueing: `EXEC` runs nothing.
    doomed: bool,
    /// The listener's total of queued bytes, shared by every connection.
    total: Arc<AtomicUsize>,
}

impl Transaction {
    fn new(total: &Arc<AtomicUsize>) -> Self {
        Self {
            queued: Vec::new(),
            bytes: 0,
            doomed: false,
            total: Arc::clone(total),
        }
    }

    /// Commands queued so far (`CLIENT INFO`'s `multi=`).
    pub(in crate::resp) fn len(&self) -> usize {
        self.queued.len()
    }

    /// Counts `cost` more bytes against both bounds; `Err` holds the refusal.
    fn reserve(&mut self, cost: usize) -> Result<(), String> {
        if self.bytes.saturating_add(cost) > MAX_QUEUED_BYTES {
            return Err(format!(
                "ERR transaction too large: at most {MAX_QUEUED_BYTES} bytes of queued \
                 commands; send EXEC sooner"
            ));
        }
        let total = &self.total;
        if total
            .fetch_add(cost, Ordering::Relaxed)
            .saturating_add(cost)
            > MAX_QUEUED_BYTES_ALL
        {
            total.fetch_sub(cost, Ordering::Relaxed);
            return Err(format!(
                "ERR the open transactions of all connections hold {MAX_QUEUED_BYTES_ALL} \
                 bytes; try again later"
            ));
        }
        self.bytes += cost;
        Ok(())
    }
}

impl Drop for Transaction {
    /// However the transaction ends (`EXEC`, `DISCARD`, `RESET`, the connection closing), its
    /// bytes leave the listener's total.
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
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
        if let Err(refusal) = transaction.reserve(cost(command)) {
            transaction.doomed = true;
            return encode::error(out, &refusal);
        }
        let copy = command
            .args()
            .iter()
            .map(|arg| Bytes::copy_from_slice(arg))
            .collect();
        match Command::new(copy) {
            Some(copy) => {
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
        self.transaction = Some(Transaction::new(&self.shared.queued_bytes));
        encode::ok(out);
    }

    /// `EXEC`: writes the reply array's header and hands the queued commands to the
    /// connection loop, which runs them in order and writes their replies.
    pub(super) fn exec(&mut self, out: &mut BytesMut) {
        let Some(mut transaction) = self.transaction.take() else {
            return encode::error(out, "ERR EXEC without MULTI");
        };
        if transaction.doomed {
            return encode::error(out, EXECABORT);
        }
        encode::array_header(out, transaction.queued.len());
        self.exec_queue = std::mem::take(&mut transaction.queued);
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

    #[test]
    fn queued_bytes_are_bounded_per_transaction_and_for_all_together() {
        let total = Arc::new(AtomicUsize::new(0));
        let mut one = Transaction::new(&total);
        assert!(one.reserve(MAX_QUEUED_BYTES).is_ok());
        let refusal = one.reserve(1).err().unwrap_or_default();
        assert!(refusal.contains("transaction too large"), "{refusal}");
        // Many transactions, each within its own bound, up to the total.
        let mut others: Vec<Transaction> = (1..MAX_QUEUED_BYTES_ALL / MAX_QUEUED_BYTES)
            .map(|_| {
                let mut t = Transaction::new(&total);
                assert!(t.reserve(MAX_QUEUED_BYTES).is_ok());
                t
            })
            .collect();
        assert_eq!(total.load(Ordering::Relaxed), MAX_QUEUED_BYTES_ALL);
        let mut last = Transaction::new(&total);
        let refusal = last.reserve(1).err().unwrap_or_default();
        assert!(refusal.contains("all connections"), "{refusal}");
        assert_eq!(total.load(Ordering::Relaxed), MAX_QUEUED_BYTES_ALL);
        // Ending transactions gives their bytes back.
        others.clear();
        drop(one);
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert!(last.reserve(1).is_ok());
        drop(last);
        assert_eq!(total.load(Ordering::Relaxed), 0);
    }
}
