/** Tag names, checked as the nodes check them (idmint-core's tag.rs), before any request. */

import { InvalidArgumentError } from "./errors.js";

/** The longest tag, in UTF-8 bytes. */
export const MAX_TAG_BYTES = 128;

/** Control characters (Unicode's Cc), the line separators, and halves of a surrogate pair. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Throws {@link InvalidArgumentError} unless `tag` is a tag the nodes accept: 1 to 128 bytes
 * of UTF-8 text, no control characters or line separators, no space at either end.
 */
export function checkTag(tag: unknown): asserts tag is string {
  if (typeof tag !== "string") {
    throw new InvalidArgumentError("tag", `a tag is a string, not ${typeof tag}`, "invalid_tag");
  }
  const bytes = Buffer.byteLength(tag, "utf8");
  if (bytes === 0 || bytes > MAX_TAG_BYTES || UNSAFE.test(tag) || tag.startsWith(" ") || tag.endsWith(" ")) {
    throw new InvalidArgumentError(
      "tag",
      `invalid tag ${JSON.stringify(tag.slice(0, MAX_TAG_BYTES))}: tags are 1 to 128 bytes of UTF-8 text, ` +
        "without control characters and without a space at either end",
      "invalid_tag",
    );
  }
}
