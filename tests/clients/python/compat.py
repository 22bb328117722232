"""redis-py against a real `idmint serve`, with the client's defaults.

Driven by the Rust harness (crates/idmint/tests/integration/clients.rs), which starts the
server with an admin token and reads this program's output, one line per event:

    OK <check>              a check passed
    FAIL <check> <why>      a check failed
    ID <kind> <value>       an ID this program received (the harness checks uniqueness)
    RESTART                 asks the harness to restart the server; it answers "GO" on stdin

Environment: IDMINT_HOST, IDMINT_PORT, IDMINT_TOKEN.
"""

import asyncio
import os
import sys
import traceback

import redis
import redis.asyncio

HOST = os.environ["IDMINT_HOST"]
PORT = int(os.environ["IDMINT_PORT"])
TOKEN = os.environ["IDMINT_TOKEN"]


def emit(*parts):
    print(*parts, flush=True)


def ids(kind, values):
    for value in values:
        emit("ID", kind, int(value))
    return [int(v) for v in values]


def check(name, test):
    try:
        test()
        emit("OK", name)
    except Exception as error:  # a failed check is reported, the others still run
        emit("FAIL", name, f"{type(error).__name__}: {error}".replace("\n", " "))
        traceback.print_exc(file=sys.stderr)


async def acheck(name, test):
    try:
        await test()
        emit("OK", name)
    except Exception as error:
        emit("FAIL", name, f"{type(error).__name__}: {error}".replace("\n", " "))
        traceback.print_exc(file=sys.stderr)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def as_map(reply):
    """A map reply (RESP3) or field/value pairs (RESP2) as a dict of strings."""
    if isinstance(reply, dict):
        return {text(k): v for k, v in reply.items()}
    return {text(reply[i]): reply[i + 1] for i in range(0, len(reply), 2)}


def increasing(values):
    assert all(a < b for a, b in zip(values, values[1:])), values


def sync_checks(protocol):
    p = f"resp{protocol}"
    tag = f"py-sync-{p}"
    kind = f"segment:{tag}"
    r = redis.Redis(host=HOST, port=PORT, password=TOKEN, protocol=protocol,
                    client_name=f"compat-{p}")

    def noauth():
        anonymous = redis.Redis(host=HOST, port=PORT, protocol=protocol)
        try:
            anonymous.incr(tag)
        except redis.exceptions.AuthenticationError as error:
            assert "auth" in str(error).lower(), error
        except redis.exceptions.ResponseError as error:
            assert "NOAUTH" in str(error) or "auth" in str(error).lower(), error
        else:
            raise AssertionError("INCR without the token was served")

    def connect():
        assert r.ping() is True
        hello = as_map(r.execute_command("HELLO", protocol))
        assert int(hello["proto"]) == protocol, hello
        assert text(r.client_getname()) == f"compat-{p}"

    def incr():
        first = ids(kind, [r.incr(tag)])[0]
        second = ids(kind, [r.incr(tag)])[0]
        assert second == first + 1, (first, second)
        last = ids(kind, [r.incrby(tag, 10)])[0]
        assert last == second + 10, (second, last)
        ids(kind, range(second + 1, last))
        assert int(r.get(tag)) == last

    def pipeline_without_transaction():
        pipe = r.pipeline(transaction=False)
        for _ in range(100):
            pipe.incr(tag)
        increasing(ids(kind, pipe.execute()))

    def pipeline_with_transaction():
        pipe = r.pipeline()  # MULTI ... EXEC
        for _ in range(50):
            pipe.incr(tag)
        pipe.execute_command("IDMINT.SNOWFLAKE", "COUNT", "3")
        replies = pipe.execute()
        increasing(ids(kind, replies[:50]))
        increasing(ids("snowflake", replies[50]))

    def refused_transaction_takes_no_id():
        before = ids(kind, [r.incr(tag)])[0]
        pipe = r.pipeline()
        pipe.incr(tag)
        pipe.execute_command("NO.SUCH.COMMAND")
        pipe.incr(tag)
        try:
            pipe.execute()
        except redis.exceptions.ResponseError as error:
            assert "unknown command" in str(error) or "EXECABORT" in str(error), error
        else:
            raise AssertionError("EXEC ran a transaction with an unknown command")
        after = ids(kind, [r.incr(tag)])[0]
        assert after == before + 1, (before, after)

    def idmint_commands():
        snowflakes = ids("snowflake", r.execute_command("IDMINT.SNOWFLAKE", "COUNT", 5))
        increasing(snowflakes)
        one = ids("snowflake", [r.execute_command("IDMINT.SNOWFLAKE")])[0]
        assert one > snowflakes[-1]
        increasing(ids(kind, r.execute_command("IDMINT.NEXT", tag, "COUNT", 5)))
        decoded = as_map(r.execute_command("IDMINT.DECODE", one))
        assert int(decoded["id"]) == one and "worker" in decoded and "seq" in decoded, decoded
        as_strings = r.execute_command("IDMINT.SNOWFLAKE", "COUNT", 2, "FORMAT", "STRING")
        assert all(isinstance(v, (bytes, str)) for v in as_strings), as_strings
        ids("snowflake", as_strings)

    def probes():
        assert r.info("replication")["role"] == "master"
        assert r.info("cluster")["cluster_enabled"] == 0
        assert text(r.execute_command("ROLE")[0]) == "master"
        seconds, _micros = r.time()
        assert seconds > 1_700_000_000
        assert r.dbsize() >= 1
        config = {text(k): text(v) for k, v in r.config_get("maxmemory").items()}
        assert config == {"maxmemory": "0"}, config
        assert r.get("never-used-tag") is None
        r.execute_command("SELECT", 0)

    for name, test in [
        ("noauth", noauth),
        ("connect", connect),
        ("incr", incr),
        ("pipeline", pipeline_without_transaction),
        ("transaction", pipeline_with_transaction),
        ("refused-transaction", refused_transaction_takes_no_id),
        ("idmint-commands", idmint_commands),
        ("probes", probes),
    ]:
        check(f"redis-py-sync-{p}-{name}", test)
    return r, tag, kind


