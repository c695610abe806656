#!/usr/bin/env bash
# The reductions on one GPU from a build made beforehand (carried), in two device calls of at most
# 10 minutes: REDUCE_CHECK=tests runs the gpu tests of the reductions (REDUCE_TEST_JOBS of them at
# once, REDUCE_CHECK_REGEX picks them); REDUCE_CHECK=perf runs reduce_scatter_perf and
# all_reduce_perf with 2, 4 and 8 thread ranks sharing GPU 0 beside a same-run copy roofline, small all_reduce beside the small all_gather, and world 1 against NCCL.
# Two logs in $OUT/reduce/ (the device tool brings back few files); a short table last.
# REDUCE_CHECK=grid sweeps reduce_scatter's size at 2 and 8 thread ranks from 1 MiB, and the read
# engine's grid (XCCL_REDUCE_BLOCKS) at 2 ranks and 64 MiB, beside the same-run copy roofline.
# REDUCE_CHECK=ab takes turns, AB_ROUNDS times, between the library in REDUCE_BASE_LIB (a folder
# holding an earlier build's libxccl.so.0, carried) and this build's, at 2 thread ranks from 64 MiB
# (reduce_scatter and all_reduce), then this build graph-launched (-G 10), beside the roofline.
# REDUCE_CHECK=nodes runs NODES_PARTS ("tests python perf"; "processes" too: processes split into
# fake nodes, time-sliced, REDUCE_PROCESS_REGEX): the gpu tests of the reductions at fake-node
# layouts with thread ranks (REDUCE_CHECK_REGEX), the Python binding's reductions on torch tensors
# (REDUCE_PYTHON: an interpreter with torch and pytest; the package is laid out from python/
# beside this build's library), and thread ranks split into fake nodes (2x2, 2x4) beside the same
# ranks on one node, reduce_scatter and all_reduce, bf16 sum, time per call (perf/gpu_nodes.sh
# TIMES=1, every row checked).
# REDUCE_CHECK_REGEX goes to ctest -R, which sees each parametrised name with its "# GetParam() =
# ..." suffix: a regex ending in $ matches none of them.
# Usage: REDUCE_CHECK=tests|perf|grid|ab|nodes scripts/gpu_reduce_check.sh [build-dir]   (build-dir: build-cuda)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
what=${REDUCE_CHECK:-tests}
logs=${OUT:-/tmp}/reduce
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
rs=$build/perf/reduce_scatter_perf
ar=$build/perf/all_reduce_perf
ag=$build/perf/all_gather_perf

# gpu_tests LOG REGEX SECONDS: the gpu tests matching REGEX (REDUCE_TEST_JOBS at once) into LOG,
# then a summary: the count, the verdict, the failed ones and the distinct warnings and failed
# expectations, most frequent first (the log may not come back).
gpu_tests() {
  timeout "$3" ctest --test-dir "$build/test" -L gpu -j "${REDUCE_TEST_JOBS:-1}" -R "$2" \
    --timeout 120 --output-on-failure >"$1" 2>&1
  [ $? -eq 124 ] && echo "gpu_reduce_check: the tests ran out of time; the rest did not run"
  echo "ran: $(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$1")"
  grep -E "tests passed|tests failed" "$1"
  sed -n '/The following tests FAILED/,$p' "$1"
  grep -hE "WARN|Failure|rank [0-9]+:" "$1" | sed -E 's/^.*(XCCL WARN)/\1/' |
    cut -c1-300 | sort | uniq -c | sort -rn | head -30
}

if [ "$what" = tests ]; then
  gpu_tests "$logs/tests.txt" "${REDUCE_CHECK_REGEX:-Reduce|Broadcast}" \
    "${REDUCE_TEST_SECONDS:-540}"
  exit 0
fi

