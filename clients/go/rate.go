package idmint

// The consumption rate of a tag, and the range size that follows from it.
//
// The rate is an exponentially weighted moving average over time (not over samples), so it
// does not depend on how often it is sampled: each sample (IDs consumed, ms elapsed) moves the
// average toward the sample's rate by 1 - exp(-elapsed/tau). tau is short when the rate rises
// and long when it falls: overestimating the rate only makes the next range larger (a larger
// gap after a crash), while underestimating it makes ranges run out before their successor
// arrives, which stalls callers. The same rules as the Rust client's (idmint-core's
// segment/rate.rs).

import (
	"math"
	"time"
)

const (
	tauUpMs   = 1_000.0  // a burst is followed within seconds
	tauDownMs = 60_000.0 // ranges shrink over minutes, not at the first quiet moment
)

// rateMeter averages the consumption rate from samples of a monotone "IDs consumed" counter.
type rateMeter struct {
	rate     float64 // IDs per second, once hasRate
	hasRate  bool
	markN    int64 // the previous sample
	markMs   int64
	hasMark  bool
	clockRef time.Time // monotonic origin of the millisecond clock
}

// observe feeds the counter value consumed, read now. Samples less than a millisecond after
// the mark are folded into the next one; a counter or clock that went back restarts the mark.
func (m *rateMeter) observe(consumed int64, now time.Time) {
	if m.clockRef.IsZero() {
		m.clockRef = now
	}
	nowMs := now.Sub(m.clockRef).Milliseconds()
	if !m.hasMark || nowMs < m.markMs || consumed < m.markN {
		m.markN, m.markMs, m.hasMark = consumed, nowMs, true
		return
	}
	elapsed := nowMs - m.markMs
	if elapsed == 0 {
		return
	}
	sample := float64(consumed-m.markN) * 1000 / float64(elapsed)
	if !m.hasRate {
		m.rate, m.hasRate = sample, true
	} else {
		tau := tauDownMs
		if sample > m.rate {
			tau = tauUpMs
		}
		m.rate += (1 - math.Exp(-float64(elapsed)/tau)) * (sample - m.rate)
	}
	m.markN, m.markMs = consumed, nowMs
}

// planStep is the size of the next range: rate * lifetime clamped to [minStep, maxStep], then
// raised to wanted (a waiting caller's need, capped at maxStep).
func planStep(m *rateMeter, minStep, maxStep int64, lifetime time.Duration, wanted int64) int64 {
	step := minStep
	if m.hasRate && m.rate > 0 && !math.IsInf(m.rate, 0) && !math.IsNaN(m.rate) {
		want := math.Ceil(m.rate * lifetime.Seconds())
		if want < float64(maxStep) {
			step = int64(want)
		} else {
			step = maxStep
		}
	}
	if step < minStep {
		step = minStep
	}
	if step > maxStep {
		step = maxStep
	}
	if wanted > maxStep {
		wanted = maxStep
	}
	if step < wanted {
		step = wanted
	}
	if step < 1 {
		step = 1
	}
	if step > maxSegmentLen {
		step = maxSegmentLen
	}
	return step
}
