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
//! The queue and its bounds are `crate::resp::queue`'s. `EXEC`'s replies are written by the
//! connection loop, which flushes them as they grow.

use bytes::BytesMut;
use idmint_resp::{encode, Command};

use crate::resp::queue::Transaction;
use crate::resp::session::Session;

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// Queues `command` in the open transaction: `+QUEUED`, or an error that dooms it when the
/// queue is full.
pub(super) fn queue(session: &mut Session, command: &Command, out: &mut BytesMut) {
    let Some(transaction) = &mut session.transaction else {
        return encode::error(out, "ERR no transaction is open");
    };
    match transaction.push(command) {
        Ok(()) => encode::simple(out, "QUEUED"),
        Err(refusal) => encode::error(out, &refusal),
    }
}

/// `MULTI`.
#[derive(Debug)]
pub(super) struct Multi;

impl Multi {
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        if session.transaction.is_some() {
            // As Redis: an error, but the open transaction goes on.
            return encode::error(out, "ERR MULTI calls can not be nested");
        }
        session.transaction = Some(Transaction::new(&session.shared.queued_bytes));
        encode::ok(out);
    }
}

/// `EXEC`.
#[derive(Debug)]
pub(super) struct Exec;

impl Exec {
    /// Writes the reply array's header and hands the queued commands to the connection loop,
    /// which runs them in order and writes their replies.
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        let Some(mut transaction) = session.transaction.take() else {
            return encode::error(out, "ERR EXEC without MULTI");
        };
        if transaction.is_doomed() {
            return encode::error(out, EXECABORT);
        }
        encode::array_header(out, transaction.len());
        session.exec_queue = transaction.take_commands();
    }
}

/// `DISCARD`.
#[derive(Debug)]
pub(super) struct Discard;

impl Discard {
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        if session.transaction.take().is_none() {
            return encode::error(out, "ERR DISCARD without MULTI");
        }
        encode::ok(out);
    }
}

/// `WATCH key [key ...]`: there is nothing to watch, so outside a transaction it is accepted;
/// inside one it is refused, as in Redis (the transaction goes on). The keys are not read.
#[derive(Debug)]
pub(super) struct Watch;

impl Watch {
    pub(super) fn apply(self, session: &mut Session, out: &mut BytesMut) {
        if session.transaction.is_some() {
            return encode::error(out, "ERR WATCH inside MULTI is not allowed");
        }
        encode::ok(out);
    }
}

/// `UNWATCH`: nothing is ever watched.
#[derive(Debug)]
pub(super) struct Unwatch;

impl Unwatch {
    pub(super) fn apply(self, out: &mut BytesMut) {
        encode::ok(out);
    }
}
