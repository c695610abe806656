#!/usr/bin/env bash
# The figures of docs/PERF.md's plots: runs a fixed, short set of perf binaries with -J into
# OUT_DIR, then perf/plot.py over those files, each PNG beside the JSON it was drawn from (so a
# plot can be remade, or its numbers read, without rerunning). What runs depends on the
# platform of the build, read from a probe run's -J header:
#   cuda  GPU 0 only (CUDA_VISIBLE_DEVICES=0, NCCL_NVLS_ENABLE=0): all_gather_perf with 2, 4 and
#         8 thread ranks sharing it, 8 B per rank to 1 GiB (all_gather_one_<gpu>.png, busbw,
#         one line per rank count); the small all_gather (8 B per rank to 256 KiB) at world 1
#         against NCCL and at 8 ranks, and barrier_perf at 8 ranks, plain and graph-launched
#         (-G 10) (latency_one_<gpu>.png, time per call). About 2 minutes of GPU time (estimated).
#   host  all_gather_perf -np 2 and -np 4 processes, 1 KiB to 64 MiB (all_gather_host.png).
#         MPI is not plotted: perf/compare_mpi.sh prints a text table, not -J JSON.
# Every figure is the median of 3 timed loops (--repeats 3). Prints a table (file, rows, plot)
# last; exits 1 if any binary or plot failed, 2 if the build or python is missing.
# Usage: scripts/perf_page.sh [build-dir] [out-dir]      (defaults: build, docs/plots)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:-build}
out=${2:-docs/plots}
agp=$build/perf/all_gather_perf
bp=$build/perf/barrier_perf
# /usr/bin/python3 first: Debian's matplotlib is installed for it, not for a venv's python3.
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3

for bin in "$agp" "$bp"; do
  if [ ! -x "$bin" ]; then
    echo "perf_page.sh: $bin not found; build first, e.g." >&2
    echo "  cmake -S . -B $build && cmake --build $build -j" >&2
    exit 2
  fi
done
if ! "$python" -c "import matplotlib" 2>/dev/null; then
  echo "perf_page.sh: $python has no matplotlib" \
    "(apt-get install python3-matplotlib, or set PYTHON)" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# GPU 0 only and never NVLink multicast, as scripts/gpu_check.sh; harmless on the host platform.
export CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0
# A hung rendezvous fails in 20 s instead of running into the timeout below.
export XCCL_TIMEOUT_MS=${XCCL_TIMEOUT_MS:-20000}

failed=0
table=()  # "file<TAB>rows<TAB>plot" per JSON, in run order
json_value() {  # json_value FILE EXPR: EXPR over the parsed file d, printed
  "$python" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}

# run SECONDS PLOT JSON BINARY ARGS...: one binary under timeout, writing JSON with -J; its
# text table goes to the work folder and is shown only if it fails.
run() {
  local limit=$1 plot=$2 json=$3 log
  shift 3
  log=$work/$(basename "$json" .json).txt
  rm -f "$json"  # a failed run must not leave the last run's file to be plotted as today's
  echo "+ $* -J $json"
  # -k: a rank that ignores SIGTERM is killed 10 s later (timeout signals the whole group).
  timeout -k 10 "$limit" "$@" -J "$json" >"$log" 2>&1
  local rc=$?
  local rows
  rows=$(json_value "$json" "len(d['rows'])") || rows=none
  if [ "$rc" -ne 0 ]; then
    local why="exit status $rc"
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why+=" (timed out after ${limit}s)"
    echo "perf_page.sh: $why; the end of its output:" >&2
    tail -20 "$log" >&2
    failed=1
    rows="$rows (failed, rc $rc)"
  fi
  table+=("$json	$rows	$plot")
}

