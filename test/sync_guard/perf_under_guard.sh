#!/usr/bin/env bash
# The perf binaries' own sequences with ranks sharing GPU 0 as threads, under the device-sync
# guard (libxccl-device-sync-guard.so): every run must finish, check its results and make no
# device-synchronising call while another rank has an xccl call in flight.
#   1. guard_probe without the guard exits 0, under it 97: the guard catches such a call;
#   2. ag_gemm_perf (create per variant, tuning, warm-up, timed calls, destroy, next M) with the
#      cublaslt plugin, tuning on: 2 ranks (a DMA queue each, so fused runs) and 4 ranks (split),
#      fp8 and bf16, SYNC_GUARD_REPEATS times each (default 5: 20 runs);
#   3. all_gather_perf and barrier_perf with 4 ranks, plain and graph-launched.
# Usage: perf_under_guard.sh PERF_DIR GUARD_LIB PROBE CUBLASLT_PLUGIN. Exit 77 (skip) without a GPU.
set -uo pipefail
perf=$1 guard=$2 probe=$3 plugin=$4
repeats=${SYNC_GUARD_REPEATS:-5}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "perf_under_guard: skipped: no NVIDIA GPU here (nvidia-smi -L failed)"
  exit 77
fi
export CUDA_VISIBLE_DEVICES=0 XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-10000} NCCL_NVLS_ENABLE=0
failures=0
fail() {
  echo "perf_under_guard: FAILED: $*"
  failures=$((failures + 1))
}

# 1. The guard can fail.
timeout 60 "$probe" >/tmp/guard_probe_plain.txt 2>&1
rc=$?
[ $rc -eq 0 ] || { cat /tmp/guard_probe_plain.txt; fail "guard_probe without the guard: exit $rc, not 0"; }
LD_PRELOAD=$guard timeout 60 "$probe" >/tmp/guard_probe_guarded.txt 2>&1
rc=$?
if [ $rc -ne 97 ] || ! grep -q "device-sync guard: cudaMemcpyAsync" /tmp/guard_probe_guarded.txt; then
  cat /tmp/guard_probe_guarded.txt
  fail "guard_probe under the guard: exit $rc without the expected report (97 and the copy named)"
else
  echo "perf_under_guard: the guard caught the probe's pageable copy (exit 97)"
fi

# One guarded run; its output is printed only when it fails.
run() {
  local name=$1
  shift
  local log=/tmp/perf_under_guard_run.txt start=$SECONDS
  LD_PRELOAD=$guard "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || grep -q "device-sync guard" "$log"; then
    tail -30 "$log"
    fail "$name: exit $rc ($((SECONDS - start)) s)"
  else
    echo "perf_under_guard: $name: ok ($((SECONDS - start)) s)"
  fi
}

# 2. ag_gemm_perf's sequence, 20 runs by default.
for ((i = 1; i <= repeats; ++i)); do
  for ranks in 2 4; do
    queues=()
    [ "$ranks" -eq 2 ] && queues=(XCCL_GPU_QUEUES=1)  # 4 ranks: queue streams deadlock (ARCHITECTURE)
    for dtype in fp8 bf16; do
      run "ag_gemm_perf -t $ranks --dtype $dtype (run $i)" env ${queues[@]+"${queues[@]}"} \
        timeout 180 "$perf/ag_gemm_perf" -t "$ranks" --plugin "$plugin" --dtype "$dtype" \
        --m "4096 8192" --shapes "3840x7168" --rounds 1 -n 3 -w 1
    done
  done
done

# 3. The collectives' harness, plain and graph-launched.
for g in 0 2; do
  run "all_gather_perf -t 4 -G $g" timeout 120 "$perf/all_gather_perf" -t 4 -b 8 -e 64M -f 16 \
    -n 5 -w 2 -G "$g"
  run "barrier_perf -t 4 -G $g" timeout 60 "$perf/barrier_perf" -t 4 -n 50 -w 5 -G "$g"
done

if [ $failures -gt 0 ]; then
  echo "perf_under_guard: $failures failure(s)"
  exit 1
fi
echo "perf_under_guard: every run passed"
