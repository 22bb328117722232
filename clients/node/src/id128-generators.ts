/**
 * UUIDv7 and ULID generators: 128-bit IDs made in this process, with no round trip.
 *
 * The same guarantees as idmint's own generators: the IDs of one generator strictly increase
 * in the order it hands them out, so no generator gives an ID twice. Per ID: the clock's
 * millisecond; a 24-bit counter that starts at a random value below 2^23 on each new
 * millisecond and counts up within it (past 2^24 - 1 it borrows the next millisecond, at most
 * one second ahead of the latest clock reading, then waits for the clock); an optional node field; then random bits
 * from the CSPRNG (`crypto.randomFillSync`, 4 KiB at a time). A clock that goes back changes
 * nothing: the generator counts on from where it was.
 *
 * JavaScript runs a generator on one thread, so it needs no lock. A generator is not shared
 * between worker threads (each has its own module state): generators in different workers
 * are each strictly increasing, and apart only by their random bits unless each is given its
 * own node.
 */

import { randomFillSync } from "node:crypto";

import { ConfigError } from "./errors.js";
import { Id128, MAX_NODE_BITS, TAIL_BITS, type Id128Kind } from "./id128.js";

/** The counter's largest value; one more borrows the next millisecond. */
export const COUNTER_MAX = 2 ** 24 - 1;
/** How far ahead of its clock a generator may run on borrowed milliseconds before it waits. */
export const MAX_LEAD_MS = 1000;
const MS_LIMIT = 2 ** 48;
/** Random words drawn at once: one call into the CSPRNG serves 512 IDs. */
const POOL_WORDS = 1024;

/** The settings of a generator. */
export interface Id128GeneratorOptions {
  /** The node field's width, 0..24 (default 0: none). Costs that many random bits per ID. */
  nodeBits?: number;
  /**
   * A value below 2^nodeBits every ID of the generator carries, so that generators with
   * different nodes never give the same ID, even should their random bits repeat.
   */
  node?: number;
  /** For tests: Unix milliseconds (default `Date.now`). */
  clock?: () => number;
  /** For tests: fills the array with random words (default `crypto.randomFillSync`). */
  random?: (words: Uint32Array) => void;
}

/** Blocks the thread for `ms` (the lead wait: the caller asked for an ID, synchronously). */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** What UUIDv7 and ULID generators share: the clock, the counter, the random pool. */
abstract class Id128Generator {
  /** The kind of ID made. */
  abstract readonly kind: Id128Kind;
  /** The node field's width in bits (0: none). */
  readonly nodeBits: number;
  /** The node field's value (undefined without one). */
  readonly node: number | undefined;

  private readonly clock: () => number;
  private readonly fill: (words: Uint32Array) => void;
  private readonly pool = new Uint32Array(POOL_WORDS);
  private at = POOL_WORDS; // empty: the first ID fills it
  /** The last ID's millisecond and counter: the next ID is above them. */
  private ms = -1;
  private counter = 0;
  /** The latest clock reading that started a millisecond: the lead is measured from it. */
  private clockHigh = -1;
  // The tail after the counter (node field and random bits) as a high part of `hiBits` bits
  // and a low 32-bit word: the node's share of each, and how many random bits each keeps.
  private readonly nodeHi: number;
  private readonly nodeLo: number;
  private readonly randHiMask: number;
  private readonly randLoMask: number;

  constructor(kind: Id128Kind, options: Id128GeneratorOptions = {}) {
    const { nodeBits = 0, node, clock, random } = options;
    if (!Number.isInteger(nodeBits) || nodeBits < 0 || nodeBits > MAX_NODE_BITS) {
      throw new ConfigError("nodeBits", `must be an integer in 0..${MAX_NODE_BITS}, not ${String(nodeBits)}`);
    }
    if (node === undefined) {
      if (nodeBits > 0) {
        throw new ConfigError("node", `nodeBits ${nodeBits} needs a node (0..${2 ** nodeBits - 1})`);
      }
    } else if (!Number.isInteger(node)) {
      throw new ConfigError("node", `must be an integer, not ${String(node)}`);
    } else if (nodeBits === 0) {
      throw new ConfigError("nodeBits", `node ${node} needs nodeBits (1..${MAX_NODE_BITS}): its width in the ID`);
    } else if (node < 0 || node >= 2 ** nodeBits) {
      throw new ConfigError("node", `${node} does not fit nodeBits ${nodeBits} (0..${2 ** nodeBits - 1})`);
    }
    if (clock !== undefined && typeof clock !== "function") {
      throw new ConfigError("clock", "must be a function returning Unix milliseconds");
    }
    if (random !== undefined && typeof random !== "function") {
      throw new ConfigError("random", "must be a function filling a Uint32Array");
    }
    this.nodeBits = nodeBits;
    this.node = nodeBits > 0 ? node : undefined;
    this.clock = clock ?? Date.now;
    this.fill = random ?? randomFillSync;
    const value = node ?? 0;
    const hiBits = TAIL_BITS[kind] - 32; // 18 (UUIDv7) or 24 (ULID)
    if (nodeBits <= hiBits) {
      this.nodeHi = value * 2 ** (hiBits - nodeBits);
      this.nodeLo = 0;
      this.randHiMask = 2 ** (hiBits - nodeBits) - 1;
      this.randLoMask = 0xffffffff;
    } else {
      // Only a UUIDv7's node of 19..24 bits: its low bits spill into the last word.
      const spill = nodeBits - hiBits;
      this.nodeHi = value >>> spill;
      this.nodeLo = ((value & (2 ** spill - 1)) << (32 - spill)) >>> 0;
      this.randHiMask = 0;
      this.randLoMask = 2 ** (32 - spill) - 1;
    }
  }

