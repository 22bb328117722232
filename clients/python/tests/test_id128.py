"""UUIDv7 and ULID made in this process: the shared vectors, order across threads, the counter's
edges, a clock that goes back, the node field, fork, and the client's uuid7()/ulid().

    IDMINT_BIN=/path/to/idmint python -m unittest discover -s clients/python/tests -p test_id128.py -v

Needs no node; IDMINT_BIN (the idmint binary) for the comparison with `idmint uuid|ulid|decode`.
"""

import asyncio
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import unittest
import uuid

import idmint_client as ic
from idmint_client.id128_generators import COUNTER_MAX, MAX_LEAD_MS

HERE = pathlib.Path(__file__).resolve().parent
VECTORS = json.loads((HERE.parent.parent / "conformance" / "id128_vectors.json").read_text())
T = 1_764_201_600_000  # a fixed millisecond for the fake clocks


def zeros(n: int) -> bytes:
    """A broken RNG: always zeros."""
    return bytes(n)


class FakeClock:
    """A clock the test sets; counts how often it was read."""

    def __init__(self, ms: int) -> None:
        self.ms, self.reads = ms, 0

    def __call__(self) -> int:
        self.reads += 1
        return self.ms


def fields(id128, node_bits=0):
    d = id128.decode(node_bits=node_bits)
    return d.ms, d.counter


