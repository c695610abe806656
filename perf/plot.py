#!/usr/bin/env python3
"""Plots bus bandwidth, algbw or time per call against size from the perf binaries' -J files.

One line per file, engine, data type, reduction op and placement; where a file holds vendor
timings (--compare vendor), the vendor's line follows in the same colour, dashed. The x axis is
the rows' size (all_gather: the total gathered bytes) on a log2 scale. With --metric time the y
axis is the time per call in us (log scale), and barrier_perf files add one horizontal line each
(its whole-world row; the vendor's stand-in dash-dotted).

    perf/plot.py run1.json run2.json -o busbw.png
    perf/plot.py dma.json kernel.json --placement out-of-place --title "8x H200"
    perf/plot.py t2.json t4.json t8.json --label auto -o ranks.png       # "2 ranks", "4 ranks", ...
    perf/plot.py small.json small_graph.json barrier.json --metric time --label auto -o lat.png

--label auto names each file's lines by what differs between the files' headers (rank count,
plain or graph launches) instead of by file name. Needs matplotlib (Debian: apt-get install
python3-matplotlib; pip: pip install matplotlib).
"""

import argparse
import json
import os
import sys

# metric -> (xccl row field, vendor row field, y axis label)
METRICS = {
    "busbw": ("busbw", "vendor_busbw", "bus bandwidth (GB/s)"),
    "algbw": ("algbw", "vendor_algbw", "algorithm bandwidth (GB/s)"),
    "time": ("time_us", "vendor_time_us", "time per call (us)"),
}


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


def ranks_text(n):
    return f"{n} rank" if n == 1 else f"{n} ranks"


def graphs_of(header):
    return (header.get("flags") or {}).get("graph_launches", 0) or 0


def vendor_name(text):
    """'/usr/lib/libnccl.so.2 2.28.3' -> 'NCCL 2.28.3': the rows carry the dlopen path."""
    path, _, version = (text or "vendor").partition(" ")
    base = os.path.basename(path)
    for prefix, name in (("libnccl", "NCCL"), ("librccl", "RCCL")):
        if base.startswith(prefix):
            base = name
    return f"{base} {version}".strip()


def file_prefixes(paths, headers, mode):
    """The words that tell each file's lines apart: '' for a single file."""
    names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    if len(paths) < 2:
        return [""]
    if mode == "file":
        return names
    # auto: the header facts that differ between files; the file name where none does, or
    # where two files would still read alike.
    facts = []
    if len({h.get("nranks") for h in headers}) > 1:
        facts.append(lambda h: ranks_text(h.get("nranks", "?")))
    if len({graphs_of(h) for h in headers}) > 1:
        facts.append(lambda h: f"graph -G {graphs_of(h)}" if graphs_of(h) else "plain")
    if not facts:
        return names
    prefixes = [" ".join(fact(h) for fact in facts) for h in headers]
    # Lines of different ops are told apart by their op already (barrier lines say "barrier").
    keys = [(h.get("op"), p) for h, p in zip(headers, prefixes)]
    return [f"{p} {n}" if keys.count(k) > 1 else p for k, p, n in zip(keys, prefixes, names)]


def series(rows, header, placements, prefix, metric):
    """(label, points, style) for each line the file contributes; style is 'xccl' or 'vendor'
    for lines over size, 'xccl-h' or 'vendor-h' for a horizontal line (points = [y])."""
    field, vendor_field, _ = METRICS[metric]
    lines = []
    if metric == "time":
        # barrier_perf rows have no size: its whole-world row becomes a horizontal line.
        world = header.get("nranks")
        for row in rows:
            if "size" in row or row.get("nranks") != world or row.get("time_us") is None:
                continue
            name = f"{row.get('op', 'barrier')} {prefix}".strip()
            if ranks_text(world) not in name:
                name += f" ({ranks_text(world)})"
            lines.append((f"xccl {name}", [row["time_us"]], "xccl-h"))
            if row.get("vendor_time_us") is not None:  # NCCL has no barrier: name its stand-in
                words = [vendor_name(row.get("vendor")), row.get("vendor_op", ""), "for", name]
                lines.append((" ".join(w for w in words if w), [row["vendor_time_us"]], "vendor-h"))
    groups = {}
    for row in rows:
        if "size" not in row or row.get("placement") not in placements:
            continue
        # redop: reduce_scatter_perf and all_reduce_perf rows; "" for those of all_gather_perf.
        key = (row.get("engine", "default"), row.get("type", "?"), row.get("redop", ""),
               row["placement"])
        groups.setdefault(key, []).append(row)
    types = {key[1] for key in groups}
    engines = {key[0] for key in groups}
    redops = {key[2] for key in groups}
    order = {"out-of-place": 0, "in-place": 1}
    for (engine, dtype, redop, placement), group in sorted(
            groups.items(), key=lambda g: (g[0][0], g[0][1], g[0][2], order[g[0][3]])):
        group.sort(key=lambda r: r["size"])
        parts = [prefix] if prefix else []
        if len(engines) > 1 or engine != "default":
            parts.append(engine)
        if len(types) > 1:
            parts.append(dtype)
        if len(redops) > 1:
            parts.append(redop)
        if len(placements) > 1:  # one placement drawn: the title names it
            parts.append(placement)
        name = " ".join(parts)

        def points(key):
            # Rows whose per-rank count rounds down to 0 moved nothing: no point to draw.
            return [(r["size"], r[key]) for r in group
                    if r["size"] > 0 and r.get("count", 1) > 0 and r.get(key) is not None
                    and (metric != "time" or r[key] > 0)]
        lines.append((f"xccl {name}".strip(), points(field), "xccl"))
        vendor = points(vendor_field)
        if vendor:
            label = f"{vendor_name(group[0].get('vendor'))} {name}".strip()
            lines.append((label, vendor, "vendor"))
    return lines


