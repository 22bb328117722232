// next() from memory against a plain counter, and against a round trip of INCR with ioredis to
// a real node. A timed loop: each case runs for a fixed time after a warm-up and reports
// nanoseconds per ID; then, with --expose-gc and a young generation large enough that no
// collection runs inside the pass, the heap bytes one ID costs (one pass of 100,000 after a
// forced collection): a Promise shows there.
//
//   node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 bench/next.mjs --node redis://127.0.0.1:6380 [--token T] [--seconds 2]

import Redis from "ioredis";

import { IdMint } from "../dist/esm/index.js";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const node = flag("node", "redis://127.0.0.1:6380");
const token = flag("token", undefined);
const seconds = Number(flag("seconds", "3"));

/** A turn of the event loop, so replies (a refill) are read between rounds. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs `body(1000)` round after round for `seconds` after a warm-up, a turn of the event loop
 * between rounds (as a program that does any I/O gives); ns per iteration. Then the heap bytes
 * of 100 rounds, when gc() is exposed.
 */
async function timed(name, body) {
  const round = 1_000;
  const warm = performance.now();
  while (performance.now() - warm < 300) {
    await body(round);
    await turn();
  }
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1_000) {
    await body(round);
    await turn();
    done += round;
  }
  const elapsed = performance.now() - start;
  let bytes = "";
  if (globalThis.gc !== undefined) {
    globalThis.gc();
    const before = process.memoryUsage().heapUsed;
    for (let r = 0; r < 100; r++) {
      await body(round);
      await turn();
    }
    bytes = `${((process.memoryUsage().heapUsed - before) / (100 * round)).toFixed(0).padStart(5)} B/op`;
  }
  const ns = (elapsed * 1e6) / done;
  console.log(`${name.padEnd(44)} ${ns.toFixed(1).padStart(10)} ns/op ${(done / (elapsed / 1000) / 1e6).toFixed(2).padStart(8)} M/s ${bytes}`);
  return ns;
}

let sink = 0n;
const results = {};

let counter = 0;
results.counter = await timed("plain counter (number, ++)", (n) => {
  for (let i = 0; i < n; i++) counter++;
});
let big = 0n;
results.bigint = await timed("plain counter (bigint, += 1n)", (n) => {
  for (let i = 0; i < n; i++) big += 1n;
});

const ids = new IdMint({ nodes: [node], ...(token ? { token } : {}), minStep: 10_000, maxStep: 10_000, targetLifetimeMs: 10_000 });
await ids.next("bench");
const tag = ids.tag("bench");
results.tryNext = await timed("IdMint tag.tryNext() ?? await next()", async (n) => {
  for (let i = 0; i < n; i++) sink = tag.tryNext() ?? (await tag.next());
});
results.tryNextByName = await timed("IdMint tryNext(tag) ?? await next(tag)", async (n) => {
  for (let i = 0; i < n; i++) sink = ids.tryNext("bench") ?? (await ids.next("bench"));
});
results.next = await timed("IdMint await next(tag)", async (n) => {
  for (let i = 0; i < n; i++) sink = await ids.next("bench");
});
const stats = ids.stats();
await ids.close();

const url = new URL(node);
const redis = new Redis({ host: url.hostname, port: Number(url.port), ...(token ? { password: token } : {}) });
results.incr = await timed("ioredis await incr(tag) (round trip)", async (n) => {
  for (let i = 0; i < n; i++) sink = await redis.incr("bench-incr");
});
redis.disconnect();
void sink;

const ratio = (a, b) => (results[a] / results[b]).toFixed(1);
console.log(`\nranges taken: ${stats.ranges} (${stats.rangeIds} IDs)`);
console.log(`tag.tryNext vs number counter: ${ratio("tryNext", "counter")}x slower; vs bigint counter: ${ratio("tryNext", "bigint")}x`);
console.log(`await next(tag) vs bigint counter: ${ratio("next", "bigint")}x slower`);
console.log(`INCR round trip vs await next(tag): ${ratio("incr", "next")}x slower; vs tag.tryNext: ${ratio("incr", "tryNext")}x`);
