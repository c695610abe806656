#!/usr/bin/env bash
# Init + one call + teardown at many ranks on this machine, xccl beside OpenMPI in the same run:
# per layout NODESxPER, all_gather_perf -np NODES*PER -n 1 -w 0 -b 8 -e 8 with XCCL_FAKE_NODES
# (the ranks of other fake nodes reached over sockets on loopback), then mpirun -np NODES*PER
# --oversubscribe --mca btl tcp,self of perf/mpi_allgather_bench.c with one 8-byte-per-rank
# MPI_Allgather (MPI over TCP on loopback, no node split). ROUNDS rounds, the two interleaved;
# prints each round's wall seconds and the medians. A run that fails or passes LIMIT_S prints
# "fail" or "timeout" in place of its time.
# Usage: perf/init_scale.sh BUILD_DIR [LAYOUT ...]   (default: 32x4 64x4 32x8 128x2)
# Environment: ROUNDS (3), LIMIT_S (300), MPI_BENCH (a built mpi_allgather_bench; built into a
# temporary directory with mpicc when unset; MPI is left out where neither exists).
set -uo pipefail
source "$(dirname "$0")/fake_layout.sh"
build=${1:?usage: init_scale.sh BUILD_DIR [LAYOUT ...]}
shift
scale_layouts "$@"
rounds=${ROUNDS:-3}
limit=${LIMIT_S:-300}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=${MPI_BENCH:-}
if [ -z "$mpi" ] && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 -o "$work/mpi_ag" "$here/mpi_allgather_bench.c" && mpi=$work/mpi_ag
fi
ulimit -n 65536 2>/dev/null || true
timed() {  # timed COMMAND...: wall seconds, or fail / timeout
  local s e rc
  s=$(date +%s.%N)
  timeout "$limit" "$@" >"$work/out" 2>&1
  rc=$?
  e=$(date +%s.%N)
  if [ $rc -eq 124 ]; then echo timeout; elif [ $rc -ne 0 ]; then echo fail; else
    awk -v s="$s" -v e="$e" 'BEGIN {printf "%.2f", e - s}'
  fi
}
median() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -n | awk '{v[NR] = $1} END {
  if (NR == 0) print "-"; else printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-8s %6s  %-24s %-24s %8s %8s\n' layout ranks "xccl rounds (s)" "mpi rounds (s)" xccl_med \
  mpi_med
for layout in "${layouts[@]}"; do
  fake_layout "$layout"
  xs=() ms=()
  for ((round = 0; round < rounds; ++round)); do
    xs+=("$(XCCL_FAKE_NODES=$fake XCCL_SOCKET_IFNAME=lo timed "$build/perf/all_gather_perf" \
      -np "$n" -n 1 -w 0 -b 8 -e 8)")
    if [ -n "$mpi" ]; then
      ms+=("$(timed mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl tcp,self \
        --mca btl_tcp_if_include lo "$mpi" -b $((8 * n)) -e $((8 * n)) -n 1 -w 0)")
    fi
  done
  printf '%-8s %6d  %-24s %-24s %8s %8s\n' "$layout" "$n" "${xs[*]}" "${ms[*]:--}" \
    "$(echo "${xs[*]}" | median)" "$(echo "${ms[*]:-}" | median)"
done
