// A node that breaks the protocol, on purpose or by a bug: fake nodes (plain TCP servers in
// this process) that answer garbage, too much, or late. The client must hand out no ID such a
// reply carries, bound its memory and its waits, and leave no rejection unhandled.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, test } from "node:test";

import { IdMint } from "../dist/esm/index.js";
import { MAX_REPLY_BYTES, ReplyReader } from "../dist/esm/resp.js";

// Every unhandled rejection or uncaught exception while these tests run (checked last).
const stray = [];
process.on("unhandledRejection", (error) => stray.push(error));
process.on("uncaughtException", (error) => stray.push(error));

const servers = [];
after(() => {
  for (const server of servers) server.close();
});

/**
 * A fake node: `answer(command, socket)` gets each command (its words) and writes what it
 * likes. `IDMINT.SPACE` is answered as a plain node does unless `answer` returns false.
 */
async function fakeNode(answer) {
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    socket.on("data", (chunk) => {
      for (const command of commands(chunk.toString())) {
        if (command[0] === "IDMINT.SPACE") {
          socket.write("*2\r\n$8\r\npermuted\r\n:0\r\n");
        } else {
          answer(command, socket);
        }
      }
    });
  });
  // Destroys the sockets too, so close() does not wait for the client.
  server.closeAll = () => {
    for (const socket of sockets) socket.destroy();
    server.close();
  };
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { server, url: `redis://127.0.0.1:${server.address().port}` };
}

/** The commands in `text` (arrays of bulk strings, as the client writes them). */
function commands(text) {
  const out = [];
  const lines = text.split("\r\n");
  for (let i = 0; i < lines.length; ) {
    const head = lines[i];
    if (!head.startsWith("*")) {
      i++;
      continue;
    }
    const n = Number(head.slice(1));
    const words = [];
    for (let k = 0; k < n; k++) words.push(lines[i + 2 + 2 * k]);
    out.push(words);
    i += 1 + 2 * n;
  }
  return out;
}

/** Writes `total` bytes of `fill` to `socket` as fast as it drains, then nothing more. */
function flood(socket, total, fill) {
  const chunk = Buffer.from(fill.repeat(Math.ceil(65_536 / fill.length)));
  let sent = 0;
  const pump = () => {
    while (!socket.destroyed && sent < total) {
      sent += chunk.length;
      if (!socket.write(chunk)) {
        socket.once("drain", pump);
        return;
      }
    }
  };
  pump();
}

test("an integer past 64 bits is the node's failure, never an ID", async () => {
  // RESP integers are signed 64-bit, and every ID idmint issues fits in 63 bits.
  const { server, url } = await fakeNode((_, socket) => socket.write("*1\r\n:18446744073709551615\r\n"));
  const client = new IdMint({ nodes: [url], maxWaitMs: 500, backoffMs: 100 });
  await assert.rejects(client.snowflake(), (e) => e.code === "unavailable" && /past 64 bits/.test(e.message));
  await client.close();
  server.closeAll();
  const reader = new ReplyReader();
  reader.push(Buffer.from(":9223372036854775807\r\n:-9223372036854775808\r\n:9223372036854775808\r\n"));
  assert.equal(reader.next(), 2n ** 63n - 1n);
  assert.equal(reader.next(), -(2n ** 63n));
  assert.throws(() => reader.next(), /past 64 bits/);
});

test("a reply past MAX_REPLY_BYTES breaks the connection at once, not at the timeout", async () => {
  // An endless error line, a vast array, a huge bulk string: each is cut off once the bytes
  // buffered pass the bound, long before callTimeoutMs (the old reader kept them all).
  for (const [name, head, fill, total] of [
    ["endless line", "-ERR ", "a", 64 * 1024 * 1024],
    ["vast array", `*${MAX_REPLY_BYTES / 4 + 1}\r\n`, ":1\r\n", MAX_REPLY_BYTES + 65_536],
  ]) {
    const { server, url } = await fakeNode((_, socket) => {
      socket.write(head);
      flood(socket, total, fill);
    });
    const client = new IdMint({ nodes: [url], callTimeoutMs: 5_000, maxWaitMs: 1_000, backoffMs: 10_000, minStep: 10, maxStep: 10 });
    const started = performance.now();
    await assert.rejects(client.next("t"), (e) => e.code === "unavailable" && /longer than/.test(e.message), name);
    assert.ok(performance.now() - started < 4_000, `${name}: ${performance.now() - started} ms`);
    await client.close();
    server.closeAll();
  }
  const reader = new ReplyReader();
  reader.push(Buffer.from(`$${MAX_REPLY_BYTES + 1}\r\n`));
  assert.throws(() => reader.next(), /a length of/);
});

test("a long reply in small chunks is read in time linear in its length", () => {
  // 200,000 IDs in 1 KiB chunks: read again from its start at each chunk, this took seconds.
  const ids = Array.from({ length: 200_000 }, (_, i) => BigInt(i) + 2n ** 60n);
  const wire = Buffer.from(`*${ids.length}\r\n${ids.map((id) => `:${id}\r\n`).join("")}+OK\r\n`);
  const reader = new ReplyReader();
  const replies = [];
  const started = performance.now();
  for (let at = 0; at < wire.length; at += 1024) {
    reader.push(wire.subarray(at, at + 1024));
    for (let reply = reader.next(); reply !== undefined; reply = reader.next()) replies.push(reply);
  }
  const took = performance.now() - started;
  assert.equal(replies.length, 2);
  assert.deepEqual(replies[0], ids);
  assert.equal(replies[1], "OK");
  assert.ok(took < 1_500, `${took} ms`);
});

test("a request that times out does not fail the others in flight on its connection", async () => {
  // The node answers every request late, in order, from 1,100 ms after the first: the first
  // request times out (callTimeoutMs 1,000), the second, sent 600 ms in, gets its answer in
  // time, and the range the node gave it is the one the client hands out (closing the
  // connection at the first timeout threw that range away and asked again).
  let next = 1;
  let firstAt;
  const { server, url } = await fakeNode((command, socket) => {
    if (command[0] !== "IDMINT.RANGE") return socket.write("-ERR unknown command\r\n");
    const first = next;
    next += 10;
    firstAt ??= performance.now();
    const reply = `*2\r\n:${first}\r\n:${first + 9}\r\n`;
    setTimeout(() => socket.write(reply), Math.max(0, firstAt + 1_100 - performance.now()));
  });
  const client = new IdMint({ nodes: [url], callTimeoutMs: 1_000, maxWaitMs: 3_000, backoffMs: 10_000, minStep: 10, maxStep: 10 });
  const a = client.next("a").catch((e) => e);
  await new Promise((resolve) => setTimeout(resolve, 600));
  assert.equal(await client.next("b"), 11n);
  await a;
  await client.close();
  server.closeAll();
});

test("no rejection went unhandled and nothing was thrown past the client", () => {
  assert.deepEqual(stray, []);
});
