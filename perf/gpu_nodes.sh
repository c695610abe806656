#!/usr/bin/env bash
# GPU ranks across fake nodes on one GPU: a perf binary (all_gather_perf unless BINARY names
# another, e.g. reduce_scatter_perf) with threads sharing GPU 0 split by XCCL_FAKE_NODES (the
# ranks of another node reached only through the proxy over the socket backend on loopback), for
# each build given, the builds taking turns per layout. Prints busbw (GB/s, out of place; rows of
# 64 B and less: time in us) per size, one column per build and layout, each figure the median of
# 3 timed loops (--repeats 3), and says any row with wrong elements. With TIMES=1 every cell is
# the time in us (the network stage's share of a call: 1 - its time on one node / across nodes).
#
# Usage: perf/gpu_nodes.sh LABEL=BUILD [LABEL=BUILD ...]
#   Environment: LAYOUTS ("4:none 4:2,2 4:1,1,1,1 8:4,4"; ranks:XCCL_FAKE_NODES, none: one node)
#                SIZES ("-b 32 -e 256M -f 4")  RUN_SECONDS (180: one run's limit)
#                BINARY (all_gather_perf)  EXTRA (more flags for it, e.g. "-d bf16")  TIMES
set -u
(($# > 0)) || { echo "usage: $0 LABEL=BUILD ..." >&2; exit 2; }
layouts=${LAYOUTS:-"4:none 4:2,2 4:1,1,1,1 8:4,4"}
sizes=${SIZES:-"-b 32 -e 256M -f 4"}
export NCCL_NVLS_ENABLE=0 XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-30000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for layout in $layouts; do
  ranks=${layout%%:*}
  nodes=${layout#*:}
  for spec in "$@"; do
    label=${spec%%=*}
    build=${spec#*=}
    column="$label/$ranks:$nodes"
    if [[ $nodes == none ]]; then unset XCCL_FAKE_NODES; else export XCCL_FAKE_NODES=$nodes; fi
    # shellcheck disable=SC2086
    timeout "${RUN_SECONDS:-180}" "$build/perf/${BINARY:-all_gather_perf}" -t "$ranks" $sizes \
      ${EXTRA:-} -n 10 -w 3 --repeats 3 >"$out.log" 2>&1 ||
      { echo "# $column failed:"; tail -5 "$out.log"; }
    # Every perf binary's row: size count type redop root, then out of place time algbw busbw
    # #wrong; a row with wrong elements is said (its value stays in the table).
    awk -v c="$column" '/^ +[0-9]/ && $9 != 0 && $9 != "N/A" {print "# " c, $1 " B: " $9 " wrong"}' \
      "$out.log"
    awk -v c="$column" -v t="${TIMES:-0}" \
      '/^ +[0-9]/ {v = (t == 1 || $1 <= 64) ? $6 : $8; print c, $1, v}' "$out.log" >>"$out"
  done
done
unset XCCL_FAKE_NODES
rm -f "$out.log"
awk '{if (!($1 in seen)) {seen[$1] = 1; cols[++nc] = $1} if (!($2 in rs)) {rs[$2] = 1; rows[++nr] = $2}
      v[$1, $2] = $3}
     END {printf "%12s", "bytes"; for (i = 1; i <= nc; ++i) printf " %16s", cols[i]; printf "\n";
          for (j = 1; j <= nr; ++j) {printf "%12s", rows[j];
            for (i = 1; i <= nc; ++i) printf " %16s", ((cols[i], rows[j]) in v) ? v[cols[i], rows[j]] : "-";
            printf "\n"}}' "$out"
