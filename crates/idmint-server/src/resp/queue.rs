//! The commands of an open transaction, between `MULTI` and `EXEC` (see `cmd::transaction`
//! for how transactions run).
//!
//! The queue holds copies of the commands (not slices of the read buffer, which would keep
//! every read's buffer alive) and is bounded twice: [`MAX_QUEUED_BYTES`] per transaction, and
//! [`MAX_QUEUED_BYTES_ALL`] for the open transactions of every connection together, so that
//! many connections each filling a queue cannot take the server's memory either.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use idmint_resp::Command;

/// Most bytes of queued commands one transaction may hold (arguments plus
/// [`PER_ARGUMENT`] each): about 14,000 `INCR tag` commands. Past it the transaction is doomed,
/// so a client cannot make the server hold its commands without bound.
pub(super) const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Most bytes the open transactions of all connections may hold together (64 MiB): past it,
/// a command queued anywhere dooms its transaction until others finish.
pub(super) const MAX_QUEUED_BYTES_ALL: usize = 64 * 1024 * 1024;

/// What one queued argument costs beyond its bytes (its `Bytes` handle).
const PER_ARGUMENT: usize = 32;

/// A transaction being queued: between `MULTI` and `EXEC` or `DISCARD`.
#[derive(Debug)]
pub(super) struct Transaction {
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
    /// An empty transaction, its bytes counted in `total` (the listener's).
    pub(super) fn new(total: &Arc<AtomicUsize>) -> Self {
        Self {
            queued: Vec::new(),
            bytes: 0,
            doomed: false,
            total: Arc::clone(total),
        }
    }

    /// Commands queued so far (`CLIENT INFO`'s `multi=`).
    pub(super) fn len(&self) -> usize {
        self.queued.len()
    }

    /// A command was refused while queueing: `EXEC` will run nothing.
    pub(super) fn doom(&mut self) {
        self.doomed = true;
    }

    /// Whether a command was refused while queueing.
    pub(super) fn is_doomed(&self) -> bool {
        self.doomed
    }

    /// Queues a copy of `command`; `Err` holds the refusal (the queue is full, or the command
    /// has no name), which dooms the transaction.
    pub(super) fn push(&mut self, command: &Command) -> Result<(), String> {
        if let Err(refusal) = self.reserve(cost(command)) {
            self.doomed = true;
            return Err(refusal);
        }
        let copy = command
            .args()
            .iter()
            .map(|arg| Bytes::copy_from_slice(arg))
            .collect();
        match Command::new(copy) {
            Some(copy) => {
                self.queued.push(copy);
                Ok(())
            }
            // A decoded command always has a name; should one not, refuse it whole.
            None => {
                self.doomed = true;
                Err("ERR empty command".to_owned())
            }
        }
    }

    /// The queued commands, for `EXEC` to run (the transaction keeps counting their bytes
    /// until it is dropped).
    pub(super) fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.queued)
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
