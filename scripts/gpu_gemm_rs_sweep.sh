#!/usr/bin/env bash
# On a GPU machine, from a cuda build made beforehand (carried): gemm_rs_perf with 2 thread ranks
# sharing GPU 0, fp8 (ptpc), N x K 7168x2048, M 8192 and 16384, once per grid in SWEEP_BLOCKS of
# the fused chunks' reduce-scatters (XCCL_GEMMRS_REDUCE_BLOCKS; 0: automatic, on a shared GPU an
# eighth of the share, 2 x SMs / ranks on the device, before the last chunk), so that split, gemm-only and rs-only run at the full grid and the fused
# variants with several chunks (c2, c4) held, in the same command; the GEMM's SM target in
# SWEEP_SM (XCCL_GEMM_CUBLASLT_SM_COUNT, 0: all). The table rows of every run go last, prefixed by
# the grid.
# Usage: [SWEEP_BLOCKS="0 16 32 64"] [SWEEP_SM=0] scripts/gpu_gemm_rs_sweep.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
out=${OUT:-/tmp}/gemm_rs_sweep.txt
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0 LD_LIBRARY_PATH=$PWD/$build
: >"$out"
for blocks in ${SWEEP_BLOCKS:-0 16 32 64}; do
  echo "== XCCL_GEMMRS_REDUCE_BLOCKS=$blocks XCCL_GEMM_CUBLASLT_SM_COUNT=${SWEEP_SM:-0}" | tee -a "$out"
  XCCL_GEMMRS_REDUCE_BLOCKS=$blocks XCCL_GEMM_CUBLASLT_SM_COUNT=${SWEEP_SM:-0} XCCL_TIMEOUT_MS=60000 \
    timeout "${SWEEP_SECONDS:-120}" "$build/perf/gemm_rs_perf" -t 2 \
    --plugin "$build/ext/gemm/cublaslt/libxccl-gemm-cublaslt.so" --dtype fp8 --m "8192 16384" \
    --shapes "7168x2048" --rounds 3 -n 5 -w 2 >>"$out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || echo "gemm_rs_sweep: exit $rc (124: past ${SWEEP_SECONDS:-120} s)" | tee -a "$out"
done
echo "== table (blocks: the grid)"
awk '/^== XCCL_GEMMRS_REDUCE_BLOCKS=/ {split($2, b, "="); g = b[2]}
     /^#  +M/ && !h {print "blocks", $0; h = 1}
     /^ +[0-9]/ {print g, $0}' "$out"
