// take: prints N IDs from idmint nodes, one per line, in the order the library handed them out.
//
//   take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N
//
// Exits 0, or non-zero with one line on stderr saying why. Output is buffered and written in
// large chunks; what was taken before an error is written before the error line.

import { writeSync } from "node:fs";

import { IdMint } from "../dist/esm/index.js";

function fail(why) {
  process.stderr.write(`take: ${why}\n`);
  process.exit(2);
}

function parse(argv) {
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (!["--nodes", "--token", "--kind", "--tag", "--count"].includes(flag)) {
      fail(`unknown flag ${flag} (flags: --nodes, --token, --kind, --tag, --count)`);
    }
    if (i + 1 >= argv.length) {
      fail(`${flag} needs a value`);
    }
    flags[flag.slice(2)] = argv[++i];
  }
  if (!flags.nodes) fail("--nodes is needed (HOST:PORT[,HOST:PORT...])");
  if (flags.kind !== "segment" && flags.kind !== "snowflake") fail("--kind must be segment or snowflake");
  if (flags.kind === "segment" && !flags.tag) fail("--tag is needed with --kind segment");
  if (!/^[0-9]+$/.test(flags.count ?? "")) fail("--count must be a whole number");
  return flags;
}

const flags = parse(process.argv.slice(2));
const count = Number(flags.count);
const nodes = flags.nodes.split(",").filter(Boolean).map((address) => `redis://${address}`);

let out = [];
let pending = 0;
function flush() {
  if (out.length > 0) {
    writeSync(1, out.join(""));
    out = [];
    pending = 0;
  }
}
function emit(id) {
  out.push(`${id}\n`);
  if (++pending >= 16_384) flush();
}

let client;
try {
  client = new IdMint({ nodes, ...(flags.token ? { token: flags.token } : {}) });
  if (flags.kind === "segment") {
    const tag = client.tag(flags.tag);
    for (let i = 0; i < count; i++) {
      emit(tag.tryNext() ?? (await tag.next()));
    }
  } else {
    for (let left = count; left > 0; ) {
      const batch = await client.snowflakes(Math.min(left, 1_000));
      for (const id of batch) emit(id);
      left -= batch.length;
    }
  }
  flush();
  await client.close();
  process.exit(0);
} catch (error) {
  flush();
  const kind = error?.code ? `${error.code}: ` : "";
  process.stderr.write(`take: ${kind}${String(error?.message ?? error).split("\n")[0]}\n`);
  await client?.close();
  process.exit(1);
}
