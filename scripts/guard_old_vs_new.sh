#!/usr/bin/env bash
# On a GPU machine: the device-sync guard test against the code before a change and after it, in
# one call. OLD_TREE is a source tree of the earlier commit (git archive); this tree builds the
# guard, its probe and everything else. Prints one line per run and a verdict per tree.
# Usage: OLD_TREE=.old-tree scripts/guard_old_vs_new.sh [old-repeats] [new-repeats]
set -uo pipefail
cd "$(dirname "$0")/.."
old=${OLD_TREE:?set OLD_TREE to the source tree of the earlier commit}
old_repeats=${1:-2} new_repeats=${2:-5}
jobs=$(nproc)
start=$SECONDS
{ cmake -S . -B build-gpu -DXCCL_PLATFORM=cuda >/tmp/build-new.log 2>&1 &&
    cmake --build build-gpu -j"$jobs" >>/tmp/build-new.log 2>&1; } &
new_pid=$!
{ cmake -S "$old" -B build-old -DXCCL_PLATFORM=cuda -DXCCL_BUILD_TESTS=OFF -DXCCL_BUILD_SHIM=OFF \
    >/tmp/build-old.log 2>&1 &&
    cmake --build build-old -j"$jobs" --target ag_gemm_perf all_gather_perf barrier_perf \
      xccl-gemm-cublaslt >>/tmp/build-old.log 2>&1; } &
old_pid=$!
wait $new_pid || { tail -30 /tmp/build-new.log; exit 1; }
wait $old_pid || { tail -30 /tmp/build-old.log; exit 1; }
echo "guard_old_vs_new: both built in $((SECONDS - start)) s"
guard=build-gpu/test/libxccl-device-sync-guard.so probe=build-gpu/test/xccl_guard_probe
lt=ext/gemm/cublaslt/libxccl-gemm-cublaslt.so
echo "## old tree ($old), SYNC_GUARD_REPEATS=$old_repeats"
SYNC_GUARD_REPEATS=$old_repeats test/sync_guard/perf_under_guard.sh build-old/perf "$guard" \
  "$probe" "build-old/$lt"
echo "## old tree: exit $?"
echo "## new tree, SYNC_GUARD_REPEATS=$new_repeats"
SYNC_GUARD_REPEATS=$new_repeats test/sync_guard/perf_under_guard.sh build-gpu/perf "$guard" \
  "$probe" "build-gpu/$lt"
echo "## new tree: exit $? (after $((SECONDS - start)) s)"
