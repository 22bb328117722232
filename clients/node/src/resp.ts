/**
 * RESP2, the Redis protocol the nodes speak: commands written as arrays of bulk strings,
 * replies read incrementally from a socket's chunks.
 *
 * Integers are read straight into `bigint` from their digits, never through a `number`: an ID
 * above 2^53 stays exact. Bulk strings are read as UTF-8 text (the nodes answer tags, layouts
 * and IDs in text forms; no binary values).
 */

/** An error reply (`-ERR ...`, `-WRONGPASS ...`): a value the caller classifies, not thrown. */
export class ReplyError {
  /** The first word: `ERR`, `WRONGPASS`, `TRYAGAIN`, ... */
  readonly prefix: string;
  /** The text after the first word. */
  readonly detail: string;

  constructor(line: string) {
    const space = line.indexOf(" ");
    this.prefix = space < 0 ? line : line.slice(0, space);
    this.detail = space < 0 ? "" : line.slice(space + 1);
  }

  /** The whole line, as the node wrote it. */
  get line(): string {
    return this.detail === "" ? this.prefix : `${this.prefix} ${this.detail}`;
  }
}

/** One reply. `null` is a null bulk string or array. */
export type Reply = string | bigint | null | ReplyError | Reply[];

/** An argument of a command. */
export type Arg = string | bigint | number;

/** A command as the bytes sent: `*N` then each argument as a bulk string. */
export function encodeCommand(args: readonly Arg[]): Buffer {
  const parts: string[] = [`*${args.length}\r\n`];
  for (const arg of args) {
    const text = typeof arg === "string" ? arg : arg.toString();
    parts.push(`$${Buffer.byteLength(text, "utf8")}\r\n${text}\r\n`);
  }
  return Buffer.from(parts.join(""), "utf8");
}

/** The protocol was broken: the connection cannot be trusted any more. */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** The deepest array nesting read: far beyond any reply of idmint, bounded against a bad peer. */
const MAX_DEPTH = 16;
/**
 * The most bytes one reply may take. idmint's largest replies are ID batches of about 22
 * bytes an ID: 8 MiB holds a batch of over 300,000, far above the nodes' default `--max-count`
 * (10,000). A peer that sends more (a huge length, an endless line, a vast array) breaks the
 * connection instead of growing this process's memory.
 */
export const MAX_REPLY_BYTES = 8 * 1024 * 1024;

/**
 * Reads replies from chunks as they arrive. `push` a chunk, then take every complete reply
 * with `next` until it returns `undefined`.
 *
 * The bytes of a reply still arriving are first only scanned (where it ends, nothing built),
 * and the scan resumes where it stopped when the next chunk comes: a long reply costs time in
 * proportion to its length, however it is split, and values are built once, when it is whole.
 */
export class ReplyReader {
  /** Holds the unread bytes from `start` to `filled`; grows by doubling, so appends are cheap. */
  private buffer: Buffer = Buffer.alloc(0);
  private start = 0;
  private filled = 0;
  /** Where the scan of the reply starting at `start` stopped. */
  private scanned = 0;
  /** The items still to scan of each array open at `scanned`, outermost first. */
  private open: number[] = [];

  /** Adds a chunk read from the socket. */
  push(chunk: Buffer): void {
    if (this.start >= this.filled) {
      // Nothing unread (the usual case: replies come whole): read the chunk where it is.
      this.buffer = chunk;
      this.start = this.scanned = 0;
      this.filled = chunk.length;
      return;
    }
    if (this.filled + chunk.length > this.buffer.length) {
      const unread = this.filled - this.start;
      const needed = unread + chunk.length;
      // Move the unread bytes to the front, into a larger buffer when they need one.
      const target = needed > this.buffer.length ? Buffer.allocUnsafe(Math.max(needed, 2 * this.buffer.length, 4096)) : this.buffer;
      this.buffer.copy(target, 0, this.start, this.filled);
      this.buffer = target;
      this.scanned -= this.start;
      this.start = 0;
      this.filled = unread;
    }
    chunk.copy(this.buffer, this.filled);
    this.filled += chunk.length;
  }

