/**
 * IDs as text, written and read exactly as the nodes do for `format=` and `FORMAT`
 * (crates/idmint-core/src/form.rs): decimal, base62, base36 and Crockford's base32 (the ULID
 * alphabet), with an optional prefix and a fixed width.
 *
 * Each alphabet lists its digits in ASCII order, so IDs written at one fixed width sort as
 * text as they sort as numbers. That is the default: every form pads to the width that holds
 * any 63-bit ID. Width 0 writes the shortest text instead. Reading is as forgiving as the
 * alphabet allows and no more: base36 and base32 ignore case, base32 also reads `I` and `L` as
 * 1, `O` as 0 and skips hyphens (Crockford's rules); base62 is case-sensitive.
 */

import { InvalidArgumentError } from "./errors.js";

/** The largest ID: IDs are positive in a signed 64-bit column. */
const MAX_ID = (1n << 63n) - 1n;
const U64_MAX = (1n << 64n) - 1n;

/** The longest prefix, in bytes. */
export const MAX_PREFIX = 16;
/** The widest fixed width. */
export const MAX_WIDTH = 32;

/** The digits of a form. */
export type Radix = "decimal" | "base62" | "base36" | "base32";

const DIGITS: Record<Radix, string> = {
  decimal: "0123456789",
  base62: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
  base36: "0123456789abcdefghijklmnopqrstuvwxyz",
  base32: "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
};

/** The names a radix is given by, as the nodes read them. */
const NAMES: Record<string, Radix> = {
  decimal: "decimal",
  dec: "decimal",
  "10": "decimal",
  base62: "base62",
  "62": "base62",
  base36: "base36",
  "36": "base36",
  base32: "base32",
  "32": "base32",
  crockford: "base32",
  ulid: "base32",
};

/** Each radix's value of each byte (-1: not a digit), by its reading rules. */
const VALUES: Record<Radix, Int8Array> = (() => {
  const table = (radix: Radix): Int8Array => {
    const values = new Int8Array(256).fill(-1);
    [...DIGITS[radix]].forEach((c, i) => {
      values[c.charCodeAt(0)] = i;
      if (radix === "base36" || radix === "base32") {
        values[c.toLowerCase().charCodeAt(0)] = i;
      }
    });
    if (radix === "base32") {
      for (const [c, v] of [["I", 1], ["L", 1], ["O", 0]] as const) {
        values[c.charCodeAt(0)] = v;
        values[c.toLowerCase().charCodeAt(0)] = v;
      }
    }
    return values;
  };
  return { decimal: table("decimal"), base62: table("base62"), base36: table("base36"), base32: table("base32") };
})();

/** Digits that hold every 63-bit ID: 19, 11, 13 and 13. */
export function fullWidth(radix: Radix): number {
  const base = BigInt(DIGITS[radix].length);
  let width = 1;
  for (let rest = MAX_ID; rest >= base; rest /= base) {
    width++;
  }
  return width;
}

/** At most 40 characters of `text`, for messages. */
function shorten(text: string): string {
  // Cut before splitting into characters: the text may be anything a program was sent, and
  // splitting a long one whole (megabytes) cost seconds and a gigabyte, for a message.
  const chars = [...text.slice(0, 82)];
  return chars.length > 40 || text.length > 82 ? `${chars.slice(0, 40).join("")}…` : text;
}

/** How IDs are written as text: a radix, a prefix and a width. */
export class IdForm {
  readonly radix: Radix;
  readonly prefix: string;
  /** Digits written at least (zeros in front); 0 for the shortest text. */
  readonly width: number;

