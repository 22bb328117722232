/**
 * 128-bit IDs, UUIDv7 and ULID, as values: their four forms and their fields.
 *
 * The layout, the same in every idmint implementation: 48 bits of Unix milliseconds, a 24-bit
 * counter (split around the version and variant bits in a UUIDv7), an optional node field,
 * then random bits. Comparing two IDs, their bytes, or any one of their texts gives the same
 * order.
 *
 * An ID is held as four unsigned 32-bit words, most significant first: numbers, which the
 * generators fill and the texts are cut from without a bigint.
 */

import { InvalidId128Error } from "./errors.js";

/** The two kinds of 128-bit ID. */
export type Id128Kind = "uuidv7" | "ulid";

/** The widest node field a generator may carry, in bits. */
export const MAX_NODE_BITS = 24;

/** Bits after the counter (node field and random): a UUIDv7 gives 6 of its 56 to version and variant. */
export const TAIL_BITS: Readonly<Record<Id128Kind, number>> = { uuidv7: 50, ulid: 56 };

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** Each byte's value as a ULID digit, either case (-1: not a digit; I, L, O, U are not). */
const ULID_VALUES: Int8Array = (() => {
  const values = new Int8Array(128).fill(-1);
  [...CROCKFORD].forEach((c, i) => {
    values[c.charCodeAt(0)] = i;
    values[c.toLowerCase().charCodeAt(0)] = i;
  });
  return values;
})();
/** Two ULID digits per 10 bits, looked up. */
const ULID_PAIRS: readonly string[] = Array.from({ length: 1024 }, (_, i) => CROCKFORD[i >> 5]! + CROCKFORD[i & 31]!);
/** Two hex digits per byte. */
const HEX_PAIRS: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const HEX32 = /^[0-9a-fA-F]{32}$/;
const CANONICAL = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const FORMS = "a canonical UUID (36 characters, 8-4-4-4-12), 32 hex digits or a 26-character ULID";
/** The names a kind is read by, in any case: idmint's server and Rust core write `uuid7`. */
const KIND_NAMES: Readonly<Record<string, Id128Kind>> = { uuidv7: "uuidv7", uuid7: "uuidv7", uuid: "uuidv7", ulid: "ulid" };

/** The fields of one 128-bit ID (see {@link Id128.decode}). */
export interface Id128Fields {
  /** `uuidv7` or `ulid`. */
  readonly kind: Id128Kind;
  /** Unix milliseconds (48 bits). */
  readonly ms: number;
  /** `ms` as a Date (`toISOString()` is RFC 3339). */
  readonly time: Date;
  /** The 24-bit counter. */
  readonly counter: number;
  /** The node field, when `nodeBits` was given. */
  readonly node: number | undefined;
  /** The UUID version bits (7 for a UUIDv7); undefined for a ULID. */
  readonly version: number | undefined;
  /** The UUID variant bits (0b10, RFC 9562's, for a UUIDv7); undefined for a ULID. */
  readonly variant: number | undefined;
}

/** The text, as an error message quotes it: JSON, cut short. */
function shown(text: string): string {
  return JSON.stringify(text.length <= 40 ? text : `${text.slice(0, 40)}...`);
}

function hex8(w: number): string {
  return HEX_PAIRS[w >>> 24]! + HEX_PAIRS[(w >>> 16) & 255]! + HEX_PAIRS[(w >>> 8) & 255]! + HEX_PAIRS[w & 255]!;
}

/** `kind` as an {@link Id128Kind} (undefined stays undefined), or {@link InvalidId128Error}. */
function kindOf(kind: unknown): Id128Kind | undefined {
  if (kind === undefined) {
    return undefined;
  }
  const name = typeof kind === "string" ? kind.toLowerCase() : "";
  const found = Object.hasOwn(KIND_NAMES, name) ? KIND_NAMES[name] : undefined;
  if (found === undefined) {
    throw new InvalidId128Error("type", `kind ${JSON.stringify(kind)} is not a 128-bit kind: "uuidv7" (or "uuid7") or "ulid"`);
  }
  return found;
}

/**
 * One 128-bit ID: a UUIDv7 or a ULID (its `kind`, which picks what `toString()` writes).
 * Immutable; {@link Id128.compare} orders IDs by value, which is the order their generator
 * issued them in. Made by a generator, or read by {@link Id128.parse},
 * {@link Id128.fromBytes}, {@link Id128.fromBigInt} or {@link Id128.fromFields}.
 */
export class Id128 {
  /**
   * @internal The four 32-bit words, most significant first, each in 0..2^32-1; `kind`
   * undefined when read from a UUID or hex text that is not a UUIDv7.
   */
  constructor(
    readonly kind: Id128Kind | undefined,
    private readonly w0: number,
    private readonly w1: number,
    private readonly w2: number,
    private readonly w3: number,
  ) {}

