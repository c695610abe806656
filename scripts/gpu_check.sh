#!/usr/bin/env bash
# On a fresh GPU machine: configure and build the cuda platform, then run the stages named in
# GPU_CHECK_STAGES (default: all of them; they always run in the order below), and print a
# short table last. Timed figures are medians of 3 timed loops (--repeats 3).
#   multi   several GPUs: all_gather_perf over all GPUs (threads, then one process per GPU)
#           with --compare vendor, default / dma / kernel engines; barrier_perf and the 8-byte
#           all_gather, plain and graph-launched, against NCCL
#   plugin  gemm_plugin_perf (the cublaslt plugin against cuBLASLt called directly, and its cost
#           when cut into bands; GPU 0), fp8 and bf16; the plugin's tuning times in the log
#   agemm   ag_gemm_perf with the cublaslt plugin (fp8 and
#           bf16, Kimi-K3 shapes, with ag-only / gemm-only / overlap columns): one process per
#           GPU where there are several, else 2 ranks sharing GPU 0 with a DMA queue each
#           (fp8); fp8 again with one default off: one source per GEMM call (3 or more GPUs),
#           else one compute stream
#   torch   scripts/torch_shim_check.sh (PyTorch over the NCCL shim)
#   python  the Python binding on torch tensors (python/tests/test_gpu_torch.py: plain, then the
#           fused cases with XCCL_GPU_QUEUES=1) and perf/py_call_overhead.py --graph, with the
#           first interpreter that imports torch (GPU_CHECK_PYTHON to choose)
#   small   the small-block all_gather (8 B - 256 KiB in all), plain and graph-launched, with the LL
#           path at its default (8 KiB per rank), at its largest (32 KiB) and without it
#           (XCCL_ALLGATHER_LL_BYTES=0): over all GPUs against
#           NCCL where there are several, and 2 ranks sharing GPU 0; barrier_perf -t 8 on GPU 0
#   lanes   the kernel engine's lanes per peer (XCCL_ALLGATHER_LANES, GPU_CHECK_LANES: default
#           8 16 24 32; 0 is the automatic count) at 64 MiB -
#           1 GiB: over all GPUs against NCCL where there are several, and 2 ranks sharing GPU 0
#   single  ranks sharing GPU 0: all_gather_perf and barrier_perf at 2, 4, 8 ranks, and a
#           device-to-device memcpy of the same sizes in the same run (the roofline)
#   zerocopy the zero-copy all_gather on GPU 0: 2, 4, 8 threads at 64 MiB - 1 GiB with
#           XCCL_ZERO_COPY=1 and 0 beside a same-run memcpy; 2 processes under MPS with a window
#           (-R 2) and plain buffers; 8 B - 64 KiB with and without; world 1 against NCCL
#   soak    scripts/gpu_soak.sh: 8 thread ranks sharing GPU 0, each case 30 times (barrier_perf
#           plain and -G 10, with and without CUDA_DEVICE_MAX_CONNECTIONS=8, all_gather_perf,
#           ag_gemm_perf split and fused with XCCL_GPU_QUEUES=7): stalls counted
#   tests   ctest -L gpu (one GPU with ranks sharing it, and all GPUs where there are several);
#           GPU_CHECK_TEST_REGEX narrows it (ctest -R), GPU_CHECK_TEST_EXCLUDE leaves tests out
#           (ctest -E), GPU_CHECK_TEST_REPEAT=N runs each up to N times until it fails (for
#           intermittent failures). The tests hold one lock (RESOURCE_LOCK gpu), so they run one
#           at a time. The whole suite takes longer than GPU_CHECK_TEST_SECONDS (300) and one
#           device call leave after the build: split it with the regex, as in
#           docs/perf-history.md's sixth round
# Logs go to a folder that is packed into $OUT/logs.tgz after every stage (so a run cut short
# still brings back what it did); the table goes to stdout and $OUT/summary.txt.
# Usage: GPU_CHECK_STAGES="multi torch" scripts/gpu_check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1  # never NVLink multicast here
build=${1:-build-gpu}
out=${OUT:-/tmp/xccl-gpu-check}
logs=/tmp/xccl-gpu-logs
stages=${GPU_CHECK_STAGES:-multi plugin agemm torch python small lanes single zerocopy soak tests}
test_budget=${GPU_CHECK_TEST_SECONDS:-300}
mkdir -p "$out" "$logs"
pack() { tar -C "$logs" -czf "$out/logs.tgz" . 2>/dev/null; }
has_stage() { [[ " $stages " == *" $1 "* ]]; }
agp=$build/perf/all_gather_perf
bp=$build/perf/barrier_perf
export XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-20000}

