"""idmint_client against real idmint nodes (two, on one SQLite file), with plain unittest:

    IDMINT_BIN=/path/to/idmint python -m unittest discover -s clients/python/tests -v

IDMINT_BIN is required: without it every test errors (nothing is skipped).
"""

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import redis

import idmint_client as ic

TOKEN = "unit-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One `idmint serve` process on loopback."""

    def __init__(self, binary: str, store: str, name: str, extra=()) -> None:
        self.binary, self.store, self.name, self.extra = binary, store, name, list(extra)
        self.resp = free_port()
        self.http = free_port()
        self.proc = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.resp}"

    def start(self) -> None:
        args = [
            self.binary, "serve", "--store", self.store, "--node-name", self.name,
            "--resp", f"127.0.0.1:{self.resp}", "--http", f"127.0.0.1:{self.http}",
            "--admin-token", TOKEN,
        ] + self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            check = redis.Redis(port=self.resp, password=TOKEN, socket_timeout=1)
            try:
                check.ping()
                return
            except redis.RedisError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"idmint node {self.name} did not start")
                time.sleep(0.05)
            finally:
                check.close()  # not left to the garbage collector: it holds a connection

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def increasing(values) -> bool:
    return all(a < b for a, b in zip(values, values[1:]))


def idmint_binary() -> str:
    """The idmint binary under test, from IDMINT_BIN: without it the tests fail, never skip."""
    binary = os.environ.get("IDMINT_BIN")
    if not binary:
        raise RuntimeError("set IDMINT_BIN to the idmint binary (nothing is skipped)")
    return binary


class WithNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        binary = idmint_binary()
        cls.dir = tempfile.mkdtemp(prefix="idmint-py-")
        store = f"sqlite://{cls.dir}/ids.db"
        cls.nodes = [Node(binary, store, f"py{i}") for i in range(2)]

    @classmethod
    def tearDownClass(cls) -> None:
        for node in getattr(cls, "nodes", []):
            node.kill()
        shutil.rmtree(getattr(cls, "dir", ""), ignore_errors=True)

    def urls(self):
        return [n.url for n in self.nodes]

    def test_ids_increase_and_are_unique_across_threads_and_clients(self):
        got = []
        lock = threading.Lock()

        def draw(client):
            mine = [client.next("unique") for _ in range(20_000)]
            self.assertTrue(increasing(mine))
            with lock:
                got.extend(mine)

        with ic.Client(self.urls(), TOKEN, min_step=50, max_step=500, target_lifetime=0.05) as a, \
                ic.Client(list(reversed(self.urls())), TOKEN, min_step=50, max_step=500) as b:
            threads = [threading.Thread(target=draw, args=(c,)) for c in (a, a, b, b)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            stats = a.stats()
        self.assertEqual(len(got), 80_000)
        self.assertEqual(len(set(got)), len(got))
        self.assertGreater(stats["ranges_fetched"], 1)
        # The range size follows the rate: above the minimum once IDs are drawn quickly.
        self.assertGreater(stats["ids_fetched"] / stats["ranges_fetched"], 50)

    def test_give_back_on_close(self):
        client = ic.Client(self.urls(), TOKEN, min_step=1000, max_step=1000)
        first = client.next("giveback")
        client.close()
        stats = client.stats()
        self.assertEqual(stats["given_back_ranges"], 1, stats)
        self.assertGreaterEqual(stats["given_back_ids"], 999)
        with self.assertRaises(ic.ClientClosed):
            client.next("giveback")
        with ic.Client(self.urls()[:1], TOKEN, min_step=10, max_step=10) as again:
            self.assertGreater(again.next("giveback"), first)

    def test_failover_when_a_node_dies(self):
        binary = os.environ["IDMINT_BIN"]
        extra = Node(binary, f"sqlite://{self.dir}/ids.db", "py-extra")
        try:
            client = ic.Client([extra.url] + self.urls(), TOKEN, min_step=10, max_step=10,
                               backoff=0.2, socket_timeout=0.5, max_wait=3)
            before = [client.next("failover") for _ in range(100)]
            self.assertEqual(client.stats()["current_node"], f"127.0.0.1:{extra.resp}")
            extra.kill()
            after = [client.next("failover") for _ in range(100)]
            self.assertTrue(increasing(before + after))
            stats = client.stats()
            self.assertGreaterEqual(stats["failovers"], 1, stats)
            self.assertGreaterEqual(stats["node_failures"][f"127.0.0.1:{extra.resp}"], 1)
            client.close()
        finally:
            extra.kill()

    def test_unavailable_within_max_wait(self):
        dead = f"redis://127.0.0.1:{free_port()}"
        with ic.Client([dead], TOKEN, max_wait=0.5, backoff=0.1) as client:
            start = time.monotonic()
            with self.assertRaises(ic.Unavailable) as caught:
                client.next("nowhere")
            self.assertLess(time.monotonic() - start, 2.0)
            self.assertIsNotNone(caught.exception.cause)
            with self.assertRaises(ic.Unavailable):
                client.snowflake()

    def test_auth_errors_are_typed(self):
        with ic.Client(self.urls(), "wrong", max_wait=2) as client:
            with self.assertRaises(ic.AuthError):
                client.next("auth")
        with ic.Client(self.urls(), None, max_wait=2) as client:
            with self.assertRaises(ic.AuthError):
                client.snowflake()

    def test_config_errors(self):
        with self.assertRaises(ic.ConfigError):
            ic.Client([])
        with self.assertRaises(ic.ConfigError):
            ic.Client(["http://127.0.0.1:1"])
        with self.assertRaises(ic.ConfigError):
            ic.Client(self.urls(), min_step=10, max_step=5)

    def test_snowflakes_increase_and_expire(self):
        with ic.Client(self.urls(), TOKEN, snowflake_max_age=0.05) as client:
            ids = client.snowflakes(500) + [client.snowflake() for _ in range(100)]
            self.assertTrue(increasing(ids))
            time.sleep(0.1)
            late = client.snowflake()
            self.assertGreater(late, ids[-1])
            stats = client.stats()
        self.assertGreater(stats["snowflakes_expired"], 0, stats)

    def test_async_client(self):
        async def run():
            async with ic.AsyncClient(self.urls(), TOKEN, min_step=20, max_step=200) as client:
                ids = [await client.next("async") for _ in range(5_000)]
                flakes = await client.snowflakes(50)
                one = await client.snowflake()
            return ids, flakes + [one], client.stats()

        ids, flakes, stats = asyncio.run(run())
        self.assertTrue(increasing(ids))
        self.assertTrue(increasing(flakes))
        self.assertGreater(stats["ranges_fetched"], 1)
        self.assertEqual(stats["given_back_ranges"], 1, stats)

    def test_async_failover_when_a_node_dies(self):
        extra = Node(os.environ["IDMINT_BIN"], f"sqlite://{self.dir}/ids.db", "py-extra-async")

        async def run():
            client = ic.AsyncClient([extra.url] + self.urls(), TOKEN, min_step=10, max_step=10,
                                    backoff=0.2, socket_timeout=0.5, max_wait=3)
            async with client:
                before = [await client.next("afailover") for _ in range(100)]
                extra.kill()
                after = [await client.next("afailover") for _ in range(100)]
            return before + after, client.stats()

        try:
            ids, stats = asyncio.run(run())
        finally:
            extra.kill()
        self.assertTrue(increasing(ids))
        self.assertGreaterEqual(stats["failovers"], 1, stats)

    def test_give_back_every_tag_on_close(self):
        # One node, fixed ranges of 100 (the node's segments are 1000): after close, the node
        # hands out next, for each tag, the first ID the client never handed out.
        url = self.urls()[0]
        client = ic.Client([url], TOKEN, min_step=100, max_step=100)
        few = [client.next("gb_two_a") for _ in range(10)]  # no refill yet
        many = [client.next("gb_two_b") for _ in range(150)]  # second range, third prefetched
        client.close()
        stats = client.stats()
        self.assertEqual(stats["given_back_ranges"], 2, stats)
        self.assertEqual(stats["giveback_refused"], 0, stats)
        r = redis.Redis.from_url(url, password=TOKEN)
        try:
            self.assertEqual(r.incr("gb_two_a"), few[-1] + 1)
            self.assertEqual(r.incr("gb_two_b"), many[-1] + 1)
        finally:
            r.close()

    def test_close_is_final_even_with_tags_added_meanwhile(self):
        client = ic.Client(self.urls(), TOKEN, min_step=10, max_step=10)
        client.next("race_seed")
        closed = threading.Event()
        late = []

        def draw(i):
            k = 0
            while not closed.is_set() or k < 5:
                started_after = closed.is_set()
                try:
                    client.next(f"race_{i}_{k % 3}")
                    if started_after:
                        late.append(i)
                except ic.ClientClosed:
                    pass
                k += 1

        threads = [threading.Thread(target=draw, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.05)
        client.close()
        closed.set()
        for t in threads:
            t.join()
        self.assertEqual(late, [])
        for call in (lambda: client.next("race_seed"), lambda: client.next("brand_new"),
                     client.snowflake):
            with self.assertRaises(ic.ClientClosed):
                call()
        # A refill that lands after close's snapshot is not served.
        t = client._tags["race_seed"]
        client._failover = lambda *args: (10**9, 10**9 + 9, 0, 1)
        t.refilling = True
        client._refill(t, 10, 0)
        with self.assertRaises(ic.ClientClosed):
            client.next("race_seed")

    def test_snowflake_batch_serves_its_caller_however_slow_the_round_trip(self):
        # Every batch is older than snowflake_max_age when it arrives: the caller still gets
        # its IDs from it (only leftovers expire).
        with ic.Client(self.urls(), TOKEN, snowflake_max_age=1e-9, max_wait=2) as client:
            start = time.monotonic()
            ids = client.snowflakes(5) + [client.snowflake() for _ in range(20)]
            self.assertLess(time.monotonic() - start, 1.5)
            self.assertTrue(increasing(ids))
            self.assertEqual(client.stats()["unavailable"], 0)

    def test_snowflakes_count_is_bounded(self):
        with ic.Client(self.urls(), TOKEN) as client:
            for bad in (0, -1, 10_001, 10**12, True, 2.0, "3"):
                with self.assertRaises(ic.ConfigError):
                    client.snowflakes(bad)
            ids = client.snowflakes(10_000)
            self.assertEqual(len(ids), 10_000)
            self.assertTrue(increasing(ids))

    def test_stale_snowflake_batches_are_not_asked_again_at_once(self):
        # Batches that bring nothing above the last ID handed out (as from a node whose clock
        # is behind): a pause of ~1 ms before each new request, until max_wait.
        with ic.Client(self.urls(), TOKEN, max_wait=0.3) as client:
            client._sf_last = 1 << 62
            with self.assertRaises(ic.Unavailable):
                client.snowflake()
            stats = client.stats()
        self.assertGreater(stats["snowflakes_dropped"], 0, stats)
        self.assertLessEqual(stats["snowflake_batches"], 320, stats)

    def test_a_full_node_is_a_failure_not_an_auth_error(self):
        full = Node(os.environ["IDMINT_BIN"], f"sqlite://{self.dir}/ids.db", "py-full",
                    ["--max-connections", "1"])
        holder = redis.Redis(port=full.resp, password=TOKEN, socket_timeout=1)
        try:
            deadline = time.monotonic() + 5
            while True:  # takes the node's one connection (once start()'s check has left it)
                try:
                    holder.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            with ic.Client([full.url], TOKEN, max_wait=0.5, backoff=0.1) as client:
                with self.assertRaises(ic.Unavailable) as caught:
                    client.next("full")
                self.assertNotIsInstance(caught.exception.cause, redis.AuthenticationError)
                self.assertGreaterEqual(client.stats()["node_failures"][f"127.0.0.1:{full.resp}"], 1)
            # With a node that has room, the same client settings work.
            with ic.Client([full.url] + self.urls(), TOKEN, max_wait=2, backoff=0.1) as client:
                self.assertGreater(client.next("full"), 0)
        finally:
            holder.close()
            full.kill()

    def test_async_close_refuses_new_tags_and_gives_back_every_tag(self):
        url = self.urls()[0]

        async def run():
            client = ic.AsyncClient([url], TOKEN, min_step=100, max_step=100)
            a = [await client.next("agb_a") for _ in range(7)]
            b = [await client.next("agb_b") for _ in range(120)]
            await client.close()
            for tag in ("agb_a", "agb_new"):
                with self.assertRaises(ic.ClientClosed):
                    await client.next(tag)
            with self.assertRaises(ic.ClientClosed):
                await client.snowflake()
            return a, b, client.stats()

        a, b, stats = asyncio.run(run())
        self.assertEqual(stats["given_back_ranges"], 2, stats)
        r = redis.Redis.from_url(url, password=TOKEN)
        try:
            self.assertEqual(r.incr("agb_a"), a[-1] + 1)
            self.assertEqual(r.incr("agb_b"), b[-1] + 1)
        finally:
            r.close()


class WithoutNodes(unittest.TestCase):
    """The shared logic, on its own."""

    def test_the_refused_codes_are_error_codes(self):
        from idmint_client import _errors

        self.assertEqual(len(set(ic.ERROR_CODES)), len(ic.ERROR_CODES))
        self.assertLessEqual(_errors.REFUSED_CODES, set(ic.ERROR_CODES))
        self.assertNotIn("store_corrupt", _errors.REFUSED_CODES)

    def test_refusals_are_an_allow_list(self):
        from redis import exceptions as rex
        from idmint_client import _core as core

        def err(cls, text, code=None):
            try:
                return cls(text, status_code=code)
            except TypeError:  # redis-py without status_code
                return cls(text)

        cases = [
            (err(rex.ResponseError, "tag_exhausted: `t` is used up", "ERR"), core.FATAL, ic.TagExhausted),
            (err(rex.ResponseError, "too_many_tags: 10 tags", "ERR"), core.FATAL, ic.TooManyTags),
            # As the nodes write them: the code, a space, the message.
            (err(rex.ResponseError, "tag_exhausted tag `t` is exhausted", "ERR"), core.FATAL, ic.TagExhausted),
            (err(rex.ResponseError, "tag_quota tag quota: the token `a`", "ERR"), core.FATAL, ic.IdmintError),
            (err(rex.ResponseError, "period_unavailable tag `d`: used up", "ERR"), core.FATAL, ic.PeriodUnavailable),
            (err(rex.ResponseError, "invalid tag `x y`", "ERR"), core.FATAL, ic.IdmintError),
            (err(rex.ResponseError, "unknown command 'IDMINT.X'", "ERR"), core.FATAL, ic.IdmintError),
            (err(rex.ResponseError, "value is not an integer or out of range", "ERR"), core.FATAL, None),
            (err(rex.ResponseError, "count must be between 1 and 50", "ERR"), core.RESIZE, None),
            (err(rex.AuthenticationError, "invalid username-password pair", "WRONGPASS"), core.AUTH, ic.AuthError),
            (err(rex.AuthenticationError, "Authentication required.", "NOAUTH"), core.AUTH, ic.AuthError),
            (err(rex.NoPermissionError, "no permission", "NOPERM"), core.AUTH, ic.AuthError),
            (rex.ResponseError("NOPERM no permission"), core.AUTH, ic.AuthError),
            # Node failures: back off, try the next node.
            (err(rex.ConnectionError, "max number of clients reached", "ERR"), core.NODE_DOWN, None),
            (rex.ResponseError("max number of clients reached"), core.NODE_DOWN, None),
            (rex.AuthenticationError("max number of clients reached"), core.NODE_DOWN, None),
            (err(rex.TryAgainError, "idmint is temporarily unavailable", "TRYAGAIN"), core.NODE_DOWN, None),
            (rex.ResponseError("TRYAGAIN idmint is temporarily unavailable"), core.NODE_DOWN, None),
            (rex.ResponseError("something new"), core.NODE_DOWN, None),
            # That node's store is damaged; another node's may not be.
            (err(rex.ResponseError, "store_corrupt store corrupt: malformed", "ERR"), core.NODE_DOWN, None),
            (rex.ResponseError("LOADING dataset"), core.NODE_DOWN, None),
            (rex.TimeoutError("timed out"), core.NODE_DOWN, None),
            (ConnectionRefusedError(), core.NODE_DOWN, None),
        ]
        for error, kind, typed in cases:
            got, raised = core.classify(error)
            self.assertEqual(got, kind, repr((type(error).__name__, str(error))))
            if typed is not None:
                self.assertIsInstance(raised, typed, str(error))

    def test_backoff_steps_once_per_outage_and_probes_the_soonest(self):
        from idmint_client import _core as core

        s = core.Settings(nodes=["redis://a:1", "redis://b:2"], backoff=1.0, max_backoff=8.0)
        s.check()
        stats = core.Stats(["a:1", "b:2"])
        nodes = core.NodeSet(s, stats)
        nodes.failed(0, 100.0)
        nodes.failed(0, 100.01)  # in flight together: the same outage
        nodes.failed(0, 100.5)
        self.assertEqual(nodes.nodes[0].backoff, 1.0)
        self.assertEqual(stats.snapshot()["node_failures"]["a:1"], 1)
        nodes.failed(0, 101.5)  # after the back-off: a new failure, one step up
        self.assertEqual(nodes.nodes[0].backoff, 2.0)
        self.assertEqual(nodes.plan(101.6), ([1], 0.0))
        nodes.failed(1, 101.6)  # b avoided until 102.6, a until 103.5
        order, wait = nodes.plan(101.7)
        self.assertEqual(order, [1])
        self.assertGreater(wait, 0)

    def test_tryagain_keeps_the_connection(self):
        from redis import exceptions as rex
        from idmint_client import _sync

        class Fake:
            def send_command(self, *args):
                pass

            def read_response(self):
                raise rex.TryAgainError("idmint is temporarily unavailable")

            def disconnect(self):
                raise AssertionError("dropped")

        node = _sync._Node(0, "redis://127.0.0.1:1", {})
        fake = node.conn = Fake()
        node.generation = 3
        with self.assertRaises(rex.TryAgainError):
            node.call("IDMINT.RANGE", "t", 10)
        self.assertIs(node.conn, fake)
        self.assertEqual(node.generation, 3)

    def test_give_back_covers_each_connection(self):
        from idmint_client._sync import _Tag, _unused_tails
        from idmint_client import _core as core

        s = core.Settings(nodes=["redis://a:1"])
        t = _Tag("t", s)
        t.cur, t.last, t.cur_from = 50, 100, (0, 1)
        self.assertEqual(_unused_tails(t), [(50, 100, 0, 1)])
        t.nxt = (101, 200, 0, 1)  # contiguous, same connection: one run
        self.assertEqual(_unused_tails(t), [(50, 200, 0, 1)])
        t.nxt = (301, 400, 0, 1)  # same connection, not contiguous: only the last run
        self.assertEqual(_unused_tails(t), [(301, 400, 0, 1)])
        t.nxt = (101, 200, 1, 1)  # another node: each on its own connection
        self.assertEqual(_unused_tails(t), [(101, 200, 1, 1), (50, 100, 0, 1)])


if __name__ == "__main__":
    unittest.main()
