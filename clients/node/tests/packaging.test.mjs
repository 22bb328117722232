// The package as a program gets it: by its name, through package.json's `exports`, from an
// ES module and from CommonJS, and its types from TypeScript in both module kinds.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** A consumer folder whose node_modules holds this package (a link, as `npm link` makes). */
function consumer() {
  const dir = mkdtempSync(join(tmpdir(), "idmint-node-consumer-"));
  mkdirSync(join(dir, "node_modules", "@types"), { recursive: true });
  symlinkSync(root, join(dir, "node_modules", "idmint-client"));
  symlinkSync(join(root, "node_modules", "@types", "node"), join(dir, "node_modules", "@types", "node"));
  return dir;
}

const SOURCE = (load) => `${load}
const ids = new IdMint({ nodes: ["redis://127.0.0.1:1"] });
const form = new IdForm("base62");
if (form.decode(form.encode(2n ** 62n)) !== 2n ** 62n) throw new Error("form");
if (!(new ClosedError() instanceof IdMintError)) throw new Error("errors");
ids.close().then((n) => console.log("loaded", typeof IdMint, n));
`;

test("ESM and CJS builds load by the package's name", () => {
  const dir = consumer();
  try {
    writeFileSync(join(dir, "esm.mjs"), SOURCE('import { IdMint, IdForm, ClosedError, IdMintError } from "idmint-client";'));
    writeFileSync(join(dir, "cjs.cjs"), SOURCE('const { IdMint, IdForm, ClosedError, IdMintError } = require("idmint-client");'));
    for (const file of ["esm.mjs", "cjs.cjs"]) {
      assert.equal(execFileSync(process.execPath, [file], { cwd: dir }).toString().trim(), "loaded function 0", file);
    }
    // The CJS build is CommonJS (not the ESM one loaded through require(esm)).
    const resolved = execFileSync(process.execPath, ["-p", 'require.resolve("idmint-client")'], { cwd: dir }).toString();
    assert.match(resolved, /dist[\\/]cjs[\\/]index\.js/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the types check from TypeScript, ESM and CJS, and type IDs as bigint or string", () => {
  const dir = consumer();
  try {
    const body = `
const ids = new IdMint({ nodes: ["redis://127.0.0.1:1"] });
const strings = new IdMint({ nodes: ["redis://127.0.0.1:1"], ids: "string" });
async function use(): Promise<void> {
  const a: bigint = await ids.next("t");
  const b: string = await strings.next("t");
  const c: bigint | undefined = ids.tryNext("t");
  const d: string[] = await strings.snowflakes(3);
  // @ts-expect-error an ID is never a number
  const e: number = await ids.next("t");
  try { await ids.snowflake(); } catch (error) {
    if (error instanceof IdMintError && error.code === "unavailable") { console.log(error.cause); }
    if (error instanceof ConfigError) { console.log(error.setting); }
  }
  console.log(a, b, c, d, e);
}
void use;
`;
    writeFileSync(join(dir, "esm.mts"), `import { IdMint, IdMintError, ConfigError } from "idmint-client";\n${body}`);
    // In a .cts file TypeScript resolves through the "require" condition: the CJS types.
    writeFileSync(join(dir, "cjs.cts"), `import { IdMint, IdMintError, ConfigError } from "idmint-client";\n${body}`);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", strict: true, noEmit: true, types: ["node"] }, files: ["esm.mts", "cjs.cts"] }),
    );
    execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { cwd: dir, stdio: "pipe" });
  } catch (error) {
    assert.fail(`tsc: ${error.stdout ?? ""}${error.stderr ?? ""}${error.message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("nothing installed or built is committed", (t) => {
  // ./test links node_modules to a cache folder of this machine: committed, that link
  // dangles in every other checkout (and `.gitignore`'s `node_modules/` matches only folders).
  let tracked;
  try {
    tracked = execFileSync("git", ["ls-files", "--", "."], { cwd: root, stdio: ["ignore", "pipe", "ignore"] }).toString();
  } catch {
    t.skip("not a git checkout");
    return;
  }
  const built = tracked.split("\n").filter((path) => /^(node_modules|dist)(\/|$)/.test(path));
  assert.deepEqual(built, []);
  for (const path of ["node_modules", "dist"]) {
    execFileSync("git", ["check-ignore", "--no-index", "-q", path], { cwd: root });
  }
});
