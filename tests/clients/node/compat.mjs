// node-redis (6, and 5 still common: installed as `redis5`) and ioredis against a real
// `idmint serve`, with the clients' defaults.
//
// Driven by the Rust harness (crates/idmint/tests/integration/clients.rs), which starts the
// server with an admin token and reads this program's output, one line per event:
//   OK <check> | FAIL <check> <why> | ID <kind> <value> | RESTART (answered "GO" on stdin)
// Environment: IDMINT_HOST, IDMINT_PORT, IDMINT_TOKEN.

import { createInterface } from 'node:readline';
import * as nodeRedis6 from 'redis';
import * as nodeRedis5 from 'redis5';
import Redis from 'ioredis';

const HOST = process.env.IDMINT_HOST;
const PORT = Number(process.env.IDMINT_PORT);
const TOKEN = process.env.IDMINT_TOKEN;

const emit = (...parts) => console.log(parts.join(' '));
const stdin = createInterface({ input: process.stdin });
const lines = stdin[Symbol.asyncIterator]();

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

// IDs as this program received them: only strings can carry IDs above 2^53 exactly.
function ids(kind, values) {
  for (const value of values) {
    assert(typeof value === 'string' || Number.isSafeInteger(value),
      `${kind}: ${value} (${typeof value}) is not exact`);
    emit('ID', kind, String(value));
  }
  return values.map((v) => BigInt(v));
}

function increasing(values) {
  for (let i = 1; i < values.length; i++) {
    assert(values[i - 1] < values[i], `not increasing: ${values}`);
  }
}

async function check(name, test) {
  try {
    await test();
    emit('OK', name);
  } catch (error) {
    emit('FAIL', name, String(error?.stack ?? error).replace(/\n/g, ' '));
  }
}

// A transaction with an unknown command in it (`exec`) is refused whole and takes no ID: the
// next INCR is exactly one more than the one before it.
async function refusedTransactionTakesNoId(client, tag, kind, exec) {
  const [before] = ids(kind, [await client.incr(tag)]);
  let refused = false;
  try {
    await exec();
  } catch (error) {
    refused = /EXECABORT|unknown command/.test(String(error));
  }
  assert(refused, 'EXEC ran a transaction with an unknown command');
  const [after] = ids(kind, [await client.incr(tag)]);
  assert(after === before + 1n, `${before} then ${after}`);
}

