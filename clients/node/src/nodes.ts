/**
 * The nodes a client knows, and failing over between them (crates/idmint-client's nodes.rs).
 *
 * A request goes to the node that answered last (so a client stays where it is), then to the
 * others in order. A node that fails (no connection, a timeout, a dropped connection, an
 * answer that cannot be read, or `-TRYAGAIN`: its store is unavailable) is avoided for a
 * back-off that doubles at each further failure (failures of requests in flight together
 * count once) and resets when it answers. When every node is avoided, only the one whose
 * back-off ends first is tried, after a short pause: the client never sits idle while a node
 * might answer, and never hammers a cluster that is down.
 *
 * A node's refusal is not a failure of the node: another node is tried, but when every node
 * refused in the same round the refusal is the answer at once, without waiting out
 * `maxWaitMs`. Refusals are the answers no retry changes: a wrong token (`-WRONGPASS`,
 * `-NOAUTH`, `-NOPERM`), a bad tag or count, a used-up tag, a node's tag cap, a command the
 * node does not know. Any other error reply is the node's failure.
 *
 * A request whose node died while it was in flight may or may not have been served there. It
 * is sent again to the next node: a range the dead node handed out is lost (a gap, never
 * reissued), never given to anyone else.
 */

import { Connection, ConnectionLost, type Address } from "./connection.js";
import type { Settings } from "./config.js";
import {
  AuthError,
  ClosedError,
  DatedError,
  IdMintError,
  NodeFailedError,
  PeriodUnavailableError,
  PermutedError,
  REFUSED_CODES,
  RefusedError,
  TagExhaustedError,
  type NodeErrorCode,
} from "./errors.js";
import { ReplyError, type Arg, type Reply } from "./resp.js";
import type { Stats } from "./stats.js";
import { sleep } from "./time.js";

/** What `call` resolves with: the reply and the node that gave it. */
export interface Answer {
  readonly node: number;
  readonly reply: Reply;
}

/** A reply the caller cannot use (a node breaking the protocol): that node's failure. */
export class BadReply extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadReply";
  }
}

/** The starts of the `-ERR` refusals that carry no code: the words of Redis and of idmint. */
const REFUSALS = [
  "invalid tag",
  "invalid argument",
  "unknown tag",
  "count must be",
  "unknown command",
  "wrong number of arguments",
  "syntax error",
  "value is not an integer",
  "first must not be",
];

/** What a node without tokens answers a token. */
const NO_PASSWORD = "AUTH <password> called without";

/** The `N` of a node's "count must be between 1 and N" refusal. */
const COUNT_LIMIT = /count must be between 1 and (\d+)/i;

/** A node's refusal of a count above its `--max-count`. */
export class CountRefused extends RefusedError {
  /** The largest count the node grants. */
  readonly largest: number;

  constructor(message: string, node: string, largest: number) {
    super(message, { node, nodeCode: "invalid_count" });
    this.largest = largest;
  }
}

/**
 * The refusal an error reply is, or `undefined` when it is the node's failure. See the module
 * documentation for which replies are refusals.
 */
export function refusal(reply: ReplyError, node: string): RefusedError | undefined {
  const { prefix, detail } = reply;
  if (prefix === "WRONGPASS" || prefix === "NOAUTH" || prefix === "NOPERM") {
    return new AuthError(`${node} refused the token: ${reply.line}`, node);
  }
  if (prefix !== "ERR") {
    return undefined;
  }
  if (detail.startsWith(NO_PASSWORD)) {
    return new AuthError(`${node} has no tokens, and a token was given: ${reply.line}`, node);
  }
  const word = detail.split(" ", 1)[0] as NodeErrorCode;
  const tag = (): string => detail.split("`")[1] ?? "?";
  if (REFUSED_CODES.has(word)) {
    const text = `${node} refused: ${detail}`;
    switch (word) {
      case "tag_exhausted":
        return new TagExhaustedError(tag(), text, node);
      case "period_unavailable":
        return new PeriodUnavailableError(tag(), text, node);
      case "dated":
        return new DatedError(tag(), text, node);
      case "permuted":
        return new PermutedError(
          `${node} hands out its IDs permuted (serve --permutation-key-file): this client keeps ` +
            "segment IDs as runs of consecutive IDs, which permuted IDs are not; take segment IDs " +
            `from the nodes themselves (IDMINT.NEXT tag COUNT n): ${detail}`,
          node,
        );
      default:
        return new RefusedError(text, { node, nodeCode: word });
    }
  }
  const lower = detail.toLowerCase();
  if (!REFUSALS.some((start) => lower.startsWith(start)) && !COUNT_LIMIT.test(detail)) {
    return undefined;
  }
  const limit = COUNT_LIMIT.exec(detail);
  const largest = limit === null ? 0 : Number(limit[1]);
  if (largest > 0) {
    return new CountRefused(`${node} refused: ${detail}`, node, largest);
  }
  const nodeCode: NodeErrorCode | undefined = lower.startsWith("invalid tag")
    ? "invalid_tag"
    : lower.startsWith("unknown tag")
      ? "unknown_tag"
      : lower.startsWith("invalid argument")
        ? "invalid_argument"
        : undefined;
  return new RefusedError(`${node} refused: ${reply.line}`, { node, nodeCode });
}

