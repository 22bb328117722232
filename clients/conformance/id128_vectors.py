#!/usr/bin/env python3
"""Writes id128_vectors.json: the 128-bit ID layouts (UUIDv7 and ULID) as every idmint
implementation must compose, render and parse them. A second, independent reading of the
layout in docs/ARCHITECTURE.md ("128-bit IDs"): the Rust core and each client library test
against the file this writes, so all of them agree bit for bit.

Run it from anywhere: python3 clients/conformance/id128_vectors.py (rewrites the file beside it).
"""
import json
import pathlib
import random

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def compose(kind, ms, counter, node_bits, node, rand):
    """The 128-bit value, as an int, from its fields."""
    assert 0 <= ms < 1 << 48 and 0 <= counter < 1 << 24 and 0 <= node_bits <= 24
    assert 0 <= node < 1 << node_bits
    if kind == "uuidv7":
        rand_bits = 50 - node_bits
        assert 0 <= rand < 1 << rand_bits
        value = ms << 80 | 0x7 << 76 | (counter >> 12) << 64 | 0b10 << 62
        value |= (counter & 0xFFF) << 50 | node << rand_bits | rand
    else:
        rand_bits = 56 - node_bits
        assert 0 <= rand < 1 << rand_bits
        value = ms << 80 | counter << 56 | node << rand_bits | rand
    return value


def canonical(value):
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ulid_text(value):
    return "".join(CROCKFORD[(value >> (5 * (25 - i))) & 31] for i in range(26))


def case(kind, ms, counter, node_bits, node, rand):
    value = compose(kind, ms, counter, node_bits, node, rand)
    return {
        "kind": kind,
        "ms": ms,
        "counter": counter,
        "node_bits": node_bits,
        "node": node,
        # In hex: 56 bits do not fit a JavaScript number.
        "random_hex": f"{rand:x}",
        "uuid": canonical(value),
        "hex": f"{value:032x}",
        "ulid": ulid_text(value),
        "bytes_hex": value.to_bytes(16, "big").hex(),
    }


def main():
    rng = random.Random(31)
    cases = []
    for kind, width in (("uuidv7", 50), ("ulid", 56)):
        # The edges of every field, then random fields.
        cases.append(case(kind, 0, 0, 0, 0, 0))
        cases.append(case(kind, (1 << 48) - 1, (1 << 24) - 1, 0, 0, (1 << width) - 1))
        cases.append(case(kind, 1_764_201_600_000, 1, 10, 1023, 0))
        cases.append(case(kind, 1_764_201_600_000, 1 << 23, 24, (1 << 24) - 1, (1 << (width - 24)) - 1))
        for _ in range(12):
            node_bits = rng.choice((0, 0, 8, 10, 16, 24))
            cases.append(
                case(
                    kind,
                    rng.randrange(1 << 48),
                    rng.randrange(1 << 24),
                    node_bits,
                    rng.randrange(1 << node_bits) if node_bits else 0,
                    rng.randrange(1 << (width - node_bits)),
                )
            )
    refused = [
        "",
        "0192f3a1-7c2e-7a3b-8d4e-5f60718293a",  # 35 characters
        "0192f3a1-7c2e-7a3b-8d4e-5f60718293a4x",  # 37
        "0192f3a17c2e-7a3b-8d4e-5f60718293a45",  # dashes in the wrong places
        "0192f3a1-7c2e-7a3b-8d4e-5f60718293g4",  # not hex
        "0192f3a1-7c2e-7a3b-8d4e+5f60718293a4",
        "0192f3a17c2e7a3b8d4e5f60718293g4",  # 32, not hex
        "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  # 26, above 128 bits
        "01ARZ3NDEKTSV4RRFFQ69G5FAU",  # U is not in the alphabet
        "01ARZ3NDEKTSV4RRFFQ69G5FAI",  # nor I
        "01ARZ3NDEKTSV4RRFFQ69G5FAL",  # nor L
        "01ARZ3NDEKTSV4RRFFQ69G5FAO",  # nor O
        "01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25
        " 0192f3a1-7c2e-7a3b-8d4e-5f60718293a4",
        "0192f3a1-7c2e-7a3b-8d4e-5f60718293a4 ",
        "\u00e90192f3a1-7c2e-7a3b-8d4e-5f607182",
    ]
    # Read back in any case: upper-case hex, lower-case ULID.
    accepted = [
        {"text": cases[2]["uuid"].upper(), "hex": cases[2]["hex"]},
        {"text": cases[2]["hex"].upper(), "hex": cases[2]["hex"]},
        {"text": cases[2]["ulid"].lower(), "hex": cases[2]["hex"]},
        {"text": "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "hex": "f" * 32},
    ]
    out = {
        "about": "Written by id128_vectors.py: the 128-bit layouts of docs/ARCHITECTURE.md, "
        "'128-bit IDs'. Every implementation composes, renders and parses these exactly.",
        "cases": cases,
        "refused": refused,
        "accepted": accepted,
    }
    path = pathlib.Path(__file__).with_name("id128_vectors.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
