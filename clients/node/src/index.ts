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
  NodeFailedError,
  PeriodUnavailableError,
  PermutedError,
  REFUSED_CODES,
  RefusedError,
  TagExhaustedError,
  UnavailableError,
  type ErrorKind,
  type NodeErrorCode,
} from "./errors.js";
export { IdForm, MAX_PREFIX, MAX_WIDTH, fullWidth, type Radix } from "./form.js";
export { MAX_SNOWFLAKES } from "./snowflakes.js";
export type { ClientStats } from "./stats.js";