async def async_checks(protocol):
    p = f"resp{protocol}"
    tag = f"py-async-{p}"
    kind = f"segment:{tag}"
    r = redis.asyncio.Redis(host=HOST, port=PORT, password=TOKEN, protocol=protocol)

    async def basics():
        assert await r.ping() is True
        first = ids(kind, [await r.incr(tag)])[0]
        assert ids(kind, [await r.incr(tag)])[0] == first + 1

    async def pipelines():
        for transaction in (False, True):
            async with r.pipeline(transaction=transaction) as pipe:
                for _ in range(20):
                    pipe.incr(tag)
                pipe.execute_command("IDMINT.SNOWFLAKE", "COUNT", "2")
                replies = await pipe.execute()
            increasing(ids(kind, replies[:20]))
            ids("snowflake", replies[20])

    async def concurrent():
        values = await asyncio.gather(*(r.incr(tag) for _ in range(50)))
        ids(kind, values)
        assert len(set(values)) == 50

    await acheck(f"redis-py-asyncio-{p}-basics", basics)
    await acheck(f"redis-py-asyncio-{p}-pipelines", pipelines)
    await acheck(f"redis-py-asyncio-{p}-concurrent", concurrent)
    await r.aclose()


def reconnect(clients):
    """After the harness restarted the server, every client's next command succeeds (its
    retry reconnects) and IDs keep increasing."""
    before = {p: int(r.get(tag) or 0) for p, (r, tag, _) in clients.items()}
    emit("RESTART")
    line = sys.stdin.readline().strip()
    assert line == "GO", line
    for p, (r, tag, kind) in clients.items():
        def after_restart(r=r, tag=tag, kind=kind, p=p):
            value = None
            for _ in range(5):
                try:
                    value = r.incr(tag)
                    break
                except redis.exceptions.ConnectionError:
                    continue
            assert value is not None, "no reconnect"
            ids(kind, [value])
            assert value > before[p], (before[p], value)
        check(f"redis-py-sync-{p}-reconnect", after_restart)


def main():
    clients = {}
    for protocol in (2, 3):
        r, tag, kind = sync_checks(protocol)
        clients[f"resp{protocol}"] = (r, tag, kind)
        asyncio.run(async_checks(protocol))
    reconnect(clients)
    emit("DONE")


if __name__ == "__main__":
    main()
