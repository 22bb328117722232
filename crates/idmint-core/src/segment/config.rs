//! Tuning of a [`SegmentBuffer`](super::SegmentBuffer): how large the ranges are, when the next
//! one is fetched, and how long a caller waits for the store.

use std::time::Duration;

use super::state_word::MAX_SEGMENT_LEN;
use crate::error::{Error, Result};

/// How a segment buffer sizes its ranges and bounds its waits.
///
/// The defaults follow Meituan Leaf where Leaf's choices have a reason (the step cap, the
/// prefetch point, a lifetime of about 15 minutes) and are documented per field.
///
/// Built from [`Default`] or [`SegmentConfig::with_min_step`] and the `with_` methods, or by
/// setting the fields of one so built: fields may be added in later versions, hence
/// `#[non_exhaustive]`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SegmentConfig {
    /// The smallest range requested from the store. Set it to the tag's `step` from the store
    /// (see [`SegmentConfig::with_min_step`]): an operator who sized the tag's step expects at
    /// least that much per fetch. Default 1,000, the default tag step.
    pub min_step: u64,

    /// The largest range requested at once. Caps how many IDs a crash can skip (a crash loses
    /// the ranges held in memory, up to two of them) and how large a single gap can be.
    /// Default 1,000,000, Leaf's cap. Clamped to [`MAX_SEGMENT_LEN`]; also the largest `n`
    /// accepted by `take_contiguous` and `next_many`.
    pub max_step: u64,

    /// How long one range should last at the observed rate: the adaptive step is
    /// `rate * target_lifetime`, clamped to `min_step..=max_step`. Default 15 minutes, Leaf's
    /// target: with the next range prefetched early, a node then rides out a store outage of
    /// roughly twice that (a database restart or fail-over) without a single failed request,
    /// while a store round trip happens only every few minutes per tag.
    pub target_lifetime: Duration,

    /// Fraction of the current range consumed when the next range is fetched in the
    /// background, in `0.0..=1.0`. Default 0.1, like Leaf (it fetches once 10% is used): the
    /// fetch then has 90% of a range's lifetime to complete, and the outage budget stays close
    /// to two full ranges. A later point saves IDs only if the node crashes (a graceful
    /// shutdown gives the unused range back), so early is the better trade.
    pub prefetch_at: f64,

    /// How long a caller waits for a range when both buffers are empty before it gets
    /// [`Error::SegmentUnavailable`]. Default 1 s: long enough to cover a store round trip and a
    /// few retries, short enough that a client sees a clear error instead of a hung request.
    pub max_wait: Duration,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        Self {
            min_step: 1_000,
            max_step: 1_000_000,
            target_lifetime: Duration::from_secs(15 * 60),
            prefetch_at: 0.1,
            max_wait: Duration::from_secs(1),
        }
    }
}

impl SegmentConfig {
    /// The defaults with `min_step` set to the tag's step as stored, the usual way to build a
    /// config for a tag.
    pub fn with_min_step(min_step: u64) -> Self {
        Self {
            min_step,
            ..Self::default()
        }
    }

    /// With both steps: ranges of at least `min_step` and at most `max_step` IDs.
    pub fn with_steps(mut self, min_step: u64, max_step: u64) -> Self {
        self.min_step = min_step;
        self.max_step = max_step;
        self
    }

    /// With `max_step`, the largest range asked for at once.
    pub fn with_max_step(mut self, max_step: u64) -> Self {
        self.max_step = max_step;
        self
    }

    /// With `target_lifetime`: how long one range should last at the observed rate.
    pub fn with_target_lifetime(mut self, target_lifetime: Duration) -> Self {
        self.target_lifetime = target_lifetime;
        self
    }

    /// With `prefetch_at`: the share of a range used when the next one is fetched.
    pub fn with_prefetch_at(mut self, prefetch_at: f64) -> Self {
        self.prefetch_at = prefetch_at;
        self
    }

    /// With `max_wait`: how long a caller waits for a range when both buffers are empty.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Checks the fields, for config loaders that want to refuse bad values instead of having
    /// them corrected silently (as [`SegmentBuffer::new`](super::SegmentBuffer::new) does).
    pub fn validate(&self) -> Result<()> {
        if self.min_step == 0 || self.min_step > MAX_SEGMENT_LEN {
            return Err(Error::argument(
                "min_step",
                format!("must be in 1..={MAX_SEGMENT_LEN}"),
            ));
        }
        if self.max_step < self.min_step || self.max_step > MAX_SEGMENT_LEN {
            return Err(Error::argument(
                "max_step",
                format!("must be in min_step..={MAX_SEGMENT_LEN}"),
            ));
        }
        if !(0.0..=1.0).contains(&self.prefetch_at) {
            return Err(Error::argument("prefetch_at", "must be in 0.0..=1.0"));
        }
        if self.max_wait.is_zero() {
            return Err(Error::argument("max_wait", "must be above zero"));
        }
        Ok(())
    }

    /// The config with every field forced into its valid range: steps into
    /// `1..=MAX_SEGMENT_LEN` with `max_step >= min_step`, `prefetch_at` into `0..=1` (a NaN
    /// becomes the default), a zero `max_wait` into 1 ms.
    pub fn normalized(&self) -> Self {
        let min_step = self.min_step.clamp(1, MAX_SEGMENT_LEN);
        let prefetch_at = if self.prefetch_at.is_nan() {
            Self::default().prefetch_at
        } else {
            self.prefetch_at.clamp(0.0, 1.0)
        };
        Self {
            min_step,
            max_step: self.max_step.clamp(min_step, MAX_SEGMENT_LEN),
            target_lifetime: self.target_lifetime,
            prefetch_at,
            max_wait: self.max_wait.max(Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_stable_under_normalization() {
        let config = SegmentConfig::default();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.normalized(), config);
        assert_eq!(SegmentConfig::with_min_step(50).min_step, 50);
    }

    #[test]
    fn bad_values_are_refused_or_clamped() {
        let bad = SegmentConfig {
            min_step: 0,
            max_step: u64::MAX,
            prefetch_at: f64::NAN,
            max_wait: Duration::ZERO,
            ..SegmentConfig::default()
        };
        assert!(matches!(bad.validate(), Err(Error::InvalidArgument { .. })));
        let fixed = bad.normalized();
        assert_eq!(fixed.min_step, 1);
        assert_eq!(fixed.max_step, MAX_SEGMENT_LEN);
        assert!((fixed.prefetch_at - 0.1).abs() < f64::EPSILON);
        assert_eq!(fixed.max_wait, Duration::from_millis(1));
        assert_eq!(fixed.validate(), Ok(()));

        let inverted = SegmentConfig {
            min_step: 500,
            max_step: 10,
            ..SegmentConfig::default()
        };
        assert!(inverted.validate().is_err());
        assert_eq!(inverted.normalized().max_step, 500);
    }
}
