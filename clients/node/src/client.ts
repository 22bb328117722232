/** The client. */

import { toCallerError } from "./caller-errors.js";
import { settings, type IdKind, type IdMintOptions, type IdOf, type Settings } from "./config.js";
import { ClosedError, DatedError } from "./errors.js";
import type { Id128 } from "./id128.js";
import { UlidGenerator, Uuid7Generator } from "./id128-generators.js";
import { BadReply, Nodes } from "./nodes.js";
import { RemoteRanges } from "./remote-ranges.js";
import type { Reply } from "./resp.js";
import { Snowflakes } from "./snowflakes.js";
import { Stats, type ClientStats } from "./stats.js";
import { checkTag } from "./tag.js";
import { TagBuffer } from "./tag-buffer.js";
import { nowMs } from "./time.js";

/** `IDMINT.NEXT tag FORMAT INTEGER`'s answer: one ID, or a list of one. */
function oneId(reply: Reply): void {
  const id = Array.isArray(reply) && reply.length === 1 ? reply[0] : reply;
  if (typeof id !== "bigint" || id <= 0n) {
    throw new BadReply("IDMINT.NEXT answered something other than one ID");
  }
}

/**
 * A client of idmint nodes that hands IDs out of its own memory and fails over between them.
 *
 * Segment IDs (`next(tag)`) come from a double buffer per tag, refilled from the nodes in the
 * background, so a call finds its ID in memory nearly every time; snowflakes come from small
 * batches that never get older than `snowflakeMaxAgeMs`. IDs are `bigint` by default, decimal
 * strings with `ids: "string"`: never a `number`, which cannot hold every 64-bit ID.
 *
 * Every async method rejects with an {@link IdMintError} (see its `code`). Call
 * {@link IdMint.close} when done: it gives the IDs held but never handed out back to the nodes.
 *
 * ```ts
 * const ids = new IdMint({ nodes: ["redis://10.0.0.1:6380", "redis://10.0.0.2:6380"] });
 * const orderId = await ids.next("orders"); // 1234n
 * await ids.close();
 * ```
 */
export class IdMint<K extends IdKind = "bigint"> {
  private readonly settings: Settings;
  private readonly stats_: Stats;
  private readonly nodes: Nodes;
  private readonly ranges: RemoteRanges;
  private readonly snowflakes_: Snowflakes;
  private readonly buffers = new Map<string, TagBuffer>();
  /** Dated tags: the nodes refused them a range; their IDs are taken one call at a time. */
  private readonly dated = new Set<string>();
  private readonly strings: boolean;
  /** 128-bit IDs are made here: one generator of each kind per client. */
  private readonly uuid7s = new Uuid7Generator();
  private readonly ulids = new UlidGenerator();
  private closed = false;

  /**
   * A client of `options.nodes`. Opens no connection yet (the first call does). Throws
   * {@link ConfigError} naming the first setting that cannot work.
   */
  constructor(options: IdMintOptions<K>) {
    this.settings = settings(options);
    this.strings = this.settings.ids === "string";
    this.stats_ = new Stats(this.settings.nodes.map((n) => n.label));
    this.nodes = new Nodes(this.settings, this.stats_);
    this.ranges = new RemoteRanges(this.nodes, this.settings, this.stats_);
    this.snowflakes_ = new Snowflakes(this.nodes, this.settings, this.stats_);
  }

  /**
   * The next segment ID of `tag`: above every ID this client handed out for it before,
   * unique across every client and node. From memory nearly always; otherwise after waiting
   * (at most `maxWaitMs`) for a range.
   *
   * A dated tag (made with a `period` on the nodes) is the exception: a range kept here would
   * outlive its period, so each of its IDs is taken from a node (`IDMINT.NEXT`), one round
   * trip each.
   */
  next(tag: string): Promise<IdOf<K>> {
    const buffer = this.buffers.get(tag);
    if (buffer !== undefined) {
      const id = buffer.take();
      if (id !== undefined) {
        return Promise.resolve(this.out(id));
      }
    }
    return this.nextSlow(tag);
  }

  /**
   * The next ID of `tag` if one is in memory, without waiting and without a Promise:
   * `undefined` otherwise (a refill is then started; `await next(tag)` waits for it). Always
   * `undefined` for a dated tag. The fastest way to draw many IDs:
   * `ids.tryNext(tag) ?? (await ids.next(tag))`. Throws {@link ClosedError} once closed.
   */
  tryNext(tag: string): IdOf<K> | undefined {
    const id = this.buffer(tag).take();
    if (id === undefined) {
      this.checkOpen();
      return undefined;
    }
    return this.out(id);
  }

  /** A handle on one tag, for a loop that draws many of its IDs (no lookup by name per call). */
  tag(tag: string): TagIds<K> {
    return new TagIds(this, this.buffer(tag));
  }

