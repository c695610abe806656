#!/usr/bin/env bash
# Puts xccl's all_gather_perf beside MPI_Allgather (OpenMPI) for world sizes 2 and 4, and prints
# per world: size, xccl busbw (out of place), MPI busbw, and their ratio. Installs nothing.
#   COLLECTIVES="reduce_scatter all_reduce": reduce_scatter_perf beside MPI_Reduce_scatter_block
#     and all_reduce_perf beside MPI_Allreduce instead (-d float -o sum; MPI_FLOAT, MPI_SUM;
#     mpi_reduce_bench.c); any of all_gather reduce_scatter all_reduce, in that order or another.
#   default: one node, MPI over shared memory (BTL self,vader);
#   NETNS=1: two nodes on this machine, two network namespaces joined by a veth pair (root):
#     xccl's processes run in them (all_gather_perf --netns, the net socket backend between
#     them, shm inside each), MPI's too (mpirun in the first, its daemon started in the second
#     by an ssh stand-in, BTL tcp,self over the veth). The first half of the ranks is the first
#     node. Only this script's namespaces carry traffic; they are removed at exit.
#   NETNS=lo: two nodes over loopback in this namespace (xccl: XCCL_FAKE_NODES, half the ranks
#     each; MPI: BTL tcp,self over lo), the same transports without veth.
#
# Usage: perf/compare_mpi.sh [build-dir]        (default: build)
# Environment: MIN (1K) MAX (256M) FACTOR (4) ITERS (20) WARMUP (5) WORLDS ("2 4") ROUNDS (5)
#              NETNS (0; 1 or lo) COLLECTIVES (all_gather)
# Exit status: 0 if both benchmarks ran clean for every world, 1 if either failed or found
# wrong data, 2 if MPI, the xccl build or (NETNS=1) root and iproute2 are missing.
set -u

build_dir=${1:-build}
min=${MIN:-1K}
max=${MAX:-256M}
factor=${FACTOR:-4}
iters=${ITERS:-20}
rounds=${ROUNDS:-5}
warmup=${WARMUP:-5}
worlds=${WORLDS:-"2 4"}
netns=${NETNS:-0}
collectives=${COLLECTIVES:-all_gather}

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
  echo "compare_mpi.sh: mpicc and mpirun are needed and were not found." >&2
  echo "  On Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin" >&2
  exit 2
fi
for coll in $collectives; do
  case "$coll" in
    all_gather | reduce_scatter | all_reduce) ;;
    *)
      echo "compare_mpi.sh: COLLECTIVES: unknown '$coll' (all_gather reduce_scatter all_reduce)" >&2
      exit 2
      ;;
  esac
  if [ ! -x "$build_dir/perf/${coll}_perf" ]; then
    echo "compare_mpi.sh: $build_dir/perf/${coll}_perf not found; build first, e.g." >&2
    echo "  cmake -S . -B $build_dir -DXCCL_PLATFORM=host && cmake --build $build_dir -j" >&2
    exit 2
  fi
done

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for bench in mpi_allgather_bench mpi_reduce_bench; do
  if ! mpicc -O2 -std=c11 -o "$work/$bench" "$here/$bench.c"; then
    echo "compare_mpi.sh: building $bench failed" >&2
    exit 1
  fi
done

xccl_env=()
xccl_extra=()
mpi_launch() {  # mpi_launch NRANKS: the MPI command's launcher on one node
  echo mpirun --allow-run-as-root --oversubscribe -np "$1" --mca btl self,vader
}
if [ "$netns" = lo ]; then
  xccl_env=(XCCL_SOCKET_IFNAME==lo)
  mpi_launch() {
    echo mpirun --allow-run-as-root --oversubscribe -np "$1" --mca btl tcp,self \
      --mca btl_tcp_if_include lo
  }
