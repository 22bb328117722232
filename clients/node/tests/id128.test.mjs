// UUIDv7 and ULID made in this process: the shared vectors, order over many IDs, the counter's
// edges, a clock that goes back, the node field, the client's uuid7()/ulid(). Needs no node;
// IDMINT_BIN (the idmint binary) for the comparison with `idmint uuid|ulid|decode`.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  COUNTER_MAX,
  ConfigError,
  Id128,
  IdMint,
  IdMintError,
  InvalidId128Error,
  MAX_LEAD_MS,
  UlidGenerator,
  Uuid7Generator,
} from "../dist/esm/index.js";
import { idmintBinary } from "./support.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const VECTORS = JSON.parse(readFileSync(join(here, "..", "..", "conformance", "id128_vectors.json"), "utf8"));
const T = 1_764_201_600_000; // a fixed millisecond for the fake clocks
const GENERATORS = [Uuid7Generator, UlidGenerator];

/** A clock the test sets; counts its reads. */
function fakeClock(ms) {
  const clock = () => {
    clock.reads++;
    return clock.ms;
  };
  clock.ms = ms;
  clock.reads = 0;
  return clock;
}

/** A broken RNG: always zeros. */
const zeros = (words) => words.fill(0);

const fields = (id, nodeBits) => {
  const d = id.decode({ nodeBits });
  return [d.ms, d.counter];
};

const increasing = (ids) => ids.every((id, i) => i === 0 || ids[i - 1].compare(id) < 0);

test("every vector composes, renders, parses and decodes as written", () => {
  assert.ok(VECTORS.cases.length > 20);
  for (const c of VECTORS.cases) {
    const made = Id128.fromFields(c.kind, {
      ms: c.ms,
      counter: c.counter,
      random: BigInt(`0x${c.random_hex}`),
      node: c.node,
      nodeBits: c.node_bits,
    });
    const what = JSON.stringify(c);
    assert.equal(made.toUuid(), c.uuid, what);
    assert.equal(made.toHex(), c.hex, what);
    assert.equal(made.toUlid(), c.ulid, what);
    assert.equal(Buffer.from(made.toBytes()).toString("hex"), c.bytes_hex, what);
    assert.equal(String(made), c.kind === "ulid" ? c.ulid : c.uuid, what);
    for (const text of [c.uuid, c.hex, c.ulid]) {
      assert.ok(Id128.parse(text).equals(made), `${text} read back`);
      assert.equal(Id128.parse(text, c.kind).kind, c.kind);
    }
    assert.ok(Id128.fromBytes(Buffer.from(c.bytes_hex, "hex")).equals(made));
    assert.equal(Id128.fromBigInt(BigInt(`0x${c.hex}`)).toHex(), c.hex);
    const d = made.decode({ nodeBits: c.node_bits });
    assert.deepEqual([d.kind, d.ms, d.counter, d.node], [c.kind, c.ms, c.counter, c.node], what);
    assert.deepEqual([d.version, d.variant], c.kind === "uuidv7" ? [7, 0b10] : [undefined, undefined]);
  }
});

test("a generator composes every vector the same, bit for bit", () => {
  for (const c of VECTORS.cases.filter((c) => c.counter > 0)) {
    const Generator = c.kind === "ulid" ? UlidGenerator : Uuid7Generator;
    const random = BigInt(`0x${c.random_hex}`);
    // The pool hands out (high part, low word) pairs: the vector's random bits, again and again.
    const words = [Number(random >> 32n), Number(random & 0xffffffffn)];
    const options = { clock: () => c.ms, random: (pool) => pool.forEach((_, i) => (pool[i] = words[i % 2])) };
    const gen = new Generator(c.node_bits ? { ...options, nodeBits: c.node_bits, node: c.node } : options);
    // As if it had just handed out the ID before: same ms, one count lower.
    gen.ms = c.ms;
    gen.counter = c.counter - 1;
    assert.equal(gen.next().toHex(), c.hex, JSON.stringify(c));
  }
});

test("the refused texts are refused, the accepted ones read in any case", () => {
  for (const text of VECTORS.refused) {
    assert.throws(() => Id128.parse(text), (e) => e instanceof InvalidId128Error && e instanceof IdMintError, JSON.stringify(text));
  }
  for (const { text, hex } of VECTORS.accepted) {
    assert.equal(Id128.parse(text).toHex(), hex, text);
  }
});

