// Failover, back-off and bounded waits against real nodes: a node killed mid-run, a node
// restarted, no node at all, a node whose --max-count is below maxStep.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { IdMint, UnavailableError } from "../dist/esm/index.js";
import { Node, TOKEN, cleanup, freePort, increasing, scratch } from "./support.mjs";

let dir;
let store;
let nodes;

before(async () => {
  dir = scratch("failover");
  store = `sqlite://${dir}/ids.db`;
  nodes = [await Node.start(store, "f0"), await Node.start(store, "f1")];
});

after(async () => {
  for (const node of nodes ?? []) {
    await node.kill();
  }
  cleanup(dir);
});

test("a node killed mid-run: the client moves on, IDs still increase", async () => {
  const extra = await Node.start(store, "f-extra");
  try {
    const client = new IdMint({
      nodes: [extra.url, ...nodes.map((n) => n.url)],
      token: TOKEN,
      minStep: 10,
      maxStep: 10,
      backoffMs: 200,
      callTimeoutMs: 500,
    });
    const ids = [];
    for (let i = 0; i < 100; i++) ids.push(await client.next("failover"));
    assert.equal(client.stats().currentNode, extra.label);
    await extra.kill();
    for (let i = 0; i < 100; i++) ids.push(await client.next("failover"));
    assert.ok(increasing(ids));
    const stats = client.stats();
    assert.ok(stats.failovers >= 1, JSON.stringify(stats));
    assert.ok(stats.nodeFailures.find((n) => n.node === extra.label).failures >= 1);
    assert.notEqual(stats.currentNode, extra.label);
    await client.close();
  } finally {
    await extra.kill();
  }
});

test("snowflakes fail over too and keep increasing", async () => {
  const extra = await Node.start(store, "f-extra2");
  try {
    const client = new IdMint({ nodes: [extra.url, nodes[0].url], token: TOKEN, snowflakeMaxAgeMs: 1, backoffMs: 200 });
    const ids = [];
    for (let i = 0; i < 50; i++) ids.push(await client.snowflake());
    await extra.kill();
    for (let i = 0; i < 50; i++) ids.push(await client.snowflake());
    assert.ok(increasing(ids));
    await client.close();
  } finally {
    await extra.kill();
  }
});

test("a node restarted: the client comes back to it", async () => {
  const only = await Node.start(store, "f-restart");
  try {
    const client = new IdMint({ nodes: [only.url], token: TOKEN, minStep: 10, maxStep: 10, backoffMs: 100, maxBackoffMs: 200, maxWaitMs: 10_000 });
    const ids = [];
    for (let i = 0; i < 50; i++) ids.push(await client.next("restart"));
    await only.kill();
    const restarted = only.start();
    for (let i = 0; i < 50; i++) ids.push(await client.next("restart"));
    await restarted;
    assert.ok(increasing(ids));
    assert.equal(new Set(ids).size, 100);
    await client.close();
  } finally {
    await only.kill();
  }
});

test("no node answers: Unavailable within maxWaitMs, naming the last cause", async () => {
  const dead = `redis://127.0.0.1:${await freePort()}`;
  const client = new IdMint({ nodes: [dead], token: TOKEN, maxWaitMs: 500, backoffMs: 100 });
  for (const call of [() => client.next("nowhere"), () => client.snowflake(), () => client.snowflakes(3)]) {
    const started = performance.now();
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof UnavailableError, String(e));
      assert.equal(e.code, "unavailable");
      assert.ok(e.retryable);
      assert.ok(e.cause instanceof Error);
      // The last cause, named: refused, most often (a port another process took may answer otherwise).
      assert.match(e.message, /127\.0\.0\.1:\d+ (failed|did not)/);
      return true;
    });
    assert.ok(performance.now() - started < 2_000);
  }
  await client.close();
});

test("a node that accepts and never answers counts as failed after callTimeoutMs", async () => {
  const { createServer } = await import("node:net");
  const sockets = [];
  const silent = createServer((socket) => sockets.push(socket));
  await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
  try {
    const client = new IdMint({
      nodes: [`redis://127.0.0.1:${silent.address().port}`, nodes[0].url],
      token: TOKEN,
      callTimeoutMs: 200,
      maxWaitMs: 3_000,
    });
    const started = performance.now();
    assert.ok((await client.next("silent")) > 0n);
    assert.ok(performance.now() - started < 1_500);
    assert.equal(client.stats().currentNode, nodes[0].label);
    await client.close();
  } finally {
    for (const socket of sockets) socket.destroy();
    silent.close();
  }
});

test("the nodes' max count is learned and never asked above again", async () => {
  const small = await Node.start(store, "f-max", ["--max-count", "50"]);
  try {
    const client = new IdMint({ nodes: [small.url], token: TOKEN, minStep: 200, maxStep: 1_000, snowflakeBatch: 64 });
    const ids = [];
    for (let i = 0; i < 500; i++) ids.push(await client.next("maxcount"));
    assert.ok(increasing(ids));
    const stats = client.stats();
    assert.ok(stats.ranges >= 10, JSON.stringify(stats));
    assert.ok(stats.rangeIds <= stats.ranges * 50, JSON.stringify(stats));
    // Snowflake batches too: 64 asked, 50 granted, and a call for more takes several batches.
    const flakes = await client.snowflakes(120);
    assert.equal(flakes.length, 120);
    assert.ok(increasing(flakes));
    await client.close();
  } finally {
    await small.kill();
  }
});
