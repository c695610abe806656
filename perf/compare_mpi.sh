#!/usr/bin/env bash
# Puts xccl's all_gather_perf beside MPI_Allgather (OpenMPI over shared memory, BTL self,vader)
# on this node, for world sizes 2 and 4, and prints per world: size, xccl busbw (out of place),
# MPI busbw, and their ratio. Installs nothing.
#
# Usage: perf/compare_mpi.sh [build-dir]        (default: build)
# Environment: MIN (1K) MAX (256M) FACTOR (4) ITERS (20) WARMUP (5) WORLDS ("2 4")
# Exit status: 0 if both benchmarks ran clean for every world, 1 if either failed or found
# wrong data, 2 if MPI or the xccl build is missing.
set -u

build_dir=${1:-build}
min=${MIN:-1K}
max=${MAX:-256M}
factor=${FACTOR:-4}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
worlds=${WORLDS:-"2 4"}

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
  echo "compare_mpi.sh: mpicc and mpirun are needed and were not found." >&2
  echo "  On Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin" >&2
  exit 2
fi
xccl_bench=$build_dir/perf/all_gather_perf
if [ ! -x "$xccl_bench" ]; then
  echo "compare_mpi.sh: $xccl_bench not found; build first, e.g." >&2
  echo "  cmake -S . -B $build_dir -DXCCL_PLATFORM=host && cmake --build $build_dir -j" >&2
  exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi_bench=$work/mpi_allgather_bench
if ! mpicc -O2 -std=c11 -o "$mpi_bench" "$here/mpi_allgather_bench.c"; then
  echo "compare_mpi.sh: building mpi_allgather_bench failed" >&2
  exit 1
fi

status=0
sweep=(-b "$min" -e "$max" -f "$factor" -n "$iters" -w "$warmup")
for n in $worlds; do
  xccl_out=$work/xccl_$n.txt
  mpi_out=$work/mpi_$n.txt
  if ! "$xccl_bench" "${sweep[@]}" -np "$n" >"$xccl_out"; then
    echo "compare_mpi.sh: all_gather_perf -np $n failed; its output:" >&2
    cat "$xccl_out" >&2
    status=1
  fi
  if ! mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl self,vader \
      "$mpi_bench" "${sweep[@]}" >"$mpi_out"; then
    echo "compare_mpi.sh: mpi_allgather_bench -np $n failed; its output:" >&2
    cat "$mpi_out" >&2
    status=1
  fi
  echo "# all_gather, world $n: bus bandwidth (GB/s), xccl out-of-place vs MPI_Allgather"
  printf "# %10s  %10s  %10s  %7s\n" "size(B)" "xccl" "MPI" "ratio"
  # Rows are joined on the size column. all_gather_perf's out-of-place time and busbw are
  # fields 6 and 8, the MPI bench's fields 3 and 5. The ratio (xccl busbw / MPI busbw) is taken
  # from the times, which carry more digits than the busbw columns at small sizes. A size
  # present in only one output shows "-".
  awk '
    FNR == 1 { file++ }
    /^#/ || NF == 0 { next }
    file == 1 && NF >= 13 { xt[$1] = $6; xb[$1] = $8; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    file == 2 && NF >= 6 { mt[$1] = $3; mb[$1] = $5; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    END {
      for (i = 0; i < n; i++) {
        s = order[i]
        x = (s in xb) ? xb[s] : "-"
        m = (s in mb) ? mb[s] : "-"
        r = (s in xt && s in mt && xt[s] + 0 > 0) ? sprintf("%7.2f", mt[s] / xt[s]) : "-"
        printf "%12s  %10s  %10s  %7s\n", s, x, m, r
      }
    }' "$xccl_out" "$mpi_out"
  echo "#"
done
exit $status
