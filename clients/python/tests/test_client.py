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

    def __init__(self, binary: str, store: str, name: str) -> None:
        self.binary, self.store, self.name = binary, store, name
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
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(port=self.resp, password=TOKEN, socket_timeout=1).ping()
                return
            except redis.RedisError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"idmint node {self.name} did not start")
                time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def increasing(values) -> bool:
    return all(a < b for a, b in zip(values, values[1:]))


class WithNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        binary = os.environ.get("IDMINT_BIN")
        if not binary:
            raise RuntimeError("set IDMINT_BIN to the idmint binary (nothing is skipped)")
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


if __name__ == "__main__":
    unittest.main()