test("refusals say what is wrong, with a typed reason", () => {
  const refusal = (call) => {
    try {
      call();
    } catch (e) {
      assert.ok(e instanceof InvalidId128Error, String(e));
      assert.equal(e.code, "invalid_argument");
      assert.equal(e.nodeCode, "invalid_id");
      return [e.reason, e.message];
    }
    assert.fail("not refused");
  };
  for (const [text, reason, words] of [
    ["abc", "length", "26-character ULID"],
    ["0192f3a1x7c2e-7a3b-8d4e-5f60718293a4", "dashes", "dashes"],
    ["0192f3a1-7c2e-7a3b-8d4e-5f60718293g4", "character", "not hex"],
    ["01ARZ3NDEKTSV4RRFFQ69G5FAU", "character", "no I, L, O or U"],
    ["8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "overflow", "beyond 128 bits"],
    ["0192f3a17c2e7a3b8d4e5f60718293a_", "character", "32 hex digits"],
    ["+0192f3a17c2e7a3b8d4e5f60718293a", "character", "32 hex digits"],
    ["x".repeat(50_000_000), "length", "..."],
  ]) {
    const [r, message] = refusal(() => Id128.parse(text));
    assert.equal(r, reason, text.slice(0, 40));
    assert.ok(message.includes(words) && message.length < 300, message.slice(0, 300));
  }
  const v4 = crypto.randomUUID();
  assert.equal(Id128.parse(v4).kind, undefined);
  assert.equal(String(Id128.parse(v4)), v4);
  const [reason, message] = refusal(() => Id128.parse(v4, "uuidv7"));
  assert.equal(reason, "version");
  assert.match(message, /version 4/);
  for (const call of [
    () => Id128.parse(Buffer.alloc(16)),
    () => Id128.parse(undefined),
    () => Id128.parse("0".repeat(32), "v7"),
    () => Id128.fromBytes(new Uint8Array(15)),
    () => Id128.fromBytes("0".repeat(16)),
    () => Id128.fromBigInt(1n << 128n),
    () => Id128.fromBigInt(-1n),
    () => Id128.fromBigInt(5),
    () => Id128.fromFields("ulid", { ms: 2 ** 48 }),
    () => Id128.fromFields("ulid", { ms: 0, counter: 2 ** 24 }),
    () => Id128.fromFields("uuidv7", { ms: 0, random: 1n << 50n }),
    () => Id128.fromFields("uuidv7", { ms: 0, node: 4, nodeBits: 2 }),
    () => Id128.fromFields("uuidv7", { ms: 0, nodeBits: 25 }),
    () => Id128.fromFields("uuidv4", { ms: 0 }),
    () => Id128.fromBigInt(5n, "ulid").decode({ nodeBits: 25 }),
  ]) {
    refusal(call);
  }
});

test("kind names, and the kind of an ID of none", () => {
  const v7 = Id128.fromFields("uuid7", { ms: T, counter: 1 });
  for (const name of ["uuidv7", "uuid7", "UUID", "Uuid7"]) {
    assert.equal(Id128.parse(v7.toHex(), name).kind, "uuidv7");
  }
  assert.equal(Id128.fromBigInt(v7.toBigInt()).decode().kind, "uuidv7"); // its bits say UUIDv7
  assert.equal(Id128.fromBigInt(5n).decode().kind, "ulid"); // they do not
  assert.throws(() => Id128.parse(v7.toHex(), "toString"), InvalidId128Error);
});

test("decode reads the time", () => {
  const made = Id128.fromFields("uuidv7", { ms: T, counter: 5 });
  assert.equal(made.decode().time.toISOString(), "2025-11-27T00:00:00.000Z");
});

test("many IDs strictly increase; every form sorts in generation order", () => {
  for (const Generator of GENERATORS) {
    // The real clock: many IDs in each millisecond.
    const real = new Generator();
    const many = Array.from({ length: 200_000 }, () => real.next());
    assert.ok(increasing(many));
    assert.equal(new Set(many.map((id) => id.toHex())).size, many.length);
    // A fake clock that moves on every 97 IDs, sometimes skipping milliseconds.
    const clock = fakeClock(T);
    const gen = new Generator({ clock });
    const ids = Array.from({ length: 20_000 }, (_, i) => {
      if (i % 97 === 0) clock.ms += 1 + (i % 3);
      return gen.next();
    });
    for (const form of ["toUuid", "toHex", "toUlid"]) {
      const texts = ids.map((id) => id[form]());
      assert.deepEqual([...texts].sort(), texts, form);
    }
    const bytes = ids.map((id) => Buffer.from(id.toBytes()));
    assert.deepEqual([...bytes].sort(Buffer.compare), bytes);
    assert.deepEqual([...ids].reverse().sort(Id128.compare), ids);
  }
});

test("a new millisecond seeds the counter below 2^23, then counts up", () => {
  const clock = fakeClock(T);
  const gen = new Uuid7Generator({ clock, random: (w) => w.fill(0xffffffff) });
  assert.deepEqual([gen.next(), gen.next(), gen.next()].map((id) => fields(id)), [
    [T, 2 ** 23 - 1],
    [T, 2 ** 23],
    [T, 2 ** 23 + 1],
  ]);
  clock.ms += 1;
  assert.deepEqual(fields(gen.next()), [T + 1, 2 ** 23 - 1]);
});

test("a used-up counter borrows the next millisecond", () => {
  for (const Generator of GENERATORS) {
    const clock = fakeClock(T);
    const gen = new Generator({ clock });
    const ids = [gen.next()];
    gen.counter = COUNTER_MAX - 2; // as after ~2^23 IDs in this millisecond
    ids.push(...Array.from({ length: 4 }, () => gen.next()));
    assert.deepEqual(ids.slice(1).map((id) => fields(id)), [
      [T, COUNTER_MAX - 1],
      [T, COUNTER_MAX],
      [T + 1, 0],
      [T + 1, 1],
    ]);
    assert.ok(increasing(ids));
    clock.ms = T + 1; // the clock reaching the borrowed millisecond does not restart it
    assert.deepEqual(fields(gen.next()), [T + 1, 2]);
  }
});

test("borrowing beyond the lead waits for the clock", () => {
  const clock = fakeClock(T);
  const ticking = () => {
    clock.ms += 1; // a ms per read: the wait ends after a few reads
    return clock();
  };
  const gen = new UlidGenerator({ clock: ticking });
  gen.next();
  // The last ID 3 ms beyond the lead: the next, in the ms after it, waits for 4 ms.
  const lastMs = clock.ms + MAX_LEAD_MS + 3;
  gen.ms = lastMs;
  gen.counter = COUNTER_MAX;
  const reads = clock.reads;
  const made = gen.next();
  assert.equal(clock.reads, reads + 4, "did not wait for the clock");
  assert.deepEqual(fields(made), [lastMs + 1, 0]);
  assert.ok(made.decode().ms - clock.ms <= MAX_LEAD_MS);
});

test("a clock stepped back does not stall a borrow", () => {
  // The lead is measured from the latest clock reading, so a used-up counter borrows the next
  // millisecond at once even with the clock five seconds back.
  const clock = fakeClock(T);
  const gen = new UlidGenerator({ clock });
  gen.next();
  clock.ms = T - 5000;
  gen.counter = COUNTER_MAX;
  const reads = clock.reads;
  assert.deepEqual(fields(gen.next()), [T + 1, 0]);
  assert.equal(clock.reads, reads + 1);
});

test("a clock stepped back never repeats nor decreases", () => {
  for (const Generator of GENERATORS) {
    const clock = fakeClock(T);
    const gen = new Generator({ clock });
    const ids = Array.from({ length: 100 }, () => gen.next());
    clock.ms = T - 5000; // an NTP step back of five seconds
    ids.push(...Array.from({ length: 1000 }, () => gen.next()));
    assert.deepEqual(new Set(ids.map((id) => id.decode().ms)), new Set([T]), "the ms followed the clock back");
    clock.ms = T + 1; // the clock passes the last ID: its own ms again
    ids.push(...Array.from({ length: 100 }, () => gen.next()));
    assert.ok(increasing(ids));
    assert.equal(ids.at(-1).decode().ms, T + 1);
  }
  assert.throws(() => new UlidGenerator({ clock: () => -1 }).next(), ConfigError);
  const broken = fakeClock(T);
  const gen = new UlidGenerator({ clock: broken });
  gen.next();
  broken.ms = NaN;
  assert.throws(() => gen.next(), ConfigError);
});

test("distinct nodes never collide, even with a broken RNG", () => {
  for (const Generator of GENERATORS) {
    const clock = fakeClock(T);
    for (const nodeBits of [8, 20, 24]) {
      const a = new Generator({ nodeBits, node: 1, clock, random: zeros });
      const b = new Generator({ nodeBits, node: 2 ** nodeBits - 1, clock, random: zeros });
      const idsA = Array.from({ length: 2000 }, () => a.next());
      const idsB = Array.from({ length: 2000 }, () => b.next());
      const hexA = new Set(idsA.map((id) => id.toHex()));
      assert.ok(!idsB.some((id) => hexA.has(id.toHex())));
      assert.deepEqual(new Set(idsA.map((id) => id.decode({ nodeBits }).node)), new Set([1]));
      assert.deepEqual(new Set(idsB.map((id) => id.decode({ nodeBits }).node)), new Set([2 ** nodeBits - 1]));
      assert.equal(a.node, 1);
      assert.equal(a.nodeBits, nodeBits);
    }
    // Without a node field the same broken RNG gives the same IDs: what the field is for.
    const plain = [1, 2].map(() => new Generator({ clock, random: zeros }).next());
    assert.ok(plain[0].equals(plain[1]));
  }
});

test("the random bits beside a node field are random", () => {
  const gen = new Uuid7Generator({ nodeBits: 24, node: 2 ** 24 - 1 });
  const made = Array.from({ length: 64 }, () => gen.next());
  assert.ok(made.every((id) => id.decode({ nodeBits: 24 }).node === 2 ** 24 - 1 && id.decode().version === 7));
  const tails = new Set(made.map((id) => id.toBigInt() & ((1n << 26n) - 1n)));
  assert.ok(tails.size > 60, "26 random bits repeat");
});

test("bad settings are refused, naming the setting", () => {
  for (const Generator of GENERATORS) {
    for (const [options, setting] of [
      [{ nodeBits: 25 }, "nodeBits"],
      [{ nodeBits: -1 }, "nodeBits"],
      [{ nodeBits: 1.5, node: 1 }, "nodeBits"],
      [{ nodeBits: "8", node: 1 }, "nodeBits"],
      [{ nodeBits: 8 }, "node"],
      [{ node: 3 }, "nodeBits"],
      [{ node: 256, nodeBits: 8 }, "node"],
      [{ node: -1, nodeBits: 8 }, "node"],
      [{ node: 1.5, nodeBits: 8 }, "node"],
      [{ clock: 5 }, "clock"],
      [{ random: "x" }, "random"],
    ]) {
      assert.throws(
        () => new Generator(options),
        (e) => e instanceof ConfigError && e.setting === setting,
        JSON.stringify(options),
      );
    }
  }
});

test("the client makes them without a node, and after close too", async () => {
  const ids = new IdMint({ nodes: ["redis://127.0.0.1:1"] }); // nothing listens: nothing is asked
  const uuids = Array.from({ length: 100 }, () => ids.uuid7());
  const ulids = Array.from({ length: 100 }, () => ids.ulid());
  assert.ok(increasing(uuids) && increasing(ulids));
  assert.match(String(uuids[0]), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.match(String(ulids[0]), /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  assert.equal(JSON.stringify({ id: ulids[0] }), `{"id":"${ulids[0]}"}`);
  await ids.close();
  // No node is needed: they work after close too, as in every idmint library.
  assert.ok(ids.uuid7().compare(uuids[99]) > 0);
  assert.ok(ids.ulid().compare(ulids[99]) > 0);
});

test("the CommonJS build makes the same", () => {
  const cjs = createRequire(import.meta.url)("../dist/cjs/index.js");
  const made = new cjs.UlidGenerator().next();
  assert.equal(cjs.Id128.parse(made.toUuid()).toUlid(), made.toUlid());
});

test("idmint uuid|ulid's IDs read here, and idmint decode reads these as this library does", () => {
  const idmint = (...args) => execFileSync(idmintBinary(), args).toString();
  for (const [kind, command] of [["uuidv7", "uuid"], ["ulid", "ulid"]]) {
    for (const form of ["uuid", "ulid", "hex"]) {
      const lines = idmint(command, "-n", "500", "--node-bits", "10", "--node", "777", "--format", form).trim().split("\n");
      const ids = lines.map((line) => Id128.parse(line, kind));
      assert.equal(ids.length, 500);
      assert.ok(increasing(ids));
      assert.deepEqual(new Set(ids.map((id) => id.decode({ nodeBits: 10 }).node)), new Set([777]));
    }
    const made = new (kind === "ulid" ? UlidGenerator : Uuid7Generator)({ nodeBits: 12, node: 5 }).next();
    for (const text of [made.toUuid(), made.toUlid(), made.toHex()]) {
      const said = JSON.parse(idmint("decode", "--json", "--kind", kind, "--node-bits", "12", text));
      const ours = made.decode({ nodeBits: 12 });
      assert.deepEqual(
        [said.ms, said.counter, said.node, said.version, said.variant, said.time],
        [ours.ms, ours.counter, ours.node, ours.version, ours.variant, ours.time.toISOString()],
      );
    }
  }
});
