#!/usr/bin/env bash
# The proxy's CPU use: two processes of one machine as two nodes (XCCL_HOSTID a and b, the net
# socket backend over loopback), held idle for IDLE_S seconds after init, then moving CALLS
# all_gathers of random sizes up to 1 MiB per rank. Prints each process's CPU use in % of one
# core for the idle window (from /proc/<pid>/stat, utime + stime), and the busy phase's time.
# Usage: perf/proxy_cpu.sh BUILD_DIR     Environment: IDLE_S (5), CALLS (2000)
set -uo pipefail
build=${1:?usage: proxy_cpu.sh BUILD_DIR}
bin=$build/test/xccl_netns_rank
idle_s=${IDLE_S:-5}
calls=${CALLS:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
for r in 0 1; do
  XCCL_HOSTID=node$r XCCL_SOCKET_IFNAME=lo XCCL_NETNS_RANK=$r XCCL_NETNS_NRANKS=2 \
    XCCL_NETNS_ID_FILE="$work/id" XCCL_NETNS_CALLS=$calls XCCL_NETNS_SEED=7 \
    XCCL_NETNS_IDLE_MS=$((idle_s * 1000 + 500)) "$bin" >"$work/out.$r" 2>&1 &
done
# Both idle: start the window 0.25 s after both said so.
for r in 0 1; do
  until grep -q idle "$work/out.$r" 2>/dev/null; do sleep 0.05; done
done
sleep 0.25
pids=($(awk '/idle/ {print $NF}' "$work/out.0" "$work/out.1"))
before=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
sleep "$idle_s"
after=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
start=$(date +%s.%N)
wait
end=$(date +%s.%N)
for r in 0 1; do
  awk -v b="${before[$r]}" -v a="${after[$r]}" -v t="$ticks" -v s="$idle_s" -v r=$r \
    'BEGIN {printf "rank %d idle: %.2f%% of a core over %d s\n", r, 100 * (a - b) / t / s, s}'
done
awk -v s="$start" -v e="$end" -v c="$calls" \
  'BEGIN {printf "busy: %d all_gathers (random sizes up to 1 MiB per rank) in %.2f s\n", c, e - s}'
cat "$work/out.0" "$work/out.1" | grep -v idle
