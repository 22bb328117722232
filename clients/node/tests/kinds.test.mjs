// Snowflakes, dated tags and permuted nodes, against real nodes.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { IdMint, PeriodUnavailableError, PermutedError } from "../dist/esm/index.js";
import { Node, TOKEN, cleanup, increasing, permutationKey, scratch, sleep } from "./support.mjs";

let dir;
let plain;
let permuted;

before(async () => {
  dir = scratch("kinds");
  plain = await Node.start(`sqlite://${dir}/plain.db`, "k-plain");
  permuted = await Node.start(`sqlite://${dir}/permuted.db`, "k-permuted", ["--permutation-key-file", permutationKey(dir)]);
  for (const [tag, digits] of [["orders", 6], ["tiny", 1]]) {
    await plain.createTag(tag, { period: "day", time_zone: "UTC", digits, step: 5 });
  }
});

after(async () => {
  await plain?.kill();
  await permuted?.kill();
  cleanup(dir);
});

const todayUtc = () => BigInt(new Date().toISOString().slice(0, 10).replaceAll("-", ""));

test("snowflakes increase, batches expire, 10,000 at once at most", async () => {
  const client = new IdMint({ nodes: [plain.url], token: TOKEN, snowflakeMaxAgeMs: 50 });
  const ids = await client.snowflakes(500);
  for (let i = 0; i < 100; i++) ids.push(await client.snowflake());
  assert.ok(increasing(ids));
  assert.ok(ids.every((id) => typeof id === "bigint" && id > 2n ** 53n));
  const before = client.stats().snowflakeBatches;
  await sleep(100);
  assert.ok((await client.snowflake()) > ids.at(-1));
  assert.equal(client.stats().snowflakeBatches, before + 1, "the old batch was not used");
  const big = await client.snowflakes(10_000);
  assert.equal(big.length, 10_000);
  assert.ok(increasing(big));
  await client.close();
});

test("a batch serves its caller however slow the round trip", async () => {
  const client = new IdMint({ nodes: [plain.url], token: TOKEN, snowflakeMaxAgeMs: 0.000001, maxWaitMs: 2_000 });
  const ids = await client.snowflakes(5);
  for (let i = 0; i < 20; i++) ids.push(await client.snowflake());
  assert.ok(increasing(ids));
  await client.close();
});

test("concurrent snowflake callers share batches and get distinct increasing IDs", async () => {
  const client = new IdMint({ nodes: [plain.url], token: TOKEN, snowflakeBatch: 16 });
  const ids = await Promise.all(Array.from({ length: 500 }, () => client.snowflake()));
  assert.equal(new Set(ids).size, 500);
  assert.ok(increasing(ids), "handed out in call order");
  assert.ok(client.stats().snowflakeBatches <= 40, JSON.stringify(client.stats()));
  await client.close();
});

test("a dated tag is served one ID at a time; a plain tag beside it from ranges", async () => {
  const client = new IdMint({ nodes: [plain.url], token: TOKEN, maxWaitMs: 5_000 });
  const before = todayUtc();
  const ids = [];
  for (let i = 0; i < 30; i++) ids.push(await client.next("orders"));
  assert.ok(increasing(ids));
  const days = new Set(ids.map((id) => id / 1_000_000n));
  assert.ok([...days].every((d) => d === before || d === todayUtc()), String(ids));
  if (days.size === 1) {
    assert.deepEqual(ids.map((id) => id % 1_000_000n), Array.from({ length: 30 }, (_, i) => BigInt(i + 1)));
  }
  assert.equal(client.tryNext("orders"), undefined, "a dated tag's IDs are never kept");
  const plainIds = [];
  for (let i = 0; i < 10; i++) plainIds.push(await client.next("plain"));
  assert.ok(increasing(plainIds));
  assert.ok(client.stats().ranges >= 1);
  await client.close();
});

test("a used-up period is refused at once and blames no node", async () => {
  const client = new IdMint({ nodes: [plain.url], token: TOKEN, maxWaitMs: 5_000 });
  const ids = [];
  for (let i = 0; i < 9; i++) ids.push(await client.next("tiny"));
  assert.deepEqual(ids.map((id) => id % 10n), [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n]);
  let started = performance.now();
  await assert.rejects(client.next("tiny"), (e) => e instanceof PeriodUnavailableError && e.code === "period_unavailable");
  assert.ok(performance.now() - started < 2_000);
  started = performance.now();
  await client.next("plain2");
  assert.ok(performance.now() - started < 400, "the node was not marked failed");
  await client.close();
});

test("a permuted node: segment IDs refused with the reason, snowflakes all handed out", async () => {
  const client = new IdMint({ nodes: [permuted.url], token: TOKEN, maxWaitMs: 10_000, snowflakeBatch: 1 });
  const started = performance.now();
  await assert.rejects(client.next("orders"), (e) => {
    assert.ok(e instanceof PermutedError, String(e));
    assert.equal(e.code, "permuted");
    assert.match(e.message, /IDMINT\.NEXT/);
    return true;
  });
  assert.ok(performance.now() - started < 5_000);
  const ids = [];
  for (let i = 0; i < 100; i++) ids.push(...(await client.snowflakes(3)));
  assert.equal(new Set(ids).size, 300);
  const descents = ids.filter((id, i) => i > 0 && ids[i - 1] > id).length;
  assert.ok(descents > 50, "in the node's order, none dropped");
  await client.close();
});
