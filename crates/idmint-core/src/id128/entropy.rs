//! The random bits of 128-bit IDs: a CSPRNG per thread, never repeating its output in a child
//! process after `fork`.
//!
//! Each thread draws from rand's `ThreadRng` (ChaCha12, seeded from the operating system and
//! reseeded after every 64 KiB of output). A forked child starts with a copy of its parent's
//! generator state and would repeat the parent's next random bits, so on Unix a fork handler
//! (`pthread_atfork`, registered when the first generator is built, the only `unsafe` in
//! idmint) counts forks, and a thread whose count is stale reseeds from the operating system
//! before its next draw. The check is one relaxed load of a word that is only written at a
//! fork. A thread also reseeds before its first draw for an ID: its `ThreadRng` may predate
//! the fork (rand used for something else in a thread that forks later), and one `getrandom`
//! call per thread is cheap.

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
        watch_forks();
        Local {
            rng: RefCell::new(rand::rng()),
            // Never a real count: the first draw reseeds.
            forks_seen: Cell::new(u64::MAX),
        }
    }

    #[inline(always)]
    fn next_u64(&self) -> u64 {
        let forks = FORKS.load(Ordering::Relaxed);
        let mut rng = self.rng.borrow_mut();
        if forks != self.forks_seen.get() {
            reseed(&mut rng);
            self.forks_seen.set(forks);
        }
        rng.next_u64()
    }
}

/// Reseeds from the operating system. Its failing is not something to make IDs through: the
/// state may be a copy of another process's, whose IDs would then be repeated. rand's own
/// thread generator panics when its seeding fails; so does this (getrandom(2) does not fail
/// once the kernel's pool is initialised).
#[cold]
fn reseed(rng: &mut ThreadRng) {
    if let Err(error) = rng.reseed() {
        panic!(
            "the operating system's random source failed ({error}): no 128-bit ID is made \
             from a state another process may share"
        );
    }
}

/// 64 random bits from this thread's CSPRNG.
#[inline]
pub(crate) fn next_u64() -> u64 {
    LOCAL.with(Local::next_u64)
}

/// How many forks this process (or its ancestors since it started) has counted: tests check
/// that the handler ran.
#[doc(hidden)]
pub fn forks_counted() -> u64 {
    FORKS.load(Ordering::Relaxed)
}

/// Makes sure forks are counted from here on.
pub(crate) fn watch_forks() {
    fork_guard::install();
}

#[cfg(unix)]
#[allow(unsafe_code)]
mod fork_guard {
    use std::sync::atomic::AtomicBool;

    use super::{Ordering, FORKS};

    /// Runs in the child right after `fork`, on the only thread it has: an atomic add, which is
    /// async-signal-safe.
    extern "C" fn child() {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }

    /// Registers the handler once per process (children inherit it). An `AtomicBool`, not a
    /// `Once`: a fork while another thread is inside `call_once` would leave the child's `Once`
    /// running forever; two registrations are harmless (only a changed count matters).
    pub(super) fn install() {
        static INSTALLED: AtomicBool = AtomicBool::new(false);
        if INSTALLED.swap(true, Ordering::AcqRel) {
            return;
        }
        // SAFETY: `pthread_atfork` only records the function pointers; `child` touches nothing
        // but a static atomic, which is safe in a freshly forked child. A failure (ENOMEM)
        // leaves forks uncounted; each thread still reseeds before its first draw.
        let _ = unsafe { libc::pthread_atfork(None, None, Some(child)) };
    }
}

#[cfg(not(unix))]
mod fork_guard {
    /// No `fork` outside Unix: nothing to guard.
    pub(super) fn install() {}
}