/** One node: its address, its one connection, its health. */
class Node {
  readonly address: Address;
  connection: Connection | undefined;
  opening: Promise<Connection> | undefined;
  /** Avoided until then (`performance.now()` ms); 0 when not avoided. */
  downUntil = 0;
  /** The next back-off, ms; 0 before any failure. */
  backoff = 0;

  constructor(address: Address) {
    this.address = address;
  }
}

/** The nodes and their health. */
export class Nodes {
  private readonly nodes: Node[];
  private preferred = 0;
  private closed = false;
  /**
   * The largest count the nodes grant (their `--max-count`), once one refused more: ranges and
   * snowflake batches ask for at most this many from then on.
   */
  largestCount = Infinity;
  /** The last failure of any node, for the error of a call that waited in vain. */
  lastFailure: NodeFailedError | undefined;
  private readonly settings: Settings;
  private readonly stats: Stats;

  constructor(settings: Settings, stats: Stats) {
    this.settings = settings;
    this.stats = stats;
    this.nodes = settings.nodes.map((a) => new Node(a));
  }

  /** The address of node `i`, `host:port`. */
  label(i: number): string {
    return this.nodes[i]?.address.label ?? "?";
  }

  /** The node the client is on. */
  get current(): string {
    return this.label(this.preferred);
  }

  /**
   * Sends `args` to the nodes in turn until one answers, for at most `maxWaitMs`. Resolves
   * with the answer and the node. Rejects with a refusal ({@link RefusedError} and its kinds)
   * or, when no node served in time, with the last {@link NodeFailedError}; with
   * {@link ClosedError} once closed.
   */
  async call(args: readonly Arg[], maxWaitMs: number, check?: (reply: Reply) => void): Promise<Answer> {
    const deadline = performance.now() + maxWaitMs;
    let pause = 10;
    for (;;) {
      let last: Error | undefined;
      let allRefused = true;
      for (const i of this.order()) {
        try {
          const reply = await this.tryNode(i, args, check);
          if (this.preferred !== i) {
            this.preferred = i;
            this.stats.failovers++;
          }
          return { node: i, reply };
        } catch (error) {
          if (error instanceof NodeFailedError) {
            allRefused = false;
          } else if (!(error instanceof RefusedError)) {
            throw error;
          }
          last = error;
        }
        if (performance.now() >= deadline) {
          break;
        }
      }
      const error = last ?? new NodeFailedError("?", "no node configured");
      if (allRefused || performance.now() >= deadline) {
        throw error;
      }
      await sleep(Math.min(pause, Math.max(0, deadline - performance.now())));
      pause = Math.min(pause * 2, 200);
    }
  }

  /** Sends `args` to node `i` only (`IDMINT.GIVEBACK` goes where the range came from). */
  callOn(i: number, args: readonly Arg[]): Promise<Reply> {
    return this.tryNode(i, args);
  }

  /** Closes every connection; later calls reject with {@link ClosedError}. */
  close(): void {
    this.closed = true;
    for (const node of this.nodes) {
      node.connection?.close();
      node.connection = undefined;
    }
  }

  /**
   * The nodes to try, in order: the preferred one, then the others, those not avoided first;
   * when every node is avoided, only the one whose back-off ends first.
   */
  private order(): number[] {
    const now = performance.now();
    const n = this.nodes.length;
    const ready: number[] = [];
    let soonest = -1;
    let soonestAt = Infinity;
    for (let k = 0; k < n; k++) {
      const i = (this.preferred + k) % n;
      const until = this.nodes[i]?.downUntil ?? 0;
      if (until > now) {
        if (until < soonestAt) {
          soonestAt = until;
          soonest = i;
        }
      } else {
        ready.push(i);
      }
    }
    if (ready.length === 0 && soonest >= 0) {
      ready.push(soonest);
    }
    return ready;
  }

