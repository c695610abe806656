#!/usr/bin/env bash
# Compares the shim's exported functions with nccl.h's: every function the header declares
# (nccl* and its pnccl* twin), plus RCCL's ncclAllToAll/ncclAllToAllv and their twins, must
# be exported, nothing else may be, and each pnccl* must be the same code as its nccl*.
# Usage: check_symbols.sh <shim.so> <nccl.h>
set -euo pipefail
lib=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declarations start a line: a return type (ncclResult_t, const char*, void), the name, "(".
# Deprecation attributes sit on the line before, so they do not hide a declaration.
grep -oE '^[[:space:]]*(ncclResult_t|const[[:space:]]+char[[:space:]]*\*|void)[[:space:]]*p?nccl[A-Za-z0-9_]+[[:space:]]*\(' \
    "$header" | sed -E 's/[[:space:]]*\($//; s/.*[^A-Za-z0-9_]//' | sort -u > "$tmp/header"
for f in ncclAllToAll ncclAllToAllv pncclAllToAll pncclAllToAllv; do echo "$f"; done >> "$tmp/header"
# NCCL 2.28's device API declares its host functions in nccl_device/*.h beside nccl.h
# ("NCCL_EXTERN_C __host__ <type> name("); programs built against 2.28 link them, so the shim
# exports them (and their twins) too.
device_headers=$(ls "$(dirname "$header")"/nccl_device/*.h 2>/dev/null || true)
if [ -n "$device_headers" ]; then
  grep -ohE 'NCCL_EXTERN_C[[:space:]]+__host__[[:space:]]+[A-Za-z_]+[[:space:]*]+nccl[A-Za-z0-9_]+[[:space:]]*\(' \
      $device_headers | sed -E 's/[[:space:]]*\($//; s/.*[^A-Za-z0-9_]//' |
    while read -r f; do echo "$f"; echo "p$f"; done >> "$tmp/header"
fi
sort -u -o "$tmp/header" "$tmp/header"
n=$(wc -l < "$tmp/header")
# nccl.h 2.28 declares 42 functions, each with its twin; far fewer means the parse broke.
if [ "$n" -lt 80 ]; then
  echo "parsed only $n names from $header: the declaration pattern no longer matches"
  exit 1
fi
for name in $(grep '^nccl' "$tmp/header"); do
  grep -qx "p$name" "$tmp/header" || { echo "header lists $name without p$name"; exit 1; }
done

nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWiV]$/ {print $3, $1}' | sed 's/@.*//' > "$tmp/exports_addr"
awk '{print $1}' "$tmp/exports_addr" | sort -u > "$tmp/exports"

status=0
missing=$(comm -23 "$tmp/header" "$tmp/exports")
extra=$(comm -13 "$tmp/header" "$tmp/exports")
if [ -n "$missing" ]; then echo "missing from the shim:"; echo "$missing"; status=1; fi
if [ -n "$extra" ]; then echo "exported but not in the header:"; echo "$extra"; status=1; fi
# Any other dynamic symbol (data, C++ runtime) leaking out counts as extra too.
others=$(nm -D --defined-only "$lib" | awk '$2 !~ /^[TtWiV]$/ {print $3}' | grep -v '^$' || true)
if [ -n "$others" ]; then echo "non-function symbols exported:"; echo "$others"; status=1; fi

while read -r name addr; do
  case $name in
    nccl*)
      twin=$(awk -v n="p$name" '$1 == n {print $2}' "$tmp/exports_addr")
      if [ -n "$twin" ] && [ "$twin" != "$addr" ]; then
        echo "p$name ($twin) is not an alias of $name ($addr)"
        status=1
      fi
      ;;
  esac
done < "$tmp/exports_addr"

[ $status -eq 0 ] && echo "exported symbols: OK ($n names, matching $header)"
exit $status