if [ "$what" = nodes ]; then
  parts=${NODES_PARTS:-tests python perf}
  if [[ " $parts " == *" tests "* ]]; then
    gpu_tests "$logs/tests.txt" "${REDUCE_CHECK_REGEX:-(Reduce|Broadcast).*Threads.*Nodes}" \
      "${REDUCE_TEST_SECONDS:-300}"
  fi
  # Processes split into fake nodes, time-sliced: 2x2 is four processes, and MPS on a lent H100
  # refused a fourth (context creation failed, out of memory; docs/ARCHITECTURE.md "Status").
  if [[ " $parts " == *" processes "* ]]; then
    echo "== processes across fake nodes (time-sliced, no MPS)"
    gpu_tests "$logs/processes.txt" \
      "${REDUCE_PROCESS_REGEX:-(Reduce|Broadcast).*Processes.*Nodes}" \
      "${REDUCE_PROCESS_SECONDS:-420}"
  fi
  if [[ " $parts " == *" python "* ]]; then
    py=${REDUCE_PYTHON:-python3}
    if "$py" -c "import torch, pytest" 2>/dev/null; then
      mkdir -p "$build/python/xccl"
      cp python/xccl/*.py "$build/python/xccl/"
      # The library and the GEMM plugins beside it, as the xccl_python target lays them out.
      for lib in "$build/libxccl.so.0" "$build"/ext/gemm/*/libxccl-gemm-*.so; do
        [ -e "$lib" ] && ln -sf "$PWD/$lib" "$build/python/xccl/"
      done
      PYTHONPATH=$build/python timeout "${REDUCE_PYTHON_SECONDS:-200}" "$py" -m pytest -q -rs \
        -p no:cacheprovider -k "${REDUCE_PYTHON_TESTS:-reductions or gemm_rs}" python/tests/test_gpu_torch.py \
        >"$logs/python.txt" 2>&1
      echo "python: $(tail -1 "$logs/python.txt")"
    else
      echo "python: skipped, $py does not import torch and pytest"
    fi
  fi
  if [[ " $parts " == *" perf "* ]]; then
    for bin in reduce_scatter_perf all_reduce_perf; do
      echo "== $bin, bf16 sum, time us per call (out of place), threads on GPU 0, ranks:nodes =="
      BINARY=$bin EXTRA="-d bf16" TIMES=1 LAYOUTS="${NODE_LAYOUTS:-4:none 4:2,2 8:none 8:4,4}" \
        SIZES="${NODE_SIZES:--b 64 -e 64M -f 8}" RUN_SECONDS=150 perf/gpu_nodes.sh "new=$build"
    done >"$logs/nodes.txt" 2>&1
    cat "$logs/nodes.txt"
  fi
  exit 0
fi

# perf: every row checked; the sizes are those whose host-side check fits the call.
log=$logs/perf.txt
: >"$log"
row() { echo "## $* ${XCCL_REDUCE_BLOCKS:+blocks $XCCL_REDUCE_BLOCKS} ${LIB_LABEL:+lib $LIB_LABEL}" >>"$log"; timeout 60 "$@" >>"$log" 2>&1; }
if [ "$what" = ab ]; then
  base=${REDUCE_BASE_LIB:?set REDUCE_BASE_LIB to the folder of the earlier libxccl.so.0}
  echo "base: $(LD_LIBRARY_PATH=$base ldd "$rs" | grep libxccl)"
  echo "new:  $(LD_LIBRARY_PATH=$build ldd "$rs" | grep libxccl)"
  row "$build/perf/copy_roofline" -b 64M -e 256M -f 4
  for ((round = 1; round <= ${AB_ROUNDS:-2}; ++round)); do
    for lib in base new; do
      [ $lib = base ] && path=$base || path=$build
      for bin in "$rs" "$ar"; do
        LIB_LABEL=$lib LD_LIBRARY_PATH=$path row "$bin" -t 2 -b 64M -e 256M -f 4 -n 10 -w 3 --repeats 3 -d bf16
      done
    done
  done
  LIB_LABEL=graph row "$rs" -t 2 -b 64M -e 64M -n 10 -w 3 --repeats 3 -d bf16 -G 10
