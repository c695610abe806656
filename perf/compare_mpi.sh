#!/usr/bin/env bash
# Puts xccl's all_gather_perf beside MPI_Allgather (OpenMPI over shared memory, BTL self,vader)
# on this node, for world sizes 2 and 4, and prints per world: size, xccl busbw (out of place),
# MPI busbw, and their ratio. Installs nothing.
#
# Usage: perf/compare_mpi.sh [build-dir]        (default: build)
# Environment: MIN (1K) MAX (256M) FACTOR (4) ITERS (20) WARMUP (5) WORLDS ("2 4") ROUNDS (5)
# Exit status: 0 if both benchmarks ran clean for every world, 1 if either failed or found
# wrong data, 2 if MPI or the xccl build is missing.
set -u

build_dir=${1:-build}
min=${MIN:-1K}
max=${MAX:-256M}
factor=${FACTOR:-4}
iters=${ITERS:-20}
rounds=${ROUNDS:-5}
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
  : >"$xccl_out"
  : >"$mpi_out"
  # Rounds alternate xccl and MPI so that a noisy moment of the machine hits both alike.
  for round in $(seq "$rounds"); do
    if ! "$xccl_bench" "${sweep[@]}" -np "$n" >>"$xccl_out"; then
      echo "compare_mpi.sh: all_gather_perf -np $n failed (round $round); its output:" >&2
      cat "$xccl_out" >&2
      status=1
    fi
    if ! mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl self,vader \
        "$mpi_bench" "${sweep[@]}" >>"$mpi_out"; then
      echo "compare_mpi.sh: mpi_allgather_bench -np $n failed (round $round); its output:" >&2
      cat "$mpi_out" >&2
      status=1
    fi
  done
  echo "# all_gather, world $n, median of $rounds rounds of $iters iterations:" \
       "bus bandwidth (GB/s), xccl out-of-place vs MPI_Allgather"
  printf "# %10s  %10s  %10s  %7s\n" "size(B)" "xccl" "MPI" "ratio"
  # Rows are joined on the size column: all_gather_perf's out-of-place time is field 6, the MPI
  # bench's field 3. busbw is recomputed from the median time, size/time*(n-1)/n, and the ratio
  # (xccl busbw / MPI busbw) is the inverse ratio of the median times.
  awk -v n="$n" '
    function median(list,   k, v, i, j, t) {
      k = split(list, v, " ")
      for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
        t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
      }
      return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    function busbw(size, us) { return us > 0 ? size / us / 1000 * (n - 1) / n : 0 }
    FNR == 1 { file++ }
    /^#/ || NF == 0 { next }
    file == 1 && NF >= 13 { xt[$1] = xt[$1] " " $6; if (!($1 in seen)) { seen[$1] = 1; order[m++] = $1 } }
    file == 2 && NF >= 6 { mt[$1] = mt[$1] " " $3; if (!($1 in seen)) { seen[$1] = 1; order[m++] = $1 } }
    END {
      for (i = 0; i < m; i++) {
        s = order[i]
        x = (s in xt) ? median(xt[s]) : -1
        y = (s in mt) ? median(mt[s]) : -1
        xs = x >= 0 ? sprintf("%10.2f", busbw(s, x)) : "-"
        ys = y >= 0 ? sprintf("%10.2f", busbw(s, y)) : "-"
        r = (x > 0 && y > 0) ? sprintf("%7.2f", y / x) : "-"
        printf "%12s  %10s  %10s  %7s\n", s, xs, ys, r
      }
    }' "$xccl_out" "$mpi_out"
  echo "#"
done
exit $status
