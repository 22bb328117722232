/**
 * The errors of the client. Every error a call rejects with is an {@link IdMintError}; its
 * `code` says which kind, so a program can switch on it without `instanceof`.
 *
 * A call never makes an ID up: it resolves with one the nodes handed out, or rejects with one
 * of these.
 */

/**
 * Every error code an idmint node answers with: the HTTP API's `error.code`, and the word
 * right after `-ERR` for the refusals the Redis protocol names. The same list, in the same
 * order, as the server's (`ErrorCode::ALL` in crates/idmint-core/src/error_code.rs); a test
 * compares the two.
 */
export const ERROR_CODES = [
  "invalid_layout",
  "invalid_epoch",
  "invalid_argument",
  "invalid_shard",
  "invalid_id",
  "invalid_tag",
  "layout_exhausted",
  "clock_before_epoch",
  "clock_behind",
  "hwm_not_granted",
  "segment_unavailable",
  "store_unavailable",
  "store_conflict",
  "lease_lost",
  "shutting_down",
  "no_worker_free",
  "store_invalid",
  "store_corrupt",
  "worker_held",
  "unknown_tag",
  "tag_exists",
  "tag_exhausted",
  "too_many_tags",
  "tag_quota",
  "period_unavailable",
  "dated",
  "permuted",
  "id_space_mismatch",
  "id_space_unrecorded",
  "id_space_refused",
  "id_space_changed",
  "invalid_format",
  "invalid_count",
  "invalid_size",
  "invalid_query",
  "invalid_json",
  "invalid_body",
  "invalid_step",
  "invalid_description",
  "invalid_first_id",
  "invalid_dating",
  "bad_request",
  "unauthorized",
  "forbidden",
  "not_found",
  "metrics_disabled",
  "method_not_allowed",
  "payload_too_large",
  "timeout",
  "lease_not_held",
  "too_many_connections",
  "internal",
] as const;

/** A code of {@link ERROR_CODES}. */
export type NodeErrorCode = (typeof ERROR_CODES)[number];

/**
 * The codes after `-ERR` that every node answers the same, so neither another node nor a
 * later try helps: a used-up tag, the nodes' tag cap, the token's tag quota, runs asked of
 * permuted IDs, a range of a dated tag, a dated tag's used-up period. Any other code there
 * (`store_corrupt`: that node's store) is that node's failure, and another node is tried.
 */
export const REFUSED_CODES: ReadonlySet<NodeErrorCode> = new Set<NodeErrorCode>([
  "tag_exhausted",
  "too_many_tags",
  "tag_quota",
  "permuted",
  "dated",
  "period_unavailable",
]);

/** What kind of error an {@link IdMintError} is: its `code`. */
export type ErrorKind =
  | "unavailable"
  | "tag_exhausted"
  | "period_unavailable"
  | "permuted"
  | "dated"
  | "auth"
  | "refused"
  | "invalid_argument"
  | "closed"
  | "config";

/** The base of every error of the client. */
export class IdMintError extends Error {
  /** What kind of error this is. */
  readonly code: ErrorKind;
  /** The node's own code behind it (from {@link ERROR_CODES}), when a node answered one. */
  readonly nodeCode: NodeErrorCode | undefined;

  constructor(
    code: ErrorKind,
    message: string,
    options?: { cause?: unknown; nodeCode?: NodeErrorCode | undefined },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.nodeCode = options?.nodeCode;
  }

  /** True when the same call may succeed later without any change (only `unavailable`). */
  get retryable(): boolean {
    return false;
  }

}

/**
 * No node could serve within `maxWaitMs` (every node down, unreachable, or its store
 * unavailable). Retryable. `cause` is the last failure seen.
 */
export class UnavailableError extends IdMintError {
  /** How long the call waited, in milliseconds. */
  readonly waitedMs: number;

  constructor(message: string, waitedMs: number, cause: unknown) {
    super("unavailable", message, { cause, nodeCode: "store_unavailable" });
    this.waitedMs = waitedMs;
  }

  override get retryable(): boolean {
    return true;
  }
}

/**
 * A node refused the request, and every node would: a bad tag, a token's tag quota, the
 * nodes' tag cap, a command the node does not know. Not retryable without a change. The
 * subclasses are the refusals a program tells apart.
 */
