/**
 * One tag's double buffer: the range being handed out and the next one, asked for in the
 * background once `prefetchAt` of the current one is used. The same rules as idmint-core's
 * `SegmentBuffer`, which the Rust client runs over the nodes, on one event loop instead of
 * threads:
 *
 * - Taking an ID in memory is a comparison and a `bigint` add, synchronous: no Promise, no
 *   lock. Everything else (switching to the next range, starting a refill) happens when the
 *   current range is used up or its prefetch point is reached, a few times per range.
 * - At most one refill runs per tag. Every caller that finds both ranges empty waits on that
 *   one refill (no second range is asked for in the meantime), at most `maxWaitMs` from its
 *   first wait; then it rejects with {@link UnavailableError} naming the last failure.
 * - A refill that fails for a reason a retry can fix (no node served) is retried in the
 *   background after a growing pause until it succeeds or the buffer closes: a prefetch that
 *   fails while the current range still has IDs must succeed before the range runs out. A
 *   refusal ends the refill, and the callers waiting on it get the refusal at once.
 * - Ranges are used in the order they were taken, each above the previous one
 *   (`IDMINT.RANGE ... ABOVE last`), so the tag's IDs strictly increase.
 * - Closing stops every claim at once, waits (at most `maxWaitMs`) for a refill inside its
 *   request, and gives back what was never handed out: the current range's tail together
 *   with the unused next range when they are contiguous, else the next range alone (the
 *   node takes back only the tail of the last run it handed out). A range that arrives after
 *   that is given back by the refill itself.
 */

import type { Settings } from "./config.js";
import { ClosedError, NodeFailedError, TagExhaustedError, UnavailableError } from "./errors.js";
import { Backoff, RateMeter, planStep } from "./rate.js";
import type { RemoteRanges, Taken } from "./remote-ranges.js";
import { nowMs, sleep } from "./time.js";

/** One past the largest ID a tag hands out (`i64::MAX`): a range ending there is the tag's last. */
const MAX_SEGMENT_ID = (1n << 63n) - 1n;
/** Above every ID: a prefetch point never reached. */
const NEVER = 1n << 64n;

/** A range ready to hand out: IDs `start` up to `end` (exclusive), from node `node`. */
interface Segment {
  readonly start: bigint;
  readonly end: bigint;
  readonly length: number;
  readonly node: number;
  /** The tag's last range: nothing is asked for after it. */
  readonly last: boolean;
}

export class TagBuffer {
  // The hot fields, read on every claim.
  /** The next ID of the current range. */
  private cur = 1n;
  /** One past the current range's last usable ID; `cur >= end` means used up (or closed). */
  private end = 1n;
  /** The ID whose claim starts the refill of the next range. */
  private trigger = NEVER;

  // The current range's bookkeeping.
  private length = 0;
  private triggerOffset = 0;
  private lastRange = false;
  /** The next range, when loaded. */
  private next: Segment | undefined;
  /** IDs of every range before the current one: with the current offset, the rate's counter. */
  private consumedBefore = 0;
  private readonly rate = new RateMeter();
  /** The last ID of the last range taken for this tag, and the node that gave it. */
  private lastTaken: bigint | undefined;
  private lastNode = -1;
  /** The largest run a waiting caller needs (sizes the next refill). */
  private wanted = 0;

  // The refill.
  private fetchSeq = 0;
  private inFlight: number | undefined;
  /** A refill is inside its request (not pausing between retries): close waits for it. */
  private inRequest = false;
  private lastError: unknown;
  /** A refill that ended without retrying, and why: the callers that waited on it get this. */
  private fatal: { seq: number; error: unknown } | undefined;
  private waiters: Array<() => void> = [];

  private closed = false;
  private givenBack = false;

  constructor(
    readonly tag: string,
    private readonly settings: Settings,
    private readonly ranges: RemoteRanges,
  ) {}