{
  nvidia-smi -L
  nvidia-smi topo -m
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv
} >"$logs/setup.txt" 2>&1
cmake -S . -B "$build" -DXCCL_PLATFORM=cuda >>"$logs/setup.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >>"$logs/setup.txt" 2>&1 ||
  { tail -40 "$logs/setup.txt"; pack; exit 1; }
gpus=$(nvidia-smi -L | wc -l)
echo "gpu_check: $gpus GPU(s), stages: $stages"
pack

# ---- multi: one rank per GPU ----
if has_stage multi && [ "$gpus" -ge 2 ]; then
  small=$((8 * gpus))  # 8 bytes per rank
  sweep="-b $small -e 8G -f 2 -n 20 -w 5 --repeats 3"
  timeout 240 "$agp" -t "$gpus" $sweep --compare vendor >"$logs/multi_ag_default.txt" 2>&1
  pack
  for engine in dma kernel; do
    XCCL_ALLGATHER_ALGO=$engine timeout 120 "$agp" -t "$gpus" -b $small -e 1G -f 4 -n 20 -w 5 \
      --repeats 3 --compare vendor >"$logs/multi_ag_$engine.txt" 2>&1
  done
  timeout 150 "$agp" -np "$gpus" -b $small -e 1G -f 4 -n 20 -w 5 --repeats 3 --compare vendor \
    >"$logs/multi_ag_procs.txt" 2>&1
  pack
  for g in 0 10; do
    timeout 60 "$bp" -t "$gpus" -n 500 -w 50 -G "$g" --repeats 3 --compare vendor \
      >>"$logs/multi_barrier.txt" 2>&1
    timeout 60 "$agp" -t "$gpus" -b $small -e $small -n 500 -w 50 -G "$g" --repeats 3 --compare vendor \
      >>"$logs/multi_ag_8B.txt" 2>&1
  done
  pack
fi

# ---- agemm: gemm_plugin_perf, then ag_gemm_perf ----
lt=$build/ext/gemm/cublaslt/libxccl-gemm-cublaslt.so
if has_stage plugin; then
  for dtype in fp8 bf16; do
    CUDA_VISIBLE_DEVICES=0 XCCL_GEMM_CUBLASLT_TUNE=2 timeout 180 \
      "$build/perf/gemm_plugin_perf" --plugin "$lt" \
      --dtype $dtype --m "8192 16384 32768" --shapes "6400x7168 3840x7168 6288x7168 3648x7168" \
      >>"$logs/gemm_plugin.txt" 2>&1
  done
  pack
fi

if has_stage agemm; then
  # Several GPUs: one process per GPU, the Kimi-K3 TP8 shapes and M 4096-32768 (docs/PERF.md's
  # table), fp8 and bf16. One GPU: 2 thread ranks sharing it, each given one DMA queue
  # (XCCL_GPU_QUEUES=1) so that fused runs too (the machinery, not link speed), fp8 only.
  queues_env=()
  if [ "$gpus" -ge 2 ]; then
    placement="-np $gpus"
    ms="4096 8192 16384 32768"
    shapes="6288x7168 3648x7168 6400x7168 3840x7168"
    dtypes="fp8 bf16"
  else
    placement="-t 2"
    ms="8192 16384 32768"
    shapes="6400x7168 3840x7168"
    dtypes="fp8"
    queues_env=(XCCL_GPU_QUEUES=1 CUDA_VISIBLE_DEVICES=0)
  fi
  for dtype in $dtypes; do
    env ${queues_env[@]+"${queues_env[@]}"} timeout 240 "$build/perf/ag_gemm_perf" $placement --plugin "$lt" \
      --dtype $dtype --compare vendor --m "$ms" --shapes "$shapes" --rounds 3 -n 5 -w 2 \
      >>"$logs/ag_gemm.txt" 2>&1
    echo "# $dtype done at ${SECONDS}s" >>"$logs/stage_times.txt"
    pack  # a call cut short still brings back the tables that finished
  done
  # The chunk default against the measured fused times (several GPUs), then fused with one
  # default turned off, split in the same run again: with 3 or more GPUs one source per GEMM
  # call (XCCL_AGGEMM_SOURCES_PER_GEMM=1, against the default's pairs of sources where bands are
  # small), else one compute stream (XCCL_AGGEMM_COMPUTE_STREAMS=1, against the default's two).
  if [ "$gpus" -ge 2 ]; then
    python3 perf/fit_chunk_rule.py "$logs/ag_gemm.txt" >"$logs/chunk_fit.txt" 2>&1
  fi
  if [ "$gpus" -ge 3 ]; then
    off=XCCL_AGGEMM_SOURCES_PER_GEMM=1
  else
    off=XCCL_AGGEMM_COMPUTE_STREAMS=1
  fi
  echo "# with $off" >"$logs/ag_gemm_off.txt"
  env ${queues_env[@]+"${queues_env[@]}"} "$off" timeout 180 "$build/perf/ag_gemm_perf" \
    $placement --plugin "$lt" --dtype fp8 --compare vendor --m "8192 16384 32768" \
    --shapes "6400x7168 3840x7168" --rounds 3 -n 5 -w 2 >>"$logs/ag_gemm_off.txt" 2>&1
  pack
