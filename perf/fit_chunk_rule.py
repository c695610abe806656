#!/usr/bin/env python3
"""Refits ag_gemm's chunk default (src/fused/chunk_rule.*) on measured ag_gemm_perf tables.

The rule: the most bands c (kMaxChunks = 4 down to 2) such that
    (row_tiles // c) * col_tiles * (world - 1) >= threshold
with 256 x 256 tiles, row_tiles over this rank's padded rows, col_tiles over N; else c = 1.
For every candidate threshold this script counts the table cells where the rule's c was
measured (c = 1, 2, 4) and is within --tolerance of the best measured fused time, and prints
the best thresholds, the current one's score, and the cells each misses.

Usage: fit_chunk_rule.py [--current 1024] [--tolerance 0.02] ag_gemm_perf_output.txt ...
Input: ag_gemm_perf's stdout (several runs may be concatenated); rows are read by the column
names of its '#       M ...' header line, the world size from its '# ag_gemm_perf: world W'
line.
"""
import argparse
import sys

TILE_ROWS = 256
TILE_COLS = 256
MAX_CHUNKS = 4
MEASURED = {1: "fused-c1", 2: "fused-c2", 4: "fused-c4"}


def ceil_div(x, d):
    return 0 if x <= 0 else (x - 1) // d + 1


def padded_rows(m):
    return ceil_div(m, 256) * 256


def rule(m_per_rank, n, world, threshold):
    """The library's ChooseChunks for pinned = 0 (src/fused/chunk_rule.cc)."""
    row_tiles = ceil_div(padded_rows(m_per_rank), TILE_ROWS)
    col_tiles = ceil_div(n, TILE_COLS)
    peers = world - 1 if world > 1 else 0
    for c in range(MAX_CHUNKS, 1, -1):
        if (row_tiles // c) * col_tiles * peers >= threshold:
            return c
    return 1


def parse(paths):
    """Cells: dicts with world, m (global), n, k, dtype and the fused times by c."""
    cells = []
    for path in paths:
        world, dtype, columns = None, "?", None
        with open(path) as f:
            for line in f:
                words = line.split()
                if line.startswith("# ag_gemm_perf: world"):
                    world = int(words[3].rstrip(","))
                    dtype = words[4]
                elif line.startswith("#") and len(words) > 2 and words[1] == "M":
                    columns = words[1:]
                elif columns and world and words and words[0].isdigit():
                    row = dict(zip(columns, words))
                    times = {}
                    for c, name in MEASURED.items():
                        value = row.get(name, "-")
                        if value != "-":
                            times[c] = float(value)
                    if times:
                        cells.append({"world": world, "dtype": dtype, "m": int(row["M"]),
                                      "n": int(row["N"]), "k": int(row["K"]), "times": times})
    return cells


def score(cells, threshold, tolerance):
    """(cells the rule gets right, cells it misses, cells where its choice was not measured)."""
    good, misses, unmeasured = 0, [], []
    for cell in cells:
        c = rule(cell["m"] // cell["world"], cell["n"], cell["world"], threshold)
        best = min(cell["times"].values())
        if c not in cell["times"]:
            unmeasured.append((cell, c))
        elif cell["times"][c] <= best * (1 + tolerance):
            good += 1
        else:
            misses.append((cell, c))
    return good, misses, unmeasured


def describe(cell, c):
    best_c = min(cell["times"], key=cell["times"].get)
    return ("world %d %s M %d N %d K %d: rule c=%d (%s), best c=%d (%.1f us)" %
            (cell["world"], cell["dtype"], cell["m"], cell["n"], cell["k"], c,
             "%.1f us" % cell["times"][c] if c in cell["times"] else "not measured",
             best_c, cell["times"][best_c]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--current", type=int, default=1024)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("tables", nargs="+")
    args = parser.parse_args()
    cells = parse(args.tables)
    if not cells:
        print("fit_chunk_rule: no fused cells in %s" % " ".join(args.tables))
        return 2
    # Every threshold that changes some choice: the products the rule compares, plus 0.
    thresholds = {0, args.current}
    for cell in cells:
        row_tiles = ceil_div(padded_rows(cell["m"] // cell["world"]), TILE_ROWS)
        col_tiles = ceil_div(cell["n"], TILE_COLS)
        for c in range(2, MAX_CHUNKS + 1):
            thresholds.add((row_tiles // c) * col_tiles * (cell["world"] - 1))
            thresholds.add((row_tiles // c) * col_tiles * (cell["world"] - 1) + 1)
    ranked = sorted(thresholds, key=lambda t: (-score(cells, t, args.tolerance)[0], t))
    print("# %d cells; a cell is right when the rule's c is within %.0f%% of the best measured"
          % (len(cells), 100 * args.tolerance))
    for t in [args.current] + [t for t in ranked[:5] if t != args.current]:
        good, misses, unmeasured = score(cells, t, args.tolerance)
        tag = " (current)" if t == args.current else ""
        print("threshold %d%s: %d/%d right, %d missed, %d unmeasured" %
              (t, tag, good, len(cells), len(misses), len(unmeasured)))
        for cell, c in misses + unmeasured:
            print("    " + describe(cell, c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
