"""The client on a dated tag (made with a `period`): the nodes refuse it ranges, since a range
kept in memory would outlive its period, so the client takes each ID from a node; the IDs are
the tag's dated counters, in order, and a plain tag beside it is still served from ranges.

    IDMINT_BIN=/path/to/idmint python -m unittest discover -s clients/python/tests -v
"""

import asyncio
import datetime
import json
import shutil
import tempfile
import time
import unittest
import urllib.request

import idmint_client as ic
from test_client import TOKEN, Node, idmint_binary


def today_utc() -> int:
    return int(datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d"))


class Dated(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="idmint-py-dated-")
        cls.node = Node(idmint_binary(), f"sqlite://{cls.dir}/ids.db", "dated")
        for tag, digits in (("orders", 6), ("tickets", 6), ("tiny", 1)):
            body = json.dumps({"period": "day", "time_zone": "UTC", "digits": digits, "step": 5})
            request = urllib.request.Request(
                f"http://127.0.0.1:{cls.node.http}/v1/tags/{tag}",
                data=body.encode(),
                method="PUT",
                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request) as answer:
                assert answer.status == 201, answer.read()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.node.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, ids, first_counter: int) -> None:
        before = today_utc()
        keys = {id // 1_000_000 for id in ids}
        self.assertTrue(keys <= {before, today_utc()}, ids)
        if len(keys) == 1:
            self.assertEqual(
                [id % 1_000_000 for id in ids],
                list(range(first_counter, first_counter + len(ids))),
            )

    def test_a_dated_tag_is_served_one_id_at_a_time(self):
        with ic.Client([self.node.url], TOKEN, max_wait=5) as client:
            started = time.monotonic()
            ids = [client.next("orders") for _ in range(30)]
            self.assertLess(time.monotonic() - started, 10)
            self.check(ids, 1)
            # A plain tag beside it still comes from ranges.
            plain = [client.next("plain") for _ in range(10)]
            self.assertEqual(plain, list(range(1, 11)))
            self.assertGreaterEqual(client.stats().get("ranges_fetched", 0), 1, client.stats())

    def test_a_used_up_period_is_refused_at_once_and_blames_no_node(self):
        with ic.Client([self.node.url], TOKEN, max_wait=5) as client:
            ids = [client.next("tiny") for _ in range(9)]
            self.assertEqual([id % 10 for id in ids], list(range(1, 10)))
            started = time.monotonic()
            with self.assertRaises(ic.PeriodUnavailable):
                client.next("tiny")
            self.assertLess(time.monotonic() - started, 2)
            # The node was not marked as failed: another tag is served at once.
            started = time.monotonic()
            client.next("plain2")
            self.assertLess(time.monotonic() - started, 0.4)

    def test_async(self):
        async def run():
            client = ic.AsyncClient([self.node.url], TOKEN, max_wait=5)
            try:
                return [await client.next("tickets") for _ in range(20)]
            finally:
                await client.close()

        self.check(asyncio.run(run()), 1)


if __name__ == "__main__":
    unittest.main()