  /**
   * A form from the names requests use: `format` (`decimal`, `base62`, `base36`, `base32` or
   * an alias: `dec`, `10`, `62`, `36`, `32`, `crockford`, `ulid`), a prefix of up to 16
   * characters of `A-Z a-z 0-9 _ -`, and a width (default: the radix's full width, which
   * sorts). Throws {@link InvalidArgumentError} naming what is wrong.
   */
  constructor(format: string, options: { prefix?: string; width?: number } = {}) {
    const radix = NAMES[String(format).trim().toLowerCase()];
    if (radix === undefined) {
      throw new InvalidArgumentError(
        "format",
        `\`${String(format)}\` is not a form: decimal, base62, base36 or base32`,
        "invalid_format",
      );
    }
    const prefix = options.prefix ?? "";
    if (typeof prefix !== "string" || prefix.length > MAX_PREFIX || !/^[A-Za-z0-9_-]*$/.test(prefix)) {
      throw new InvalidArgumentError("prefix", `a prefix is up to ${MAX_PREFIX} characters of A-Z a-z 0-9 _ -`, "invalid_format");
    }
    const width = options.width ?? fullWidth(radix);
    if (!Number.isSafeInteger(width) || width < 0 || width > MAX_WIDTH) {
      throw new InvalidArgumentError("width", `${String(width)} is not between 0 and the widest, ${MAX_WIDTH}`, "invalid_format");
    }
    this.radix = radix;
    this.prefix = prefix;
    this.width = width;
  }

  /**
   * `id` as text in this form. `id` is a `bigint` (0 ..= 2^64 - 1), a decimal string, or a
   * `number` that is a safe integer (a larger `number` has already lost digits: refused).
   */
  encode(id: bigint | string | number): string {
    const value = toId(id);
    const digits = DIGITS[this.radix];
    const base = BigInt(digits.length);
    let body = "";
    let rest = value;
    do {
      body = digits[Number(rest % base)] + body;
      rest /= base;
    } while (rest > 0n);
    return this.prefix + body.padStart(this.width, "0");
  }

  /** The ID `text` holds in this form; {@link InvalidArgumentError} saying why when none. */
  decode(text: string): bigint {
    const shown = (): string => shorten(String(text));
    if (typeof text !== "string") {
      throw new InvalidArgumentError("id", `\`${shown()}\` is not a text`, "invalid_id");
    }
    if (Buffer.byteLength(text, "utf8") > this.prefix.length + MAX_WIDTH + 16) {
      throw new InvalidArgumentError("id", `\`${shown()}\` is too long to be an ID`, "invalid_id");
    }
    if (!text.startsWith(this.prefix)) {
      throw new InvalidArgumentError("id", `\`${shown()}\` does not start with the prefix \`${this.prefix}\``, "invalid_id");
    }
    const body = Buffer.from(text.slice(this.prefix.length), "utf8");
    const values = VALUES[this.radix];
    const base = BigInt(DIGITS[this.radix].length);
    let value = 0n;
    let digits = 0;
    for (let i = 0; i < body.length; i++) {
      const c = body[i] as number;
      if (this.radix === "base32" && c === 0x2d) {
        continue;
      }
      const v = values[c] ?? -1;
      if (v < 0) {
        throw new InvalidArgumentError(
          "id",
          `\`${shown()}\`: character ${this.prefix.length + i + 1} ('${String.fromCharCode(c)}') is not a ${this.radix} digit`,
          "invalid_id",
        );
      }
      value = value * base + BigInt(v);
      if (value > MAX_ID) {
        throw new InvalidArgumentError("id", `\`${shown()}\` is above the largest ID, ${MAX_ID}`, "invalid_id");
      }
      digits++;
    }
    if (digits === 0) {
      throw new InvalidArgumentError("id", `\`${shown()}\` has no ${this.radix} digits`, "invalid_id");
    }
    return value;
  }

  /** `base62`, `base62 prefix=ord_ width=12`: the parts that differ from the radix's default. */
  toString(): string {
    let text: string = this.radix;
    if (this.prefix !== "") {
      text += ` prefix=${this.prefix}`;
    }
    if (this.width !== fullWidth(this.radix)) {
      text += ` width=${this.width}`;
    }
    return text;
  }
}

/** An ID given as a bigint, a decimal string or a safe integer, checked to be a u64. */
function toId(id: bigint | string | number): bigint {
  let value: bigint;
  if (typeof id === "bigint") {
    value = id;
  } else if (typeof id === "string" && /^[0-9]{1,20}$/.test(id)) {
    value = BigInt(id);
  } else if (typeof id === "number" && Number.isSafeInteger(id)) {
    value = BigInt(id);
  } else {
    throw new InvalidArgumentError("id", `${shorten(String(id))} is not an ID (a bigint, a decimal string or a safe integer)`, "invalid_id");
  }
  if (value < 0n || value > U64_MAX) {
    throw new InvalidArgumentError("id", `${value} is not a 64-bit ID`, "invalid_id");
  }
  return value;
}
