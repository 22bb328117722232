// IDs per second, one thread: Uuid7Generator and UlidGenerator against crypto.randomUUID().
//
//   node bench/id128.mjs [--ids 2000000]       (from clients/node, after `npm run build`)
//
// Needs no node. Each row is the best of five timed loops, after a warm-up loop.

import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

import { UlidGenerator, Uuid7Generator } from "../dist/esm/index.js";

const { values } = parseArgs({ options: { ids: { type: "string", default: "2000000" } } });
const n = Number(values.ids);

let sink = 0; // every result is used, so no loop is optimised away
function rate(make) {
  let best = Infinity;
  for (let round = 0; round < 6; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      sink ^= make() === undefined ? 1 : 0;
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (round > 0) best = Math.min(best, seconds); // round 0 warms up
  }
  return n / best;
}

const uuids = new Uuid7Generator();
const ulids = new UlidGenerator();
const rows = [
  ["Uuid7Generator.next()", () => uuids.next()],
  ["String(Uuid7Generator.next())", () => String(uuids.next())],
  ["UlidGenerator.next()", () => ulids.next()],
  ["String(UlidGenerator.next())", () => String(ulids.next())],
  ["crypto.randomUUID()", () => randomUUID()],
];
for (const [name, make] of rows) {
  const perSecond = rate(make);
  console.log(`${name.padEnd(31)} ${(perSecond / 1e6).toFixed(2).padStart(6)} M IDs/s  ${(1e9 / perSecond).toFixed(0).padStart(5)} ns/ID`);
}
if (sink === 42) console.log("");
