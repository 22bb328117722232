// The conformance suite's runner for the Node client (clients/conformance): one test per
// scenario of the conductor at IDMINT_CONFORMANCE_URL, its steps played with this library.

import assert from "node:assert/strict";
import { test } from "node:test";

import { IdMint } from "../dist/esm/index.js";

const base = process.env.IDMINT_CONFORMANCE_URL;
if (!base) {
  throw new Error("set IDMINT_CONFORMANCE_URL to the conformance conductor (clients/conformance/run starts one)");
}

/** One request to the conductor; its `{"error"}` answer fails the scenario with that text. */
async function conductor(method, path, body) {
  const answer = await fetch(new URL(path, base.endsWith("/") ? base : `${base}/`), {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  const value = text === "" ? {} : JSON.parse(text);
  if (!answer.ok) {
    throw new Error(`conductor ${method} ${path}: ${answer.status} ${value.error ?? text}`);
  }
  return value;
}

/** The scenario's `config` as this library's options. */
const SETTINGS = {
  min_step: "minStep",
  max_step: "maxStep",
  target_lifetime_ms: "targetLifetimeMs",
  prefetch_at: "prefetchAt",
  max_wait_ms: "maxWaitMs",
  call_timeout_ms: "callTimeoutMs",
  backoff_ms: "backoffMs",
  max_backoff_ms: "maxBackoffMs",
  snowflake_batch: "snowflakeBatch",
  snowflake_max_age_ms: "snowflakeMaxAgeMs",
};

function options(step, setup) {
  const result = { nodes: step.nodes.map((i) => setup.nodes[i]) };
  if (step.token !== undefined) {
    result.token = setup.tokens[step.token];
  }
  if (step.ca === true) {
    // Trust the CA the conductor made for its TLS nodes.
    result.caPem = setup.ca_pem;
  }
  for (const [key, value] of Object.entries(step.config ?? {})) {
    const name = SETTINGS[key];
    if (name === undefined) {
      throw new Error(`unknown client setting ${key}`);
    }
    result[name] = value;
  }
  return result;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One call of `step`'s kind: a list of IDs. */
async function draw(client, step) {
  switch (step.kind) {
    case "segment":
      return [await client.next(step.tag)];
    case "snowflake":
      return [await client.snowflake()];
    case "snowflakes":
      return client.snowflakes(step.batch ?? 1);
    default:
      throw new Error(`unknown kind ${step.kind}`);
  }
}

function check(step, lists) {
  const list = (name) => {
    const found = lists.get(name);
    assert.ok(found !== undefined, `no list ${name}`);
    return found;
  };
  const joined = (names) => names.flatMap(list);
  if (step.unique) {
    const all = joined(step.unique);
    const seen = new Set();
    for (const id of all) {
      assert.ok(!seen.has(id), `${id} twice in ${step.unique}`);
      seen.add(id);
    }
  }
  if (step.increasing) {
    const all = joined(step.increasing);
    for (let i = 1; i < all.length; i++) {
      assert.ok(all[i - 1] < all[i], `${step.increasing} not increasing at ${i}: ${all[i - 1]} then ${all[i]}`);
    }
  }
  if (step.count) {
    assert.equal(list(step.count.list).length, step.count.is, `count of ${step.count.list}`);
  }
  if (step.follows) {
    const after = list(step.follows.after);
    const first = list(step.follows.list)[0];
    assert.equal(first, after.at(-1) + 1n, `${step.follows.list} follows ${step.follows.after}`);
  }
  if (step.dated) {
    const { list: name, digits, days } = step.dated;
    const scale = 10n ** BigInt(digits);
    const dates = [];
    let previous;
    for (const id of list(name)) {
      const date = id / scale;
      const counter = id % scale;
      assert.ok(counter >= 1n, `${id}: counter below 1`);
      assert.match(String(date), /^\d{8}$/, `${id}: not dated`);
      if (previous !== undefined) {
        assert.ok(date >= previous.date, `${id}: dates go back`);
        if (date === previous.date) {
          assert.ok(counter > previous.counter, `${id}: counters not increasing within ${date}`);
        }
      }
      if (dates.at(-1) !== date) {
        dates.push(date);
      }
      previous = { date, counter };
    }
    assert.equal(new Set(dates).size, days, `dates of ${name}: ${dates}`);
  }
}

async function play(scenario) {
  const setup = await conductor("POST", "/start", { scenario: scenario.name });
  const clients = new Map();
  const lists = new Map();
  try {
    for (const [index, step] of scenario.steps.entries()) {
      const where = `step ${index + 1} (${step.op})`;
      try {
        switch (step.op) {
          case "client":
            clients.set(step.name, new IdMint(options(step, setup)));
            break;
          case "take": {
            const client = clients.get(step.client);
            const into = lists.get(step.into) ?? [];
            lists.set(step.into, into);
            const calls = step.kind === "snowflakes" ? Math.ceil(step.count / (step.batch ?? 1)) : step.count;
            for (let i = 0; i < calls; i++) {
              into.push(...(await draw(client, step)));
              if (step.sleep_ms) {
                await sleep(step.sleep_ms);
              }
            }
            break;
          }
          case "fail": {
            const started = performance.now();
            let error;
            try {
              await draw(clients.get(step.client), step);
            } catch (e) {
              error = e;
            }
            assert.ok(error !== undefined, `expected ${step.error}, got IDs`);
            assert.equal(error.code, step.error, `expected ${step.error}, got ${error}`);
            if (step.within_ms !== undefined) {
              const took = performance.now() - started;
              assert.ok(took <= step.within_ms, `${step.error} after ${Math.round(took)} ms, not within ${step.within_ms}`);
            }
            break;
          }
          case "close":
            await clients.get(step.client).close();
            break;
          case "sleep":
            await sleep(step.ms);
            break;
          case "check":
            check(step, lists);
            break;
          default:
            await conductor("POST", "/act", step);
        }
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        throw new Error(`${scenario.name}: ${where}: ${why}`, { cause: error });
      }
    }
  } finally {
    await Promise.allSettled([...clients.values()].map((client) => client.close()));
    await conductor("POST", "/stop", { scenario: scenario.name });
  }
}

const scenarios = await conductor("GET", "/scenarios");
for (const scenario of scenarios) {
  test(scenario.name, { timeout: 180_000 }, () => play(scenario));
}