  // ---- reading ---------------------------------------------------------------------------

  /**
   * Reads a canonical UUID (36 characters), 32 hex digits or a 26-character ULID, in either
   * case. Throws {@link InvalidId128Error} saying what is wrong.
   *
   * With `kind: "uuidv7"` (or `"uuid7"`, as idmint's server names it) the ID must carry version 7 and the RFC variant; with `"ulid"` any
   * value is a ULID. Without it, ULID text reads as a ULID, other text as a UUIDv7 when it
   * has that version and variant, else with no kind (`toString()` then writes the UUID form).
   */
  static parse(text: string, kind?: Id128Kind | "uuid7"): Id128 {
    if (typeof text !== "string") {
      throw new InvalidId128Error("type", `Id128.parse reads a string, not ${typeof text} (16 bytes: Id128.fromBytes)`);
    }
    const asked = kindOf(kind);
    let words: [number, number, number, number];
    let found: Id128Kind | undefined;
    if (text.length === 36) {
      if (!CANONICAL.test(text)) {
        const dashes = [8, 13, 18, 23].every((i) => text[i] === "-") && text.split("-").length === 5;
        throw dashes
          ? new InvalidId128Error("character", `${shown(text)} is not a canonical UUID: not hex digits`)
          : new InvalidId128Error("dashes", `${shown(text)} is not a canonical UUID: dashes belong at 9, 14, 19 and 24`);
      }
      words = hexWords(text.replaceAll("-", ""));
    } else if (text.length === 32) {
      if (!HEX32.test(text)) {
        throw new InvalidId128Error("character", `${shown(text)} is not 32 hex digits`);
      }
      words = hexWords(text);
    } else if (text.length === 26) {
      words = ulidWords(text);
      found = "ulid";
    } else {
      throw new InvalidId128Error("length", `${shown(text)} (${text.length} characters) is not a 128-bit ID: expected ${FORMS}`);
    }
    return read(words, asked, found, text);
  }

  /** Reads the 16 bytes, big-endian (as {@link Id128.toBytes} writes them); `kind` as in {@link Id128.parse}. */
  static fromBytes(bytes: Uint8Array, kind?: Id128Kind | "uuid7"): Id128 {
    if (!(bytes instanceof Uint8Array)) {
      throw new InvalidId128Error("type", "Id128.fromBytes reads a Uint8Array (or Buffer)");
    }
    if (bytes.length !== 16) {
      throw new InvalidId128Error("length", `a 128-bit ID is 16 bytes, not ${bytes.length}`);
    }
    const asked = kindOf(kind);
    const view = new DataView(bytes.buffer, bytes.byteOffset, 16);
    const words: [number, number, number, number] = [view.getUint32(0), view.getUint32(4), view.getUint32(8), view.getUint32(12)];
    return read(words, asked, undefined, Buffer.from(bytes).toString("hex"));
  }

  /** The ID of value `value` (0 ..= 2^128-1); `kind` as in {@link Id128.parse}. */
  static fromBigInt(value: bigint, kind?: Id128Kind | "uuid7"): Id128 {
    if (typeof value !== "bigint") {
      throw new InvalidId128Error("type", `Id128.fromBigInt reads a bigint, not ${typeof value}`);
    }
    if (value < 0n || value >> 128n !== 0n) {
      throw new InvalidId128Error("overflow", `${value} does not fit 128 bits`);
    }
    return read(bigWords(value), kindOf(kind), undefined, value.toString(16));
  }