  /**
   * The next complete reply, or `undefined` until more bytes arrive. Throws
   * {@link ProtocolError} on bytes that are not RESP2, or on a reply past
   * {@link MAX_REPLY_BYTES}.
   */
  next(): Reply | undefined {
    if (this.start >= this.filled) {
      this.start = this.filled = this.scanned = 0;
      return undefined;
    }
    const end = this.scan();
    if (end === undefined) {
      if (this.filled - this.start > MAX_REPLY_BYTES) {
        throw new ProtocolError(`a reply longer than ${MAX_REPLY_BYTES} bytes`);
      }
      return undefined;
    }
    if (end - this.start > MAX_REPLY_BYTES) {
      throw new ProtocolError(`a reply longer than ${MAX_REPLY_BYTES} bytes`);
    }
    // The scan found the whole reply: build it.
    const value = parse(this.buffer.subarray(0, end), this.start, 0);
    this.start = this.scanned = end;
    return value;
  }

  /**
   * Scans on from `scanned`: the end of the reply starting at `start` once it is whole, else
   * `undefined` (the scan stops at the start of the element not yet whole).
   */
  private scan(): number | undefined {
    const buffer = this.buffer.subarray(0, this.filled);
    if (this.scanned < this.start) {
      this.scanned = this.start;
    }
    for (;;) {
      const at = this.scanned;
      if (at >= buffer.length) {
        return undefined;
      }
      const end = lineEnd(buffer, at + 1);
      if (end < 0) {
        return undefined;
      }
      let next = end + 2;
      switch (buffer[at]) {
        case 0x2b: // '+'
        case 0x2d: // '-'
          break;
        case 0x3a: // ':'
          checkInteger(buffer, at + 1, end);
          break;
        case 0x24: {
          // '$'
          const length = readLength(buffer, at + 1, end);
          if (length >= 0) {
            if (next + length + 2 > buffer.length) {
              return undefined;
            }
            if (buffer[next + length] !== 13 || buffer[next + length + 1] !== 10) {
              throw new ProtocolError("a bulk string not ended by CRLF");
            }
            next += length + 2;
          }
          break;
        }
        case 0x2a: {
          // '*'
          const count = readLength(buffer, at + 1, end);
          if (count > 0) {
            if (this.open.length >= MAX_DEPTH) {
              throw new ProtocolError("arrays nested too deep");
            }
            this.open.push(count);
            this.scanned = next;
            continue;
          }
          break;
        }
        default:
          throw new ProtocolError(`a reply of unknown type ${JSON.stringify(String.fromCharCode(buffer[at] ?? 0))}`);
      }
      this.scanned = next;
      // An element is whole: so is every array it was the last item of.
      for (;;) {
        const depth = this.open.length;
        if (depth === 0) {
          return next;
        }
        const left = (this.open[depth - 1] ?? 1) - 1;
        if (left > 0) {
          this.open[depth - 1] = left;
          break;
        }
        this.open.pop();
      }
    }
  }
}

/** The index of the `\r\n` that ends the line starting at `start`, or -1. */
function lineEnd(buffer: Buffer, start: number): number {
  const at = buffer.indexOf(13, start);
  if (at < 0 || at + 1 >= buffer.length) {
    return -1;
  }
  if (buffer[at + 1] !== 10) {
    throw new ProtocolError("a reply line not ended by CRLF");
  }
  return at;
}

/** The reply starting at `start`, which {@link ReplyReader.scan} found whole, and its end. */
function parse(buffer: Buffer, start: number, depth: number): Reply {
  return parseAt(buffer, start, depth).value;
}

