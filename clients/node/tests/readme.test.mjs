// The README's examples run as written: the quick start (and the tag handle after it) against
// a real node, loading the package by its name; the IdForm example with its stated results.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Node, cleanup, freePort, scratch } from "./support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(join(root, "README.md"), "utf8");

/** The ```js blocks of the README, in order. */
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
/** The block that holds `text`. */
const block = (text) => {
  const found = blocks.filter((b) => b.includes(text));
  assert.equal(found.length, 1, `one README block with ${text}`);
  return found[0];
};

let dir;
let node;
before(async () => {
  dir = scratch("readme");
  // A node without tokens, as the quick start has it, on a free port the example is pointed at.
  node = new Node(`sqlite://${dir}/ids.db`, "readme");
  node.resp = await freePort();
  node.http = await freePort();
  await startWithoutToken(node);
});
after(async () => {
  await node?.kill();
  cleanup(dir);
});

function run(source, file = "example.mjs") {
  const consumer = mkdtempSync(join(tmpdir(), "idmint-node-readme-"));
  try {
    mkdirSync(join(consumer, "node_modules"));
    symlinkSync(root, join(consumer, "node_modules", "idmint-client"));
    writeFileSync(join(consumer, file), source);
    return execFileSync(process.execPath, [file], { cwd: consumer, timeout: 30_000 }).toString();
  } finally {
    rmSync(consumer, { recursive: true, force: true });
  }
}

test("the quick start runs against a node", () => {
  const quick = block('import { IdMint } from "idmint-client";');
  const handle = block("tryNext()");
  const here = (source) => source.replaceAll("redis://127.0.0.1:6380", node.url);
  assert.ok(quick.includes("redis://127.0.0.1:6380"));
  assert.match(run(here(quick)), /^\d+n \d+n 100 \{/);
  // The tag handle, with the client of the quick start (before it closes).
  const withHandle = quick.replace("await ids.close();", `${handle}\nconsole.log("handle", id);\nawait ids.close();`);
  assert.match(run(here(withHandle)), /handle \d+n/);
});

test("the CommonJS quick start runs as written, in a .cjs file", () => {
  const cjs = block('require("idmint-client")');
  assert.ok(cjs.includes("redis://127.0.0.1:6380"));
  assert.match(run(cjs.replaceAll("redis://127.0.0.1:6380", node.url), "example.cjs"), /^\d+\n$/);
});

test("the IdForm example gives what its comments say", () => {
  const form = block("new IdForm(");
  const results = [...form.matchAll(/^(form\.\w+\(.*\));\s*\/\/ (.*)$/gm)];
  assert.equal(results.length, 2);
  const source = `${form}\n${results.map(([, call]) => `console.log(JSON.stringify(String(${call})));`).join("\n")}`;
  const printed = run(source).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(printed, results.map(([, , said]) => said.replace(/^"|"$/g, "").replace(/n$/, "")));
});

test("the UUIDv7 and ULID example prints what its comments say", () => {
  const example = block("new Uuid7Generator()");
  const printed = run(example).trim().split("\n");
  assert.equal(printed.length, 5);
  assert.equal(printed[0], "true");
  assert.match(printed[1], /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.match(printed[2], /^[0-7][0-9A-HJKMNP-TV-Z]{25} [0-9a-f]{32}$/);
  assert.match(printed[3], /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  assert.match(printed[4], /^true \d{13}$/);
});

/** Starts `node` without --admin-token (the quick start gives no token). */
async function startWithoutToken(n) {
  const { spawn } = await import("node:child_process");
  const { idmintBinary } = await import("./support.mjs");
  const Redis = (await import("ioredis")).default;
  n.process = spawn(idmintBinary(), ["serve", "--store", n.store, "--node-name", n.name, "--resp", `127.0.0.1:${n.resp}`, "--http", `127.0.0.1:${n.http}`], { stdio: "ignore" });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const check = new Redis({ port: n.resp, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    check.on("error", () => {});
    try {
      await check.connect();
      await check.ping();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error("the README's node did not start");
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      check.disconnect();
    }
  }
}
