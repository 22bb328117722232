#!/usr/bin/env python3
"""Throughput against client concurrency, as an SVG drawn by hand (no plotting library).

    plot.py RESULTS.TSV RUN_ID OUT.SVG [TITLE_NOTE]

Reads the rows of part `plot` of one run of scripts/bench from its results file (a header
line, then tab-separated rows; see scripts/bench for the columns) and draws one panel per
pipeline depth (-P): requests/s against the number of clients (-c, log scale), one line per
side (idmint, and the reference server), the median of the rounds as a point and the lowest
and highest rounds as a bar.
"""

import math
import statistics
import sys
from xml.sax.saxutils import escape

# One colour per side: idmint, and the reference it is measured against.
COLOURS = {"idmint": "#d1495b", "reference": "#4d6a8a"}
FALLBACK = ["#2e933c", "#edae49", "#8e5ea2"]
LABELS = {}  # side -> legend text, from the rows' server column

PANEL_W, PANEL_H = 440, 300  # plotting area of one panel
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 78, 36, 78, 96
GAP = 96  # between panels


def read_rows(path, run_id):
    """(side, pipeline, clients) -> list of requests/s, for the plot rows of one run."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        data = {}
        for line in f:
            cells = line.rstrip("\n").split("\t")
            if len(cells) < len(header):
                continue
            if cells[col["run"]] != run_id or cells[col["part"]] != "plot":
                continue
            side = cells[col["side"]]
            LABELS.setdefault(side, f'{cells[col["server"]]} {cells[col["command"]].split()[0]}')
            try:
                key = (side, int(cells[col["pipeline"]]), int(cells[col["clients"]]))
                rate = float(cells[col["req_per_s"]])
            except ValueError:
                continue  # a failed measurement
            data.setdefault(key, []).append(rate)
    return data


def nice_step(top, ticks=5):
    """A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to top."""
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def human(v):
    """1234567 -> 1.2M, 45000 -> 45k."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            s = f"{v / div:.1f}".rstrip("0").rstrip(".")
            return s + suffix
    return f"{v:g}"


def text(x, y, s, size=12, anchor="middle", weight="normal", fill="#222", extra=""):
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-weight="{weight}" fill="{fill}" {extra}>{escape(s)}</text>'
    )


def panel(out, x0, y0, pipeline, series, clients):
    """Draws one panel with its top-left plotting corner at (x0, y0)."""
    top = max((max(v) for s in series.values() for v in s.values()), default=1.0)
    step = nice_step(top * 1.05)
    y_max = step * math.ceil(top * 1.05 / step)
    c_min, c_max = min(clients), max(clients)
    span = math.log(c_max / c_min) if c_max > c_min else 1.0

    def px(c):
        return x0 + (math.log(c / c_min) / span if c_max > c_min else 0.5) * PANEL_W

    def py(v):
        return y0 + PANEL_H - v / y_max * PANEL_H

    out.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" fill="#fafafa" stroke="#bbb"/>')
    # Horizontal grid and the y labels.
    v = 0.0
    while v <= y_max + step / 2:
        y = py(v)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(text(x0 - 8, y + 4, human(v), 11, "end"))
        v += step
    # One vertical tick per measured client count.
    for c in clients:
        x = px(c)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + PANEL_H}" stroke="#eee"/>')
        out.append(text(x, y0 + PANEL_H + 16, str(c), 11))
    out.append(text(x0 + PANEL_W / 2, y0 + PANEL_H + 36, "clients (redis-benchmark -c), log scale", 12))
    out.append(
        text(x0 - 58, y0 + PANEL_H / 2, "requests/s", 12,
             extra=f'transform="rotate(-90 {x0 - 58} {y0 + PANEL_H / 2})"')
    )
    out.append(text(x0 + PANEL_W / 2, y0 - 10, f"-P {pipeline}", 14, weight="bold"))

    for i, (server, points) in enumerate(sorted(series.items())):
        colour = COLOURS.get(server, FALLBACK[i % len(FALLBACK)])
        cs = sorted(points)
        path = " ".join(
            f"{'M' if j == 0 else 'L'}{px(c):.1f},{py(statistics.median(points[c])):.1f}"
            for j, c in enumerate(cs)
        )
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for c in cs:
            rates = points[c]
            x, ym = px(c), py(statistics.median(rates))
            if len(rates) > 1:  # the spread of the rounds
                out.append(
                    f'<line x1="{x:.1f}" y1="{py(min(rates)):.1f}" x2="{x:.1f}" y2="{py(max(rates)):.1f}" '
                    f'stroke="{colour}" stroke-width="1.2" opacity="0.6"/>'
                )
            out.append(
                f'<circle cx="{x:.1f}" cy="{ym:.1f}" r="3.2" fill="{colour}">'
                f"<title>{escape(LABELS.get(server, server))}, -c {c} -P {pipeline}: "
                f"median {statistics.median(rates):,.0f} req/s over {len(rates)} round(s)</title></circle>"
            )


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: plot.py RESULTS.TSV RUN_ID OUT.SVG [NOTE]")
    path, run_id, out_path = sys.argv[1:4]
    note = sys.argv[4] if len(sys.argv) > 4 else ""
    data = read_rows(path, run_id)
    if not data:
        sys.exit(f"plot.py: no rows of part plot for run {run_id} in {path}")

    pipelines = sorted({p for (_, p, _) in data})
    clients = sorted({c for (_, _, c) in data})
    servers = sorted({s for (s, _, _) in data})
    width = MARGIN_L + len(pipelines) * PANEL_W + (len(pipelines) - 1) * GAP + MARGIN_R
    height = MARGIN_T + PANEL_H + MARGIN_B

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        text(width / 2, 26, "INCR throughput against client concurrency: idmint and redis-server", 16,
             weight="bold"),
    ]
    if note:
        out.append(text(width / 2, 46, note, 11, fill="#555"))

    for k, p in enumerate(pipelines):
        series = {}
        for (s, pp, c), rates in data.items():
            if pp == p:
                series.setdefault(s, {})[c] = rates
        panel(out, MARGIN_L + k * (PANEL_W + GAP), MARGIN_T, p, series, clients)

    # Legend, under the panels.
    lx, ly = MARGIN_L, MARGIN_T + PANEL_H + 62
    for i, s in enumerate(servers):
        colour = COLOURS.get(s, FALLBACK[i % len(FALLBACK)])
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 26}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<circle cx="{lx + 13}" cy="{ly}" r="3.2" fill="{colour}"/>')
        label = LABELS.get(s, s)
        out.append(text(lx + 32, ly + 4, label, 12, "start"))
        lx += 48 + 7 * len(label)
    out.append(text(lx, ly + 4, "point: median of the rounds; bar: lowest to highest round", 11, "start",
                    fill="#555"))
    out.append("</svg>")

    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
