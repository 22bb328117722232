/**
 * What a client is told: the nodes, the credentials, and how much it keeps in memory. The
 * defaults and the checks are those of the Rust client (crates/idmint-client, `ClientConfig`).
 */

import { isIP } from "node:net";

import type { Address } from "./connection.js";
import { ConfigError } from "./errors.js";

/** How IDs are handed to the program: `bigint` (the default) or decimal strings. */
export type IdKind = "bigint" | "string";

/** The type of an ID of kind `K`. */
export type IdOf<K extends IdKind> = K extends "string" ? string : bigint;

/** How an {@link IdMint} reaches idmint and how it buffers. Every field but `nodes` is optional. */
export interface IdMintOptions<K extends IdKind = IdKind> {
  /**
   * The nodes' Redis-protocol addresses, `redis://host:port` or `rediss://host:port` (TLS).
   * Tried in this order; the client stays on the first that works.
   */
  nodes: readonly string[];
  /** A token of the nodes, sent with `AUTH` on each connection (a mint token suffices). */
  token?: string | undefined;
  /** A PEM certificate authority to trust for `rediss://` nodes instead of the system's. */
  caPem?: string | Buffer | undefined;
  /** `"bigint"` (default) or `"string"`: IDs as decimal strings, for JSON. */
  ids?: K | undefined;
  /** The smallest range asked for. Default 100. */
  minStep?: number | undefined;
  /** The largest range asked for at once; at most the nodes' `--max-count`. Default 10,000. */
  maxStep?: number | undefined;
  /** How long one range should last at the observed rate, in ms. Default 10,000. */
  targetLifetimeMs?: number | undefined;
  /** The share of a range used when the next one is asked for, 0..1. Default 0.2. */
  prefetchAt?: number | undefined;
  /** The longest a call waits for IDs across every node tried, in ms. Default 3,000. */
  maxWaitMs?: number | undefined;
  /** The longest one request to one node may take, connecting included, in ms. Default 1,000. */
  callTimeoutMs?: number | undefined;
  /** How long a failed node is avoided at first, in ms (doubling while it fails). Default 1,000. */
  backoffMs?: number | undefined;
  /** The longest a failing node is avoided, in ms. Default 30,000. */
  maxBackoffMs?: number | undefined;
  /** Snowflakes asked for at once. Default 64. */
  snowflakeBatch?: number | undefined;
  /** The age past which a snowflake batch is thrown away unused, in ms. Default 100. */
  snowflakeMaxAgeMs?: number | undefined;
}

/** The options checked, with every default filled in. */
export interface Settings {
  readonly nodes: readonly Address[];
  readonly token: string | undefined;
  readonly caPem: string | Buffer | undefined;
  readonly ids: IdKind;
  readonly minStep: number;
  readonly maxStep: number;
  readonly targetLifetimeMs: number;
  readonly prefetchAt: number;
  readonly maxWaitMs: number;
  readonly callTimeoutMs: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly snowflakeBatch: number;
  readonly snowflakeMaxAgeMs: number;
}

/** The defaults, as the Rust client's. */
export const DEFAULTS = {
  minStep: 100,
  maxStep: 10_000,
  targetLifetimeMs: 10_000,
  prefetchAt: 0.2,
  maxWaitMs: 3_000,
  callTimeoutMs: 1_000,
  backoffMs: 1_000,
  maxBackoffMs: 30_000,
  snowflakeBatch: 64,
  snowflakeMaxAgeMs: 100,
} as const;

const KNOWN = new Set(["nodes", "token", "caPem", "ids", ...Object.keys(DEFAULTS)]);

