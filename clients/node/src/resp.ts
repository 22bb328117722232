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

/** Returned by the parse functions when the buffer ends before the reply does. */
const INCOMPLETE = Symbol("incomplete");
type Parsed = { value: Reply; end: number } | typeof INCOMPLETE;

/** The deepest array nesting read: far beyond any reply of idmint, bounded against a bad peer. */
const MAX_DEPTH = 16;
/** The longest bulk string or array read (a 10,000-ID batch is far below). */
const MAX_LENGTH = 64 * 1024 * 1024;

/**
 * Reads replies from chunks as they arrive. `push` a chunk, then take every complete reply
 * with `next` until it returns `undefined`.
 */
export class ReplyReader {
  private buffer: Buffer = Buffer.alloc(0);
  private offset = 0;

  /** Adds a chunk read from the socket. */
  push(chunk: Buffer): void {
    if (this.offset >= this.buffer.length) {
      this.buffer = chunk;
    } else {
      this.buffer = Buffer.concat([this.buffer.subarray(this.offset), chunk]);
    }
    this.offset = 0;
  }

  /**
   * The next complete reply, or `undefined` until more bytes arrive. Throws
   * {@link ProtocolError} on bytes that are not RESP2.
   */
  next(): Reply | undefined {
    if (this.offset >= this.buffer.length) {
      return undefined;
    }
    const parsed = parse(this.buffer, this.offset, 0);
    if (parsed === INCOMPLETE) {
      return undefined;
    }
    this.offset = parsed.end;
    return parsed.value;
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

function parse(buffer: Buffer, start: number, depth: number): Parsed {
  if (start >= buffer.length) {
    return INCOMPLETE;
  }
  const end = lineEnd(buffer, start + 1);
  if (end < 0) {
    return INCOMPLETE;
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
      if (next + length + 2 > buffer.length) {
        return INCOMPLETE;
      }
      if (buffer[next + length] !== 13 || buffer[next + length + 1] !== 10) {
        throw new ProtocolError("a bulk string not ended by CRLF");
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
        const item = parse(buffer, at, depth + 1);
        if (item === INCOMPLETE) {
          return INCOMPLETE;
        }
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
 * 2^53), longer ones through `BigInt` of the digits.
 */
export function readInteger(buffer: Buffer, from: number, to: number): bigint {
  let at = from;
  const negative = buffer[at] === 0x2d;
  if (negative) {
    at++;
  }
  const digits = to - at;
  if (digits < 1 || digits > 20) {
    throw new ProtocolError("an integer reply without digits or past 64 bits");
  }
  if (digits <= 15) {
    let value = 0;
    for (let i = at; i < to; i++) {
      const d = (buffer[i] ?? 0) - 48;
      if (d < 0 || d > 9) {
        throw new ProtocolError("an integer reply with a non-digit");
      }
      value = value * 10 + d;
    }
    return BigInt(negative ? -value : value);
  }
  for (let i = at; i < to; i++) {
    const d = (buffer[i] ?? 0) - 48;
    if (d < 0 || d > 9) {
      throw new ProtocolError("an integer reply with a non-digit");
    }
  }
  return BigInt(buffer.toString("latin1", from, to));
}

/** A length (`$n`, `*n`): -1 for null, else 0 ..= MAX_LENGTH. */
function readLength(buffer: Buffer, from: number, to: number): number {
  const value = readInteger(buffer, from, to);
  if (value === -1n) {
    return -1;
  }
  if (value < 0n || value > BigInt(MAX_LENGTH)) {
    throw new ProtocolError(`a length of ${value}`);
  }
  return Number(value);
}