export class RefusedError extends IdMintError {
  /** The node that refused, `host:port`, when a node did. */
  readonly node: string | undefined;

  constructor(
    message: string,
    options: { node?: string | undefined; nodeCode?: NodeErrorCode | undefined; code?: ErrorKind } = {},
  ) {
    super(options.code ?? "refused", message, { nodeCode: options.nodeCode });
    this.node = options.node;
  }
}

/** The tag's IDs are used up: start a new tag. */
export class TagExhaustedError extends RefusedError {
  /** The tag. */
  readonly tag: string;

  constructor(tag: string, message: string, node?: string) {
    super(message, { node, nodeCode: "tag_exhausted", code: "tag_exhausted" });
    this.tag = tag;
  }
}

/**
 * A dated tag cannot hand out an ID now: its period's counters are used up, or the store's
 * clock went back into an earlier period. It lifts when the next period begins.
 */
export class PeriodUnavailableError extends RefusedError {
  /** The tag. */
  readonly tag: string;

  constructor(tag: string, message: string, node?: string) {
    super(message, { node, nodeCode: "period_unavailable", code: "period_unavailable" });
    this.tag = tag;
  }
}

/**
 * The nodes hand out their IDs permuted (`serve --permutation-key-file`): segment IDs, which
 * this client keeps as runs of consecutive IDs, cannot come from it (snowflakes still do).
 */
export class PermutedError extends RefusedError {
  constructor(message: string, node?: string) {
    super(message, { node, nodeCode: "permuted", code: "permuted" });
  }
}

/**
 * The nodes refused a range of a dated tag (one made with a `period`). The client handles it
 * itself, taking that tag's IDs one by one; a caller sees it only from code that asks for
 * ranges directly.
 */
export class DatedError extends RefusedError {
  /** The tag. */
  readonly tag: string;

  constructor(tag: string, message: string, node?: string) {
    super(message, { node, nodeCode: "dated", code: "dated" });
    this.tag = tag;
  }
}

/**
 * The token was refused: wrong, missing, not allowed this command or tag, or given to nodes
 * that have no tokens.
 */
export class AuthError extends RefusedError {
  constructor(message: string, node?: string) {
    super(message, { node, nodeCode: "unauthorized", code: "auth" });
  }
}

/** An argument of a call is not usable: a tag name, a count, a text form. */
export class InvalidArgumentError extends IdMintError {
  /** Which argument (`tag`, `n`, `id`, `prefix`, `width`, `format`). */
  readonly argument: string;

  constructor(argument: string, message: string, nodeCode: NodeErrorCode = "invalid_argument") {
    super("invalid_argument", message, { nodeCode });
    this.argument = argument;
  }
}

/** Which rule a text or value broke that is not a 128-bit ID (see {@link InvalidId128Error}). */
export type Id128Refusal = "length" | "character" | "dashes" | "overflow" | "version" | "type";

/**
 * A text (or bytes, or fields) that is not a 128-bit ID in one of its forms (canonical UUID,
 * 32 hex digits, 26-character ULID, 16 bytes), or not of the kind asked for (a UUID without
 * version 7 and the RFC variant when a UUIDv7 was asked for). `reason` says which rule.
 */
export class InvalidId128Error extends InvalidArgumentError {
  /** The rule broken. */
  readonly reason: Id128Refusal;

  constructor(reason: Id128Refusal, message: string) {
    super("id", message, "invalid_id");
    this.reason = reason;
  }
}

/** The client was closed; it hands out nothing more. */
export class ClosedError extends IdMintError {
  constructor() {
    super("closed", "the idmint client is closed");
  }
}

/** The options given to the client cannot work; `setting` names the first bad one. */
export class ConfigError extends IdMintError {
  /** The option, as spelled in {@link IdMintOptions} (`maxWaitMs`). */
  readonly setting: string;

  constructor(setting: string, reason: string) {
    super("config", `idmint client configuration: ${setting}: ${reason}`);
    this.setting = setting;
  }
}

/**
 * One node failed a request (no connection, a timeout, a dropped connection, `-TRYAGAIN`, an
 * answer the client cannot read). Never thrown to callers: it becomes the `cause` of an
 * {@link UnavailableError} once no node served in time.
 */
export class NodeFailedError extends Error {
  /** The node, `host:port`. */
  readonly node: string;

  constructor(node: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "NodeFailedError";
    this.node = node;
  }
}
