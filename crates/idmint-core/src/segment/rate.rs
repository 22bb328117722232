//! The consumption rate of a tag and the adaptive step derived from it.
//!
//! The rate is an exponentially weighted moving average over time (not over samples), so it
//! does not depend on how often it is sampled: each sample `(IDs consumed, ms elapsed)` moves the
//! average toward the sample's rate by `1 - exp(-elapsed / tau)`. The time constant is short
//! when the rate rises ([`TAU_UP_MS`]) and long when it falls ([`TAU_DOWN_MS`]): overestimating
//! the rate only makes the next range larger (a larger gap after a crash), while
//! underestimating it makes ranges run out before their successor arrives, which stalls callers.

use std::time::Duration;

use super::config::SegmentConfig;
use super::state_word::MAX_SEGMENT_LEN;

/// Time constant of the average when the rate rises: a burst is followed within seconds.
pub(crate) const TAU_UP_MS: f64 = 1_000.0;

/// Time constant of the average when the rate falls: ranges shrink over minutes, not at the
/// first quiet moment.
pub(crate) const TAU_DOWN_MS: f64 = 60_000.0;

/// Averages the consumption rate from samples of a monotone "IDs consumed" counter.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateMeter {
    /// The averaged rate in IDs per second, once one sample spanned at least a millisecond.
    rate: Option<f64>,
    /// The previous sample: `(consumed, at_ms)`.
    mark: Option<(u64, u64)>,
}

impl RateMeter {
    /// Feeds the counter value `consumed` read at `now_ms`. The first call only sets the mark;
    /// calls less than a millisecond after the mark are folded into the next sample (the clock
    /// has millisecond resolution). A clock that went back restarts the mark.
    pub(crate) fn observe(&mut self, consumed: u64, now_ms: u64) {
        let Some((mark_consumed, mark_ms)) = self.mark else {
            self.mark = Some((consumed, now_ms));
            return;
        };
        if now_ms < mark_ms || consumed < mark_consumed {
            self.mark = Some((consumed, now_ms));
            return;
        }
        let elapsed_ms = now_ms - mark_ms;
        if elapsed_ms == 0 {
            return;
        }
        let sample = (consumed - mark_consumed) as f64 * 1_000.0 / elapsed_ms as f64;
        self.rate = Some(match self.rate {
            None => sample,
            Some(rate) => {
                let tau = if sample > rate {
                    TAU_UP_MS
                } else {
                    TAU_DOWN_MS
                };
                let weight = 1.0 - (-(elapsed_ms as f64) / tau).exp();
                rate + weight * (sample - rate)
            }
        });
        self.mark = Some((consumed, now_ms));
    }

    /// The averaged rate in IDs per second, `None` before the first sample.
    pub(crate) fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// Milliseconds of the last mark, if any.
    pub(crate) fn mark_ms(&self) -> Option<u64> {
        self.mark.map(|(_, at)| at)
    }
}

/// The step of the next fetch: `rate * target_lifetime` clamped to `min_step..=max_step`, then
/// raised to `wanted` (a waiting caller's need, capped at `max_step`). `config` must be
/// normalized.
pub(crate) fn plan_step(rate: Option<f64>, config: &SegmentConfig, wanted: u64) -> u64 {
    let adaptive = match rate {
        Some(rate) if rate.is_finite() && rate > 0.0 => {
            // `as` saturates on large floats, and the clamp below bounds it anyway.
            (rate * secs(config.target_lifetime)).ceil() as u64
        }
        _ => config.min_step,
    };
    adaptive
        .clamp(config.min_step, config.max_step)
        .max(wanted.min(config.max_step))
        .clamp(1, MAX_SEGMENT_LEN)
}

/// `duration` in seconds as a float.
fn secs(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_span_gives_the_raw_rate() {
        let mut meter = RateMeter::default();
        meter.observe(0, 1_000);
        assert_eq!(meter.rate(), None);
        meter.observe(500, 1_000);
        assert_eq!(
            meter.rate(),
            None,
            "no time passed: folded into the next sample"
        );
        meter.observe(1_000, 1_500);
        assert_eq!(meter.rate(), Some(2_000.0));
        assert_eq!(meter.mark_ms(), Some(1_500));
    }

    #[test]
    fn rises_fast_and_falls_slowly() {
        let mut meter = RateMeter::default();
        meter.observe(0, 0);
        meter.observe(100, 1_000); // 100/s
        let mut consumed = 100;
        let mut now = 1_000;
        for _ in 0..5 {
            consumed += 10_000;
            now += 1_000; // 10,000/s for 5 s
            meter.observe(consumed, now);
        }
        let high = meter.rate().unwrap_or_default();
        assert!(high > 9_000.0, "follows a rise within seconds: {high}");
        now += 5_000; // 5 quiet seconds
        meter.observe(consumed, now);
        let after = meter.rate().unwrap_or_default();
        assert!(after > 0.9 * high && after < high, "falls slowly: {after}");
    }

    #[test]
    fn a_clock_going_back_only_restarts_the_mark() {
        let mut meter = RateMeter::default();
        meter.observe(0, 10_000);
        meter.observe(100, 9_000);
        assert_eq!(meter.rate(), None);
        meter.observe(200, 9_100);
        assert_eq!(meter.rate(), Some(1_000.0));
    }

    #[test]
    fn step_follows_rate_within_bounds() {
        let config = SegmentConfig {
            min_step: 100,
            max_step: 10_000,
            target_lifetime: Duration::from_secs(10),
            ..SegmentConfig::default()
        };
        assert_eq!(plan_step(None, &config, 0), 100);
        assert_eq!(plan_step(Some(0.0), &config, 0), 100);
        assert_eq!(plan_step(Some(f64::NAN), &config, 0), 100);
        assert_eq!(plan_step(Some(3.0), &config, 0), 100);
        assert_eq!(plan_step(Some(55.5), &config, 0), 555);
        assert_eq!(plan_step(Some(1e12), &config, 0), 10_000);
        assert_eq!(plan_step(Some(f64::INFINITY), &config, 0), 100);
        assert_eq!(plan_step(None, &config, 4_000), 4_000);
        assert_eq!(plan_step(None, &config, 40_000), 10_000);
    }
}