  /** One snowflake: above every snowflake this client handed out (unless the nodes permute). */
  snowflake(): Promise<IdOf<K>> {
    if (!this.closed) {
      const id = this.snowflakes_.takeOne();
      if (id !== undefined) {
        return Promise.resolve(this.out(id));
      }
    }
    return this.snowflakes(1).then((ids) => ids[0] as IdOf<K>);
  }

  /** `n` snowflakes (1 ..= 10,000), increasing (in the nodes' order when they permute). */
  async snowflakes(n: number): Promise<Array<IdOf<K>>> {
    this.checkOpen();
    const ids = await this.snowflakes_.take(n);
    return this.strings ? (ids.map(String) as Array<IdOf<K>>) : (ids as Array<IdOf<K>>);
  }

  /**
   * A UUIDv7, made in this process (no node is asked, so no Promise): above every UUIDv7
   * this client made before. `toString()` gives the canonical text. Needs no node, so it
   * works after close too, as in every idmint library.
   */
  uuid7(): Id128 {
    return this.uuid7s.next();
  }

  /**
   * A ULID, made in this process (no node is asked, so no Promise): above every ULID this
   * client made before. `toString()` gives its 26-character text. Works after close too.
   */
  ulid(): Id128 {
    return this.ulids.next();
  }

  /** The client's counters. */
  stats(): ClientStats {
    return this.stats_.snapshot(this.nodes.current);
  }

  /**
   * Stops handing out IDs and gives every tag's unused IDs back to the node that handed them
   * out, where it can still take them (nothing taken there since). Resolves with how many tags
   * gave back; never rejects. Later calls reject with {@link ClosedError}.
   */
  async close(): Promise<number> {
    if (this.closed) {
      return 0;
    }
    this.closed = true;
    this.snowflakes_.clear();
    // Every tag at once: a node that hangs costs one wait, not one per tag.
    const given = await Promise.all([...this.buffers.values()].map((buffer) => buffer.shutdown()));
    this.nodes.close();
    return given.filter(Boolean).length;
  }

  /** @internal The wait of `next` and {@link TagIds.next}: a range, or a dated tag's ID from a node. */
  async nextSlow(tag: string, known?: TagBuffer): Promise<IdOf<K>> {
    if (this.dated.has(tag)) {
      return this.out(await this.datedNext(tag));
    }
    const buffer = known ?? this.buffer(tag);
    try {
      return this.out(await buffer.nextWaiting());
    } catch (error) {
      if (!(error instanceof DatedError)) {
        throw toCallerError(error, 0);
      }
      this.dated.add(tag);
      // Shut, so the fast path finds nothing and starts no refill the nodes refuse.
      await buffer.shutdown();
      return this.out(await this.datedNext(tag));
    }
  }

  /** One ID of the dated tag `tag`, from the first node that answers within `maxWaitMs`. */
  private async datedNext(tag: string): Promise<bigint> {
    this.checkOpen();
    const started = nowMs();
    try {
      const { reply } = await this.nodes.call(["IDMINT.NEXT", tag, "FORMAT", "INTEGER"], this.settings.maxWaitMs, oneId);
      return (Array.isArray(reply) ? reply[0] : reply) as bigint;
    } catch (error) {
      throw toCallerError(error, nowMs() - started);
    }
  }

  /** The buffer of `tag`, made on first use. */
  private buffer(tag: string): TagBuffer {
    const known = this.buffers.get(tag);
    if (known !== undefined) {
      return known;
    }
    this.checkOpen();
    checkTag(tag);
    const buffer = new TagBuffer(tag, this.settings, this.ranges);
    this.buffers.set(tag, buffer);
    return buffer;
  }

  private checkOpen(): void {
    if (this.closed) {
      throw new ClosedError();
    }
  }

  /** @internal An ID as the program asked for them. */
  out(id: bigint): IdOf<K> {
    return (this.strings ? id.toString() : id) as IdOf<K>;
  }
}

/**
 * One tag's IDs, for a loop that draws many: no lookup by name per call. It draws from the
 * client's buffer of the tag, so it stops (with {@link ClosedError}) once the client closed.
 */
export class TagIds<K extends IdKind = "bigint"> {
  /** @internal */
  constructor(
    private readonly client: IdMint<K>,
    private readonly buffer: TagBuffer,
  ) {}

  /** The tag. */
  get name(): string {
    return this.buffer.tag;
  }

  /** The next ID of the tag; see {@link IdMint.next}. */
  next(): Promise<IdOf<K>> {
    const id = this.buffer.take();
    if (id !== undefined) {
      return Promise.resolve(this.client.out(id));
    }
    return this.client.nextSlow(this.buffer.tag, this.buffer);
  }

  /** The next ID if one is in memory; see {@link IdMint.tryNext}. */
  tryNext(): IdOf<K> | undefined {
    const id = this.buffer.take();
    return id === undefined ? this.client.tryNext(this.buffer.tag) : this.client.out(id);
  }
}
