"""idmint_client.forms: round trips, order, refusals, and the same texts as a real node's.

    IDMINT_BIN=/path/to/idmint python -m unittest discover -s clients/python/tests -v
"""

import random
import shutil
import tempfile
import unittest

import redis

from idmint_client.forms import MAX_ID, IdForm
from test_client import TOKEN, Node, idmint_binary

RADIXES = ["decimal", "base62", "base36", "base32"]


class Forms(unittest.TestCase):
    def test_round_trips_and_full_width_order(self):
        rng = random.Random(7)
        for radix in RADIXES:
            form = IdForm(radix, prefix="id_")
            ids = sorted(rng.randrange(0, MAX_ID + 1) for _ in range(2000)) + [0, MAX_ID]
            texts = [form.encode(i) for i in ids]
            self.assertEqual([form.decode(t) for t in texts], ids)
            self.assertEqual(sorted(texts), [form.encode(i) for i in sorted(ids)])
            self.assertEqual(len({len(t) for t in texts}), 1, radix)

    def test_reading_rules(self):
        ulid = IdForm("base32", width=0)
        self.assertEqual(ulid.encode(32), "10")
        self.assertEqual(ulid.decode("1o"), 32)
        self.assertEqual(ulid.decode("i-L"), 33)
        self.assertEqual(IdForm("base36").decode("Z"), 35)
        with self.assertRaises(ValueError):
            IdForm("base62").decode("0!")

    def test_refusals_say_why(self):
        form = IdForm("base62", prefix="u_")
        for text, why in [("x_1", "prefix"), ("u_", "no base62 digits"),
                          ("u_zzzzzzzzzzzz", "above the largest ID"), ("u_1?", "character 4")]:
            with self.assertRaises(ValueError) as caught:
                form.decode(text)
            self.assertIn(why, str(caught.exception))
        for bad in [lambda: IdForm("base64"), lambda: IdForm("base62", prefix="a b"),
                    lambda: IdForm("base62", width=33)]:
            with self.assertRaises(ValueError):
                bad()


class SameAsTheNode(unittest.TestCase):
    """The node's FORMAT replies and IDMINT.DECODE agree with this module, both ways."""

    @classmethod
    def setUpClass(cls) -> None:
        binary = idmint_binary()
        cls.dir = tempfile.mkdtemp(prefix="idmint-py-forms-")
        cls.node = Node(binary, f"sqlite://{cls.dir}/ids.db", "forms")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.node.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_both_ways(self):
        r = redis.Redis(port=self.node.resp, password=TOKEN, decode_responses=True)
        try:
            for radix in RADIXES:
                for prefix, width in [("", None), ("ord_", None), ("x", 0), ("", 24)]:
                    form = IdForm(radix, prefix=prefix, width=width)
                    args = ["IDMINT.SNOWFLAKE", "COUNT", "50", "FORMAT", radix]
                    args += ["PREFIX", prefix] if prefix else []
                    args += ["WIDTH", str(width)] if width is not None else []
                    texts = r.execute_command(*args)
                    ids = [form.decode(t) for t in texts]
                    self.assertEqual(ids, sorted(set(ids)))
                    self.assertEqual([form.encode(i) for i in ids], texts)
                    # And the node reads this module's text.
                    back = ["IDMINT.DECODE", form.encode(ids[-1]), "FORMAT", radix]
                    back += ["PREFIX", prefix] if prefix else []
                    back += ["WIDTH", str(width)] if width is not None else []
                    decoded = r.execute_command(*back)
                    fields = dict(zip(decoded[::2], decoded[1::2])) if isinstance(decoded, list) else decoded
                    self.assertEqual(form.decode(fields["id"]), ids[-1])
        finally:
            r.close()
