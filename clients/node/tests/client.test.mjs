// Segment IDs against two real nodes on one SQLite file: uniqueness and order with many
// callers, one refill in flight per tag, IDs above 2^53, give-back at close, close racing
// calls, auth and configuration errors.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AuthError, ClosedError, ConfigError, IdMint, InvalidArgumentError, TagExhaustedError } from "../dist/esm/index.js";
import { Node, TOKEN, cleanup, increasing, scratch } from "./support.mjs";

let dir;
let nodes;
const urls = () => nodes.map((n) => n.url);

before(async () => {
  dir = scratch("client");
  const store = `sqlite://${dir}/ids.db`;
  nodes = [await Node.start(store, "n0"), await Node.start(store, "n1")];
});

after(async () => {
  for (const node of nodes ?? []) {
    await node.kill();
  }
  cleanup(dir);
});

test("IDs are unique across concurrent callers and clients, and increase per client", async () => {
  const a = new IdMint({ nodes: urls(), token: TOKEN, minStep: 50, maxStep: 500, targetLifetimeMs: 50 });
  const b = new IdMint({ nodes: [...urls()].reverse(), token: TOKEN, minStep: 50, maxStep: 500 });
  const draw = async (client, count) => {
    const mine = [];
    for (let i = 0; i < count; i++) {
      mine.push(await client.next("unique"));
      if (i % 97 === 0) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return mine;
  };
  const lists = await Promise.all([draw(a, 20_000), draw(a, 20_000), draw(b, 20_000), draw(b, 20_000)]);
  const all = lists.flat();
  assert.equal(new Set(all).size, 80_000);
  for (const list of lists) {
    assert.ok(increasing(list));
    assert.equal(typeof list[0], "bigint");
  }
  const stats = a.stats();
  assert.ok(stats.ranges > 1, JSON.stringify(stats));
  // The range size follows the rate: above the minimum once IDs are drawn quickly.
  assert.ok(stats.rangeIds / stats.ranges > 50, JSON.stringify(stats));
  await a.close();
  await b.close();
});

test("callers that find the buffer empty share one refill", async () => {
  const client = new IdMint({ nodes: urls(), token: TOKEN, minStep: 2_000, maxStep: 2_000 });
  const ids = await Promise.all(Array.from({ length: 1_500 }, () => client.next("shared")));
  assert.equal(new Set(ids).size, 1_500);
  assert.equal(client.stats().ranges, 1, "one range for 1,500 callers who came together");
  await client.close();

  // Ranges smaller than the crowd: refills one after the other, never two at once.
  const small = new IdMint({ nodes: urls(), token: TOKEN, minStep: 100, maxStep: 100 });
  const many = await Promise.all(Array.from({ length: 1_000 }, () => small.next("shared-small")));
  assert.equal(new Set(many).size, 1_000);
  assert.ok(small.stats().ranges <= 12, JSON.stringify(small.stats()));
  assert.deepEqual([...many].sort((x, y) => (x < y ? -1 : 1)), many, "handed out in call order");
  await small.close();
});

test("IDs above 2^53 are exact, as bigint and as strings", async () => {
  const first = 2n ** 53n + 10n;
  await nodes[0].createTag("big", `{"first_id": ${first}}`);
  const client = new IdMint({ nodes: urls(), token: TOKEN, minStep: 10, maxStep: 10 });
  const ids = [];
  for (let i = 0; i < 25; i++) {
    ids.push(await client.next("big"));
  }
  assert.equal(ids[0], first);
  assert.deepEqual(ids, Array.from({ length: 25 }, (_, i) => first + BigInt(i)));
  await client.close();
  const strings = new IdMint({ nodes: urls(), token: TOKEN, ids: "string", minStep: 10, maxStep: 10 });
  const text = await strings.next("big");
  assert.equal(typeof text, "string");
  assert.ok(BigInt(text) > ids.at(-1), text);
  assert.match(text, /^9007199254741\d{3}$/);
  const flake = await strings.snowflake();
  assert.equal(typeof flake, "string");
  assert.equal(BigInt(flake).toString(), flake);
  await strings.close();
});

test("a tag's end is TagExhausted, at once", async () => {
  const last = 2n ** 63n - 2n; // the last ID a tag hands out
  await nodes[0].createTag("ending", `{"first_id": ${last - 4n}}`);
  // A range larger than what is left is refused whole by the nodes.
  const large = new IdMint({ nodes: urls(), token: TOKEN, minStep: 100, maxStep: 100, maxWaitMs: 2_000 });
  let started = performance.now();
  await assert.rejects(large.next("ending"), (e) => e instanceof TagExhaustedError && e.code === "tag_exhausted" && e.tag === "ending");
  assert.ok(performance.now() - started < 1_000);
  await large.close();
  // Ranges of one: every ID, then the end, known without asking.
  const client = new IdMint({ nodes: urls(), token: TOKEN, minStep: 1, maxStep: 1, maxWaitMs: 2_000 });
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push(await client.next("ending"));
  }
  assert.deepEqual(ids, [last - 4n, last - 3n, last - 2n, last - 1n, last]);
  started = performance.now();
  await assert.rejects(client.next("ending"), (e) => e instanceof TagExhaustedError && e.code === "tag_exhausted");
  assert.ok(performance.now() - started < 1_000);
  await client.close();
});