class Vectors(unittest.TestCase):
    """clients/conformance/id128_vectors.json: every implementation writes and reads these."""

    def test_every_case_composes_renders_and_parses(self):
        self.assertGreater(len(VECTORS["cases"]), 20)
        for case in VECTORS["cases"]:
            with self.subTest(case=case):
                kind = case["kind"]
                made = ic.Id128.from_fields(
                    kind, case["ms"], case["counter"], int(case["random_hex"], 16),
                    node=case["node"], node_bits=case["node_bits"],
                )
                self.assertEqual(made.to_uuid_string(), case["uuid"])
                self.assertEqual(made.to_hex(), case["hex"])
                self.assertEqual(made.to_ulid_string(), case["ulid"])
                self.assertEqual(made.to_bytes().hex(), case["bytes_hex"])
                self.assertEqual(str(made), case["ulid"] if kind == "ulid" else case["uuid"])
                for text in (case["uuid"], case["hex"], case["ulid"]):
                    self.assertEqual(ic.Id128.parse(text), made)
                    self.assertEqual(ic.Id128.parse(text, kind=kind).kind, kind)
                self.assertEqual(ic.Id128.from_bytes(bytes.fromhex(case["bytes_hex"])), made)
                d = made.decode(node_bits=case["node_bits"])
                self.assertEqual((d.kind, d.ms, d.counter, d.node), (kind, case["ms"], case["counter"], case["node"]))
                if kind == "uuidv7":
                    self.assertEqual((d.version, d.variant), (7, 0b10))
                    self.assertEqual(made.uuid.version, 7)
                    self.assertEqual(made.uuid.variant, uuid.RFC_4122)
                    self.assertEqual(str(made.uuid), case["uuid"])
                else:
                    self.assertEqual((d.version, d.variant), (None, None))

    def test_a_generator_composes_every_vector_the_same(self):
        for case in VECTORS["cases"]:
            if case["counter"] == 0:
                continue  # reached only through a new millisecond's random seed
            cls = ic.UlidGenerator if case["kind"] == "ulid" else ic.Uuid7Generator
            word = int(case["random_hex"], 16).to_bytes(8, "big")
            node = {"node": case["node"], "node_bits": case["node_bits"]} if case["node_bits"] else {}
            gen = cls(clock=lambda: case["ms"], random_bytes=lambda n: word * (n // 8), **node)
            # As if it had just handed out the ID before: same ms, one count lower.
            gen._ms, gen._counter = case["ms"], case["counter"] - 1
            with self.subTest(case=case):
                self.assertEqual(gen.new().to_hex(), case["hex"])

    def test_refused_texts_raise_invalid_id128(self):
        for text in VECTORS["refused"]:
            with self.subTest(text=text), self.assertRaises(ic.InvalidId128) as caught:
                ic.Id128.parse(text)
            self.assertIsInstance(caught.exception, ValueError)

    def test_accepted_texts_read_in_any_case(self):
        for item in VECTORS["accepted"]:
            with self.subTest(text=item["text"]):
                self.assertEqual(ic.Id128.parse(item["text"]).to_hex(), item["hex"])


class Parsing(unittest.TestCase):
    def test_errors_say_what_is_wrong(self):
        for text, reason, words in [
            ("abc", "length", "26-character ULID"),
            ("0192f3a1x7c2e-7a3b-8d4e-5f60718293a4", "dashes", "dashes"),
            ("0192f3a1-7c2e-7a3b-8d4e-5f60718293g4", "character", "hex"),
            ("01ARZ3NDEKTSV4RRFFQ69G5FAU", "character", "no I, L, O or U"),
            ("8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "overflow", "beyond 128 bits"),
            ("0192f3a17c2e7a3b8d4e5f60718293a_", "character", "32 hex digits"),
            ("0192f3a1-7c2e-7a3b-8d4e-5f6071 293a4", "character", "not hex digits"),
        ]:
            with self.subTest(text=text), self.assertRaises(ic.InvalidId128) as caught:
                ic.Id128.parse(text)
            self.assertEqual(caught.exception.reason, reason)
            self.assertIn(words, str(caught.exception))

    def test_int_parsings_loose_rules_are_not_taken(self):
        # int(x, 16) would take these (sign, underscores, spaces, '0x'); a 128-bit ID does not.
        for text in ["+" + "0" * 31, "0x" + "0" * 30, "0_" + "0" * 30, " " + "0" * 31, "0" * 31 + "\n"]:
            with self.subTest(text=text), self.assertRaises(ic.InvalidId128):
                ic.Id128.parse(text)

    def test_a_uuidv7_must_say_so_when_asked(self):
        v4 = str(uuid.uuid4())
        self.assertIsNone(ic.Id128.parse(v4).kind)
        self.assertEqual(str(ic.Id128.parse(v4)), v4)  # no kind: the canonical UUID form
        with self.assertRaises(ic.InvalidId128) as caught:
            ic.Id128.parse(v4, kind="uuidv7")
        self.assertEqual(caught.exception.reason, "version")
        self.assertIn("version 4", str(caught.exception))
        self.assertEqual(ic.Id128.parse(v4, kind="ulid").kind, "ulid")

    def test_wrong_types_and_sizes(self):
        for call in [
            lambda: ic.Id128.parse(b"0" * 32),
            lambda: ic.Id128.parse(None),
            lambda: ic.Id128.from_bytes(bytes(15)),
            lambda: ic.Id128.from_bytes("0" * 16),
            lambda: ic.Id128(1 << 128),
            lambda: ic.Id128(-1),
            lambda: ic.Id128(1, kind="uuidv4"),
            lambda: ic.Id128.parse("0" * 32, kind="v7"),
            lambda: ic.Id128.from_fields("ulid", 1 << 48, 0, 0),
            lambda: ic.Id128.from_fields("ulid", 0, 1 << 24, 0),
            lambda: ic.Id128.from_fields("uuidv7", 0, 0, 1 << 50),
            lambda: ic.Id128.from_fields("uuidv7", 0, 0, 0, node=4, node_bits=2),
            lambda: ic.Id128.from_fields("uuidv7", 0, 0, 0, node_bits=25),
            lambda: ic.Id128(5, "ulid").decode(node_bits=25),
        ]:
            with self.assertRaises(ic.InvalidId128):
                call()

    def test_kind_names_and_the_kind_of_no_kind(self):
        v7 = ic.Id128.from_fields("uuidv7", T, 1, 0)
        for name in ("uuidv7", "uuid7", "UUID", "Uuid7"):
            self.assertEqual(ic.Id128.parse(v7.to_hex(), kind=name).kind, "uuidv7")
        self.assertEqual(ic.Id128(v7.int).decode().kind, "uuidv7")  # its bits say UUIDv7
        self.assertEqual(ic.Id128(5).decode().kind, "ulid")  # they do not

    def test_decode_reads_the_time(self):
        made = ic.Id128.from_fields("uuidv7", T, 5, 0)
        self.assertEqual(made.decode().time.isoformat(), "2025-11-27T00:00:00+00:00")
        self.assertIsNone(ic.Id128.from_fields("ulid", (1 << 48) - 1, 0, 0).decode().time)


class Order(unittest.TestCase):
    def setUp(self):
        # Switch threads often, so that they race inside the generators.
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)

    def tearDown(self):
        sys.setswitchinterval(self.interval)

    def test_eight_threads_get_strictly_increasing_ids(self):
        for gen in (ic.Uuid7Generator(), ic.UlidGenerator()):
            shared, shared_lock, own = [], threading.Lock(), [[] for _ in range(8)]

            def work(mine):
                for i in range(4000):
                    if i % 2:
                        # Taken and recorded under one lock: generation order is list order.
                        with shared_lock:
                            shared.append(gen.new())
                    else:
                        mine.append(gen.new())

            threads = [threading.Thread(target=work, args=(own[k],)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(len(shared), 16000)
            self.assertTrue(all(a < b for a, b in zip(shared, shared[1:])), "shared list not increasing")
            for mine in own:
                self.assertTrue(all(a < b for a, b in zip(mine, mine[1:])), "a thread's IDs not increasing")
            everything = shared + [i for mine in own for i in mine]
            self.assertEqual(len(set(everything)), 32000)

    def test_every_form_sorts_in_generation_order(self):
        clock = FakeClock(T)
        for cls in (ic.Uuid7Generator, ic.UlidGenerator):
            gen = cls(clock=clock)
            ids = []
            for i in range(20000):
                if i % 97 == 0:
                    clock.ms += 1 + i % 3  # new milliseconds, sometimes skipping some
                ids.append(gen.new())
            for form in (ic.Id128.to_uuid_string, ic.Id128.to_hex, ic.Id128.to_ulid_string, ic.Id128.to_bytes):
                rendered = [form(i) for i in ids]
                self.assertEqual(sorted(rendered), rendered, form.__name__)
            self.assertEqual(sorted(i.uuid for i in ids), [i.uuid for i in ids])


class Counter(unittest.TestCase):
    def test_a_new_millisecond_seeds_below_2_23_then_counts_up(self):
        clock = FakeClock(T)
        gen = ic.Uuid7Generator(clock=clock, random_bytes=lambda n: b"\xff" * n)
        first = [fields(gen.new()) for _ in range(3)]
        self.assertEqual(first, [(T, (1 << 23) - 1), (T, 1 << 23), (T, (1 << 23) + 1)])
        clock.ms += 1
        self.assertEqual(fields(gen.new()), (T + 1, (1 << 23) - 1))

    def test_the_counter_overflow_borrows_the_next_ms(self):
        for cls in (ic.Uuid7Generator, ic.UlidGenerator):
            clock = FakeClock(T)
            gen = cls(clock=clock)
            ids = [gen.new()]
            gen._counter = COUNTER_MAX - 2  # as after ~2**23 IDs in this millisecond
            ids += [gen.new() for _ in range(4)]
            self.assertEqual(
                [fields(i) for i in ids[1:]],
                [(T, COUNTER_MAX - 1), (T, COUNTER_MAX), (T + 1, 0), (T + 1, 1)],
            )
            self.assertTrue(all(a < b for a, b in zip(ids, ids[1:])))
            # The clock reaching the borrowed millisecond does not go back to its start.
            clock.ms = T + 1
            self.assertEqual(fields(gen.new()), (T + 1, 2))

    def test_borrowing_beyond_the_lead_waits_for_the_clock(self):
        class Ticking(FakeClock):
            def __call__(self):
                self.ms += 1  # a ms per read: the wait ends after a few reads
                return super().__call__()

        clock = Ticking(T)
        gen = ic.UlidGenerator(clock=clock)
        gen.new()
        # The last ID 3 ms beyond the lead: the next, in the ms after it, waits for 4 ms.
        last_ms = clock.ms + MAX_LEAD_MS + 3
        gen._ms, gen._counter = last_ms, COUNTER_MAX
        reads = clock.reads
        made = gen.new()
        self.assertEqual(clock.reads, reads + 4, "did not wait for the clock")
        self.assertEqual(fields(made), (last_ms + 1, 0))
        self.assertLessEqual(made.decode().ms - clock.ms, MAX_LEAD_MS)

    def test_a_clock_stepped_back_never_repeats_nor_decreases(self):
        for cls in (ic.Uuid7Generator, ic.UlidGenerator):
            clock = FakeClock(T)
            gen = cls(clock=clock)
            ids = [gen.new() for _ in range(100)]
            clock.ms = T - 5_000  # an NTP step back of five seconds
            ids += [gen.new() for _ in range(1000)]
            self.assertEqual({i.decode().ms for i in ids}, {T}, "the ms followed the clock back")
            clock.ms = T - 1
            ids += [gen.new() for _ in range(100)]
            clock.ms = T + 1  # the clock passes the last ID: its own ms again
            ids += [gen.new() for _ in range(100)]
            self.assertTrue(all(a < b for a, b in zip(ids, ids[1:])))
            self.assertEqual(ids[-1].decode().ms, T + 1)

    def test_a_clock_stepped_back_does_not_stall_a_borrow(self):
        # The lead is measured from the latest clock reading, so a used-up counter borrows the
        # next millisecond at once even with the clock five seconds back.
        clock = FakeClock(T)
        gen = ic.UlidGenerator(clock=clock)
        gen.new()
        clock.ms = T - 5_000
        gen._counter = COUNTER_MAX
        reads = clock.reads
        self.assertEqual(fields(gen.new()), (T + 1, 0))
        self.assertEqual(clock.reads, reads + 1)

    def test_a_clock_before_1970_is_refused(self):
        with self.assertRaises(ic.IdmintError):
            ic.UlidGenerator(clock=lambda: -1).new()


class NodeField(unittest.TestCase):
    def test_distinct_nodes_never_collide_even_with_a_broken_rng(self):
        for cls in (ic.Uuid7Generator, ic.UlidGenerator):
            clock = FakeClock(T)
            a = cls(node=1, node_bits=8, clock=clock, random_bytes=zeros)
            b = cls(node=2, node_bits=8, clock=clock, random_bytes=zeros)
            ids_a = [a.new() for _ in range(2000)]
            ids_b = [b.new() for _ in range(2000)]
            self.assertFalse(set(ids_a) & set(ids_b))
            self.assertEqual({i.decode(node_bits=8).node for i in ids_a}, {1})
            self.assertEqual({i.decode(node_bits=8).node for i in ids_b}, {2})
            # Without a node field the same broken RNG gives the same IDs: what the field is for.
            plain = [cls(clock=clock, random_bytes=zeros).new() for _ in range(2)]
            self.assertEqual(plain[0], plain[1])

    def test_the_widest_node_field_leaves_the_rest_random(self):
        gen = ic.Uuid7Generator(node=(1 << 24) - 1, node_bits=24)
        made = gen.new()
        self.assertEqual(made.decode(node_bits=24).node, (1 << 24) - 1)
        self.assertEqual(made.uuid.version, 7)

    def test_bad_settings_are_refused_with_a_reason(self):
        for kwargs, words in [
            ({"node_bits": 25}, "0..24"),
            ({"node_bits": -1}, "0..24"),
            ({"node_bits": True, "node": 1}, "int"),
            ({"node_bits": "8", "node": 1}, "int"),
            ({"node_bits": 8}, "needs a node"),
            ({"node": 3}, "needs node_bits"),
            ({"node": 256, "node_bits": 8}, "does not fit"),
            ({"node": -1, "node_bits": 8}, "does not fit"),
            ({"node": 1.0, "node_bits": 8}, "int"),
        ]:
            for cls in (ic.Uuid7Generator, ic.UlidGenerator):
                with self.subTest(kwargs=kwargs), self.assertRaises(ic.ConfigError) as caught:
                    cls(**kwargs)
                self.assertIn(words, str(caught.exception))


@unittest.skipUnless(hasattr(os, "fork"), "no os.fork here")
class Fork(unittest.TestCase):
    def test_a_forked_child_draws_its_own_random_bits(self):
        for cls in (ic.Uuid7Generator, ic.UlidGenerator):
            # A fixed clock: parent and child go on from the same (ms, counter), so only
            # their random bits can tell their IDs apart.
            gen = cls(clock=lambda: T)
            before = [gen.new() for _ in range(10)]  # the random pool is now filled
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(read)
                    lines = "".join(gen.new().to_hex() + "\n" for _ in range(1000))
                    with os.fdopen(write, "w") as out:
                        out.write(lines)
                finally:
                    os._exit(0)
            os.close(write)
            parent = [gen.new() for _ in range(1000)]
            with os.fdopen(read) as pipe:
                child = [ic.Id128.parse(line.strip(), kind=cls._kind) for line in pipe]
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            self.assertEqual(len(child), 1000)
            self.assertFalse(set(parent) & set(child), "the child repeated the parent's IDs")
            self.assertTrue(all(a < b for a, b in zip(child, child[1:])))
            self.assertTrue(before[-1] < child[0] and before[-1] < parent[0])
            mask = (1 << 50) - 1 if cls is ic.Uuid7Generator else (1 << 56) - 1
            same_counter = [(p, c) for p, c in zip(parent, child) if fields(p) == fields(c)]
            self.assertEqual(len(same_counter), 1000)
            self.assertTrue(all(p.int & mask != c.int & mask for p, c in same_counter))


class ClientMethods(unittest.TestCase):
    def test_the_clients_make_them_without_a_node(self):
        # Port 1: nothing listens there, and nothing is asked.
        with ic.Client(["redis://127.0.0.1:1"]) as client:
            uuids = [client.uuid7() for _ in range(100)]
            ulids = [client.ulid() for _ in range(100)]
        self.assertEqual(sorted(uuids), uuids)
        self.assertEqual(sorted(ulids), ulids)
        self.assertEqual({i.kind for i in uuids} | {i.kind for i in ulids}, {"uuidv7", "ulid"})
        self.assertEqual(uuids[0].uuid.version, 7)
        self.assertRegex(str(ulids[0]), r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
        # No node is needed: it works after close too, as in every idmint library.
        self.assertGreater(client.uuid7(), uuids[-1])

    def test_the_async_client_too(self):
        async def main():
            async with ic.AsyncClient(["redis://127.0.0.1:1"]) as client:
                return client.uuid7(), client.ulid(), client

        made_uuid, made_ulid, client = asyncio.run(main())
        self.assertEqual((made_uuid.kind, made_ulid.kind), ("uuidv7", "ulid"))
        self.assertGreater(client.ulid(), made_ulid)


class SameAsTheCli(unittest.TestCase):
    """`idmint uuid|ulid` (the Rust core) and this library read each other's IDs the same."""

    def setUp(self):
        binary = os.environ.get("IDMINT_BIN")
        if not binary:
            self.fail("set IDMINT_BIN to the idmint binary (nothing is skipped)")
        self.binary = binary

    def idmint(self, *args):
        return subprocess.run([self.binary, *args], check=True, capture_output=True, text=True).stdout

    def test_the_clis_ids_read_here(self):
        for kind, command in (("uuidv7", "uuid"), ("ulid", "ulid")):
            for form in ("uuid", "ulid", "hex"):
                lines = self.idmint(command, "-n", "500", "--node-bits", "10", "--node", "777", "--format", form).split()
                ids = [ic.Id128.parse(line, kind=kind) for line in lines]
                self.assertEqual(len(ids), 500)
                self.assertTrue(all(a < b for a, b in zip(ids, ids[1:])))
                self.assertEqual({i.decode(node_bits=10).node for i in ids}, {777})

    def test_the_cli_decodes_these_ids_as_this_library_does(self):
        for gen, kind in ((ic.Uuid7Generator(node=5, node_bits=12), "uuid7"), (ic.UlidGenerator(node=5, node_bits=12), "ulid")):
            made = gen.new()
            for text in (made.to_uuid_string(), made.to_ulid_string(), made.to_hex()):
                said = json.loads(self.idmint("decode", "--json", "--kind", kind, "--node-bits", "12", text))
                ours = made.decode(node_bits=12)
                self.assertEqual(
                    (said["ms"], said["counter"], said["node"], said.get("version"), said.get("variant")),
                    (ours.ms, ours.counter, ours.node, ours.version, ours.variant),
                )
                self.assertEqual(said["time"], ours.time.isoformat(timespec="milliseconds").replace("+00:00", "Z"))


class Readme(unittest.TestCase):
    def test_the_readme_example_runs(self):
        readme = (HERE.parent / "README.md").read_text()
        section = readme.split("## UUIDv7 and ULID", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```python run\n(.*?)```", section, re.S)
        self.assertTrue(blocks)
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})


if __name__ == "__main__":
    unittest.main()
