#!/usr/bin/env bash
# Two builds of xccl side by side on the host platform: all_gather_perf (8 B - 256 KiB, factor 8)
# and barrier_perf at world 2 and 4, the builds taking turns within each round, and per (world,
# size) the median over the rounds of each build's time (each run itself the median of 3 timed
# loops, --repeats 3). For "what moved these numbers" in docs/perf-history.md: build the commit
# before a change in a worktree, then run this with both build folders.
#
# Usage: perf/ab_host.sh BEFORE_BUILD AFTER_BUILD      Environment: ROUNDS (5) WORLDS ("2 4")
set -u
before=${1:?before build folder}
after=${2:?after build folder}
rounds=${ROUNDS:-5}
worlds=${WORLDS:-"2 4"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in $worlds; do
  for ((round = 1; round <= rounds; ++round)); do
    for side in before after; do
      build=${!side}
      "$build/perf/all_gather_perf" -np "$np" -b 8 -e 256K -f 8 -n 300 -w 30 --repeats 3 2>&1 |
        awk -v np="$np" -v side="$side" '/^ +[0-9]/ {print "all_gather", np, $1, side, $6}' >>"$out"
      "$build/perf/barrier_perf" -np "$np" -n 300 -w 30 --repeats 3 2>&1 |
        awk -v np="$np" -v side="$side" '/^ +[0-9]/ {line = $0} END {split(line, f); print "barrier", np, 0, side, f[2]}' >>"$out"
    done
  done
done
# Median per (op, world, size, side), then one row per (op, world, size).
printf "# %-10s %5s %10s %12s %12s %12s\n" op world "size(B)" "before(us)" "after(us)" after/before
sort -k1,1 -k2,2n -k3,3n -k4,4 -k5,5g "$out" |
  awk '{key = $1 " " $2 " " $3 " " $4; v[key, ++n[key]] = $5}
       END {for (k in n) {m = n[k]; med = (m % 2) ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2; print k, med}}' |
  awk '{key = $1 " " $2 " " $3; if ($4 == "after") a[key] = $5; else b[key] = $5; ks[key] = 1}
       END {for (k in ks) {split(k, f, " "); printf "  %-10s %5s %10s %12.2f %12.2f %12.2f\n", f[1], f[2], f[3], b[k], a[k], (b[k] > 0 ? a[k] / b[k] : 0)}}' |
  sort -k1,1 -k2,2n -k3,3n
