// IdForm against form.rs's own vectors and against a real node's FORMAT replies, both ways.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { IdForm, InvalidArgumentError, fullWidth } from "../dist/esm/index.js";
import { Node, TOKEN, cleanup, scratch } from "./support.mjs";

const MAX_ID = 2n ** 63n - 1n;
const RADIXES = ["decimal", "base62", "base36", "base32"];

test("form.rs's vectors", () => {
  assert.deepEqual(RADIXES.map(fullWidth), [19, 11, 13, 13]);
  for (const radix of RADIXES) {
    const form = new IdForm(radix);
    assert.equal(form.encode(MAX_ID).length, fullWidth(radix));
    assert.equal(form.decode(form.encode(MAX_ID)), MAX_ID);
  }
  assert.equal(new IdForm("base62").encode(61n), "0000000000z");
  assert.equal(new IdForm("base36", { width: 0 }).encode(35n), "z");
  const ulid = new IdForm("base32", { width: 0 });
  assert.equal(ulid.encode(32n), "10");
  assert.equal(ulid.decode("1o"), 32n);
  assert.equal(ulid.decode("i-L"), 33n);
  assert.throws(() => ulid.decode("1U"), InvalidArgumentError);
  const order = new IdForm("decimal", { prefix: "ord_" });
  assert.equal(order.encode(42n), "ord_0000000000000000042");
  assert.equal(order.decode("ord_42"), 42n);
  assert.equal(String(new IdForm("62", { prefix: "ord_", width: 12 })), "base62 prefix=ord_ width=12");
});

test("bad text is refused with a reason", () => {
  const form = new IdForm("base62", { prefix: "u_" });
  const message = (text) => {
    try {
      form.decode(text);
    } catch (e) {
      assert.ok(e instanceof InvalidArgumentError);
      return e.message;
    }
    assert.fail(`${text} was read`);
  };
  assert.match(message("x_1"), /prefix `u_`/);
  assert.match(message("u_"), /no base62 digits/);
  assert.match(message("u_1!"), /character 4/);
  assert.match(message("u_zzzzzzzzzzzz"), /above the largest ID/);
  assert.throws(() => new IdForm("base62", { prefix: "é" }), InvalidArgumentError);
  assert.throws(() => new IdForm("base64"), InvalidArgumentError);
  assert.throws(() => new IdForm("base62", { width: 33 }), InvalidArgumentError);
  assert.throws(() => form.encode(2 ** 60), InvalidArgumentError, "a number past 2^53 has lost digits");
  assert.throws(() => form.encode(-1n), InvalidArgumentError);
  assert.equal(form.encode("175928847299117063"), form.encode(175928847299117063n));
});

test("a huge text (an ID from a request, say) is refused at once, its message short", () => {
  const form = new IdForm("base62");
  const huge = "x".repeat(50_000_000);
  for (const refuse of [() => form.decode(huge), () => form.encode(huge)]) {
    const started = performance.now();
    assert.throws(refuse, (e) => e instanceof InvalidArgumentError && e.message.length < 200);
    // Splitting the whole text into characters for the message took seconds and a gigabyte.
    assert.ok(performance.now() - started < 1_000, `${performance.now() - started} ms`);
  }
});

let dir;
let node;
before(async () => {
  dir = scratch("forms");
  node = await Node.start(`sqlite://${dir}/ids.db`, "forms");
});
after(async () => {
  await node?.kill();
  cleanup(dir);
});

test("the node's FORMAT replies and IDMINT.DECODE agree with IdForm, both ways", async () => {
  const redis = node.redis();
  try {
    for (const radix of RADIXES) {
      for (const [prefix, width] of [["", undefined], ["ord_", undefined], ["x", 0], ["", 24]]) {
        const form = new IdForm(radix, { prefix, ...(width === undefined ? {} : { width }) });
        const extra = [...(prefix ? ["PREFIX", prefix] : []), ...(width === undefined ? [] : ["WIDTH", String(width)])];
        const texts = await redis.call("IDMINT.SNOWFLAKE", "COUNT", "50", "FORMAT", radix, ...extra);
        const ids = texts.map((t) => form.decode(t));
        assert.deepEqual(ids, [...new Set(ids)].sort((a, b) => (a < b ? -1 : 1)));
        assert.deepEqual(ids.map((id) => form.encode(id)), texts);
        const decoded = await redis.call("IDMINT.DECODE", form.encode(ids.at(-1)), "FORMAT", radix, ...extra);
        const fields = Object.fromEntries(decoded.flatMap((v, i) => (i % 2 === 0 ? [[v, decoded[i + 1]]] : [])));
        assert.equal(form.decode(String(fields.id)), ids.at(-1));
      }
    }
  } finally {
    redis.disconnect();
  }
});