  /**
   * The ID with these fields, by the layout every idmint implementation shares. Handy for the
   * bounds of a time range: `Id128.fromFields("uuidv7", { ms })` is below every UUIDv7 of
   * millisecond `ms`. `random` fills the bits after the node field (50 - nodeBits of a
   * UUIDv7, 56 - nodeBits of a ULID). Throws {@link InvalidId128Error} for a field that does
   * not fit.
   */
  static fromFields(
    kindName: Id128Kind | "uuid7",
    fields: { ms: number; counter?: number; random?: bigint; node?: number; nodeBits?: number },
  ): Id128 {
    const kind = kindOf(kindName);
    if (kind === undefined) {
      throw new InvalidId128Error("type", 'Id128.fromFields needs a kind: "uuidv7" or "ulid"');
    }
    const { ms, counter = 0, random = 0n, node = 0, nodeBits = 0 } = fields;
    if (!Number.isInteger(nodeBits) || nodeBits < 0 || nodeBits > MAX_NODE_BITS) {
      throw new InvalidId128Error("overflow", `nodeBits must be an integer in 0..${MAX_NODE_BITS}, not ${nodeBits}`);
    }
    const randomBits = TAIL_BITS[kind] - nodeBits;
    for (const [name, value, bits] of [["ms", ms, 48], ["counter", counter, 24], ["node", node, nodeBits]] as const) {
      if (!Number.isInteger(value) || value < 0 || value >= 2 ** bits) {
        throw new InvalidId128Error("overflow", `${name} ${value} does not fit its ${bits} bits`);
      }
    }
    if (typeof random !== "bigint" || random < 0n || random >> BigInt(randomBits) !== 0n) {
      throw new InvalidId128Error("overflow", `random ${random} does not fit its ${randomBits} bits`);
    }
    let value = (BigInt(ms) << 80n) | (BigInt(node) << BigInt(randomBits)) | random;
    if (kind === "uuidv7") {
      const c = BigInt(counter);
      value |= (0x7n << 76n) | ((c >> 12n) << 64n) | (0b10n << 62n) | ((c & 0xfffn) << 50n);
    } else {
      value |= BigInt(counter) << 56n;
    }
    const [w0, w1, w2, w3] = bigWords(value);
    return new Id128(kind, w0, w1, w2, w3);
  }

  // ---- writing ---------------------------------------------------------------------------

  /** The kind's own form: the ULID text for a ULID, else the canonical UUID. */
  toString(): string {
    return this.kind === "ulid" ? this.toUlid() : this.toUuid();
  }

  /** As `toString()`: an ID in JSON is its text. */
  toJSON(): string {
    return this.toString();
  }

  /** The canonical 8-4-4-4-12 form, lowercase. */
  toUuid(): string {
    const { w1, w2 } = this;
    const h = HEX_PAIRS;
    return (
      hex8(this.w0) +
      "-" +
      h[w1 >>> 24]! +
      h[(w1 >>> 16) & 255]! +
      "-" +
      h[(w1 >>> 8) & 255]! +
      h[w1 & 255]! +
      "-" +
      h[w2 >>> 24]! +
      h[(w2 >>> 16) & 255]! +
      "-" +
      h[(w2 >>> 8) & 255]! +
      h[w2 & 255]! +
      hex8(this.w3)
    );
  }

  /** 32 lowercase hex digits. */
  toHex(): string {
    return hex8(this.w0) + hex8(this.w1) + hex8(this.w2) + hex8(this.w3);
  }

  /** The 26-character ULID form: Crockford base32, uppercase. */
  toUlid(): string {
    const { w0, w1, w2, w3 } = this;
    // 130 bits (two zeros, then the 128) in 13 pairs of digits, 10 bits each, from the top.
    const p = ULID_PAIRS;
    return (
      p[w0 >>> 24]! +
      p[(w0 >>> 14) & 1023]! +
      p[(w0 >>> 4) & 1023]! +
      p[((w0 & 15) << 6) | (w1 >>> 26)]! +
      p[(w1 >>> 16) & 1023]! +
      p[(w1 >>> 6) & 1023]! +
      p[((w1 & 63) << 4) | (w2 >>> 28)]! +
      p[(w2 >>> 18) & 1023]! +
      p[(w2 >>> 8) & 1023]! +
      p[((w2 & 255) << 2) | (w3 >>> 30)]! +
      p[(w3 >>> 20) & 1023]! +
      p[(w3 >>> 10) & 1023]! +
      p[w3 & 1023]!
    );
  }

  /** The 16 bytes, big-endian: they sort as the IDs do. */
  toBytes(): Uint8Array {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    view.setUint32(0, this.w0);
    view.setUint32(4, this.w1);
    view.setUint32(8, this.w2);
    view.setUint32(12, this.w3);
    return bytes;
  }

  /** The 128-bit value. */
  toBigInt(): bigint {
    return (BigInt(this.w0) << 96n) | (BigInt(this.w1) << 64n) | (BigInt(this.w2) << 32n) | BigInt(this.w3);
  }

  // ---- comparing: by value alone ---------------------------------------------------------

  /** Negative, zero or positive as this ID is below, equal to or above `other`. */
  compare(other: Id128): number {
    return this.w0 !== other.w0
      ? this.w0 - other.w0
      : this.w1 !== other.w1
        ? this.w1 - other.w1
        : this.w2 !== other.w2
          ? this.w2 - other.w2
          : this.w3 - other.w3;
  }

  /** `a.compare(b)`, for `Array.prototype.sort`. */
  static compare(a: Id128, b: Id128): number {
    return a.compare(b);
  }

  /** The same value (whatever the kinds). */
  equals(other: Id128): boolean {
    return this.w0 === other.w0 && this.w1 === other.w1 && this.w2 === other.w2 && this.w3 === other.w3;
  }

  // ---- fields ----------------------------------------------------------------------------

