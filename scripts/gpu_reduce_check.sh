#!/usr/bin/env bash
# The reductions on one GPU in one device call, from a build made beforehand (carried): the gpu
# tests of the reductions, then reduce_scatter_perf and all_reduce_perf with 2, 4 and 8 thread
# ranks sharing GPU 0 beside a same-run copy roofline, world 1 against NCCL, and the 8-byte
# all_reduce beside the 8-byte all_gather. Logs in $OUT/reduce/; a short table last.
# Usage: scripts/gpu_reduce_check.sh [build-dir]     (build-dir: build-cuda)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
logs=${OUT:-/tmp}/reduce
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
rs=$build/perf/reduce_scatter_perf
ar=$build/perf/all_reduce_perf
ag=$build/perf/all_gather_perf
if [ "${REDUCE_CHECK_TESTS:-1}" = 1 ]; then
  timeout 200 ctest --test-dir "$build" -L gpu -R "${REDUCE_CHECK_REGEX:-Reduce}" --timeout 120 \
    --output-on-failure >"$logs/tests.txt" 2>&1
  grep -E "tests passed|tests failed" "$logs/tests.txt"
  sed -n '/The following tests FAILED/,$p' "$logs/tests.txt"
fi
timeout 60 "$build/perf/copy_roofline" -b 64M -e 1G -f 4 >"$logs/copy_roofline.txt" 2>&1
for n in 2 4 8; do
  timeout 60 "$rs" -t "$n" -b 64M -e 1G -f 4 -n 10 -w 3 --repeats 3 -d bf16 \
    >"$logs/rs_t$n.txt" 2>&1
  timeout 60 "$ar" -t "$n" -b 64M -e 1G -f 4 -n 10 -w 3 --repeats 3 -d bf16 \
    >"$logs/ar_t$n.txt" 2>&1
done
timeout 60 "$ar" -t 8 -b 8 -e 8 -n 200 -w 20 --repeats 3 >"$logs/ar_small_t8.txt" 2>&1
timeout 60 "$ag" -t 8 -b 64 -e 64 -n 200 -w 20 --repeats 3 >"$logs/ag_small_t8.txt" 2>&1
timeout 60 "$rs" -t 1 -b 8 -e 1G -f 32 -n 10 -w 3 --repeats 3 --compare vendor \
  >"$logs/rs_t1_vendor.txt" 2>&1
timeout 60 "$ar" -t 1 -b 8 -e 1G -f 32 -n 10 -w 3 --repeats 3 --compare vendor \
  >"$logs/ar_t1_vendor.txt" 2>&1
# The roofline: every input byte read once and every output byte written once, at the measured
# copy rate (a copy of X bytes moves 2X). reduce_scatter of S bytes per rank: n * (S + S/n) moved;
# all_reduce: read n*S, write S for its reduce_scatter half, then the all_gather's n*(n-1)/n*S
# copied (2x) — counted as the minimum n*S read + n*S written.
echo "== reductions on one H200, bf16 sum, out of place (time us, roofline us, roofline/time) =="
for op in rs ar; do
  for n in 2 4 8; do
    awk -v n="$n" -v op="$op" '
      FILENAME ~ /copy_roofline/ && $1 ~ /^[0-9]+$/ {rate[$1] = $3; next}
      $1 ~ /^[0-9]+$/ && NF > 8 {
        size = $1; t = $6; r = rate[1073741824]; if (r == 0) next
        moved = (op == "rs") ? n * (size + size / n) : 2 * n * size
        roof = moved / (2 * r * 1e3)
        printf "%s t%d %11d  %9.1f  %9.1f  %5.2f  wrong %s\n", op, n, size, t, roof, roof / t, $9
      }' "$logs/copy_roofline.txt" "$logs/${op}_t$n.txt"
  done
done
echo "== 8-byte all_reduce vs 64-byte all_gather (8 B per rank), 8 ranks =="
grep -hE "^ +[0-9]" "$logs/ar_small_t8.txt" "$logs/ag_small_t8.txt" | awk '{print $1, $6, $10}'
echo "== world 1 against NCCL (last columns) =="
grep -hE "^ +[0-9]" "$logs/rs_t1_vendor.txt" "$logs/ar_t1_vendor.txt" | head -30
