//! Exponential back-off with jitter, for retrying a store that failed.
//!
//! Plain doubling makes every caller that failed at the same moment (every tag's prefetch and
//! the lease keeper of every node, when a store goes away) retry at the same moments, so the
//! store that comes back meets them all at once, again and again. Each pause here is drawn from
//! the upper half of the current step ("equal jitter"): a retry never comes sooner than half the
//! doubling schedule, and the other half spreads callers apart.
//!
//! The randomness is a splitmix64 sequence seeded from std's per-instance random hasher keys:
//! it needs no clock (only the clock module reads it) and no dependency, and spreading retries
//! needs no more than that.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

/// Pauses between retries: doubling from an initial step up to a cap, each one jittered.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    step: Duration,
    cap: Duration,
    state: u64,
}

impl Backoff {
    /// Steps of `initial`, doubling up to `cap` (an `initial` above `cap` starts at `cap`).
    pub fn new(initial: Duration, cap: Duration) -> Self {
        let initial = initial.min(cap);
        Self {
            initial,
            step: initial,
            cap,
            state: RandomState::new().hash_one(0u64),
        }
    }

    /// The pause before the next retry: between half the current step and the step, then the
    /// step doubles (up to the cap).
    pub fn next_pause(&mut self) -> Duration {
        let step = self.step;
        self.step = step
            .checked_mul(2)
            .map_or(self.cap, |next| next.min(self.cap));
        let half = step / 2;
        let spread = u64::try_from((step - half).as_nanos()).unwrap_or(u64::MAX);
        let jitter = match spread.checked_add(1) {
            Some(range) => self.random() % range,
            None => self.random(),
        };
        half + Duration::from_nanos(jitter)
    }

    /// Back to the initial step, after a success.
    pub fn reset(&mut self) {
        self.step = self.initial;
    }

    /// The next number of a splitmix64 sequence.
    fn random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_stay_within_half_a_step_and_a_step_and_double_up_to_the_cap() {
        let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(300));
        let steps = [10, 20, 40, 80, 160, 300, 300, 300];
        for step in steps.map(Duration::from_millis) {
            let pause = backoff.next_pause();
            assert!(
                pause >= step / 2 && pause <= step,
                "{pause:?} for a step of {step:?}"
            );
        }
        backoff.reset();
        assert!(backoff.next_pause() <= Duration::from_millis(10));
    }

    #[test]
    fn an_initial_step_above_the_cap_starts_at_the_cap() {
        let mut backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
        assert!(backoff.next_pause() <= Duration::from_secs(1));
    }

    #[test]
    fn two_callers_failing_together_do_not_retry_in_lockstep() {
        let pauses = |mut backoff: Backoff| -> Vec<Duration> {
            (0..8).map(|_| backoff.next_pause()).collect()
        };
        let (a, b) = (
            Backoff::new(Duration::from_millis(100), Duration::from_secs(10)),
            Backoff::new(Duration::from_millis(100), Duration::from_secs(10)),
        );
        assert_ne!(pauses(a), pauses(b));
    }

    #[test]
    fn zero_and_huge_durations_do_not_panic() {
        let mut zero = Backoff::new(Duration::ZERO, Duration::ZERO);
        assert_eq!(zero.next_pause(), Duration::ZERO);
        let mut huge = Backoff::new(Duration::MAX, Duration::MAX);
        for _ in 0..3 {
            assert!(huge.next_pause() >= Duration::MAX / 2);
        }
    }
}
