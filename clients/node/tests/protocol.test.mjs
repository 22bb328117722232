// The pieces that need no node: the RESP2 codec, reading the nodes' error replies, the list of
// error codes against the server's, and replies that break the contract (from a fake node:
// a real one never sends them).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { ERROR_CODES, IdMint, REFUSED_CODES, RefusedError } from "../dist/esm/index.js";
import { refusal } from "../dist/esm/nodes.js";
import { ReplyError, ReplyReader, encodeCommand } from "../dist/esm/resp.js";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

test("replies are read whole from any split, integers exact past 2^53", () => {
  const wire = Buffer.from(
    "*3\r\n:9223372036854775807\r\n:9007199254740993\r\n$4\r\nhé!\r\n" +
      "+OK\r\n-ERR tag_exhausted tag `t` is exhausted\r\n$-1\r\n*0\r\n:-1\r\n",
  );
  // Every split point, and byte by byte.
  for (const size of [1, 2, 3, 7, wire.length]) {
    const reader = new ReplyReader();
    const replies = [];
    for (let at = 0; at < wire.length; at += size) {
      reader.push(wire.subarray(at, at + size));
      for (let reply = reader.next(); reply !== undefined; reply = reader.next()) replies.push(reply);
    }
    assert.equal(replies.length, 6, `chunks of ${size}`);
    assert.deepEqual(replies[0], [2n ** 63n - 1n, 2n ** 53n + 1n, "hé!"]);
    assert.equal(replies[1], "OK");
    assert.ok(replies[2] instanceof ReplyError);
    assert.equal(replies[2].prefix, "ERR");
    assert.equal(replies[2].detail, "tag_exhausted tag `t` is exhausted");
    assert.equal(replies[3], null);
    assert.deepEqual(replies[4], []);
    assert.equal(replies[5], -1n);
  }
  const reader = new ReplyReader();
  reader.push(Buffer.from("?what\r\n"));
  assert.throws(() => reader.next(), /unknown type/);
});

test("commands are arrays of bulk strings, bigints written exactly", () => {
  assert.equal(
    encodeCommand(["IDMINT.RANGE", "订单", 10, "ABOVE", 2n ** 63n]).toString(),
    "*5\r\n$12\r\nIDMINT.RANGE\r\n$6\r\n订单\r\n$2\r\n10\r\n$5\r\nABOVE\r\n$19\r\n9223372036854775808\r\n",
  );
});

test("the error codes are the server's, in its order", () => {
  const source = readFileSync(join(repo, "crates", "idmint-core", "src", "error_code.rs"), "utf8");
  const block = source.slice(source.indexOf("codes! {"));
  const server = [...block.matchAll(/^\s*[A-Z][A-Za-z]* => "([a-z_]+)",$/gm)].map((m) => m[1]);
  assert.ok(server.length > 40, "read the server's list");
  assert.deepEqual([...ERROR_CODES], server);
  for (const code of REFUSED_CODES) assert.ok(ERROR_CODES.includes(code));
  assert.ok(!REFUSED_CODES.has("store_corrupt"));
});

test("refusals are an allow-list; anything else is the node's failure", () => {
  const kind = (line) => refusal(new ReplyError(line), "n:1")?.code;
  assert.equal(kind("ERR tag_exhausted tag `t` is exhausted"), "tag_exhausted");
  assert.equal(kind("ERR period_unavailable tag `d`: used up"), "period_unavailable");
  assert.equal(kind("ERR permuted this node hands out its IDs permuted"), "permuted");
  assert.equal(kind("ERR dated tag `d` is dated"), "dated");
  assert.equal(kind("ERR too_many_tags too many tags"), "refused");
  assert.equal(kind("ERR tag_quota tag quota: the token"), "refused");
  assert.equal(kind("ERR invalid tag `x `"), "refused");
  assert.equal(kind("ERR unknown command 'X'"), "refused");
  assert.equal(kind("WRONGPASS invalid username-password pair"), "auth");
  assert.equal(kind("NOAUTH Authentication required."), "auth");
  assert.equal(kind("NOPERM this token may not"), "auth");
  assert.equal(kind("ERR AUTH <password> called without any password configured"), "auth");
  assert.equal(refusal(new ReplyError("ERR count must be between 1 and 50, got 100"), "n:1").largest, 50);
  assert.equal(refusal(new ReplyError("ERR COUNT must be between 1 and 50, got 64"), "n:1").largest, 50);
  for (const line of [
    "ERR store_corrupt store corrupt: malformed",
    "ERR max number of clients reached",
    "ERR tag_exhaustedness is not a code",
    "TRYAGAIN idmint is temporarily unavailable",
    "LOADING dataset",
  ]) {
    assert.equal(kind(line), undefined, line);
  }
});

/** A fake node answering IDMINT.RANGE with `answer(args)` (a RESP reply as text). */
async function fakeNode(answer) {
  const server = createServer((socket) => {
    socket.on("data", (chunk) => {
      const words = chunk.toString().split("\r\n").filter((w, i) => i % 2 === 0 && i > 0);
      socket.write(answer(words));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

test("a range that breaks the contract is refused, never handed out", async () => {
  for (const [name, reply] of [
    ["longer than asked", ":1\r\n:1000\r\n"],
    ["reversed", ":50\r\n:40\r\n"],
    ["at zero", ":0\r\n:9\r\n"],
  ]) {
    const server = await fakeNode(() => `*2\r\n${reply}`);
    const client = new IdMint({ nodes: [`redis://127.0.0.1:${server.address().port}`], minStep: 10, maxStep: 10, maxWaitMs: 1_000 });
    await assert.rejects(client.next("t"), (e) => e instanceof RefusedError && e.nodeCode === "store_invalid", name);
    assert.equal(client.tryNext("t"), undefined);
    await client.close();
    server.close();
  }
  // Below the floor: the second range must be above the first one's last ID.
  let calls = 0;
  const server = await fakeNode(() => (++calls === 1 ? "*2\r\n:100\r\n:109\r\n" : "*2\r\n:105\r\n:114\r\n"));
  const client = new IdMint({ nodes: [`redis://127.0.0.1:${server.address().port}`], minStep: 10, maxStep: 10, maxWaitMs: 1_000 });
  const ids = [];
  for (let i = 0; i < 10; i++) ids.push(await client.next("t"));
  assert.deepEqual(ids, Array.from({ length: 10 }, (_, i) => 100n + BigInt(i)));
  await assert.rejects(client.next("t"), (e) => e instanceof RefusedError && /above 109/.test(e.message));
  await client.close();
  server.close();
});

test("a reply of the wrong shape is the node's failure: the next node serves", async () => {
  const server = await fakeNode(() => "$5\r\nhello\r\n");
  const client = new IdMint({ nodes: [`redis://127.0.0.1:${server.address().port}`], minStep: 10, maxStep: 10, maxWaitMs: 500, backoffMs: 100 });
  await assert.rejects(client.next("t"), (e) => e.code === "unavailable" && /answered badly/.test(e.message));
  await client.close();
  server.close();
});