  /**
   * The ID's fields, read by the layout of `kind` (default: its own; for an ID of no kind, a
   * UUIDv7 when its version and variant bits say so, else a ULID, as idmint's server reads
   * it). The node field is read only when `nodeBits` (0..24, as the generator had it) is
   * given: the bits themselves do not say how wide it is.
   */
  decode(options: { nodeBits?: number; kind?: Id128Kind | "uuid7" } = {}): Id128Fields {
    const { w0, w1, w2 } = this;
    // An ID of no kind reads as idmint's server reads it: a UUIDv7 when its bits say so.
    const kind = kindOf(options.kind) ?? this.kind ?? (((w1 >>> 12) & 0xf) === 7 && w2 >>> 30 === 0b10 ? "uuidv7" : "ulid");
    const ms = w0 * 65536 + (w1 >>> 16);
    const uuid = kind === "uuidv7";
    const counter = uuid ? ((w1 & 0xfff) << 12) | ((w2 >>> 18) & 0xfff) : ((w1 & 0xffff) << 8) | (w2 >>> 24);
    let node: number | undefined;
    const { nodeBits } = options;
    if (nodeBits !== undefined) {
      if (!Number.isInteger(nodeBits) || nodeBits < 0 || nodeBits > MAX_NODE_BITS) {
        throw new InvalidId128Error("type", `nodeBits must be an integer in 0..${MAX_NODE_BITS}, not ${nodeBits}`);
      }
      const shift = BigInt(TAIL_BITS[kind] - nodeBits);
      node = Number((this.toBigInt() >> shift) & ((1n << BigInt(nodeBits)) - 1n));
    }
    return {
      kind,
      ms,
      time: new Date(ms),
      counter,
      node,
      version: uuid ? (w1 >>> 12) & 0xf : undefined,
      variant: uuid ? w2 >>> 30 : undefined,
    };
  }
}

/** The words of 32 hex digits already checked. */
function hexWords(hex: string): [number, number, number, number] {
  return [
    Number.parseInt(hex.slice(0, 8), 16),
    Number.parseInt(hex.slice(8, 16), 16),
    Number.parseInt(hex.slice(16, 24), 16),
    Number.parseInt(hex.slice(24, 32), 16),
  ];
}

/** The words of a value known to fit 128 bits. */
function bigWords(value: bigint): [number, number, number, number] {
  return [Number(value >> 96n), Number((value >> 64n) & 0xffffffffn), Number((value >> 32n) & 0xffffffffn), Number(value & 0xffffffffn)];
}

/** The words of 26 ULID digits, or why they are not a ULID. */
function ulidWords(text: string): [number, number, number, number] {
  const w = [0, 0, 0, 0];
  for (let i = 0; i < 26; i++) {
    const code = text.charCodeAt(i);
    const d = code < 128 ? ULID_VALUES[code]! : -1;
    if (d < 0) {
      throw new InvalidId128Error(
        "character",
        `${shown(text)} is not a ULID: Crockford base32 digits only (${CROCKFORD}, no I, L, O or U)`,
      );
    }
    if (i === 0) {
      if (d > 7) {
        throw new InvalidId128Error("overflow", `${shown(text)} is not a ULID: it starts above 7, beyond 128 bits`);
      }
      w[0] = d << 29;
      continue;
    }
    // Digit i holds bits 5i-2 .. 5i+3 of the 128 (from the top); it may straddle two words.
    const at = 5 * i - 2;
    const word = at >>> 5;
    const offset = at & 31;
    if (offset <= 27) {
      w[word] = w[word]! | (d << (27 - offset));
    } else {
      w[word] = w[word]! | (d >>> (offset - 27));
      w[word + 1] = w[word + 1]! | (d << (59 - offset));
    }
  }
  return [w[0]! >>> 0, w[1]! >>> 0, w[2]! >>> 0, w[3]! >>> 0];
}

/** The ID of `words`, of `kind` when asked (a UUIDv7 checked), else of the kind the text said. */
function read(words: [number, number, number, number], kind: Id128Kind | undefined, found: Id128Kind | undefined, text: string): Id128 {
  const [w0, w1, w2, w3] = words;
  const version = (w1 >>> 12) & 0xf;
  const variant = w2 >>> 30;
  const isV7 = version === 7 && variant === 0b10;
  if (kind === "uuidv7" && !isV7) {
    throw new InvalidId128Error(
      "version",
      `${shown(text)} is not a UUIDv7: version ${version}, variant ${variant.toString(2).padStart(2, "0")} (a UUIDv7 has version 7, variant 10)`,
    );
  }
  return new Id128(kind ?? found ?? (isV7 ? "uuidv7" : undefined), w0, w1, w2, w3);
}
