#!/usr/bin/env bash
# On a fresh GPU machine: configure and build the cuda platform, run the gpu tests, a short
# all_gather_perf / barrier_perf sweep with ranks sharing the GPU(s), and print a short table
# last. Results go to $OUT (or /tmp/xccl-gpu-check). Usage: scripts/gpu_check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on the lent machines
build=${1:-build-gpu}
out=${OUT:-/tmp/xccl-gpu-check}
mkdir -p "$out"
budget=${GPU_CHECK_TEST_SECONDS:-300}

# Few files in $OUT: setup.txt (configure, build, GPUs), gpu_tests.txt, and one file per run.
cmake -S . -B "$build" -DXCCL_PLATFORM=cuda >"$out/setup.txt" 2>&1 || { cat "$out/setup.txt"; exit 1; }
cmake --build "$build" -j"$(nproc)" >>"$out/setup.txt" 2>&1 || { tail -40 "$out/setup.txt"; exit 1; }
nvidia-smi -L | tee -a "$out/setup.txt"

timeout "$budget" ctest --test-dir "$build" -L gpu --timeout 120 --output-on-failure \
  >"$out/gpu_tests.txt" 2>&1
tests_rc=$?

gpus=$(nvidia-smi -L | wc -l)
# The roofline, in the same run: device-to-device copies of the same sizes.
timeout 60 "$build/perf/copy_roofline" -b 128M -e 1G -f 8 >"$out/copy_roofline.txt" 2>&1
memcpy_rate=$(awk '$1 == 1073741824 {print $3}' "$out/copy_roofline.txt")
for n in 2 4 8; do
  XCCL_TIMEOUT_MS=20000 timeout 120 "$build/perf/all_gather_perf" -t "$n" -b 8 -e 1G -f 8 -n 20 -w 5 \
    >"$out/all_gather_t$n.txt" 2>&1
  XCCL_TIMEOUT_MS=20000 timeout 60 "$build/perf/barrier_perf" -t "$n" -n 200 -w 20 \
    >"$out/barrier_t$n.txt" 2>&1
  XCCL_TIMEOUT_MS=20000 timeout 60 "$build/perf/barrier_perf" -t "$n" -n 200 -w 20 -G 10 \
    >>"$out/barrier_t$n.txt" 2>&1
done

echo
echo "# gpu tests: $(grep -E 'tests passed' "$out/gpu_tests.txt" || echo "did not finish (rc $tests_rc)")"
grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$out/gpu_tests.txt" | head -20
echo "# ranks sharing $gpus GPU(s); busbw GB/s out-of-place (in-place), time us at 8 B; barrier us"
echo "# copy rate: all bytes the ranks copy for a 1 GiB all_gather out-of-place ((2n-1) x size)"
echo "# over its time, against a 1 GiB device-to-device memcpy measured in this run: ${memcpy_rate:-?} GB/s"
printf "# %5s %10s %18s %18s %14s %12s %12s %16s\n" ranks "8B us" "128MiB busbw" "1GiB busbw" "wrong" "barrier" "barrier(-G)" "copy rate (x)"
for n in 2 4 8; do
  f=$out/all_gather_t$n.txt
  row() { awk -v s="$1" '$1 == s {printf "%s (%s)", $8, $12}' "$f"; }
  small=$(awk '$1 ~ /^[0-9]+$/ && $1 > 0 {print $6; exit}' "$f")
  wrong=$(grep -E "Out of bounds" "$f" | awk '{print $7, $8}')
  bar=$(awk '/^# nThread/ {k++} k == 1 && $1 ~ /^[0-9]+$/ {v=$2} END {print v}' "$out/barrier_t$n.txt")
  barg=$(awk '/^# nThread/ {k++} k == 2 && $1 ~ /^[0-9]+$/ {v=$2} END {print v}' "$out/barrier_t$n.txt")
  rate=$(awk -v n="$n" -v m="${memcpy_rate:-0}" '$1 == 1073741824 && $6 > 0 {
      r = (2 * n - 1) * $1 / $6 / 1e3; printf "%.0f (%.2f)", r, (m > 0 ? r / m : 0) }' "$f")
  printf "  %5s %10s %18s %18s %14s %12s %12s %16s\n" "$n" "${small:--}" "$(row 134217728)" \
    "$(row 1073741824)" "${wrong:-FAILED}" "${bar:--}" "${barg:--}" "${rate:--}"
done
exit $tests_rc
