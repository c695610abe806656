#!/usr/bin/env python3
"""The layers of src/ (docs/ARCHITECTURE.md, "Layers, and what each may use"), lowest first: a file
may include its own layer's files, lower layers' and include/ (the public headers), never a
higher layer's. Prints each include that runs up and exits 1 if there is one.
Usage: scripts/check_layers.py [src-folder] (default: this tree's src/)."""
import os
import re
import sys

LAYERS = ["base", "platform", "transport", "comm", "collectives", "fused", "api"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward, unknown = [], []
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            layer = relative.split(os.sep)[0]
            if layer not in rank:
                if os.sep in relative:
                    unknown.append(relative)
                continue
            with open(path, errors="replace") as source:
                for number, line in enumerate(source, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = match.group(1).split("/")[0]
                    if target in rank and rank[target] > rank[layer]:
                        upward.append(f"src/{relative}:{number}: {layer} includes {match.group(1)} "
                                      f"({target} is above {layer})")
    for folder in unknown:
        print(f"src/{folder}: in no layer (add its folder to LAYERS)")
    for line in upward:
        print(line)
    if upward or unknown:
        return 1
    print(f"layers: {' < '.join(LAYERS)}; no include runs up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