fi

# ---- torch: PyTorch over the shim ----
if has_stage torch; then
  timeout 300 ./scripts/torch_shim_check.sh "$build" >"$logs/torch.txt" 2>&1
  pack
fi

# ---- python: the binding on torch tensors, and its cost per call ----
if has_stage python; then
  py=${GPU_CHECK_PYTHON:-}
  for candidate in python3 /usr/bin/python3 /opt/torch/.venv/bin/python3; do
    [ -n "$py" ] && break
    "$candidate" -c "import torch, pytest" 2>/dev/null && py=$(command -v "$candidate")
  done
  if [ -z "$py" ]; then
    echo "skipped: no python here imports torch and pytest" >"$logs/python.txt"
  else
    cmake --build "$build" --target xccl_python >>"$logs/setup.txt" 2>&1
    {
      PYTHONPATH=$build/python timeout 200 "$py" -m pytest -q -rs -p no:cacheprovider \
        python/tests/test_gpu_torch.py
      XCCL_GPU_QUEUES=1 PYTHONPATH=$build/python timeout 200 "$py" -m pytest -q -rs \
        -p no:cacheprovider -k "fused or graph" python/tests/test_gpu_torch.py
      PYTHONPATH=$build/python timeout 150 "$py" perf/py_call_overhead.py \
        --perf "$build/perf/all_gather_perf" --graph
    } >"$logs/python.txt" 2>&1
  fi
  pack
fi

# ---- small: the LL all_gather against the pipelined one (and NCCL) ----
if has_stage small; then
  if [ "$gpus" -ge 2 ]; then small_runs="-t $gpus --compare vendor"; else small_runs="-t 2"; fi
  for g in 0 10; do
    for ll in 8192 32768 0; do
      echo "## LL bytes $ll, graph $g" >>"$logs/small_ag.txt"
      XCCL_ALLGATHER_LL_BYTES=$ll timeout 60 "$agp" $small_runs -b 8 -e 256K -f 4 -n 200 -w 20 \
        -G "$g" --repeats 3 >>"$logs/small_ag.txt" 2>&1
    done
  done
  for g in 0 10; do
    CUDA_VISIBLE_DEVICES=0 timeout 60 "$bp" -t 8 -n 200 -w 20 -G "$g" --repeats 3 \
      >>"$logs/small_barrier_t8.txt" 2>&1
  done
  pack
fi

# ---- lanes: how many pushing blocks per peer the large all_gather wants ----
if has_stage lanes; then
  [ -f "$logs/copy_roofline.txt" ] ||
    CUDA_VISIBLE_DEVICES=0 timeout 60 "$build/perf/copy_roofline" -b 64M -e 1G -f 2 \
      >"$logs/copy_roofline.txt" 2>&1
  for lanes in ${GPU_CHECK_LANES:-8 16 24 32}; do
    if [ "$gpus" -ge 2 ]; then
      echo "## lanes $lanes, $gpus GPUs" >>"$logs/lanes.txt"
      XCCL_ALLGATHER_LANES=$lanes timeout 60 "$agp" -t "$gpus" -b 64M -e 1G -f 4 -n 20 -w 5 \
        --repeats 3 --compare vendor >>"$logs/lanes.txt" 2>&1
    fi
    echo "## lanes $lanes, 2 ranks sharing GPU 0" >>"$logs/lanes.txt"
    CUDA_VISIBLE_DEVICES=0 XCCL_ALLGATHER_LANES=$lanes timeout 60 "$agp" -t 2 -b 64M -e 1G -f 4 \
      -n 20 -w 5 --repeats 3 >>"$logs/lanes.txt" 2>&1
  done
  pack