  /**
   * One attempt on node `i`, bounded by `callTimeoutMs` (connecting included). Resolves with
   * a reply that is not an error; rejects with a refusal or a {@link NodeFailedError}.
   * `check` refuses a reply of the wrong shape (it throws {@link BadReply}).
   */
  private async tryNode(i: number, args: readonly Arg[], check?: (reply: Reply) => void): Promise<Reply> {
    if (this.closed) {
      throw new ClosedError();
    }
    const node = this.nodes[i];
    if (node === undefined) {
      throw new RefusedError(`no node ${i}`);
    }
    const label = node.address.label;
    const timeoutMs = this.settings.callTimeoutMs;
    let used: Connection | undefined;
    let timer: NodeJS.Timeout | undefined;
    let reply: Reply;
    try {
      const attempt = (async (): Promise<Reply> => {
        used = await this.connection(node);
        return used.call(args);
      })();
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new NodeFailedError(label, `${label} did not answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      reply = await Promise.race([attempt, timeout]);
    } catch (error) {
      if (error instanceof ReplyError) {
        // The answer to AUTH, as a connection's first command.
        reply = error;
      } else if (error instanceof NodeFailedError) {
        throw this.failed(i, error, used);
      } else if (error instanceof ConnectionLost) {
        throw this.failed(i, new NodeFailedError(label, `${label} failed: ${error.message}`, error), used);
      } else if (error instanceof IdMintError) {
        throw error;
      } else {
        throw this.failed(i, new NodeFailedError(label, `${label} failed: ${String(error)}`, error), used);
      }
    } finally {
      clearTimeout(timer);
    }
    if (reply instanceof ReplyError) {
      const refused = refusal(reply, label);
      if (refused !== undefined) {
        this.answered(node);
        throw refused;
      }
      if (reply.prefix === "TRYAGAIN") {
        // The node answers; its store does not. Keep the connection (and what it may give
        // back), avoid the node for a while.
        throw this.failed(i, new NodeFailedError(label, `${label} is unavailable: ${reply.line}`), undefined);
      }
      throw this.failed(i, new NodeFailedError(label, `${label} failed: ${reply.line}`), used);
    }
    if (check !== undefined) {
      try {
        check(reply);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        throw this.failed(i, new NodeFailedError(label, `${label} answered badly: ${why}`, error), used);
      }
    }
    this.answered(node);
    return reply;
  }

  /** The open connection of `node`, or a new one (one opening at a time, shared). */
  private async connection(node: Node): Promise<Connection> {
    if (node.connection?.usable) {
      return node.connection;
    }
    if (node.opening === undefined) {
      const { token, caPem, callTimeoutMs } = this.settings;
      node.opening = Connection.open(node.address, token, caPem, callTimeoutMs)
        .then((connection) => {
          if (this.closed) {
            connection.close();
            throw new ClosedError();
          }
          node.connection = connection;
          return connection;
        })
        .finally(() => {
          node.opening = undefined;
        });
    }
    return node.opening;
  }

  private answered(node: Node): void {
    node.downUntil = 0;
    node.backoff = 0;
  }

  /**
   * Marks node `i` failed: it is avoided for a while, and `connection` (the one the attempt
   * used, when it is to blame) is retired so the next attempt opens a new one (as the Rust
   * client drops its handle: the other requests in flight on it still get their answers).
   */
  private failed(i: number, error: NodeFailedError, connection: Connection | undefined): NodeFailedError {
    this.lastFailure = error;
    const node = this.nodes[i];
    if (node !== undefined) {
      const now = performance.now();
      // Requests that were in flight together fail together: one failure, one step.
      if (node.downUntil <= now) {
        const { backoffMs, maxBackoffMs } = this.settings;
        const backoff = Math.min(node.backoff === 0 ? backoffMs : node.backoff, maxBackoffMs);
        node.downUntil = now + backoff;
        node.backoff = Math.min(backoff * 2, maxBackoffMs);
      }
      this.stats.nodeFailed(node.address.label);
      if (connection !== undefined) {
        connection.retire(this.settings.callTimeoutMs);
        if (node.connection === connection) {
          node.connection = undefined;
        }
      }
    }
    return error;
  }
}