test("close gives every tag's unused IDs back", async () => {
  // One node, ranges of 100 (the node's own segments are 1000): after close the node hands
  // out next, for each tag, the first ID the client never handed out.
  const client = new IdMint({ nodes: [nodes[0].url], token: TOKEN, minStep: 100, maxStep: 100 });
  const few = [];
  for (let i = 0; i < 10; i++) few.push(await client.next("gb_a")); // no refill yet
  const many = [];
  for (let i = 0; i < 150; i++) many.push(await client.next("gb_b")); // second range, third asked for
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(await client.close(), 2);
  assert.ok(client.stats().givenBack >= 90 + 150, JSON.stringify(client.stats()));
  await assert.rejects(client.next("gb_a"), ClosedError);
  await assert.rejects(client.next("never_seen"), ClosedError);
  await assert.rejects(client.snowflake(), ClosedError);
  assert.throws(() => client.tryNext("gb_a"), ClosedError);
  const redis = nodes[0].redis();
  try {
    assert.equal(BigInt(await redis.incr("gb_a")), few.at(-1) + 1n);
    assert.equal(BigInt(await redis.incr("gb_b")), many.at(-1) + 1n);
  } finally {
    redis.disconnect();
  }
});

test("calls waiting when close comes are refused, and close still gives back", async () => {
  const client = new IdMint({ nodes: [nodes[1].url], token: TOKEN, minStep: 100, maxStep: 100 });
  const seen = [await client.next("race")];
  const calls = Array.from({ length: 300 }, () => client.next("race"));
  const flakes = client.snowflakes(5_000);
  const closing = client.close();
  const settled = await Promise.allSettled([...calls, flakes]);
  await closing;
  for (const outcome of settled) {
    if (outcome.status === "fulfilled") {
      seen.push(outcome.value);
    } else {
      assert.ok(outcome.reason instanceof ClosedError, String(outcome.reason));
    }
  }
  const redis = nodes[1].redis();
  try {
    const next = BigInt(await redis.incr("race"));
    const handed = seen.filter((id) => typeof id === "bigint");
    assert.ok(handed.every((id) => id < next), "nothing handed out is handed out again");
  } finally {
    redis.disconnect();
  }
});

test("tryNext and tag handles draw without a Promise", async () => {
  const client = new IdMint({ nodes: urls(), token: TOKEN, minStep: 100, maxStep: 100 });
  assert.equal(client.tryNext("sync"), undefined, "nothing in memory yet: a refill starts");
  const first = await client.next("sync");
  const second = client.tryNext("sync");
  assert.equal(second, first + 1n);
  const handle = client.tag("sync");
  assert.equal(handle.name, "sync");
  assert.equal(handle.tryNext(), first + 2n);
  assert.equal(await handle.next(), first + 3n);
  let drawn = 0;
  let last = first + 3n;
  while (drawn < 1_000) {
    const id = handle.tryNext() ?? (await handle.next());
    assert.ok(id > last);
    last = id;
    drawn++;
  }
  await client.close();
  assert.throws(() => handle.tryNext(), ClosedError);
  await assert.rejects(handle.next(), ClosedError);
});

test("a wrong or missing token is an auth error, not unavailable", async () => {
  const wrong = new IdMint({ nodes: urls(), token: "wrong", maxWaitMs: 2_000 });
  await assert.rejects(wrong.next("auth"), (e) => e instanceof AuthError && e.code === "auth" && !e.retryable);
  await assert.rejects(wrong.snowflake(), AuthError);
  await wrong.close();
  const none = new IdMint({ nodes: urls(), maxWaitMs: 2_000 });
  const started = performance.now();
  await assert.rejects(none.next("auth"), AuthError);
  assert.ok(performance.now() - started < 1_500, "refused at once, not after maxWaitMs");
  await none.close();
});

test("bad settings and arguments are refused, naming them", async () => {
  const cases = [
    [{ nodes: [] }, "nodes"],
    [{ nodes: ["http://127.0.0.1:1"] }, "nodes"],
    [{ nodes: ["redis://:secret@127.0.0.1:1"] }, "nodes"],
    [{ nodes: urls(), token: " " }, "token"],
    [{ nodes: urls(), minStep: 0 }, "minStep"],
    [{ nodes: urls(), minStep: 20, maxStep: 10 }, "maxStep"],
    [{ nodes: urls(), prefetchAt: 1.5 }, "prefetchAt"],
    [{ nodes: urls(), maxWaitMs: 0 }, "maxWaitMs"],
    [{ nodes: urls(), backoffMs: 2_000, maxBackoffMs: 1_000 }, "maxBackoffMs"],
    [{ nodes: urls(), snowflakeBatch: 0 }, "snowflakeBatch"],
    [{ nodes: urls(), ids: "number" }, "ids"],
    [{ nodes: urls(), max_wait: 10 }, "max_wait"],
  ];
  for (const [options, setting] of cases) {
    assert.throws(
      () => new IdMint(options),
      (e) => e instanceof ConfigError && e.code === "config" && e.setting === setting && e.message.includes(setting),
      setting,
    );
  }
  assert.throws(() => new IdMint({ nodes: urls(), token: 42 }), /token: must be a string, not number/);
  const client = new IdMint({ nodes: urls(), token: TOKEN });
  for (const tag of ["", " padded", "new\nline", "x".repeat(129), 42]) {
    await assert.rejects(client.next(tag), (e) => e instanceof InvalidArgumentError && e.nodeCode === "invalid_tag");
  }
  for (const n of [0, -1, 10_001, 2.5, "3"]) {
    await assert.rejects(client.snowflakes(n), (e) => e instanceof InvalidArgumentError && e.argument === "n");
  }
  // Any UTF-8 text the nodes take is a tag.
  assert.ok((await client.next("订单 eu/1")) > 0n);
  await client.close();
});
