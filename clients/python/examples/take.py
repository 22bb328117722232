"""The example program every idmint client library ships (`clients/<lang>/take`): takes N IDs
through the library and prints them one per line, in the order it handed them out.

    take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N

Exits 0 after printing N IDs, or 1 with one line on stderr saying why (2 for a bad flag).
"""

import argparse
import sys

import idmint_client as ic


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        print(f"take: {message}", file=sys.stderr)
        raise SystemExit(2)


def main() -> int:
    parser = Parser(prog="take", description="Take IDs through idmint_client.")
    parser.add_argument("--nodes", required=True, help="HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--token")
    parser.add_argument("--kind", required=True, choices=["segment", "snowflake"])
    parser.add_argument("--tag")
    parser.add_argument("--count", required=True, type=int)
    args = parser.parse_args()
    if args.kind == "segment" and not args.tag:
        parser.error("--tag is required with --kind segment")
    if args.count < 0:
        parser.error("--count must not be negative")
    nodes = [f"redis://{n}" for n in args.nodes.split(",") if n]
    if not nodes:
        parser.error("--nodes: no HOST:PORT given")
    out = sys.stdout
    try:
        with ic.Client(nodes, args.token) as client:
            left = args.count
            while left > 0:
                if args.kind == "segment":
                    out.write(f"{client.next(args.tag)}\n")
                    left -= 1
                else:
                    ids = client.snowflakes(min(left, 1000))
                    out.write("".join(f"{id}\n" for id in ids))
                    left -= len(ids)
    except ic.IdmintError as e:
        out.flush()
        print(f"take: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 1
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