fi

# ---- single: ranks sharing GPU 0 ----
if has_stage single; then
  export CUDA_VISIBLE_DEVICES=0
  timeout 60 "$build/perf/copy_roofline" -b 64M -e 1G -f 2 >"$logs/copy_roofline.txt" 2>&1
  for n in 2 4 8; do
    timeout 150 "$agp" -t "$n" -b $((8 * n)) -e 1G -f 2 -n 20 -w 5 --repeats 3 \
      >"$logs/single_ag_t$n.txt" 2>&1
    for g in 0 10; do
      timeout 60 "$bp" -t "$n" -n 200 -w 20 -G "$g" --repeats 3 >>"$logs/single_barrier_t$n.txt" 2>&1
    done
  done
  unset CUDA_VISIBLE_DEVICES
  pack
fi

# ---- zerocopy: one copy per byte, on GPU 0 ----
if has_stage zerocopy; then
  export CUDA_VISIBLE_DEVICES=0
  timeout 60 "$build/perf/copy_roofline" -b 64M -e 1G -f 2 >"$logs/copy_roofline.txt" 2>&1
  for n in 2 4 8; do
    for zc in 1 0; do
      XCCL_ZERO_COPY=$zc timeout 100 "$agp" -t "$n" -b 64M -e 1G -f 2 -n 20 -w 5 --repeats 3 \
        >"$logs/zc_t${n}_z$zc.txt" 2>&1
    done
  done
  for zc in 1 0; do
    XCCL_ZERO_COPY=$zc timeout 60 "$agp" -t 2 -b 8 -e 64K -f 4 -n 200 -w 20 --repeats 3 \
      >"$logs/zc_small_z$zc.txt" 2>&1
  done
  timeout 100 "$agp" -t 1 -b 8 -e 512M -f 8 -n 50 -w 10 --repeats 3 --compare vendor \
    >"$logs/zc_world1.txt" 2>&1
  # Processes time-slice one GPU without MPS (docs/PERF.md); the daemon is stopped after.
  if nvidia-cuda-mps-control -d >>"$logs/zc_mps.txt" 2>&1; then
    for reg in 2 1 0; do
      timeout 100 "$agp" --np 2 -R "$reg" -b 64M -e 1G -f 2 -n 20 -w 5 --repeats 3 \
        >"$logs/zc_np2_R$reg.txt" 2>&1
    done
    echo quit | nvidia-cuda-mps-control >>"$logs/zc_mps.txt" 2>&1
  fi
  unset CUDA_VISIBLE_DEVICES
  pack
fi

# ---- soak: ranks sharing GPU 0, stalls counted ----
if has_stage soak; then
  SOAK_LOG="$logs/soak.log" timeout 900 scripts/gpu_soak.sh "$build" >"$logs/soak_table.txt" 2>&1
  pack
fi

# ---- tests ----
tests_rc=0
if has_stage tests; then
  timeout "$test_budget" ctest --test-dir "$build" -L gpu \
    ${GPU_CHECK_TEST_REGEX:+-R "$GPU_CHECK_TEST_REGEX"} \
    ${GPU_CHECK_TEST_EXCLUDE:+-E "$GPU_CHECK_TEST_EXCLUDE"} \
    ${GPU_CHECK_TEST_REPEAT:+--repeat "until-fail:$GPU_CHECK_TEST_REPEAT"} \
    --timeout 120 --output-on-failure \
    >"$logs/gpu_tests.txt" 2>&1
  tests_rc=$?
  pack
fi

