#!/usr/bin/env bash
# What a communicator of many ranks costs each rank, on one machine split into XCCL_FAKE_NODES:
# per layout NODESxPER, NODES*PER processes (test/xccl_netns_rank) start together, initialise,
# make 9 all_gathers of 8 B per rank and a barrier (the data checked), then hold their
# communicators idle for HOLD_S seconds. Prints one row per layout: the time from the launch to
# the last rank's "ok" (init + the calls), then, sampled over the idle hold, file descriptors and
# threads per rank (median and max), the idle CPU per rank in % of one core, and TCP segments per
# second per rank (/proc/net/snmp OutSegs over the window, loopback: every heartbeat or other
# message of the idle ranks; no other TCP traffic should run on the machine meanwhile).
# Usage: perf/scale_probe.sh BUILD_DIR [LAYOUT ...]   (default: 32x4 64x4 32x8 128x2)
# Environment: HOLD_S (4): the idle window is HOLD_S - 1 seconds, starting 0.5 s after the last ok
# (the ranks hold until the counts after the window are taken).
set -uo pipefail
source "$(dirname "$0")/fake_layout.sh"
build=${1:?usage: scale_probe.sh BUILD_DIR [LAYOUT ...]}
shift
scale_layouts "$@"
bin=$build/test/xccl_netns_rank
hold_s=${HOLD_S:-4}
ticks=$(getconf CLK_TCK)
ulimit -n 65536 2>/dev/null || true
out_segs() { awk '/^Tcp:/ {n++; if (n == 2) print $12}' /proc/net/snmp; }
median_max() { sort -n | awk '{v[NR] = $1} END {printf "%d %d", v[int((NR + 1) / 2)], v[NR]}'; }
printf '%-8s %6s %10s %9s %9s %9s %9s %10s %12s\n' layout ranks "init+call" fds_med fds_max \
  thr_med thr_max "idle_cpu%" "tcp_seg/s"
for layout in "${layouts[@]}"; do
  fake_layout "$layout"
  work=$(mktemp -d)
  start=$(date +%s.%N)
  for ((r = 0; r < n; ++r)); do
    XCCL_FAKE_NODES=$fake XCCL_SOCKET_IFNAME=lo XCCL_NETNS_RANK=$r XCCL_NETNS_NRANKS=$n \
      XCCL_NETNS_ID_FILE="$work/id" XCCL_NETNS_CALLS=10 XCCL_NETNS_SEED=7 \
      XCCL_NETNS_BLOCK_BYTES=8 XCCL_NETNS_HOLD_MS=600000 XCCL_NETNS_HOLD_FILE="$work/release" \
      "$bin" >"$work/out.$r" 2>&1 &
    echo $! >>"$work/pids"
  done
  oks=0
  deadline=$(($(date +%s) + 300))
  while [ "$oks" -lt "$n" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    oks=$(cat "$work"/out.* 2>/dev/null | grep -c ': ok ')
    grep -q failed "$work"/out.* 2>/dev/null && break
    sleep 0.02
  done
  end=$(date +%s.%N)
  if [ "$oks" -lt "$n" ]; then
    echo "$layout: only $oks of $n ranks said ok:" >&2
    grep -h failed "$work"/out.* | head -3 >&2
    touch "$work/release"
    sleep 1
    kill $(cat "$work/pids") 2>/dev/null
    wait
    rm -rf "$work"
    continue
  fi
  sleep 0.5
  pids=$(cat "$work/pids")
  cpu0=0
  for p in $pids; do cpu0=$((cpu0 + $(awk '{print $14 + $15}' /proc/$p/stat))); done
  segs0=$(out_segs)
  t0=$(date +%s.%N)
  sleep $((hold_s - 1))
  cpu1=0
  for p in $pids; do cpu1=$((cpu1 + $(awk '{print $14 + $15}' /proc/$p/stat))); done
  segs1=$(out_segs)
  t1=$(date +%s.%N)
  fds=$(for p in $pids; do ls /proc/$p/fd | wc -l; done | median_max)
  thr=$(for p in $pids; do ls /proc/$p/task | wc -l; done | median_max)
  touch "$work/release"
  wait
  awk -v l="$layout" -v n="$n" -v s="$start" -v e="$end" -v f="$fds" -v t="$thr" \
    -v c0="$cpu0" -v c1="$cpu1" -v g0="$segs0" -v g1="$segs1" -v w0="$t0" -v w1="$t1" \
    -v hz="$ticks" 'BEGIN {
      split(f, fa, " "); split(t, ta, " "); w = w1 - w0;
      printf "%-8s %6d %9.2fs %9d %9d %9d %9d %10.2f %12.1f\n", l, n, e - s, fa[1], fa[2],
        ta[1], ta[2], 100 * (c1 - c0) / hz / w / n, (g1 - g0) / w / n }'
  rm -rf "$work"
done
