"""Drives idmint_client (clients/python) for the Rust harness: one Client shared by --threads
threads, each calling next(tag) for --seconds (sleeping 1 ms after every 100 IDs, and asking
for a snowflake every 1000th call), writing what it got to files the harness checks:

    DIR/NAME-t{i}.seg   the thread's segment IDs, in call order, little-endian u64
    DIR/NAME-t{i}.sf    the thread's snowflakes, likewise

A call that raises is counted (with the time it failed), not fatal. At the end it closes the
client and prints one line:

    DONE name=NAME ids=N snowflakes=N failed=N last_failure=SECONDS|-1 stats=JSON
"""

import argparse
import json
import os
import struct
import sys
import threading
import time
import traceback
from array import array

import idmint_client


def little_endian_u64(values):
    """`values` as little-endian u64 bytes."""
    data = array("Q", values)
    if data.itemsize != 8:
        return struct.pack(f"<{len(values)}Q", *values)
    if sys.byteorder != "little":
        data.byteswap()
    return data.tobytes()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", required=True, help="comma-separated redis:// URLs")
    parser.add_argument("--token", default=None)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--max-step", type=int, default=None)
    parser.add_argument("--target-lifetime-ms", type=float, default=None)
    args = parser.parse_args()

    options = {}
    if args.max_step is not None:
        options["max_step"] = args.max_step
        options["min_step"] = min(100, args.max_step)
    if args.target_lifetime_ms is not None:
        options["target_lifetime"] = args.target_lifetime_ms / 1000.0
    nodes = [n for n in args.nodes.split(",") if n]
    client = idmint_client.Client(nodes, token=args.token or None, **options)
    os.makedirs(args.out, exist_ok=True)

    start = time.monotonic()
    stop_at = start + args.seconds
    lock = threading.Lock()
    totals = {"ids": 0, "snowflakes": 0, "failed": 0, "last_failure": -1.0}
    errors = {}

    def failed(error):
        with lock:
            totals["failed"] += 1
            totals["last_failure"] = time.monotonic() - start
            kind = f"{type(error).__name__}"
            if kind not in errors:
                errors[kind] = str(error)
                print(f"sdk_driver: first {kind}: {error}", file=sys.stderr, flush=True)
            errors[kind + "#"] = errors.get(kind + "#", 0) + 1

    def run(index):
        seg, sf = [], []
        calls = 0
        try:
            while time.monotonic() < stop_at:
                calls += 1
                try:
                    seg.append(client.next(args.tag))
                except idmint_client.IdmintError as error:
                    failed(error)
                if calls % 1000 == 0:
                    try:
                        sf.append(client.snowflake())
                    except idmint_client.IdmintError as error:
                        failed(error)
                if calls % 100 == 0:
                    time.sleep(0.001)
        except Exception as error:  # a bug of the client: counted, the thread's IDs still kept
            failed(error)
            traceback.print_exc(file=sys.stderr)
        base = os.path.join(args.out, f"{args.name}-t{index}")
        with open(base + ".seg", "wb") as out:
            out.write(little_endian_u64(seg))
        with open(base + ".sf", "wb") as out:
            out.write(little_endian_u64(sf))
        with lock:
            totals["ids"] += len(seg)
            totals["snowflakes"] += len(sf)

    threads = [threading.Thread(target=run, args=(i,), name=f"t{i}") for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    client.close()
    stats = client.stats()
    if errors:
        print(f"sdk_driver: failures by kind: {errors}", file=sys.stderr, flush=True)
    last = totals["last_failure"]
    print(
        f"DONE name={args.name} ids={totals['ids']} snowflakes={totals['snowflakes']} "
        f"failed={totals['failed']} last_failure={-1 if last < 0 else round(last, 3)} "
        f"stats={json.dumps(stats, separators=(',', ':'), sort_keys=True)}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
