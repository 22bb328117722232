"""Cost of one `Client.next()` from memory against one `INCR` round trip with redis-py.

    python bench_next.py --node redis://127.0.0.1:6380 [--token T] [--calls 1000000]

Prints ns/call of each and their ratio (the target: next() at least 10x cheaper).
"""

import argparse
import time

import redis

from idmint_client import Client


def main() -> None:
    parser = argparse.ArgumentParser(description="Client.next() vs a redis-py INCR round trip")
    parser.add_argument("--node", required=True, help="redis:// URL of one idmint node")
    parser.add_argument("--token", default=None)
    parser.add_argument("--tag", default="bench_next")
    parser.add_argument("--calls", type=int, default=1_000_000, help="next() calls")
    parser.add_argument("--incr-calls", type=int, default=20_000, help="INCR round trips")
    args = parser.parse_args()

    # next(): large ranges so that the measured loop is (nearly) all memory hits; the
    # background refills still run, as in real use.
    with Client([args.node], token=args.token, min_step=10_000, max_step=10_000) as client:
        for _ in range(20_000):  # warm up: the first range and its refill
            client.next(args.tag)
        get = client.next
        tag = args.tag
        start = time.perf_counter_ns()
        for _ in range(args.calls):
            get(tag)
        next_ns = (time.perf_counter_ns() - start) / args.calls
        waits = client.stats()["refill_waits"]

    r = redis.Redis.from_url(args.node, password=args.token)
    for _ in range(1_000):
        r.incr(args.tag + "_incr")
    start = time.perf_counter_ns()
    for _ in range(args.incr_calls):
        r.incr(args.tag + "_incr")
    incr_ns = (time.perf_counter_ns() - start) / args.incr_calls
    r.close()

    print(f"next():    {next_ns:10.0f} ns/call  ({args.calls} calls, refill waits {waits})")
    print(f"r.incr():  {incr_ns:10.0f} ns/call  ({args.incr_calls} round trips)")
    print(f"ratio:     {incr_ns / next_ns:10.1f}x  (target: >= 10x)")


if __name__ == "__main__":
    main()
