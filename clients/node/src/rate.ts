/**
 * The consumption rate of a tag and the range size derived from it, as idmint-core's
 * segment/rate.rs computes them (the same numbers, so the Rust and Node clients ask for the
 * same sizes).
 *
 * The rate is an exponentially weighted moving average over time, not over samples: each
 * sample (IDs consumed, ms elapsed) moves it toward the sample's rate by
 * `1 - exp(-elapsed / tau)`, with a short time constant when the rate rises and a long one
 * when it falls. Underestimating the rate makes ranges run out before their successor arrives
 * (callers wait), overestimating it only makes ranges larger.
 */

/** Time constant when the rate rises: a burst is followed within seconds. */
const TAU_UP_MS = 1_000;
/** Time constant when the rate falls: ranges shrink over minutes. */
const TAU_DOWN_MS = 60_000;

/** Averages the rate from samples of a monotone "IDs consumed" counter. */
export class RateMeter {
  /** IDs per second, once one sample spanned at least a millisecond. */
  rate: number | undefined;
  private markConsumed = -1;
  private markMs = 0;

  /**
   * Feeds the counter `consumed` read at `nowMs` (whole milliseconds). The first call only
   * sets the mark; calls within the same millisecond fold into the next sample; a clock or
   * counter that went back restarts the mark.
   */
  observe(consumed: number, nowMs: number): void {
    if (this.markConsumed < 0 || nowMs < this.markMs || consumed < this.markConsumed) {
      this.markConsumed = consumed;
      this.markMs = nowMs;
      return;
    }
    const elapsed = nowMs - this.markMs;
    if (elapsed === 0) {
      return;
    }
    const sample = ((consumed - this.markConsumed) * 1_000) / elapsed;
    if (this.rate === undefined) {
      this.rate = sample;
    } else {
      const tau = sample > this.rate ? TAU_UP_MS : TAU_DOWN_MS;
      this.rate += (1 - Math.exp(-elapsed / tau)) * (sample - this.rate);
    }
    this.markConsumed = consumed;
    this.markMs = nowMs;
  }
}

/**
 * The size of the next range: `rate * targetLifetime` clamped to `minStep..=maxStep`, then
 * raised to `wanted` (a waiting caller's need, capped at `maxStep`).
 */
export function planStep(
  rate: number | undefined,
  minStep: number,
  maxStep: number,
  targetLifetimeMs: number,
  wanted: number,
): number {
  const adaptive =
    rate !== undefined && Number.isFinite(rate) && rate > 0
      ? Math.ceil((rate * targetLifetimeMs) / 1_000)
      : minStep;
  const clamped = Math.min(Math.max(adaptive, minStep), maxStep);
  return Math.max(clamped, Math.min(wanted, maxStep), 1);
}

/**
 * Pauses between the retries of a refill: doubling from 10 ms up to `max`, each drawn between
 * half and all of its step, so many clients do not retry in lockstep.
 */
export class Backoff {
  private step = 10;

  constructor(private readonly max: number) {}

  next(): number {
    const step = this.step;
    this.step = Math.min(step * 2, this.max);
    return step / 2 + (Math.random() * step) / 2;
  }
}
