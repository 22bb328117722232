"""The client on nodes that hand out permuted IDs (`serve --permutation-key-file`): snowflakes
come in the nodes' order, none skipped, even one per batch; segment IDs are refused at once
with the reason, not retried until max_wait.

    IDMINT_BIN=/path/to/idmint python -m unittest discover -s clients/python/tests -v
"""

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import idmint_client as ic
from test_client import TOKEN, Node, idmint_binary


class Permuted(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        binary = idmint_binary()
        cls.dir = tempfile.mkdtemp(prefix="idmint-py-permuted-")
        key = os.path.join(cls.dir, "ids.key")
        with open(key, "w") as out:
            subprocess.run([binary, "permutation-key"], stdout=out, check=True)
        os.chmod(key, 0o600)
        cls.node = Node(binary, f"sqlite://{cls.dir}/ids.db", "permuted",
                        ["--permutation-key-file", key])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.node.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check_snowflakes(self, ids, stats) -> None:
        self.assertEqual(len(ids), len(set(ids)))
        # Permuted: far from ascending (an ordered run of 300 is a 1-in-300! event).
        descents = sum(1 for a, b in zip(ids, ids[1:]) if a > b)
        self.assertGreater(descents, 50)
        self.assertEqual(stats.get("snowflakes_dropped", 0), 0, stats)

    def test_snowflakes_all_handed_out_even_one_per_batch(self):
        for batch in (1, 64):
            with ic.Client([self.node.url], TOKEN, snowflake_batch=batch) as client:
                ids = []
                for _ in range(100):
                    ids += client.snowflakes(3)
                self.check_snowflakes(ids, client.stats())

    def test_async_snowflakes(self):
        async def run():
            client = ic.AsyncClient([self.node.url], TOKEN, snowflake_batch=1)
            try:
                ids = []
                for _ in range(100):
                    ids += await client.snowflakes(3)
                return ids, client.stats()
            finally:
                await client.close()

        ids, stats = asyncio.run(run())
        self.check_snowflakes(ids, stats)

    def test_segment_ids_are_refused_with_the_reason(self):
        with ic.Client([self.node.url], TOKEN, max_wait=10) as client:
            started = time.monotonic()
            with self.assertRaises(ic.IdmintError) as caught:
                client.next("orders")
            self.assertLess(time.monotonic() - started, 5)
            self.assertIn("permuted", str(caught.exception))
            self.assertIn("IDMINT.NEXT", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
