/**
 * Snowflakes in small batches that never get old (crates/idmint-client's snowflakes.rs).
 *
 * A snowflake carries the time it was made; a batch kept for long would hand out IDs whose
 * time lies in the past. So what is left of a batch is thrown away unused once it is older
 * than `snowflakeMaxAgeMs` (counted from when it was asked for), and a call that finds none
 * fresh asks a node for a new batch and takes its own share of the answer whatever the round
 * trip took. The snowflakes one client hands out strictly increase: an ID not above the last
 * one handed out (a batch from a node whose clock is behind) is skipped.
 *
 * Unless the nodes hand out their IDs permuted (`serve --permutation-key-file`): then no ID
 * sorts by time, and keeping them in order would skip nearly all of them. The client asks
 * once, before its first batch, with `IDMINT.SPACE`, and hands permuted batches out as they
 * come. One batch is asked for at a time: callers that find the batch empty wait for it.
 */

import type { Settings } from "./config.js";
import { InvalidArgumentError, RefusedError } from "./errors.js";
import { BadReply, CountRefused, type Nodes } from "./nodes.js";
import type { Reply } from "./resp.js";
import type { Stats } from "./stats.js";
import { OutOfTime, toCallerError } from "./caller-errors.js";
import { nowMs, sleep } from "./time.js";

/** The most snowflakes one call may ask for: the nodes' default `--max-count`. */
export const MAX_SNOWFLAKES = 10_000;

/** `IDMINT.SNOWFLAKE COUNT n`'s answer: 1 to `n` positive integers. */
function idsUpTo(n: number): (reply: Reply) => void {
  return (reply) => {
    if (!Array.isArray(reply) || reply.length === 0 || reply.length > n) {
      throw new BadReply(`IDMINT.SNOWFLAKE COUNT ${n} answered something other than 1 to ${n} IDs`);
    }
    for (const id of reply) {
      if (typeof id !== "bigint" || id <= 0n) {
        throw new BadReply("IDMINT.SNOWFLAKE answered a value that is not an ID");
      }
    }
  };
}

/** Whether `IDMINT.SPACE`'s answer (a flat list of keys and values) says `permuted 1`. */
function saysPermuted(reply: Reply): boolean {
  if (!Array.isArray(reply)) {
    return false;
  }
  for (let i = 0; i + 1 < reply.length; i += 2) {
    if (reply[i] === "permuted") {
      return reply[i + 1] === 1n;
    }
  }
  return false;
}

/** The batch in hand, and the asking for the next one. */
export class Snowflakes {
  private ids: bigint[] = [];
  private at = 0;
  private askedAt = -Infinity;
  private last = 0n;
  /** Whether the nodes hand out permuted IDs; `undefined` until asked. */
  private permuted: boolean | undefined;
  /** The request for a batch in flight; settles (never rejects) when it ends. */
  private asking: Promise<void> | undefined;

  constructor(
    private readonly nodes: Nodes,
    private readonly settings: Settings,
    private readonly stats: Stats,
  ) {}

  /** One snowflake from a fresh batch, or `undefined` when there is none. Never waits. */
  takeOne(): bigint | undefined {
    if (this.at >= this.ids.length || nowMs() - this.askedAt > this.settings.snowflakeMaxAgeMs) {
      return undefined;
    }
    while (this.at < this.ids.length) {
      const id = this.ids[this.at++] as bigint;
      if (this.permuted === true) {
        return id;
      }
      if (id > this.last) {
        this.last = id;
        return id;
      }
    }
    return undefined;
  }

  /** Throws away what is held (at close). */
  clear(): void {
    this.ids = [];
    this.at = 0;
  }

  /** `n` snowflakes (1 ..= 10,000), increasing, none from a batch kept past its age. */
  async take(n: number): Promise<bigint[]> {
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_SNOWFLAKES) {
      throw new InvalidArgumentError("n", `between 1 and ${MAX_SNOWFLAKES} at once, not ${String(n)}`);
    }
    const started = nowMs();
    const out: bigint[] = [];
    this.takeFresh(n, out);
    while (out.length < n) {
      if (this.asking !== undefined) {
        await this.asking;
        this.takeFresh(n, out);
        continue;
      }
      let done!: () => void;
      this.asking = new Promise((resolve) => (done = resolve));
      try {
        await this.ask(n, out, started);
      } catch (error) {
        throw toCallerError(error, nowMs() - started);
      } finally {
        this.asking = undefined;
        done();
      }
    }
    return out;
  }

  /** Asks a node for a batch and takes this call's share of it, however old it got. */
  private async ask(n: number, out: bigint[], started: number): Promise<void> {
    const left = (): number => this.settings.maxWaitMs - (nowMs() - started);
    if (left() <= 0) {
      throw new OutOfTime("no fresh snowflake batch in time");
    }
    if (this.permuted === undefined) {
      this.permuted = await this.askPermuted(left());
    }
    let want = Math.min(Math.max(this.settings.snowflakeBatch, n - out.length), this.nodes.largestCount);
    let askedAt: number;
    let reply: Reply;
    for (;;) {
      askedAt = nowMs();
      try {
        ({ reply } = await this.nodes.call(["IDMINT.SNOWFLAKE", "COUNT", want], Math.max(left(), 1), idsUpTo(want)));
        break;
      } catch (error) {
        // A batch above the nodes' `--max-count`: ask for what they grant (the rest of a
        // large `snowflakes(n)` comes in further batches).
        if (error instanceof CountRefused && error.largest < want) {
          this.nodes.largestCount = error.largest;
          want = error.largest;
          continue;
        }
        throw error;
      }
    }
    this.stats.snowflakeBatches++;
    this.ids = reply as bigint[];
    this.at = 0;
    this.askedAt = askedAt;
    const before = out.length;
    this.takeOwn(n, out);
    if (out.length === before) {
      // Every ID of the batch sorts below one handed out already (a node whose clock is
      // behind the last one's): let time pass before asking again.
      await sleep(1);
    }
  }

  /** Whether the nodes hand out permuted IDs; false from a node that does not know the command. */
  private async askPermuted(maxWaitMs: number): Promise<boolean> {
    try {
      const { reply } = await this.nodes.call(["IDMINT.SPACE"], Math.max(maxWaitMs, 1));
      return saysPermuted(reply);
    } catch (error) {
      if (error instanceof RefusedError && error.message.includes("unknown command")) {
        return false;
      }
      throw error;
    }
  }

  /** Moves fresh IDs into `out`, up to `n` there. */
  private takeFresh(n: number, out: bigint[]): void {
    if (nowMs() - this.askedAt > this.settings.snowflakeMaxAgeMs) {
      this.clear();
    }
    this.takeOwn(n, out);
  }

  /** Moves IDs into `out`, up to `n` there, however old: for the call that asked. */
  private takeOwn(n: number, out: bigint[]): void {
    while (out.length < n && this.at < this.ids.length) {
      const id = this.ids[this.at++] as bigint;
      if (this.permuted === true) {
        out.push(id);
      } else if (id > this.last) {
        this.last = id;
        out.push(id);
      }
    }
  }
}