/** Checks `options`, naming the first setting that cannot work. */
export function settings(options: IdMintOptions): Settings {
  if (typeof options !== "object" || options === null) {
    throw new ConfigError("options", "give an object with at least `nodes`");
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) {
      throw new ConfigError(key, "is not a setting of the idmint client");
    }
  }
  const nodes = options.nodes as unknown;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new ConfigError("nodes", "give at least one node");
  }
  const addresses = nodes.map((url: unknown) => address(url));
  const token = options.token;
  if (token !== undefined && typeof token !== "string") {
    // From JavaScript, or from a variable typed `any`: say what is wrong, not "empty".
    throw new ConfigError("token", `must be a string, not ${typeof token}`);
  }
  if (token !== undefined && token.trim() === "") {
    throw new ConfigError("token", "is empty; leave it out for nodes without tokens");
  }
  const caPem = options.caPem;
  if (caPem !== undefined && typeof caPem !== "string" && !Buffer.isBuffer(caPem)) {
    throw new ConfigError("caPem", "must be a PEM text or a Buffer holding one");
  }
  const ids = options.ids ?? "bigint";
  if (ids !== "bigint" && ids !== "string") {
    throw new ConfigError("ids", 'must be "bigint" or "string"');
  }
  const count = (name: keyof typeof DEFAULTS): number => {
    const value = options[name] ?? DEFAULTS[name];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
      throw new ConfigError(name, "must be a whole number, at least 1");
    }
    return value;
  };
  const duration = (name: keyof typeof DEFAULTS): number => {
    const value = options[name] ?? DEFAULTS[name];
    // At most ~24.8 days: the longest delay a Node timer takes.
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > 2 ** 31 - 1) {
      throw new ConfigError(name, "must be above zero (milliseconds, at most 2^31 - 1)");
    }
    return value;
  };
  const minStep = count("minStep");
  const maxStep = count("maxStep");
  if (maxStep < minStep) {
    throw new ConfigError("maxStep", "must be at least minStep");
  }
  const prefetchAt = options.prefetchAt ?? DEFAULTS.prefetchAt;
  if (typeof prefetchAt !== "number" || !(prefetchAt >= 0 && prefetchAt <= 1)) {
    throw new ConfigError("prefetchAt", "must be between 0 and 1");
  }
  const targetLifetimeMs = duration("targetLifetimeMs");
  const maxWaitMs = duration("maxWaitMs");
  const callTimeoutMs = duration("callTimeoutMs");
  const backoffMs = duration("backoffMs");
  const snowflakeMaxAgeMs = duration("snowflakeMaxAgeMs");
  const maxBackoffMs = duration("maxBackoffMs");
  if (maxBackoffMs < backoffMs) {
    throw new ConfigError("maxBackoffMs", "must be at least backoffMs");
  }
  const snowflakeBatch = count("snowflakeBatch");
  return {
    nodes: addresses,
    token,
    caPem,
    ids,
    minStep,
    maxStep,
    targetLifetimeMs,
    prefetchAt,
    maxWaitMs,
    callTimeoutMs,
    backoffMs,
    maxBackoffMs,
    snowflakeBatch,
    snowflakeMaxAgeMs,
  };
}

/** A node's URL read: `redis://host[:port]` or `rediss://...`, port 6379 by default. */
function address(url: unknown): Address {
  const bad = (why: string): ConfigError =>
    new ConfigError("nodes", `\`${String(url)}\`: ${why}`);
  if (typeof url !== "string") {
    throw bad("not a redis:// or rediss:// URL");
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad("not a usable redis:// or rediss:// URL");
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw bad("not a usable redis:// or rediss:// URL");
  }
  if (parsed.password !== "" || parsed.username !== "") {
    throw bad("give the token in `token`, not in the URL");
  }
  if (parsed.hostname === "") {
    throw bad("names no host");
  }
  if (parsed.pathname !== "" && parsed.pathname !== "/" && parsed.pathname !== "/0") {
    throw bad("the nodes have one database, 0: leave the path out");
  }
  // `new URL` keeps an IPv6 host in brackets; sockets want it bare.
  const bracketed = parsed.hostname.startsWith("[") && parsed.hostname.endsWith("]");
  const host = bracketed ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === "" ? 6379 : Number(parsed.port);
  const label = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
  return { host, port, tls: parsed.protocol === "rediss:", label };
}
