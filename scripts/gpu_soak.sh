#!/usr/bin/env bash
# gpu_check.sh's `soak` stage, also run on its own: ranks sharing GPU 0 as threads, each case run
# SOAK_RUNS times (default 30); a run that passes its wall limit or fails counts as a stall.
# Prints one line per case and a table last. Usage: scripts/gpu_soak.sh [build-dir] [label]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
label=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo tree)}
runs=${SOAK_RUNS:-30}
cases=${SOAK_CASES:-barrier barrier_graph barrier_conn8 barrier_graph_conn8 all_gather ag_split ag_fused sharing_program}
export XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-10000} NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
lt=$build/ext/gemm/cublaslt/libxccl-gemm-cublaslt.so
log=${SOAK_LOG:-/tmp/xccl-soak.log}
: >"$log"
table=""
run_case() {  # name, wall limit (s), command...
  local name=$1 limit=$2 stalls=0 i
  shift 2
  for i in $(seq 1 "$runs"); do
    if ! timeout "$limit" "$@" >>"$log" 2>&1; then
      stalls=$((stalls + 1))
      echo "soak $label $name run $i: failed or stalled" >>"$log"
    fi
  done
  echo "soak $label: $name: $stalls of $runs stalled or failed"
  table+="| $label | $name | $runs | $stalls |"$'\n'
}
bp=$build/perf/barrier_perf
for c in $cases; do
  case $c in
    barrier) run_case "$c" 30 "$bp" -t 8 -n 200 -w 20 --repeats 3 ;;
    barrier_graph) run_case "$c" 30 "$bp" -t 8 -n 200 -w 20 -G 10 --repeats 3 ;;
    barrier_conn8) CUDA_DEVICE_MAX_CONNECTIONS=8 run_case "$c" 30 "$bp" -t 8 -n 200 -w 20 --repeats 3 ;;
    barrier_graph_conn8)
      CUDA_DEVICE_MAX_CONNECTIONS=8 run_case "$c" 30 "$bp" -t 8 -n 200 -w 20 -G 10 --repeats 3 ;;
    all_gather) run_case "$c" 60 "$build/perf/all_gather_perf" -t 8 -b 64 -e 1M -f 4 -n 20 -w 5 ;;
    ag_split)
      run_case "$c" 90 "$build/perf/ag_gemm_perf" -t 8 --dtype bf16 --plugin "$lt" --m 8192 \
        --shapes 3648x7168 --rounds 1 ;;
    ag_fused)
      XCCL_GPU_QUEUES=7 run_case "$c" 90 "$build/perf/ag_gemm_perf" -t 8 --dtype bf16 \
        --plugin "$lt" --m 8192 --shapes 3648x7168 --rounds 1 ;;
    sharing_program)  # thread ranks that make their streams and buffers and call at once
      [ -x "$build/test/xccl_gpu_tests" ] &&
        run_case "$c" 90 "$build/test/xccl_gpu_tests" \
          --gtest_filter='GpuSharedDevice.EightThreadsEnqueueAtOnce*' ;;
  esac
done
printf '| tree | case | runs | stalled or failed |\n|---|---|---|---|\n%s' "$table"
