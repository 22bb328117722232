"""IDs per second, one thread: Uuid7Generator and UlidGenerator against the stdlib's uuid4 (and
uuid7, on a Python that has it).

    python clients/python/bench/bench_id128.py [--ids 1000000]

Needs no node. Each row is the best of three timed loops.
"""

import argparse
import time
import uuid

from idmint_client import UlidGenerator, Uuid7Generator


def rate(make, n: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            make()
        best = min(best, time.perf_counter() - start)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description="local UUIDv7/ULID generation vs the stdlib")
    parser.add_argument("--ids", type=int, default=1_000_000, help="IDs per timed loop")
    args = parser.parse_args()
    uuids, ulids = Uuid7Generator(), UlidGenerator()
    rows = [
        ("Uuid7Generator.new()", uuids.new),
        ("Uuid7Generator.new_uuid()", uuids.new_uuid),
        ("str(Uuid7Generator.new())", lambda: str(uuids.new())),
        ("UlidGenerator.new()", ulids.new),
        ("str(UlidGenerator.new())", lambda: str(ulids.new())),
        ("uuid.uuid4()", uuid.uuid4),
        ("str(uuid.uuid4())", lambda: str(uuid.uuid4())),
    ]
    if hasattr(uuid, "uuid7"):
        rows.append(("uuid.uuid7()", uuid.uuid7))
    for name, make in rows:
        per_second = rate(make, args.ids)
        print(f"{name:28} {per_second / 1e6:6.2f} M IDs/s  {1e9 / per_second:7.0f} ns/ID")


if __name__ == "__main__":
    main()