elif [ "$netns" = 1 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "compare_mpi.sh: NETNS=1 needs root and iproute2 (network namespaces)" >&2
    exit 2
  fi
  ns_a=xccl-mpi-$$-a
  ns_b=xccl-mpi-$$-b
  trap 'ip netns del "$ns_a" 2>/dev/null; ip netns del "$ns_b" 2>/dev/null; rm -rf "$work"' EXIT
  trap 'exit 1' INT TERM  # the namespaces go on an interrupt too
  ip netns add "$ns_a" && ip netns add "$ns_b" &&
    ip link add xm0 netns "$ns_a" type veth peer name xm0 netns "$ns_b" &&
    ip -n "$ns_a" addr add 10.232.0.1/24 dev xm0 && ip -n "$ns_b" addr add 10.232.0.2/24 dev xm0 &&
    for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set xm0 up && ip -n "$ns" link set lo up; done ||
    { echo "compare_mpi.sh: could not make the namespaces" >&2; exit 2; }
  # mpirun's ssh stand-in: the host is a namespace's address, the command runs inside it.
  cat >"$work/rsh" <<RSH
#!/bin/sh
host=\$1; shift
case "\$host" in 10.232.0.1) ns=$ns_a ;; 10.232.0.2) ns=$ns_b ;; *) exit 1 ;; esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
RSH
  chmod +x "$work/rsh"
  xccl_env=(XCCL_SOCKET_IFNAME==xm0)
  xccl_extra=(--netns "$ns_a,$ns_b")
  mpi_launch() {
    local half=$(($1 / 2))
    echo ip netns exec "$ns_a" mpirun --allow-run-as-root --oversubscribe -np "$1" \
      --host "10.232.0.1:$half,10.232.0.2:$(($1 - half))" --mca plm_rsh_agent "$work/rsh" \
      --mca btl tcp,self --mca btl_tcp_if_include xm0 --mca oob_tcp_if_include xm0
  }
fi

status=0
sweep=(-b "$min" -e "$max" -f "$factor" -n "$iters" -w "$warmup")
for coll in $collectives; do
  xccl_bench=$build_dir/perf/${coll}_perf
  # Per collective: the MPI bench and its arguments, the MPI call's name, and nccl-tests' bus
  # factor numerator (busbw = algbw * k(n-1)/n: 1 for all_gather and reduce_scatter, 2 for
  # all_reduce). The reductions sum floats on both sides.
  case "$coll" in
    all_gather) mpi_cmd=("$work/mpi_allgather_bench") mpi_name=MPI_Allgather xccl_args=() bus=1 ;;
    reduce_scatter)
      mpi_cmd=("$work/mpi_reduce_bench" -C reduce_scatter) mpi_name=MPI_Reduce_scatter_block
      xccl_args=(-d float -o sum) bus=1
      ;;
    all_reduce)
      mpi_cmd=("$work/mpi_reduce_bench" -C all_reduce) mpi_name=MPI_Allreduce
      xccl_args=(-d float -o sum) bus=2
      ;;
  esac
  for n in $worlds; do
    xccl_out=$work/xccl_${coll}_$n.txt
    mpi_out=$work/mpi_${coll}_$n.txt
    : >"$xccl_out"
    : >"$mpi_out"
    # Rounds alternate xccl and MPI so that a noisy moment of the machine hits both alike.
    for round in $(seq "$rounds"); do
      nodes=()
      [ "$netns" = lo ] && nodes=(XCCL_FAKE_NODES=$((n / 2)),$((n - n / 2)))
      if ! env "${xccl_env[@]}" "${nodes[@]}" "$xccl_bench" "${xccl_extra[@]}" "${sweep[@]}" \
        "${xccl_args[@]}" -np "$n" >>"$xccl_out"; then
        echo "compare_mpi.sh: ${coll}_perf -np $n failed (round $round); its output:" >&2
        cat "$xccl_out" >&2
        status=1
      fi
      if ! $(mpi_launch "$n") "${mpi_cmd[@]}" "${sweep[@]}" >>"$mpi_out"; then
        echo "compare_mpi.sh: ${mpi_cmd[*]##*/} -np $n failed (round $round); its output:" >&2
        cat "$mpi_out" >&2
        status=1
      fi
    done
    where="one node"
    [ "$netns" = 1 ] && where="2 nodes (network namespaces over veth; MPI: BTL tcp,self)"
    [ "$netns" = lo ] && where="2 nodes over loopback (MPI: BTL tcp,self)"
    echo "# $coll, world $n, $where, median of $rounds rounds of $iters iterations:" \
         "bus bandwidth (GB/s), xccl out-of-place vs $mpi_name"
    printf "# %10s  %10s  %10s  %7s\n" "size(B)" "xccl" "MPI" "ratio"
    # Rows are joined on the size column (both print nccl-tests' size): the xccl binaries'
    # out-of-place time is field 6, the MPI benches' field 3. busbw is recomputed from the median
    # time, size/time*k(n-1)/n, and the ratio (xccl busbw / MPI busbw) is the inverse ratio of the
    # median times.
    awk -v n="$n" -v bus="$bus" '
      function median(list,   k, v, i, j, t) {
        k = split(list, v, " ")
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
          t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
      }
      function busbw(size, us) { return us > 0 ? size / us / 1000 * bus * (n - 1) / n : 0 }
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
done
exit $status
