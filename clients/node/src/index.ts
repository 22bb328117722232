/**
 * idmint-client: a client of idmint nodes that hands IDs out of its own memory and fails over
 * between nodes. See {@link IdMint}.
 *
 * @packageDocumentation
 */

export { IdMint, TagIds } from "./client.js";
export { DEFAULTS, type IdKind, type IdMintOptions, type IdOf } from "./config.js";
export {
  AuthError,
  ClosedError,
  ConfigError,
  DatedError,
  ERROR_CODES,
  IdMintError,
  InvalidArgumentError,
  InvalidId128Error,
  NodeFailedError,
  PeriodUnavailableError,
  PermutedError,
  REFUSED_CODES,
  RefusedError,
  TagExhaustedError,
  UnavailableError,
  type ErrorKind,
  type Id128Refusal,
  type NodeErrorCode,
} from "./errors.js";
export { IdForm, MAX_PREFIX, MAX_WIDTH, fullWidth, type Radix } from "./form.js";
export { Id128, MAX_NODE_BITS, type Id128Fields, type Id128Kind } from "./id128.js";
export {
  COUNTER_MAX,
  MAX_LEAD_MS,
  UlidGenerator,
  Uuid7Generator,
  type Id128GeneratorOptions,
} from "./id128-generators.js";
export { MAX_SNOWFLAKES } from "./snowflakes.js";
export type { ClientStats } from "./stats.js";
