#!/usr/bin/env python3
"""The in-process part of scripts/bench: criterion's medians as rows of its table.

    inproc.py CRITERION_DIR CORE_SINCE PEERS_SINCE PAIRS.TSV RUN_ID RESULTS.TSV

CRITERION_DIR is $CARGO_TARGET_DIR/criterion. Only results written by this run are read: those
of idmint-core's benches have files newer than CORE_SINCE (seconds since 1970, with a
fraction), those of the peers bench (crates/idmint-bench) newer than PEERS_SINCE (0 when it
did not run), taken after the core benches ended.

PAIRS.TSV says which figure is compared with which (see its header). Prints the table rows
(tab-separated: part, comparison, idmint, reference, ratio, target, result, CPU) and appends
one raw row per benchmark read to RESULTS.TSV, in its columns.
"""

import fnmatch
import json
import os
import sys
import time


def human(v):
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            v /= div
            break
    else:
        suffix = ""
    return f"{v:.0f}{suffix}" if v >= 100 else f"{v:.1f}{suffix}" if v >= 10 else f"{v:.2f}{suffix}"


def read_criterion(root, since, until=None):
    """full_id -> dict(group, function, ns_per_elem, per_s) for results written in [since, until)."""
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) != "new" or "estimates.json" not in files:
            continue
        est_path = os.path.join(dirpath, "estimates.json")
        mtime = os.path.getmtime(est_path)
        if mtime < since or (until is not None and mtime >= until):
            continue
        try:
            with open(os.path.join(dirpath, "benchmark.json"), encoding="utf-8") as f:
                bench = json.load(f)
            with open(est_path, encoding="utf-8") as f:
                est = json.load(f)
        except (OSError, ValueError):
            continue
        ns = est["median"]["point_estimate"]  # ns per iteration
        elements = (bench.get("throughput") or {}).get("Elements") or 1
        per_elem = ns / elements
        found[bench["full_id"]] = {
            "group": bench.get("group_id", ""),
            "function": bench.get("function_id") or "",
            "ns_per_elem": per_elem,
            "per_s": 1e9 / per_elem if per_elem > 0 else 0.0,
        }
    return found


def verdict(target, value, ratio):
    """target: 'info', '<=15ns' (on the idmint figure) or '>=0.7x' (on the ratio)."""
    t = target.replace(" ", "")
    if t in ("", "info", "-"):
        return "", "info"
    if t.startswith("<=") and t.endswith("ns"):
        limit = float(t[2:-2])
        return f"<= {limit:g} ns/ID", "PASS" if value <= limit else "MISS"
    if t.startswith(">=") and t.endswith("x"):
        limit = float(t[2:-1])
        if ratio is None:
            return f">= {limit:g}x", "ERROR"
        return f">= {limit:g}x", "PASS" if ratio >= limit else "MISS"
    return target, "?"


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    root, core_since, peers_since, pairs_path, run_id, results_path = sys.argv[1:]
    core_since, peers_since = float(core_since), float(peers_since)
    core = read_criterion(root, core_since, peers_since if peers_since > 0 else None)
    peers = read_criterion(root, peers_since) if peers_since > 0 else {}

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(results_path, "a", encoding="utf-8") as out:
        for source, benches in (("idmint-core", core), ("idmint-bench", peers)):
            for full_id, b in sorted(benches.items()):
                cells = [run_id, now, "inproc", full_id, "1", "NA", source, "criterion", "cargo bench",
                         full_id] + ["NA"] * 5 + [f"{b['per_s']:.6g}", f"{b['per_s']:.6g}"] + ["NA"] * 8 + \
                    ["ok", f"{b['ns_per_elem']:.6g}", "ns/elem"]
                out.write("\t".join(cells) + "\n")

    rows = []
    if not core:
        rows.append(["inproc", "idmint-core benches", "", "", "", "", "ERROR", "no results written"])
    with open(pairs_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            label, ours, ref, kind, target = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
            if kind == "peer":
                if peers:
                    rows.extend(peer_rows(peers, ours, ref, target))
                continue
            a = core.get(ours)
            if a is None:
                if core:
                    rows.append(["inproc", label, "", "", "", target, "skipped", f"{ours}: no result"])
                continue
            b = core.get(ref)
            b_rate = b["per_s"] if b else float(ref) if ref.replace(".", "", 1).isdigit() else None
            ref_name = ref if b else "ceiling" if b_rate else ""
            if kind == "ns":
                b_ns = b["ns_per_elem"] if b else None
                ratio = a["ns_per_elem"] / b_ns if b_ns else None
                goal, result = verdict(target, a["ns_per_elem"], ratio)
                rows.append(["inproc", label, f"{a['ns_per_elem']:.2f} ns/ID",
                             f"{b_ns:.2f} ns/ID ({ref_name})" if b_ns else "",
                             f"{ratio:.2f}x the time" if ratio else "", goal, result, ""])
            else:
                ratio = a["per_s"] / b_rate if b_rate else None
                goal, result = verdict(target, a["ns_per_elem"], ratio)
                rows.append(["inproc", label, f"{human(a['per_s'])} IDs/s",
                             f"{human(b_rate)} IDs/s ({ref_name})" if b_rate else "",
                             f"{ratio:.2f}x" if ratio else "", goal, result, ""])
    for r in rows:
        print("\t".join(r))


def peer_rows(peers, ours_glob, ref, target):
    """Rows of the peers bench: each benchmark matching ours_glob (criterion full ID,
    group/function) against, in its own group, the benchmark whose function ID is ref, or with
    ref "fastest" the fastest one that is neither idmint's (function ID idmint*) nor a floor
    (the bare fetch_add; fetch_add and a CSPRNG draw for 128-bit IDs). Throughput ratio; every benchmark is in the raw results anyway."""
    rows = []
    for full_id in sorted(f for f in peers if fnmatch.fnmatch(f, ours_glob)):
        a = peers[full_id]
        group = {b["function"]: b for b in peers.values() if b["group"] == a["group"]}
        if ref == "fastest":
            others = [f for f in group if not f.startswith("idmint") and f not in ("fetch_add", "floor")]
            name = max(others, key=lambda f: group[f]["per_s"], default=None)
        else:
            name = ref if ref in group else None
        label = f"peers {a['group']}: {a['function']} vs {ref if name is None else name}"
        if ref == "fastest" and name is not None:
            label += " (fastest peer)"
        if name is None:
            rows.append(["inproc", label, ns_and_rate(a), "", "", "", "skipped", f"no {ref} in the group"])
            continue
        b = group[name]
        ratio = a["per_s"] / b["per_s"] if b["per_s"] else None
        goal, result = verdict(target, a["ns_per_elem"], ratio)
        rows.append(["inproc", label, ns_and_rate(a), ns_and_rate(b), f"{ratio:.2f}x" if ratio else "",
                     goal, result, ""])
    return rows


def ns_and_rate(b):
    return f"{b['ns_per_elem']:.2f} ns/ID ({human(b['per_s'])}/s)"


if __name__ == "__main__":
    main()
