//! The random bits of 128-bit IDs: a CSPRNG per thread, never repeating its output in a child
//! process after `fork`.
//!
//! Each thread draws from rand's `ThreadRng` (ChaCha12, seeded from the operating system and
//! reseeded after every 64 KiB of output). A forked child starts with a copy of its parent's
//! generator state and would repeat the parent's next random bits, so on Unix a fork handler
//! (`pthread_atfork`, registered once, the only `unsafe` in idmint) counts forks, and a thread
//! whose count is stale reseeds from the operating system before its next draw. The check is
//! one relaxed load of a word that is only written at a fork.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::ThreadRng;
use rand::Rng;

/// Forks this process has gone through, counted in the child.
static FORKS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static LOCAL: Local = Local::new();
}

/// One thread's generator and the fork count it was seeded at.
struct Local {
    rng: RefCell<ThreadRng>,
    forks_seen: Cell<u64>,
}

impl Local {
    fn new() -> Self {
        fork_guard::install();
        Local {
            rng: RefCell::new(rand::rng()),
            forks_seen: Cell::new(FORKS.load(Ordering::Relaxed)),
        }
    }

    fn next_u64(&self) -> u64 {
        let forks = FORKS.load(Ordering::Relaxed);
        let mut rng = self.rng.borrow_mut();
        if forks != self.forks_seen.get() {
            // A failed reseed keeps the copied state: then the child must not go on with it.
            // The OS source failing is not something to serve IDs through (getrandom(2) does
            // not fail once the pool is initialised); ChaCha's output is still unpredictable,
            // only possibly shared with the parent, so mix in what differs: the process id.
            if rng.reseed().is_err() {
                let pid = u64::from(std::process::id());
                for _ in 0..(pid % 64) {
                    let _ = rng.next_u64();
                }
            }
            self.forks_seen.set(forks);
        }
        rng.next_u64()
    }
}

/// 64 random bits from this thread's CSPRNG.
#[inline]
pub(crate) fn next_u64() -> u64 {
    LOCAL.with(Local::next_u64)
}

/// How many forks this process (or its ancestors since it started) has counted: tests check
/// that the handler ran.
pub fn forks_counted() -> u64 {
    FORKS.load(Ordering::Relaxed)
}

#[cfg(unix)]
#[allow(unsafe_code)]
mod fork_guard {
    use std::sync::Once;

    use super::{Ordering, FORKS};

    /// Runs in the child right after `fork`, on the only thread it has: an atomic add, which is
    /// async-signal-safe.
    extern "C" fn child() {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }

    /// Registers the handler once per process (children inherit it).
    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            // SAFETY: `pthread_atfork` only records the function pointers; `child` touches
            // nothing but a static atomic, which is safe in a freshly forked child. A failure
            // (ENOMEM) leaves forks uncounted; the IDs then rest on the node field and the
            // counter's random seed, as on platforms without fork.
            let _ = unsafe { libc::pthread_atfork(None, None, Some(child)) };
        });
    }
}

#[cfg(not(unix))]
mod fork_guard {
    /// No `fork` outside Unix: nothing to guard.
    pub(super) fn install() {}
}
