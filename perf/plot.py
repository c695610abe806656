#!/usr/bin/env python3
"""Plots bus bandwidth against size from the JSON files of all_gather_perf -J.

One line per file, engine, data type and placement; where a file holds vendor timings
(--compare vendor), the vendor's line follows in the same colour, dashed. The x axis is the
total gathered size on a log2 scale.

    perf/plot.py run1.json run2.json -o busbw.png
    perf/plot.py dma.json kernel.json --placement out-of-place --title "8x H200"

Needs matplotlib (Debian: apt-get install python3-matplotlib; pip: pip install matplotlib).
"""

import argparse
import json
import os
import sys


def load(path):
    """The header and rows of one -J file; exits with a message if it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot.py: cannot read {path}: {e}")
    if not isinstance(data, dict) or "rows" not in data:
        sys.exit(f"plot.py: {path} is not a -J file of the perf binaries (no 'rows')")
    return data.get("header", {}), data["rows"]


def size_label(size):
    """1024 -> '1K', as the -b/-e flags are written."""
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def series(path, rows, placements, many_files):
    """(label, sizes, busbw, dashed) for each line the file contributes."""
    groups = {}
    for row in rows:
        if "size" not in row or row.get("placement") not in placements:
            continue  # barrier_perf rows have no size
        key = (row.get("engine", "default"), row.get("type", "?"), row["placement"])
        groups.setdefault(key, []).append(row)
    types = {key[1] for key in groups}
    engines = {key[0] for key in groups}
    # Where several files are plotted, the file name tells their lines apart.
    prefix = os.path.splitext(os.path.basename(path))[0] if many_files else ""
    lines = []
    order = {"out-of-place": 0, "in-place": 1}
    for (engine, dtype, placement), group in sorted(groups.items(),
                                                    key=lambda g: (g[0][0], g[0][1], order[g[0][2]])):
        group.sort(key=lambda r: r["size"])
        parts = [prefix] if prefix else []
        if len(engines) > 1 or engine != "default":
            parts.append(engine)
        if len(types) > 1:
            parts.append(dtype)
        parts.append(placement)
        name = " ".join(parts)
        points = [(r["size"], r["busbw"]) for r in group if r["size"] > 0 and r["busbw"] is not None]
        lines.append(("xccl " + name, points, False))
        vendor = [(r["size"], r["vendor_busbw"]) for r in group
                  if r["size"] > 0 and r.get("vendor_busbw") is not None]
        if vendor:
            vendor_name = group[0].get("vendor", "vendor")
            lines.append((f"{vendor_name} {name}", vendor, True))
    return lines


def title_of(headers):
    """'all_gather, 8 ranks, NVIDIA H200' from the first header (others are assumed alike)."""
    if not headers:
        return "busbw"
    h = headers[0]
    parts = [h.get("op", h.get("program", "?")), f"{h.get('nranks', '?')} ranks"]
    names = h.get("gpu_names") or []
    if names:
        parts.append(", ".join(names))
    graphs = (h.get("flags") or {}).get("graph_launches", 0)
    if graphs:
        parts.append(f"-G {graphs}")
    return ", ".join(str(p) for p in parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="JSON files written by all_gather_perf -J")
    parser.add_argument("-o", "--output", default="busbw.png", help="PNG to write (busbw.png)")
    parser.add_argument("--placement", choices=["out-of-place", "in-place", "both"],
                        default="both", help="which placements to draw (both)")
    parser.add_argument("--title", help="plot title (default: op, ranks and GPU of the first file)")
    args = parser.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")  # files only; no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(f"plot.py: matplotlib is not installed for {sys.executable}.\n"
                 "  Debian/Ubuntu: apt-get install python3-matplotlib (then run it with "
                 "/usr/bin/python3 if another python3 comes first in PATH)\n"
                 "  elsewhere:     python3 -m pip install matplotlib")

    placements = ("out-of-place", "in-place") if args.placement == "both" else (args.placement,)
    headers = []
    lines = []
    for path in args.files:
        header, rows = load(path)
        headers.append(header)
        lines.extend(series(path, rows, placements, len(args.files) > 1))
    if not any(points for _, points, _ in lines):
        sys.exit("plot.py: no row with a size above 0 to plot (barrier_perf files have none)")

    fig, ax = plt.subplots(figsize=(10, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color_index = -1
    all_sizes = set()
    for label, points, dashed in lines:
        if not points:
            continue
        if not dashed:  # a vendor line shares the colour of the xccl line before it
            color_index += 1
        sizes = [p[0] for p in points]
        all_sizes.update(sizes)
        ax.plot(sizes, [p[1] for p in points], label=label, marker=".",
                linestyle="--" if dashed else "-", color=colors[color_index % len(colors)])
    ax.set_xscale("log", base=2)
    ticks = sorted(all_sizes)
    if len(ticks) > 16:  # keep the labels readable on long sweeps
        ticks = ticks[:: (len(ticks) + 15) // 16]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=45)
    ax.set_xlabel("size (bytes gathered)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(args.title or title_of(headers))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot.py: wrote {args.output}")


if __name__ == "__main__":
    main()