# ---- the table ----
{
  echo
  col() {  # file size field -> value of that field on the row of that size
    awk -v s="$2" -v f="$3" '$1 == s {print $f; exit}' "$1" 2>/dev/null
  }
  wrong() { grep -h "Out of bounds" "$@" 2>/dev/null | awk '{s += $(NF - 1)} END {print s + 0}'; }
  if [ -f "$logs/multi_ag_default.txt" ]; then
    echo "# all_gather over $gpus GPUs, busbw GB/s out-of-place: xccl / NCCL (ratio)"
    printf "# %-14s %24s %24s %24s %24s\n" run "8B/rank" 64MiB 1GiB 8GiB
    for run in default dma kernel procs; do
      f=$logs/multi_ag_$run.txt
      [ -f "$f" ] || continue
      cells=""
      for s in $((8 * gpus)) 67108864 1073741824 8589934592; do
        cells+=$(printf " %24s" "$(col "$f" $s 8)/$(col "$f" $s 15) ($(col "$f" $s 16))")
      done
      printf "  %-14s%s  wrong=%s\n" "$run" "$cells" "$(wrong "$f")"
    done
    echo "# 8-byte all_gather us (xccl / NCCL), plain then graph:"
    grep -E "^ +$((8 * gpus)) " "$logs/multi_ag_8B.txt" | awk '{print "   ", $6, "/", $14}'
    echo "# barrier (tail):"
    grep -vE "^#|^$" "$logs/multi_barrier.txt" | tail -4
  fi
  if [ -f "$logs/gemm_plugin.txt" ]; then
    echo "# gemm_plugin_perf (cublaslt plugin vs cuBLASLt direct; band cost %):"
    grep -vE "^# +M |^# tune|^$" "$logs/gemm_plugin.txt"
  fi
  if [ -f "$logs/ag_gemm.txt" ]; then
    echo "# ag_gemm_perf (us; best fused vs split-xccl; relL2):"
    grep -vE "^# (split-vendor|ag_gemm_perf)" "$logs/ag_gemm.txt" | tail -40
  fi
  if [ -f "$logs/ag_gemm_off.txt" ]; then
    echo "# ag_gemm_perf, fp8, $(head -1 "$logs/ag_gemm_off.txt" | sed 's/^# //'):"
    grep -vE "^# (split-vendor|ag_gemm_perf|with )" "$logs/ag_gemm_off.txt" | tail -12
  fi
  if [ -f "$logs/chunk_fit.txt" ]; then
    echo "# chunk rule against the measured fused times (perf/fit_chunk_rule.py):"
    grep -E "^(#|threshold)" "$logs/chunk_fit.txt" | head -4
  fi
  if [ -f "$logs/python.txt" ]; then
    echo "# the Python binding (pytest summaries, then us per call against the C API):"
    grep -E "passed|failed|skipped:|^ +[0-9]+ (thread|threads) " "$logs/python.txt"
  fi
  if [ -f "$logs/torch.txt" ]; then
    echo "# torch over the shim:"
    grep -E "^torch_shim_check|all_gather 64MiB" "$logs/torch.txt" | sed 's/nccl libraries:.*//' |
      head -20
  fi
  if [ -f "$logs/small_ag.txt" ]; then
    echo "# small all_gather, out-of-place us (size: xccl / NCCL where run), LL 8 KiB, 32 KiB, off:"
    awk '/^## LL/ {printf "%s%s:", (NR > 1 ? "\n" : ""), $0} $1 ~ /^[0-9]+$/ && $1 <= 262144 {
         printf "  %s: %s/%s", $1, $6, ($14 == "" ? "-" : $14)} END {print ""}' "$logs/small_ag.txt"
    echo "# barrier_perf -t 8 on GPU 0 (rows 2, 4, 8 ranks), plain then graph:"
    grep -E "^ +[248] +[0-9.]+ " "$logs/small_barrier_t8.txt"
  fi
  if [ -f "$logs/lanes.txt" ]; then
    echo "# all_gather busbw GB/s out-of-place by lanes per peer (size: xccl / NCCL where run);"
    echo "# 2 ranks sharing a GPU copy 6 x busbw; memcpy 1 GiB in this run:" \
      "$(awk '$1 == 1073741824 {print $3}' "$logs/copy_roofline.txt" 2>/dev/null) GB/s"
    awk '/^## lanes/ {printf "%s%s:", (NR > 1 ? "\n" : ""), $0} $1 ~ /^[0-9]+$/ {
         printf "  %s: %s/%s", $1, $8, ($15 == "" ? "-" : $15)} END {print ""}' "$logs/lanes.txt"
  fi
  if [ -f "$logs/copy_roofline.txt" ]; then
    memcpy_rate=$(awk '$1 == 1073741824 {print $3}' "$logs/copy_roofline.txt")
    echo "# ranks sharing GPU 0: busbw GB/s at 1 GiB out-of-place (in-place), 8 B time us, barrier us"
    echo "# copy rate = (2n-1) x 1 GiB / time, against a 1 GiB D2D memcpy in this run: ${memcpy_rate:-?} GB/s"
    for n in 2 4 8; do
      f=$logs/single_ag_t$n.txt
      b=$logs/single_barrier_t$n.txt
      bar=$(awk '/^# nThread/ {k++} k == 1 && $1 ~ /^[0-9]+$/ {v=$2} END {print v}' "$b")
      barg=$(awk '/^# nThread/ {k++} k == 2 && $1 ~ /^[0-9]+$/ {v=$2} END {print v}' "$b")
      rate=$(awk -v n="$n" -v m="${memcpy_rate:-0}" '$1 == 1073741824 && $6 > 0 {
          r = (2 * n - 1) * $1 / $6 / 1e3; printf "%.0f (%.2f)", r, (m > 0 ? r / m : 0) }' "$f")
      printf "  ranks %d: busbw %s (%s)  8B %s us  wrong %s  barrier %s / graph %s us  copy rate %s\n" \
        "$n" "$(col "$f" 1073741824 8)" "$(col "$f" 1073741824 12)" "$(col "$f" $((8 * n)) 6)" \
        "$(wrong "$f")" "${bar:--}" "${barg:--}" "${rate:--}"
    done
  fi
  if [ -f "$logs/zc_t2_z1.txt" ]; then
    echo "# zero-copy on GPU 0, out-of-place us: zero-copy / two-copy (XCCL_ZERO_COPY=0), and"
    echo "# zero-copy against the one-copy roofline (n x total bytes at this run's memcpy rate):"
    for n in 2 4 8; do
      line=$(awk -v n="$n" 'FILENAME ~ /copy_roofline/ && $1 ~ /^[0-9]+$/ {rate[$1] = $3; next}
          FILENAME ~ /_z1/ && $1 ~ /^[0-9]+$/ {zc[$1] = $6; order[++k] = $1; next}
          $1 ~ /^[0-9]+$/ {two[$1] = $6}
          END {for (i = 1; i <= k; i++) {b = order[i]; r = rate[b] > 0 ? rate[b] : 0;
               roof = r > 0 ? n * b / r / 1e3 : 0;
               printf "  %dM: %s/%s (%.2f)", b / 1048576, zc[b], two[b], (zc[b] > 0 ? roof / zc[b] : 0)}}' \
        "$logs/copy_roofline.txt" "$logs/zc_t${n}_z1.txt" "$logs/zc_t${n}_z0.txt")
      echo "  ranks $n:$line  wrong $(wrong "$logs/zc_t${n}_z1.txt")/$(wrong "$logs/zc_t${n}_z0.txt")"
    done
    echo "# 2 ranks, 8 B - 64 KiB out-of-place us, zero-copy / two-copy:"
    awk 'FILENAME ~ /_z1/ && $1 ~ /^[0-9]+$/ {zc[$1] = $6; order[++k] = $1; next}
         $1 ~ /^[0-9]+$/ {two[$1] = $6}
         END {for (i = 1; i <= k; i++) printf "  %s: %s/%s", order[i], zc[order[i]], two[order[i]]; print ""}' \
      "$logs/zc_small_z1.txt" "$logs/zc_small_z0.txt"
    echo "# world 1 (size: out-of-place algbw GB/s xccl / NCCL, in-place us xccl / NCCL):"
    awk '$1 ~ /^[0-9]+$/ {printf "  %s: %s/%.1f %s/%s\n", $1, $7, ($14 > 0 ? $1 / $14 / 1e3 : 0),
         $10, $17}' "$logs/zc_world1.txt"
    for reg in 2 1 0; do
      [ -f "$logs/zc_np2_R$reg.txt" ] || continue
      echo "# 2 processes under MPS, -R $reg, out-of-place us by size:" \
        "$(awk '$1 ~ /^[0-9]+$/ {printf " %dM: %s", $1 / 1048576, $6}' "$logs/zc_np2_R$reg.txt")" \
        " wrong $(wrong "$logs/zc_np2_R$reg.txt")"
    done
  fi
  if [ -f "$logs/gpu_tests.txt" ]; then
    echo "# gpu tests: $(grep -E 'tests passed' "$logs/gpu_tests.txt" || echo "did not finish (rc $tests_rc)")"
    grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$logs/gpu_tests.txt" | head -20
  fi
} | tee "$out/summary.txt"
exit $tests_rc
