package dev.idmint.client;

/**
 * A tag's consumption rate, and the range size that follows from it.
 *
 * <p>An exponentially weighted moving average over time, not over samples, so it does not depend
 * on how often it is sampled: each sample (IDs consumed, milliseconds elapsed) moves the average
 * toward the sample's rate by {@code 1 - exp(-elapsed / tau)}. The time constant is short when
 * the rate rises and long when it falls: overestimating only makes the next range larger, while
 * underestimating makes ranges run out before their successor arrives, which stalls callers.
 * Not thread-safe: used under its buffer's lock.
 */
final class RateMeter {
    static final double TAU_UP_MS = 1_000.0;
    static final double TAU_DOWN_MS = 60_000.0;

    private boolean hasRate;
    private double rate;
    private boolean hasMark;
    private long markConsumed;
    private long markMs;

    /** Feeds the counter value {@code consumed} read at {@code nowMs}. */
    void observe(long consumed, long nowMs) {
        if (!hasMark || nowMs < markMs || consumed < markConsumed) {
            hasMark = true;
            markConsumed = consumed;
            markMs = nowMs;
            return;
        }
        long elapsed = nowMs - markMs;
        if (elapsed == 0) {
            return; // folded into the next sample: the clock has millisecond resolution
        }
        double sample = (consumed - markConsumed) * 1_000.0 / elapsed;
        if (!hasRate) {
            rate = sample;
            hasRate = true;
        } else {
            double tau = sample > rate ? TAU_UP_MS : TAU_DOWN_MS;
            double weight = 1.0 - Math.exp(-elapsed / tau);
            rate = rate + weight * (sample - rate);
        }
        markConsumed = consumed;
        markMs = nowMs;
    }

    /** The averaged rate in IDs per second, or NaN before the first sample. */
    double rate() {
        return hasRate ? rate : Double.NaN;
    }

    /**
     * The size of the next range: {@code rate * targetLifetime} clamped to
     * {@code minStep..maxStep}, {@code minStep} while no rate is known.
     */
    static long planStep(double rate, long minStep, long maxStep, double targetLifetimeSecs) {
        long adaptive = minStep;
        if (Double.isFinite(rate) && rate > 0) {
            double wanted = Math.ceil(rate * targetLifetimeSecs);
            adaptive = wanted >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) wanted;
        }
        return Math.max(1, Math.min(Math.max(adaptive, minStep), maxStep));
    }
}