// `library` is the module of node-redis 6 or 5 (`major`): the same checks on both.
async function nodeRedis(library, major, resp) {
  const { createClient, RESP_TYPES } = library;
  const p = `resp${resp}`;
  const tag = `node-redis${major}-${p}`;
  const kind = `segment:${tag}`;
  const url = `redis://${HOST}:${PORT}`;
  const client = createClient({ url, password: TOKEN, RESP: resp, name: `compat-${p}` });
  client.on('error', () => {}); // reconnects are expected during the restart
  // Numbers as strings, per command: the type mapping docs/clients.md recommends for snowflakes,
  // which works on node-redis 5 and 6 (`withTypeMapping(...).sendCommand` fails on 5.12).
  const asStrings = { typeMapping: { [RESP_TYPES.NUMBER]: String } };
  const name = (check) => `node-redis${major}-${p}-${check}`;

  await check(name('noauth'), async () => {
    const anonymous = createClient({ url, RESP: resp, socket: { reconnectStrategy: false } });
    anonymous.on('error', () => {});
    let refused = false;
    try {
      await anonymous.connect();
      await anonymous.incr(tag);
    } catch (error) {
      refused = /NOAUTH|auth/i.test(String(error));
    }
    // node-redis 5 has closed it already after the refusal, and says so when asked again.
    try {
      await (anonymous.destroy?.() ?? anonymous.disconnect?.());
    } catch (error) {
      assert(/closed/.test(String(error)), String(error));
    }
    assert(refused, 'INCR without the token was served');
  });
  await check(name('connect'), async () => {
    await client.connect();
    assert((await client.ping()) === 'PONG', 'PING');
    assert((await client.clientGetName()) === `compat-${p}`, 'CLIENT GETNAME');
  });
  await check(name('incr'), async () => {
    const [first] = ids(kind, [await client.incr(tag)]);
    const [second] = ids(kind, [await client.incr(tag)]);
    assert(second === first + 1n, `${first} then ${second}`);
    assert(BigInt(await client.get(tag)) === second, 'GET after INCR');
  });
  await check(name('pipeline'), async () => {
    const pipe = client.multi();
    for (let i = 0; i < 50; i++) pipe.incr(tag);
    increasing(ids(kind, await pipe.execAsPipeline()));
  });
  await check(name('transaction'), async () => {
    const multi = client.multi();
    for (let i = 0; i < 50; i++) multi.incr(tag);
    multi.addCommand(['IDMINT.SNOWFLAKE', 'COUNT', '3', 'FORMAT', 'STRING']);
    const replies = await multi.exec();
    increasing(ids(kind, replies.slice(0, 50)));
    increasing(ids('snowflake', replies[50]));
  });
  await check(name('refused-transaction'), () => refusedTransactionTakesNoId(client, tag, kind,
    () => client.multi().incr(tag).addCommand(['NO.SUCH.COMMAND']).incr(tag).exec()));
  await check(name('idmint-commands'), async () => {
    const formatted = await client.sendCommand(['IDMINT.SNOWFLAKE', 'COUNT', '5', 'FORMAT', 'STRING']);
    increasing(ids('snowflake', formatted));
    const mapped = await client.sendCommand(['IDMINT.SNOWFLAKE', 'COUNT', '5'], asStrings);
    increasing(ids('snowflake', mapped));
    increasing(ids(kind, await client.sendCommand(['IDMINT.NEXT', tag, 'COUNT', '5'])));
    const decoded = await client.sendCommand(['IDMINT.DECODE', formatted[0]]);
    const fields = decoded instanceof Map ? Object.fromEntries(decoded)
      : Array.isArray(decoded) ? Object.fromEntries(
        decoded.flatMap((v, i) => (i % 2 ? [] : [[String(v), decoded[i + 1]]])))
        : decoded;
    assert('worker' in fields && 'seq' in fields, JSON.stringify(fields));
  });
  await check(name('probes'), async () => {
    const info = await client.info('replication');
    assert(/role:master/.test(info), info);
    assert((await client.dbSize()) >= 1, 'DBSIZE');
    assert((await client.get('never-used-tag')) === null, 'GET of an unknown tag');
  });
  return { client, tag, kind, name };
}

