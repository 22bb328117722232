// Real idmint nodes for the tests: `idmint serve` processes on loopback, started from
// IDMINT_BIN, stopped by their PID. Without IDMINT_BIN every test fails (nothing is skipped).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import Redis from "ioredis";

export const TOKEN = "node-test-token";

export function idmintBinary() {
  const binary = process.env.IDMINT_BIN;
  if (!binary) {
    throw new Error("set IDMINT_BIN to the idmint binary (nothing is skipped)");
  }
  return binary;
}

/** A port nothing listens on (now). */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A folder for a store, removed by `cleanup`. */
export function scratch(prefix) {
  return mkdtempSync(join(tmpdir(), `idmint-node-${prefix}-`));
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/** A permutation key file in `dir`. */
export function permutationKey(dir) {
  const key = join(dir, "ids.key");
  writeFileSync(key, execFileSync(idmintBinary(), ["permutation-key"]));
  chmodSync(key, 0o600);
  return key;
}

/** One `idmint serve` process. */
export class Node {
  constructor(store, name, extra = []) {
    this.store = store;
    this.name = name;
    this.extra = extra;
  }

  static async start(store, name, extra = []) {
    const node = new Node(store, name, extra);
    node.resp = await freePort();
    node.http = await freePort();
    await node.start();
    return node;
  }

  get url() {
    return `redis://127.0.0.1:${this.resp}`;
  }

  get label() {
    return `127.0.0.1:${this.resp}`;
  }

  async start() {
    const args = [
      "serve", "--store", this.store, "--node-name", this.name,
      "--resp", `127.0.0.1:${this.resp}`, "--http", `127.0.0.1:${this.http}`,
      "--admin-token", TOKEN, ...this.extra,
    ];
    this.process = spawn(idmintBinary(), args, { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    this.process.stderr.on("data", (chunk) => (log += chunk));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const check = new Redis({ port: this.resp, password: TOKEN, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      check.on("error", () => {});
      try {
        await check.connect();
        await check.ping();
        return;
      } catch {
        if (this.process.exitCode !== null || Date.now() > deadline) {
          throw new Error(`idmint node ${this.name} did not start: ${log}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        check.disconnect();
      }
    }
  }

  /** SIGKILL, and wait for the process to be gone. */
  async kill() {
    const child = this.process;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    const gone = new Promise((resolve) => child.once("exit", resolve));
    process.kill(child.pid, "SIGKILL");
    await gone;
  }

  /** A plain Redis connection to the node, with the admin token. */
  redis() {
    return new Redis({ port: this.resp, password: TOKEN, maxRetriesPerRequest: 0 });
  }

  /** `PUT /v1/tags/{tag}` with `body`. */
  async createTag(tag, body) {
    const answer = await fetch(`http://127.0.0.1:${this.http}/v1/tags/${encodeURIComponent(tag)}`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      // A string as it is: a first_id above 2^53 does not survive JSON.stringify of a number.
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    if (answer.status !== 201) {
      throw new Error(`PUT /v1/tags/${tag}: ${answer.status} ${await answer.text()}`);
    }
  }
}

export function increasing(values) {
  for (let i = 1; i < values.length; i++) {
    if (!(values[i - 1] < values[i])) {
      return false;
    }
  }
  return true;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