  /**
   * The next ID if one is in memory; `undefined` otherwise (a refill is then started) or once
   * closed. Never waits, never allocates a Promise.
   */
  take(): bigint | undefined {
    const id = this.cur;
    if (id < this.end) {
      this.cur = id + 1n;
      if (id >= this.trigger) {
        this.reachedPrefetchPoint();
      }
      return id;
    }
    return this.takeSlow();
  }

  /** Whether the buffer was closed (the client closed, or the tag turned out dated). */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The next ID, waiting for a range when both are empty, at most `maxWaitMs` from the first
   * wait. Rejects with {@link UnavailableError}, {@link TagExhaustedError},
   * {@link ClosedError} or the refusal that ended the refill waited on.
   */
  async nextWaiting(): Promise<bigint> {
    let started: number | undefined;
    let waitingOn: number | undefined;
    for (;;) {
      const id = this.claim();
      if (id !== undefined) {
        return id;
      }
      if (this.closed) {
        throw new ClosedError();
      }
      if (this.lastRange) {
        throw this.exhausted();
      }
      if (this.fatal !== undefined && this.fatal.seq === waitingOn) {
        throw this.fatal.error;
      }
      this.wanted = Math.max(this.wanted, 1);
      waitingOn = this.inFlight ?? this.beginFetch();
      const now = nowMs();
      started ??= now;
      const left = started + this.settings.maxWaitMs - now;
      if (left <= 0) {
        throw this.unavailable(now - started);
      }
      await this.changed(left);
    }
  }

  /**
   * Stops every claim and gives back what was never handed out. Resolves with whether a node
   * took something back; never rejects.
   */
  async shutdown(): Promise<boolean> {
    if (this.closed) {
      return false;
    }
    this.closed = true;
    // From here on every claim fails; the IDs from `cur` on were never handed out.
    const tail = this.cur < this.end ? { start: this.cur, end: this.end } : undefined;
    this.end = this.cur;
    this.trigger = NEVER;
    this.notify();
    if (this.inRequest) {
      const deadline = nowMs() + this.settings.maxWaitMs;
      while (this.inRequest && nowMs() < deadline) {
        await this.changed(deadline - nowMs());
      }
    }
    this.givenBack = true;
    const next = this.next;
    this.next = undefined;
    let unused: { start: bigint; end: bigint } | undefined;
    if (tail !== undefined && next !== undefined && tail.end === next.start) {
      unused = { start: tail.start, end: next.end };
    } else {
      unused = next ?? tail;
    }
    return unused === undefined ? false : this.giveBack(unused.start, unused.end);
  }

  /** Gives `start..end` back, when it is the tail of the last range taken for the tag. */
  private async giveBack(start: bigint, end: bigint): Promise<boolean> {
    if (this.lastTaken === undefined || start >= end || end !== this.lastTaken + 1n) {
      return false;
    }
    try {
      return await this.ranges.giveBack(this.tag, start, this.lastTaken, this.lastNode);
    } catch {
      // Best effort: what a node does not take back is a gap, never reissued.
      return false;
    }
  }

  /** {@link take} past the fast path: switch to the next range, or start a refill. */
  private takeSlow(): bigint | undefined {
    const id = this.claim();
    if (id === undefined && !this.closed && !this.lastRange) {
      this.wanted = Math.max(this.wanted, 1);
      if (this.inFlight === undefined) {
        this.beginFetch();
      }
    }
    return id;
  }

  /** An ID of the current range, or of the next one once the current is used up. */
  private claim(): bigint | undefined {
    if (this.cur >= this.end) {
      if (this.closed || this.next === undefined) {
        return undefined;
      }
      this.switchToNext(this.next);
    }
    const id = this.cur;
    this.cur = id + 1n;
    if (id >= this.trigger) {
      this.reachedPrefetchPoint();
    }
    return id;
  }