def title_of(headers, placements):
    """'all_gather, 2, 4, 8 ranks, NVIDIA H200, out-of-place, 2026-12-03' from the headers."""
    if not headers:
        return "busbw"

    def unique(values):
        seen = []
        for v in values:
            if v not in seen:
                seen.append(v)
        return seen
    ops = unique(h.get("op", h.get("program", "?")) for h in headers)
    ranks = sorted(unique(h.get("nranks", 0) for h in headers))
    parts = [" + ".join(ops),
             ", ".join(str(n) for n in ranks) + (" rank" if ranks == [1] else " ranks")]
    hardware = []
    for h in headers:
        if h.get("platform") == "host":  # gpu_names says "host": name the machine instead
            hardware.append(f"host platform ({h.get('host', '?')})")
        else:
            hardware.extend(h.get("gpu_names") or [])
    if unique(hardware):
        parts.append(", ".join(unique(hardware)))
    graphs = unique(graphs_of(h) for h in headers)
    if len(graphs) == 1 and graphs[0]:
        parts.append(f"-G {graphs[0]}")
    if len(placements) == 1:
        parts.append(placements[0])
    dates = sorted(unique(h["date"][:10] for h in headers if h.get("date")))
    if dates:
        parts.append(dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}")
    return ", ".join(str(p) for p in parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="JSON files written by the perf binaries' -J")
    parser.add_argument("-o", "--output", default="busbw.png", help="PNG to write (busbw.png)")
    parser.add_argument("--placement", choices=["out-of-place", "in-place", "both"],
                        default="both", help="which placements to draw (both)")
    parser.add_argument("--metric", choices=sorted(METRICS), default="busbw",
                        help="what the y axis shows: busbw, algbw (GB/s) or time (us per call) "
                             "(busbw)")
    parser.add_argument("--label", choices=["file", "auto"], default="file",
                        help="name several files' lines by file name, or by what differs "
                             "between their headers: rank count, plain or graph (file)")
    parser.add_argument("--title", help="plot title (default: op, ranks, hardware and date of "
                                        "the files)")
    parser.add_argument("--note", help="a second title line, e.g. the machine's load")
    args = parser.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")  # files only; no display needed
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError:
        sys.exit(f"plot.py: matplotlib is not installed for {sys.executable}.\n"
                 "  Debian/Ubuntu: apt-get install python3-matplotlib (then run it with "
                 "/usr/bin/python3 if another python3 comes first in PATH)\n"
                 "  elsewhere:     python3 -m pip install matplotlib")

    placements = ("out-of-place", "in-place") if args.placement == "both" else (args.placement,)
    loaded = [load(path) for path in args.files]
    headers = [header for header, _ in loaded]
    prefixes = file_prefixes(args.files, headers, args.label)
    lines = []
    for (header, rows), prefix in zip(loaded, prefixes):
        lines.extend(series(rows, header, placements, prefix, args.metric))
    if not any(points for _, points, style in lines if style in ("xccl", "vendor")):
        sys.exit("plot.py: no row with a size above 0 to plot (barrier_perf files have none; "
                 "with --metric time they add lines to a plot of sized rows)")

    fig, ax = plt.subplots(figsize=(10, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color_index = -1
    all_sizes = set()
    linestyle = {"xccl": "-", "vendor": "--", "xccl-h": ":", "vendor-h": "-."}
    for label, points, style in lines:
        if not points:
            continue
        if style.startswith("xccl"):  # a vendor line shares the colour of the xccl line before it
            color_index += 1
        color = colors[color_index % len(colors)]
        if style.endswith("-h"):
            ax.axhline(points[0], label=label, linestyle=linestyle[style], color=color)
            continue
        sizes = [p[0] for p in points]
        all_sizes.update(sizes)
        ax.plot(sizes, [p[1] for p in points], label=label, marker=".",
                linestyle=linestyle[style], color=color)
    ax.set_xscale("log", base=2)
    ticks = sorted(all_sizes)
    if len(ticks) > 16:  # keep the labels readable on long sweeps
        ticks = ticks[:: (len(ticks) + 15) // 16]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=45)
    ax.set_xlabel("size (bytes gathered)")
    ax.set_ylabel(METRICS[args.metric][2])
    if args.metric == "time":
        # Times span decades (a few us to ms): log scale, ticks written as plain numbers.
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: ""))
    title = args.title or title_of(headers, placements)
    ax.set_title(f"{title}\n{args.note}" if args.note else title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot.py: wrote {args.output}")


if __name__ == "__main__":
    main()
