/**
 * Ranges of segment IDs from the nodes (crates/idmint-client's remote_ranges.rs).
 *
 * Each range is `IDMINT.RANGE tag n ABOVE last`, `last` the end of the previous range this
 * client got for the tag. Nodes each hold their own part of a tag's sequence, so a node the
 * client fails over to may be behind the one it left; `ABOVE` makes it serve IDs above what
 * the client already holds, so the client's IDs keep increasing.
 */

import type { Settings } from "./config.js";
import { RefusedError } from "./errors.js";
import { BadReply, CountRefused, type Nodes } from "./nodes.js";
import type { Reply } from "./resp.js";
import type { Stats } from "./stats.js";

/** The largest unsigned 64-bit value: a range ending there breaks the contract. */
const U64_MAX = (1n << 64n) - 1n;

/** A range a node handed out: `first..=last`, from node `node`. */
export interface Taken {
  readonly first: bigint;
  readonly last: bigint;
  readonly node: number;
}

/** `[first, last]` of two integers, or {@link BadReply}. */
function pairOfIds(reply: Reply): void {
  if (!Array.isArray(reply) || reply.length !== 2 || typeof reply[0] !== "bigint" || typeof reply[1] !== "bigint") {
    throw new BadReply("IDMINT.RANGE answered something other than [first, last]");
  }
}

/** Ranges and give-backs over the nodes, for every tag of a client. */
export class RemoteRanges {
  constructor(
    private readonly nodes: Nodes,
    private readonly settings: Settings,
    private readonly stats: Stats,
  ) {}

  /** The last failure of any node. */
  get lastFailure(): Error | undefined {
    return this.nodes.lastFailure;
  }

  /**
   * A run of at most `step` IDs of `tag`, all above `above` (the last ID of the previous
   * range, if any). A reply that is not such a run is refused, never handed out. Rejects as
   * {@link Nodes.call} does.
   */
  async allocate(tag: string, above: bigint | undefined, step: number): Promise<Taken> {
    let n = Math.min(step, this.nodes.largestCount);
    for (;;) {
      const args = above === undefined ? ["IDMINT.RANGE", tag, n] : ["IDMINT.RANGE", tag, n, "ABOVE", above];
      let node: number;
      let reply: Reply;
      try {
        ({ node, reply } = await this.nodes.call(args, this.settings.maxWaitMs, pairOfIds));
      } catch (error) {
        // The nodes' `--max-count` is below `maxStep`: ask for less, from now on, rather than
        // fail every refill once the rate grows.
        if (error instanceof CountRefused && error.largest < n) {
          this.nodes.largestCount = error.largest;
          n = error.largest;
          continue;
        }
        throw error;
      }
      const [first, last] = reply as [bigint, bigint];
      const floor = above ?? 0n;
      if (first > last || first <= floor || last >= U64_MAX || last - first >= BigInt(n)) {
        // A node that breaks the contract: never hand its IDs out.
        const label = this.nodes.label(node);
        throw new RefusedError(
          `${label} answered IDMINT.RANGE ${tag} ${n} with ${first}..=${last}, not a run of at most ${n} above ${floor}`,
          { node: label, nodeCode: "store_invalid" },
        );
      }
      this.stats.ranges++;
      this.stats.rangeIds += Number(last - first + 1n);
      return { first, last, node };
    }
  }

  /**
   * Gives `first..=last` of `tag` back to `node` (`IDMINT.GIVEBACK`): the node takes it when it
   * is the unused tail of the last run that connection took and nothing was taken after it.
   * Resolves with whether it did.
   */
  async giveBack(tag: string, first: bigint, last: bigint, node: number): Promise<boolean> {
    const reply = await this.nodes.callOn(node, ["IDMINT.GIVEBACK", tag, first, last]);
    const taken = reply === 1n;
    if (taken) {
      this.stats.givenBack += Number(last - first + 1n);
    }
    return taken;
  }
}