# plot PNG PLOT_ARGS... -- JSON...: plot.py over the JSON files that exist (a failed run left
# none), so one failure still leaves the other lines drawn.
plot() {
  local png=$1 args=() files=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  for f in "$@"; do [ -f "$f" ] && files+=("$f"); done
  if [ ${#files[@]} -eq 0 ]; then
    echo "perf_page.sh: no JSON to draw $png from" >&2
    failed=1
    return
  fi
  rm -f "$png"  # as for the JSON: no stale plot left under today's name
  echo "+ $(printf '%q ' perf/plot.py "${args[@]}" -o "$png" "${files[@]}")"
  "$python" perf/plot.py "${args[@]}" -o "$png" "${files[@]}" || failed=1
}

# The probe: one 8-byte call, only for its header's platform and device name.
if ! timeout -k 10 60 "$agp" -b 8 -e 8 -n 1 -w 0 -c 0 -J "$work/probe.json" \
  >"$work/probe.txt" 2>&1; then
  echo "perf_page.sh: the probe run of $agp failed:" >&2
  tail -20 "$work/probe.txt" >&2
  exit 1
fi
platform=$(json_value "$work/probe.json" "d['header']['platform']")
echo "perf_page.sh: $build is a $platform build; writing to $out"

case "$platform" in
cuda)
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "perf_page.sh: a cuda build, but nvidia-smi finds no GPU" >&2
    exit 1
  fi
  # 'NVIDIA H200' -> h200: the file names say which GPU the figures are of.
  gpu_name=$(json_value "$work/probe.json" "d['header']['gpu_names'][0]")
  gpu=$(echo "${gpu_name:-gpu}" | sed 's/^NVIDIA //; s/[^A-Za-z0-9].*//' |
    tr '[:upper:]' '[:lower:]')
  ag_png=$out/all_gather_one_$gpu.png
  lat_png=$out/latency_one_$gpu.png
  # Bandwidth: 8 B per rank (8N in all) to 1 GiB, factor 2, so every rank count ends at 1 GiB.
  for n in 2 4 8; do
    run 150 "$ag_png" "$out/all_gather_one_${gpu}_t$n.json" \
      "$agp" -t "$n" -b $((8 * n)) -e 1G -f 2 -n 20 -w 5 --repeats 3
  done
  # Latency: world 1 (the only count NCCL runs on one GPU: it refuses ranks sharing one) and
  # 8 ranks sharing GPU 0, plain and graph-launched; barrier_perf -t 8 has rows 2, 4, 8.
  for g in 0 10; do
    run 60 "$lat_png" "$out/latency_one_${gpu}_t1_G$g.json" \
      "$agp" -t 1 -b 8 -e 256K -f 2 -n 200 -w 20 -G "$g" --repeats 3 --compare vendor
    run 60 "$lat_png" "$out/latency_one_${gpu}_t8_G$g.json" \
      "$agp" -t 8 -b 64 -e 256K -f 2 -n 200 -w 20 -G "$g" --repeats 3
    run 60 "$lat_png" "$out/barrier_one_${gpu}_t8_G$g.json" \
      "$bp" -t 8 -n 200 -w 20 -G "$g" --repeats 3
  done
  plot "$ag_png" --label auto --placement out-of-place \
    --note "ranks are threads sharing GPU 0; 8 B per rank to 1 GiB; median of 3 loops" \
    -- "$out"/all_gather_one_"${gpu}"_t{2,4,8}.json
  note="plain and -G 10; NCCL at world 1 only (it refuses ranks sharing a GPU); barrier: 8 ranks"
  plot "$lat_png" --metric time --label auto --placement out-of-place --note "$note" \
    -- "$out"/latency_one_"${gpu}"_t{1,8}_G{0,10}.json "$out"/barrier_one_"${gpu}"_t8_G{0,10}.json
  ;;
host)
  host_png=$out/all_gather_host.png
  # The host's load goes into the plot: these figures are of whatever else the machine runs.
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
  load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
  for n in 2 4; do
    run 120 "$host_png" "$out/all_gather_host_np$n.json" \
      "$agp" -np "$n" -b 1K -e 64M -f 4 -n 20 -w 5 --repeats 3
  done
  if command -v mpirun >/dev/null 2>&1; then
    mpi="MPI not plotted (perf/compare_mpi.sh has no JSON)"
    echo "perf_page.sh: $mpi; for the comparison run perf/compare_mpi.sh $build"
  else
    mpi="xccl only: no MPI on this machine"
    echo "perf_page.sh: MPI skipped: mpirun not found"
  fi
  note="${cpu:-unknown CPU}, $(nproc) cores shared with other jobs (load ${load:-?} at start)"
  plot "$host_png" --label auto --placement out-of-place --note "$note; $mpi" \
    -- "$out"/all_gather_host_np{2,4}.json
  ;;
*)
  echo "perf_page.sh: no run set for the $platform platform (cuda and host only)" >&2
  exit 2
  ;;
esac

echo
printf "# %-48s %-22s %s\n" file rows plot
for line in "${table[@]}"; do
  IFS=$'\t' read -r file rows png <<<"$line"
  [ -f "$png" ] || png="$png (not written)"
  printf "  %-48s %-22s %s\n" "$file" "$rows" "$png"
done
exit $failed
