/** What a call rejects with, from what went wrong inside it. */

import { IdMintError, NodeFailedError, UnavailableError } from "./errors.js";

/** A call's wait ran out before any node could be asked again. */
export class OutOfTime extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutOfTime";
  }
}

/**
 * The error a caller sees: the client's own errors as they are; a node's failure (the last
 * one seen once no node served in time) as {@link UnavailableError} with it as the cause.
 * Anything else is a bug of the client and goes out unchanged.
 */
export function toCallerError(error: unknown, waitedMs: number): unknown {
  if (error instanceof IdMintError) {
    return error;
  }
  if (error instanceof NodeFailedError || error instanceof OutOfTime) {
    return new UnavailableError(
      `no idmint node could serve within ${Math.round(waitedMs)} ms: ${error.message}`,
      waitedMs,
      error,
    );
  }
  return error;
}
