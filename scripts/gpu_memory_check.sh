#!/usr/bin/env bash
# Device memory and the inbox window, on one GPU from a build made beforehand (carried), in one
# device call: perf/device_memory (thread ranks sharing GPU 0 at worlds 1, 2 and 8, after init and
# after a first 1 GiB all_gather, NCCL at world 1 beside it), MEMORY_RUNS times; then the paths
# that go through the inboxes, processes sharing GPU 0 under MPS with plain buffers (all_gather
# through the rings, reduce_scatter through the receive region), at each XCCL_WINDOW_BYTES of
# WINDOWS in turn, at NPS processes ("2 3": MPS on a lent H100 refused a fourth), ROUNDS times:
# time per call (us, out of place) per window, every row checked.
# The log is $OUT/memory/perf.txt; a short table last.
# Usage: scripts/gpu_memory_check.sh [build-dir]   (build-dir: build-cuda)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
logs=${OUT:-/tmp}/memory
mkdir -p "$logs"
log=$logs/perf.txt
: >"$log"
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0 CUDA_MODULE_LOADING=EAGER
for ((run = 1; run <= ${MEMORY_RUNS:-3}; ++run)); do
  timeout 120 "$build/perf/device_memory" -w 1,2,8 -b 1G --compare vendor
done | tee "$logs/memory.txt"
echo "== XCCL_ZERO_COPY=0: every block through the inboxes, made by the first call" |
  tee -a "$logs/memory.txt"
XCCL_ZERO_COPY=0 timeout 120 "$build/perf/device_memory" -w 2,8 -b 1G | tee -a "$logs/memory.txt"
if ! nvidia-cuda-mps-control -d >>"$log" 2>&1; then
  echo "gpu_memory_check: MPS did not start; the window comparison needs it (processes time-slice the GPU without it)"
  exit 0
fi
for ((round = 1; round <= ${ROUNDS:-2}; ++round)); do
  for np in ${NPS:-2 3}; do
    for window in ${WINDOWS:-512M 32M}; do
      bytes=$(numfmt --from=iec "$window")
      for bin in all_gather_perf reduce_scatter_perf; do
        echo "## $bin np $np window $window" >>"$log"
        XCCL_WINDOW_BYTES=$bytes timeout 90 "$build/perf/$bin" --np "$np" -R 0 -b 1M -e 256M \
          -f 4 -n 10 -w 3 --repeats 3 -d bf16 >>"$log" 2>&1
      done
    done
  done
done
echo quit | nvidia-cuda-mps-control >>"$log" 2>&1
echo "== processes on GPU 0 (MPS), plain buffers, bf16: time us per call (out of place), median over rounds, by XCCL_WINDOW_BYTES =="
awk '
  /^## / { bin = $2 " np" $4; window = $6
           if (!(window in seen)) { seen[window] = 1; order[++w] = window }; next }
  $1 ~ /^[0-9]+$/ && NF >= 9 { key = bin " " $1; if (!(key in k)) { k[key] = 1; keys[++nk] = key }
                               t[key, window] = t[key, window] " " $6 }
  END {
    printf "%-30s", "op bytes"; for (i = 1; i <= w; ++i) printf " %12s", order[i]; printf "\n"
    for (j = 1; j <= nk; ++j) {
      printf "%-30s", keys[j]
      for (i = 1; i <= w; ++i) {
        n = split(t[keys[j], order[i]], v, " ")
        for (a = 2; a <= n; ++a)  # insertion sort: mawk has no asort
          for (b = a; b > 1 && v[b - 1] + 0 > v[b] + 0; --b) { x = v[b]; v[b] = v[b - 1]; v[b - 1] = x }
        printf " %12s", n ? v[int((n + 1) / 2)] : "-"
      }
      printf "\n"
    }
  }' "$log"
grep -hE "wrong|FAILED|WARN" "$log" | grep -v "#wrong" | sort | uniq -c | head -10