elif [ "$what" = grid ]; then
  row "$build/perf/copy_roofline" -b 1M -e 256M -f 4
  for n in 2 8; do row "$rs" -t "$n" -b 1M -e 256M -f 4 -n 10 -w 3 --repeats 3 -d bf16; done
  for b in 4 16 64 132; do
    XCCL_REDUCE_BLOCKS=$b row "$rs" -t 2 -b 64M -e 64M -n 10 -w 3 --repeats 3 -d bf16
  done
  row "$ar" -t 2 -b 1M -e 256M -f 4 -n 10 -w 3 --repeats 3 -d bf16
else
  row "$build/perf/copy_roofline" -b 64M -e 256M -f 4
  for n in 2 4 8; do
    row "$rs" -t "$n" -b 64M -e 256M -f 4 -n 10 -w 3 --repeats 3 -d bf16
    [ "$n" = 8 ] && max=64M || max=256M
    row "$ar" -t "$n" -b 64M -e "$max" -f 4 -n 10 -w 3 --repeats 3 -d bf16
  done
  row "$ar" -t 8 -b 8 -e 1M -f 8 -n 100 -w 20 --repeats 3
  row "$ar" -t 2 -b 8 -e 1M -f 8 -n 100 -w 20 --repeats 3
  row "$ag" -t 8 -b 64 -e 64 -n 100 -w 20 --repeats 3
  # Processes read each other's windows (-R 2); they time-slice one GPU without MPS.
  if nvidia-cuda-mps-control -d >>"$logs/perf.txt" 2>&1; then
    row "$rs" --np 2 -R 2 -b 64M -e 64M -n 10 -w 3 --repeats 3 -d bf16
    row "$ar" --np 2 -R 2 -b 64M -e 64M -n 10 -w 3 --repeats 3 -d bf16
    row "$ar" --np 2 -R 0 -b 64M -e 64M -n 10 -w 3 --repeats 3 -d bf16
    echo quit | nvidia-cuda-mps-control >>"$logs/perf.txt" 2>&1
  fi
  row "$rs" -t 1 -b 8 -e 256M -f 32 -n 10 -w 3 --repeats 3 --compare vendor
  row "$ar" -t 1 -b 8 -e 256M -f 32 -n 10 -w 3 --repeats 3 --compare vendor
fi
# The roofline: every input byte read once and every output byte written once at the copy rate
# of the same size (a copy of X bytes moves 2X). reduce_scatter of S send bytes per rank moves
# n * S + S; all_reduce 2 * n * S.
echo "== bf16 sum, ranks sharing GPU 0 (t: threads, p: processes under MPS, R2: windows): time us (out of place, in place), roofline us, ratio =="
awk '
  /^## / { bin = $2; sub(/.*\//, "", bin); n = 1; mode = "t"; reg = ""
           for (i = 2; i <= NF; ++i) {
             if ($i == "blocks") reg = " b" $(i + 1)
             if ($i == "lib") reg = " " $(i + 1)
             if ($i == "-t") n = $(i + 1)
             if ($i == "--np") { n = $(i + 1); mode = "p" }
             if ($i == "-R") reg = " R" $(i + 1)
           }
           compare = ($0 ~ /--compare/); next }
  bin == "copy_roofline" && $1 ~ /^[0-9]+$/ { rate[$1] = $3; next }
  $1 !~ /^[0-9]+$/ || NF < 9 { next }
  bin == "all_gather_perf" { printf "ag t%d %d B: %s us\n", n, $1, $6; next }
  compare { printf "%s t1 %11d: xccl %s us, NCCL %s us\n", bin, $1, $6, $14; next }
  (bin == "reduce_scatter_perf" || bin == "all_reduce_perf") && ($1 in rate) {
    s = $1; moved = (bin == "reduce_scatter_perf") ? n * s + s : 2 * n * s
    roof = moved / (2 * rate[s] * 1e3)
    printf "%s %s%d%s %11d  %8.1f %8.1f  %8.1f  %5.2f  wrong %s/%s\n", bin, mode, n, reg, s, $6,
           $10, roof, roof / $6, $9, $13; next }
  bin == "all_reduce_perf" { printf "all_reduce t%d %d B: %s us (in place %s)\n", n, $1, $6, $10 }
' "$log"