  /** The next ID: above every ID this generator handed out before. */
  next(): Id128 {
    const now = this.clock();
    let ms = this.ms;
    let counter = this.counter;
    if (now <= ms && counter < COUNTER_MAX && ms >= 0) {
      // The same millisecond, or a clock that went back: count on from the last ID.
      this.counter = ++counter;
    } else {
      this.advance(now);
      ms = this.ms;
      counter = this.counter;
    }
    const hi = this.nodeHi | (this.word() & this.randHiMask);
    const lo = (this.nodeLo | (this.word() & this.randLoMask)) >>> 0;
    return this.compose(ms, counter, hi, lo);
  }

  /** The ID of these fields; `hi` is the tail's high part, `lo` its last word. */
  protected abstract compose(ms: number, counter: number, hi: number, lo: number): Id128;

  /** A new millisecond, or a used-up counter: the next (ms, counter), stored. */
  private advance(now: number): void {
    if (now > this.ms) {
      this.seed(now);
      return;
    }
    if (this.ms < 0 || !Number.isFinite(now)) {
      throw new ConfigError("clock", `${now} is not a time in Unix milliseconds after 1970`);
    }
    // The counter is used up: the next millisecond, counter 0, at most MAX_LEAD_MS ahead of
    // the latest clock reading (waiting for the clock when further). Measured from the latest
    // reading, not this one, as idmint's core does: a clock stepped back leaves the generator
    // counting on, not waiting for the clock to come back.
    const ms = this.ms + 1;
    if (ms >= MS_LIMIT) {
      throw new ConfigError("clock", "the 48 bits of milliseconds are used up");
    }
    while (ms - Math.max(now, this.clockHigh) > MAX_LEAD_MS) {
      blockFor(Math.min(ms - now - MAX_LEAD_MS, 50));
      now = this.clock();
    }
    if (now > this.ms) {
      this.seed(now); // the clock caught up with the last ID meanwhile
    } else {
      this.ms = ms;
      this.counter = 0;
    }
  }

  /**
   * Millisecond `now`, the counter at a random value below 2^23: the ID does not say how many
   * came before it, and at least 2^23 IDs fit in the millisecond.
   */
  private seed(now: number): void {
    if (!Number.isSafeInteger(now) || now >= MS_LIMIT) {
      throw new ConfigError("clock", `${now} is not a time 48 bits of milliseconds hold`);
    }
    this.ms = now;
    this.clockHigh = now;
    this.counter = this.word() >>> 9;
  }

  /** 32 random bits from the pool, refilled when used up. */
  private word(): number {
    if (this.at === POOL_WORDS) {
      this.fill(this.pool);
      this.at = 0;
    }
    return this.pool[this.at++]!;
  }
}

/**
 * UUIDv7 (RFC 9562): version 7, RFC variant; the 24-bit counter in rand_a and the top of
 * rand_b, then the node field and 50 - nodeBits random bits.
 *
 * ```ts
 * const uuids = new Uuid7Generator();
 * uuids.next().toString(); // "019ac8a4-5e2b-7c01-b3f2-..."
 * ```
 */
export class Uuid7Generator extends Id128Generator {
  readonly kind = "uuidv7";

  /** A generator; throws {@link ConfigError} for a bad `node` or `nodeBits`. */
  constructor(options: Id128GeneratorOptions = {}) {
    super("uuidv7", options);
  }

  protected compose(ms: number, counter: number, hi: number, lo: number): Id128 {
    return new Id128(
      "uuidv7",
      Math.floor(ms / 65536),
      ((ms & 0xffff) * 65536 + 0x7000 + (counter >>> 12)) >>> 0,
      (0x80000000 | ((counter & 0xfff) << 18) | hi) >>> 0,
      lo,
    );
  }
}

/**
 * ULID: 48 bits of milliseconds, the 24-bit counter, the node field, 56 - nodeBits random bits.
 *
 * ```ts
 * const ulids = new UlidGenerator();
 * ulids.next().toString(); // "01KB4A8QJB..."
 * ```
 */
export class UlidGenerator extends Id128Generator {
  readonly kind = "ulid";

  /** A generator; throws {@link ConfigError} for a bad `node` or `nodeBits`. */
  constructor(options: Id128GeneratorOptions = {}) {
    super("ulid", options);
  }

  protected compose(ms: number, counter: number, hi: number, lo: number): Id128 {
    return new Id128(
      "ulid",
      Math.floor(ms / 65536),
      ((ms & 0xffff) * 65536 + (counter >>> 8)) >>> 0,
      (((counter & 0xff) << 24) | hi) >>> 0,
      lo,
    );
  }
}
