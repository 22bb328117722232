/** What a client counts, for the program that embeds it: read with `IdMint.stats()`. */

/** A snapshot of a client's counters. */
export interface ClientStats {
  /** Ranges of segment IDs taken from nodes. */
  readonly ranges: number;
  /** IDs in those ranges. */
  readonly rangeIds: number;
  /** Snowflake batches taken. */
  readonly snowflakeBatches: number;
  /** Times the client moved to another node. */
  readonly failovers: number;
  /** IDs given back at close. */
  readonly givenBack: number;
  /** Each node's address and the requests it failed. */
  readonly nodeFailures: ReadonlyArray<{ readonly node: string; readonly failures: number }>;
  /** The node the client is on, `host:port`. */
  readonly currentNode: string;
}

/** The live counters of one client. */
export class Stats {
  ranges = 0;
  rangeIds = 0;
  snowflakeBatches = 0;
  failovers = 0;
  givenBack = 0;
  private readonly failures: Map<string, number>;

  constructor(labels: readonly string[]) {
    this.failures = new Map(labels.map((label) => [label, 0]));
  }

  nodeFailed(label: string): void {
    this.failures.set(label, (this.failures.get(label) ?? 0) + 1);
  }

  snapshot(currentNode: string): ClientStats {
    return {
      ranges: this.ranges,
      rangeIds: this.rangeIds,
      snowflakeBatches: this.snowflakeBatches,
      failovers: this.failovers,
      givenBack: this.givenBack,
      nodeFailures: [...this.failures].map(([node, failures]) => ({ node, failures })),
      currentNode,
    };
  }
}