  private switchToNext(next: Segment): void {
    this.consumedBefore += this.length;
    this.next = undefined;
    this.cur = next.start;
    this.end = next.end;
    this.length = next.length;
    this.lastRange = next.last;
    this.triggerOffset = Math.min(Math.floor(next.length * this.settings.prefetchAt), next.length - 1);
    this.trigger = next.start + BigInt(this.triggerOffset);
    this.rate.observe(this.consumedBefore, Math.floor(nowMs()));
    this.notify();
  }

  /** The prefetch point of the current range was claimed: sample the rate, refill. */
  private reachedPrefetchPoint(): void {
    this.trigger = NEVER;
    this.rate.observe(this.consumedBefore + this.triggerOffset, Math.floor(nowMs()));
    if (!this.closed && this.next === undefined && this.inFlight === undefined && !this.lastRange) {
      this.beginFetch();
    }
  }

  /** Starts refill number `seq` in the background; returns `seq`. */
  private beginFetch(): number {
    const seq = ++this.fetchSeq;
    this.inFlight = seq;
    this.inRequest = false;
    void this.runFetch(seq);
    return seq;
  }

  private endFetch(seq: number): void {
    if (this.inFlight === seq) {
      this.inFlight = undefined;
      this.inRequest = false;
    }
  }

  /** The body of refill `seq`: ask, retry what a retry can fix, install the range. */
  private async runFetch(seq: number): Promise<void> {
    const { maxWaitMs, minStep, maxStep, targetLifetimeMs } = this.settings;
    const backoff = new Backoff(Math.min(Math.max(maxWaitMs / 4, 1), 1_000));
    for (;;) {
      if (this.closed || this.inFlight !== seq) {
        this.endFetch(seq);
        this.notify();
        return;
      }
      const step = planStep(this.rate.rate, minStep, maxStep, targetLifetimeMs, this.wanted);
      this.inRequest = true;
      let taken: Taken;
      try {
        taken = await this.ranges.allocate(this.tag, this.lastTaken, step);
      } catch (error) {
        this.lastError = error;
        if (error instanceof NodeFailedError) {
          this.inRequest = false;
          this.notify();
          await sleep(backoff.next(), true);
          continue;
        }
        this.endFetch(seq);
        this.fatal = { seq, error };
        this.notify();
        return;
      }
      this.lastTaken = taken.last;
      this.lastNode = taken.node;
      this.install(seq, taken);
      return;
    }
  }

  /** Takes in a range refill `seq` brought. */
  private install(seq: number, taken: Taken): void {
    this.endFetch(seq);
    if (this.closed && this.givenBack) {
      // Close already gave back what it had: this range goes back by itself.
      this.notify();
      void this.giveBack(taken.first, taken.last + 1n);
      return;
    }
    const end = taken.last + 1n;
    const length = Number(end - taken.first);
    this.lastError = undefined;
    if (length >= this.wanted) {
      this.wanted = 0;
    }
    // Closed but not yet given back: kept, and close gives it back.
    this.next = { start: taken.first, end, length, node: taken.node, last: end >= MAX_SEGMENT_ID };
    this.notify();
  }

  /** Resolves at the next change (a range in, a refill failed, closed) or after `ms`. */
  private changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private notify(): void {
    if (this.waiters.length === 0) {
      return;
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) {
      wake();
    }
  }

  private exhausted(): TagExhaustedError {
    return new TagExhaustedError(this.tag, `tag \`${this.tag}\` is exhausted`);
  }

  private unavailable(waitedMs: number): UnavailableError {
    const cause = this.lastError ?? this.ranges.lastFailure ?? new Error("timed out waiting for the nodes");
    const why = cause instanceof Error ? cause.message : String(cause);
    return new UnavailableError(
      `no idmint node could serve tag \`${this.tag}\` within ${Math.round(waitedMs)} ms: ${why}`,
      waitedMs,
      cause,
    );
  }
}