// ioredis 6 speaks RESP3 by default; `protocol: 2` is checked too.
async function ioredis(protocol) {
  const p = protocol === undefined ? 'default' : `resp${protocol}`;
  const tag = `ioredis-${p}`;
  const kind = `segment:${tag}`;
  const name = (check) => `ioredis-${p}-${check}`;
  const chosen = protocol === undefined ? {} : { protocol };
  const client = new Redis({ host: HOST, port: PORT, password: TOKEN, connectionName: 'compat-io',
    maxRetriesPerRequest: 20, ...chosen });
  // The option docs/clients.md recommends for snowflakes: integers arrive as strings.
  const strings = new Redis({ host: HOST, port: PORT, password: TOKEN, stringNumbers: true,
    ...chosen });
  client.on('error', () => {});
  strings.on('error', () => {});

  await check(name('noauth'), async () => {
    const anonymous = new Redis({ host: HOST, port: PORT, maxRetriesPerRequest: 1, ...chosen });
    anonymous.on('error', () => {});
    let refused = 'served';
    try {
      await anonymous.incr(tag);
    } catch (error) {
      refused = String(error);
    }
    anonymous.disconnect();
    assert(/NOAUTH|auth/i.test(refused), `INCR without the token: ${refused}`);
  });
  await check(name('connect'), async () => {
    assert((await client.ping()) === 'PONG', 'PING');
    assert((await client.client('GETNAME')) === 'compat-io', 'CLIENT GETNAME');
  });
  await check(name('incr'), async () => {
    const [first] = ids(kind, [await client.incr(tag)]);
    const [second] = ids(kind, [await client.incr(tag)]);
    assert(second === first + 1n, `${first} then ${second}`);
  });
  await check(name('pipeline'), async () => {
    const pipe = client.pipeline();
    for (let i = 0; i < 50; i++) pipe.incr(tag);
    const replies = await pipe.exec();
    increasing(ids(kind, replies.map(([error, value]) => { if (error) throw error; return value; })));
  });
  await check(name('transaction'), async () => {
    const multi = client.multi();
    for (let i = 0; i < 50; i++) multi.incr(tag);
    multi.call('IDMINT.SNOWFLAKE', 'COUNT', '3', 'FORMAT', 'STRING');
    const replies = (await multi.exec()).map(([error, value]) => { if (error) throw error; return value; });
    increasing(ids(kind, replies.slice(0, 50)));
    increasing(ids('snowflake', replies[50]));
  });
  await check(name('refused-transaction'), () => refusedTransactionTakesNoId(client, tag, kind,
    () => client.multi().incr(tag).call('NO.SUCH.COMMAND').incr(tag).exec()));
  await check(name('idmint-commands'), async () => {
    increasing(ids('snowflake', await strings.call('IDMINT.SNOWFLAKE', 'COUNT', '5')));
    increasing(ids('snowflake', await client.call('IDMINT.SNOWFLAKE', 'COUNT', '5', 'FORMAT', 'STRING')));
    assert((await client.call('IDMINT.FORMAT', 'STRING')) === 'OK', 'IDMINT.FORMAT');
    increasing(ids('snowflake', await client.call('IDMINT.SNOWFLAKE', 'COUNT', '5')));
    const raw = await client.incr(tag);
    assert(typeof raw === 'string', `INCR after IDMINT.FORMAT STRING gave a ${typeof raw}`);
    ids(kind, [raw]);
    await client.call('IDMINT.FORMAT', 'INTEGER');
  });
  await check(name('probes'), async () => {
    assert(/role:master/.test(await client.info('replication')), 'INFO replication');
    const role = await client.role();
    assert(role[0] === 'master', `ROLE ${role}`);
  });
  return { client: { incr: (t) => client.incr(t), get: (t) => client.get(t), close: () => { client.disconnect(); strings.disconnect(); } }, tag, kind, name };
}

async function main() {
  const clients = [
    await nodeRedis(nodeRedis6, 6, 2), await nodeRedis(nodeRedis6, 6, 3),
    await nodeRedis(nodeRedis5, 5, 2), await nodeRedis(nodeRedis5, 5, 3),
    await ioredis(), await ioredis(2),
  ];
  const before = [];
  for (const { client, tag } of clients) before.push(BigInt((await client.get(tag)) ?? 0));
  emit('RESTART');
  const answer = await lines.next();
  assert(answer.value?.trim() === 'GO', `harness said ${answer.value}`);
  for (const [i, { client, tag, kind, name }] of clients.entries()) {
    await check(name('reconnect'), async () => {
      let value;
      for (let attempt = 0; attempt < 50 && value === undefined; attempt++) {
        try {
          value = await client.incr(tag);
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      assert(value !== undefined, 'no reconnect');
      const [after] = ids(kind, [value]);
      assert(after > before[i], `${before[i]} then ${after}`);
    });
  }
  for (const { client } of clients) {
    if (client.close) client.close(); else await client.quit().catch(() => {});
  }
  emit('DONE');
  stdin.close();
  process.exit(0);
}

main().catch((error) => {
  emit('FAIL', 'node-main', String(error?.stack ?? error).replace(/\n/g, ' '));
  process.exit(1);
});
