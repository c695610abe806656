#!/usr/bin/env bash
# On a GPU machine: the build of an earlier commit against this tree's, side by side in one call
# (the "no speed lost" check of a refactor). OLD_TREE is the earlier commit's source tree (git
# archive into an ignored folder, carried). Both are built for cuda, then, on GPU 0, the builds
# take turns for ROUNDS rounds: all_gather_perf -t 1, 2, 4 and 8 from 8 B to 1 GiB per rank, and
# barrier_perf -t 8 plain and graph-launched (-G 10), and ag_gemm_perf -t 2 fp8 (ptpc) in split
# and fused mode (XCCL_GPU_QUEUES=1, so that fused runs where the ranks share GPU 0) with the new
# build's cuBLASLt plugin on both sides (AB_PLUGIN), so that only the op differs. Each run is itself
# the median of 3 timed loops (ag_gemm: of 3 interleaved rounds); the table gives per (run,
# size) the median over the rounds of each build, their ratio and, last, the verdict against the
# bounds: within 3% from 64 MiB up and within 0.5 us below 64 KiB (out-of-place time); ag_gemm
# rows (size: global M) within 3%.
# Usage: OLD_TREE=.old-tree [ROUNDS=2] scripts/ab_gpu.sh (or AB_OLD_BUILD=dir AB_NEW_BUILD=dir)      Output also in $OUT/ab_gpu.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
old=${OLD_TREE:-}
[ -n "$old" ] || [ -n "${AB_OLD_BUILD:-}" ] || { echo "set OLD_TREE or AB_OLD_BUILD" >&2; exit 2; }
rounds=${ROUNDS:-2}
out=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0 XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-20000}
jobs=$(nproc)
targets=(--target all_gather_perf barrier_perf ag_gemm_perf)
# AB_OLD_BUILD / AB_NEW_BUILD: build folders made beforehand (carried), used as they are.
old_build=${AB_OLD_BUILD:-build-ab-old}
new_build=${AB_NEW_BUILD:-build-ab-new}
if [ -z "${AB_OLD_BUILD:-}" ]; then
  { cmake -S "$old" -B "$old_build" -DXCCL_PLATFORM=cuda -DXCCL_BUILD_TESTS=OFF -DXCCL_BUILD_SHIM=OFF &&
      cmake --build "$old_build" -j"$jobs" "${targets[@]}"; } >/tmp/ab-old.log 2>&1 &
  old_pid=$!
fi
if [ -z "${AB_NEW_BUILD:-}" ]; then
  { cmake -S . -B "$new_build" -DXCCL_PLATFORM=cuda -DXCCL_BUILD_TESTS=OFF -DXCCL_BUILD_SHIM=OFF &&
      cmake --build "$new_build" -j"$jobs" "${targets[@]}"; } >/tmp/ab-new.log 2>&1 &
  new_pid=$!
fi
[ -z "${old_pid:-}" ] || wait $old_pid || { tail -20 /tmp/ab-old.log; exit 1; }
[ -z "${new_pid:-}" ] || wait $new_pid || { tail -20 /tmp/ab-new.log; exit 1; }
# AB_RAW: where the raw rows go (kept; a run cut short still leaves what it measured).
raw=${AB_RAW:-$(mktemp)}
for ((round = 1; round <= rounds; ++round)); do
  for side in old new; do
    if [ "$side" = old ]; then bin=$old_build/perf; else bin=$new_build/perf; fi
    for t in 1 2 4 8; do
      timeout 200 "$bin/all_gather_perf" -t "$t" -b $((8 * t)) -e 1G -f 2 -n 20 -w 5 --repeats 3 2>&1 |
        awk -v run="ag-t$t" -v side="$side" '/^ +[0-9]/ {print run, $1, side, $6}' >>"$raw"
    done
    plugin=${AB_PLUGIN:-$new_build/ext/gemm/cublaslt/libxccl-gemm-cublaslt.so}
    if [ -x "$bin/ag_gemm_perf" ] && [ -f "$plugin" ]; then
      XCCL_GPU_QUEUES=1 timeout 240 "$bin/ag_gemm_perf" -t 2 --plugin "$plugin" --dtype fp8 \
        --m "8192 16384" --shapes "6400x7168" --rounds 3 -n 5 -w 2 2>&1 |
        awk -v side="$side" '/^ +[0-9]/ {print "agemm-split", $1, side, $5; print "agemm-fused", $1, side, $9}' >>"$raw"
    else
      echo "ab_gpu: no ag_gemm_perf or plugin ($bin, $plugin): ag_gemm rows skipped" >&2
    fi
    for g in 0 10; do
      timeout 60 "$bin/barrier_perf" -t 8 -n 500 -w 50 -G "$g" --repeats 3 2>&1 |
        awk -v run="barrier-G$g" -v side="$side" '/^ +[0-9]/ {line = $0}
             END {split(line, f); print run, 0, side, f[2]}' >>"$raw"
    done
  done
  echo "ab_gpu: round $round done at ${SECONDS}s" >&2
done
{
  printf "# %-12s %12s %12s %12s %8s %s\n" run "size(B)" "old(us)" "new(us)" new/old verdict
  sort -k1,1 -k2,2n -k3,3 -k4,4g "$raw" |
    awk '{k = $1 " " $2 " " $3; v[k, ++n[k]] = $4}
         END {for (k in n) {m = n[k]; med = (m % 2) ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2; print k, med}}' |
    awk '{k = $1 " " $2; if ($3 == "new") a[k] = $4; else b[k] = $4; ks[k] = 1}
         END {for (k in ks) {split(k, f, " "); size = f[2] + 0; o = b[k]; x = a[k];
                verdict = "";
                if (f[1] ~ /^agemm/ || size >= 67108864) verdict = (x <= o * 1.03) ? "ok (<=3%)" : "SLOWER";
                else if (size < 65536) verdict = (x - o <= 0.5) ? "ok (<=0.5us)" : "SLOWER";
                printf "  %-12s %12s %12.2f %12.2f %8.3f %s\n", f[1], f[2], o, x, (o > 0 ? x / o : 0), verdict}}' |
    sort -k1,1 -k2,2n
} | tee "$out/ab_gpu.txt"
echo "ab_gpu: SLOWER rows: $(grep -c SLOWER "$out/ab_gpu.txt")"
[ -n "${AB_RAW:-}" ] || rm -f "$raw"
