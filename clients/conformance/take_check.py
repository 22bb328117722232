#!/usr/bin/env python3
"""Runs a library's example program (`clients/<lang>/take`) as a user would, against two real
nodes on one store, and kills the node it draws from while it runs: every ID it prints must be
unique and, per kind, increasing, and it must exit 0 having printed all of them. Then bad
flags: a non-zero exit with one line on stderr, nothing on stdout.

    take_check.py --idmint PATH --take clients/<lang>/take

The kill lands mid-run without any timing guess: the output comes through a pipe, so when this
has read KILL_AFTER lines the program is at most a pipe's and a buffer's worth of lines ahead
(some thousands of the 200,000), holding ranges of the first node, and has to move to the
second for the rest.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from typing import List

from conductor import Refusal, Run

SEGMENT_COUNT = 200_000
SNOWFLAKE_COUNT = 20_000
KILL_AFTER = 2_000
#: The first run builds the library, which may take minutes on a cold cache.
TIMEOUT = 600


def draw(run: Run, take: str, args: List[str], count: int) -> List[int]:
    nodes = ",".join(node.resp for node in run.nodes)
    command = [take, "--nodes", nodes, "--token", run.mint, *args, "--count", str(count)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors: List[str] = []
    reader = threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True)
    reader.start()
    timer = threading.Timer(TIMEOUT, process.kill)
    timer.start()
    ids: List[int] = []
    try:
        for line in process.stdout:
            ids.append(int(line))
            if len(ids) == KILL_AFTER:
                run.nodes[0].kill()
        code = process.wait()
    finally:
        timer.cancel()
    reader.join()
    if code != 0:
        raise SystemExit(f"{' '.join(args)}: exit {code} after {len(ids)} IDs: {''.join(errors)}")
    if len(ids) != count:
        raise SystemExit(f"{' '.join(args)}: {len(ids)} IDs printed, not {count}")
    return ids


def check(ids: List[int], what: str) -> None:
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{what}: an ID printed twice")
    for before, after in zip(ids, ids[1:]):
        if before >= after:
            raise SystemExit(f"{what}: {before} then {after}, not increasing")


def refused(take: str, args: List[str], flag: str) -> None:
    result = subprocess.run([take, *args], capture_output=True, text=True, timeout=TIMEOUT)
    lines = result.stderr.strip().splitlines()
    if result.returncode == 0 or result.stdout or len(lines) != 1 or flag not in lines[0]:
        raise SystemExit(
            f"take {' '.join(args)}: expected a non-zero exit and one line naming {flag}, got "
            f"exit {result.returncode}, stdout {result.stdout[:200]!r}, stderr {result.stderr!r}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idmint", required=True)
    parser.add_argument("--take", required=True)
    args = parser.parse_args()
    take = args.take

    # A first run builds what the program needs (on a cold cache, with messages on stderr),
    # outside the checks and the timed runs: its output is not judged.
    subprocess.run([take, "--kind", "sideways"], capture_output=True, timeout=TIMEOUT)
    refused(take, ["--nodes", "127.0.0.1:1", "--kind", "segment", "--count", "x", "--tag", "t"], "--count")
    refused(take, ["--nodes", "127.0.0.1:1", "--kind", "sideways", "--count", "1"], "--kind")
    refused(take, ["--kind", "snowflake", "--count", "1"], "--nodes")

    for kind, flags, count in (
        ("segment", ["--kind", "segment", "--tag", "take"], SEGMENT_COUNT),
        ("snowflake", ["--kind", "snowflake"], SNOWFLAKE_COUNT),
    ):
        run = Run(args.idmint, {"name": f"take-{kind}", "nodes": [{}, {}]})
        try:
            for node in run.nodes:
                node.start()
            ids = draw(run, take, flags, count)
        except Refusal as e:
            raise SystemExit(str(e))
        finally:
            run.close()
        check(ids, kind)
        print(f"take {kind}: {len(ids)} IDs, unique and increasing, node 0 killed after "
              f"{KILL_AFTER}", file=sys.stderr)

    # Nothing to serve: one line saying why, within the library's wait.
    result = subprocess.run(
        [take, "--nodes", "127.0.0.1:1", "--kind", "snowflake", "--count", "1"],
        capture_output=True, text=True, timeout=TIMEOUT,
    )
    lines = result.stderr.strip().splitlines()
    if result.returncode == 0 or result.stdout or len(lines) != 1:
        raise SystemExit(f"take with no node up: exit {result.returncode}, stderr {result.stderr!r}")


if __name__ == "__main__":
    main()
