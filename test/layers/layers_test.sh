#!/usr/bin/env bash
# scripts/check_layers.py: this tree keeps its layers, and a made-up tree whose ground includes
# the communicator, or with a folder in no layer, is refused with the line named.
set -uo pipefail
check=$1
python3 "$check" || { echo "FAIL: this tree has an include that runs up"; exit 1; }
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/base" "$fake/comm"
printf '#include "comm/communicator.h"\n' >"$fake/base/error.cc"
printf '#include "base/error.h"\n' >"$fake/comm/communicator.h"
out=$(python3 "$check" "$fake") && { echo "FAIL: an upward include passed"; exit 1; }
grep -q 'base/error.cc:1: base includes comm/communicator.h' <<<"$out" ||
  { echo "FAIL: the upward include was not named: $out"; exit 1; }
rm "$fake/base/error.cc"
mkdir -p "$fake/attic" && printf '\n' >"$fake/attic/old.cc"
out=$(python3 "$check" "$fake") && { echo "FAIL: a folder in no layer passed"; exit 1; }
grep -q 'src/attic/old.cc: in no layer' <<<"$out" || { echo "FAIL: not named: $out"; exit 1; }
echo "layers test passed"