function parseAt(buffer: Buffer, start: number, depth: number): { value: Reply; end: number } {
  const end = lineEnd(buffer, start + 1);
  if (end < 0) {
    throw new ProtocolError("a reply cut short");
  }
  const type = buffer[start];
  const next = end + 2;
  switch (type) {
    case 0x2b: // '+'
      return { value: buffer.toString("utf8", start + 1, end), end: next };
    case 0x2d: // '-'
      return { value: new ReplyError(buffer.toString("utf8", start + 1, end)), end: next };
    case 0x3a: // ':'
      return { value: readInteger(buffer, start + 1, end), end: next };
    case 0x24: {
      // '$'
      const length = readLength(buffer, start + 1, end);
      if (length < 0) {
        return { value: null, end: next };
      }
      return { value: buffer.toString("utf8", next, next + length), end: next + length + 2 };
    }
    case 0x2a: {
      // '*'
      const count = readLength(buffer, start + 1, end);
      if (count < 0) {
        return { value: null, end: next };
      }
      if (depth >= MAX_DEPTH) {
        throw new ProtocolError("arrays nested too deep");
      }
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseAt(buffer, at, depth + 1);
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new ProtocolError(`a reply of unknown type ${JSON.stringify(String.fromCharCode(type ?? 0))}`);
  }
}

/**
 * The integer of `buffer[from..to)`, exact: up to 15 digits through a `number` (exact below
 * 2^53), longer ones through `BigInt` of the digits. Outside the signed 64-bit range of RESP2's integers it is a
 * {@link ProtocolError}: every ID idmint issues fits in 63 bits, and one past 64 bits read as
 * an ID would not be an ID.
 */
export function readInteger(buffer: Buffer, from: number, to: number): bigint {
  return integerOf(buffer, from, to, checkInteger(buffer, from, to));
}

/** The integer of `buffer[from..to)`, of `digits` digits, already checked. */
function integerOf(buffer: Buffer, from: number, to: number, digits: number): bigint {
  if (digits <= 15) {
    let value = 0;
    for (let i = to - digits; i < to; i++) {
      value = value * 10 + ((buffer[i] ?? 48) - 48);
    }
    return BigInt(buffer[from] === 0x2d ? -value : value);
  }
  return BigInt(buffer.toString("latin1", from, to));
}

/** The 19 digits of 2^63: the signed 64-bit range ends one below (one above, negative). */
const TWO_TO_63 = Buffer.from("9223372036854775808", "latin1");

/**
 * Throws {@link ProtocolError} unless `buffer[from..to)` is a signed 64-bit integer in
 * decimal; returns its count of digits. Builds nothing: the scan of a reply still arriving
 * checks its integers with it.
 */
function checkInteger(buffer: Buffer, from: number, to: number): number {
  const negative = buffer[from] === 0x2d;
  const at = negative ? from + 1 : from;
  const digits = to - at;
  if (digits < 1 || digits > 19) {
    throw new ProtocolError("an integer reply without digits or past 64 bits");
  }
  for (let i = at; i < to; i++) {
    const d = (buffer[i] ?? 0) - 48;
    if (d < 0 || d > 9) {
      throw new ProtocolError("an integer reply with a non-digit");
    }
  }
  if (digits === 19) {
    // Past 2^63 - 1, or past -2^63: compared as text, digit by digit.
    const order = buffer.compare(TWO_TO_63, 0, 19, at, to);
    if (order > 0 || (order === 0 && !negative)) {
      throw new ProtocolError("an integer reply past 64 bits");
    }
  }
  return digits;
}

/** A length (`$n`, `*n`): -1 for null, else 0 ..= MAX_REPLY_BYTES. */
function readLength(buffer: Buffer, from: number, to: number): number {
  const value = readInteger(buffer, from, to);
  if (value === -1n) {
    return -1;
  }
  if (value < 0n || value > BigInt(MAX_REPLY_BYTES)) {
    throw new ProtocolError(`a length of ${value}`);
  }
  return Number(value);
}
