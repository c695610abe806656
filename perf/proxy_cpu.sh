#!/usr/bin/env bash
# The proxy's CPU use: two processes of one machine as two nodes (XCCL_HOSTID a and b, the net
# socket backend over loopback), held idle for IDLE_S seconds after init, then making CALLS
# calls (every tenth a barrier, the others all_gathers of BLOCK_BYTES per rank, the last one's
# data checked; default 17 calls of 64 MiB: 16 all_gathers, 1 GiB into each process over the
# network; BLOCK_BYTES=0: random sizes up to 1 MiB, every call checked). Prints, per process, its
# CPU use in % of one core while idle and while busy (from /proc/<pid>/stat, utime + stime), the
# proxy thread's share of the busy phase (/proc/<pid>/task/*/comm = xccl-proxy), and the busy
# phase's time and rate.
# Usage: perf/proxy_cpu.sh BUILD_DIR     Environment: IDLE_S (5), CALLS (17), BLOCK_BYTES (64 MiB)
set -uo pipefail
build=${1:?usage: proxy_cpu.sh BUILD_DIR}
bin=$build/test/xccl_netns_rank
idle_s=${IDLE_S:-5}
calls=${CALLS:-17}
block=${BLOCK_BYTES:-67108864}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
proxy_ticks() {  # the proxy thread of process $1 (0 where it has none or is unnamed)
  local t total=0
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = xccl-proxy ] || continue
    total=$((total + $(awk '{print $14 + $15}' "$t/stat")))
  done
  echo $total
}
for r in 0 1; do
  XCCL_HOSTID=node$r XCCL_SOCKET_IFNAME=lo XCCL_NETNS_RANK=$r XCCL_NETNS_NRANKS=2 \
    XCCL_NETNS_ID_FILE="$work/id" XCCL_NETNS_CALLS=$calls XCCL_NETNS_SEED=7 \
    XCCL_NETNS_BLOCK_BYTES=$block XCCL_NETNS_IDLE_MS=$((idle_s * 1000 + 500)) \
    XCCL_NETNS_HOLD_MS=1500 "$bin" >"$work/out.$r" 2>&1 &
done
# Both idle: start the window 0.25 s after both said so.
for r in 0 1; do
  until grep -q idle "$work/out.$r" 2>/dev/null; do sleep 0.05; done
done
sleep 0.25
pids=($(awk '/idle/ {print $NF}' "$work/out.0" "$work/out.1"))
idle0=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
pidle0=($(proxy_ticks "${pids[0]}") $(proxy_ticks "${pids[1]}"))
sleep "$idle_s"
idle1=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
pidle1=($(proxy_ticks "${pids[0]}") $(proxy_ticks "${pids[1]}"))
# The busy phase starts when the idle hold ends (0.25 s after the window) and ends at "calls
# done" (the data is checked after that, outside the window).
sleep 0.25
start=$(date +%s.%N)
busy0=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
proxy0=($(proxy_ticks "${pids[0]}") $(proxy_ticks "${pids[1]}"))
for r in 0 1; do
  until grep -qE "calls done|ok|failed" "$work/out.$r" 2>/dev/null; do sleep 0.01; done
done
end=$(date +%s.%N)
busy1=($(cpu_ticks "${pids[0]}") $(cpu_ticks "${pids[1]}"))
proxy1=($(proxy_ticks "${pids[0]}") $(proxy_ticks "${pids[1]}"))
wait
secs=$(awk -v s="$start" -v e="$end" 'BEGIN {print e - s}')
for r in 0 1; do
  awk -v b="${idle0[$r]}" -v a="${idle1[$r]}" -v bb="${busy0[$r]}" -v ba="${busy1[$r]}" \
    -v pb="${proxy0[$r]}" -v pa="${proxy1[$r]}" -v ib="${pidle0[$r]}" -v ia="${pidle1[$r]}" \
    -v t="$ticks" -v s="$idle_s" -v d="$secs" -v r=$r \
    'BEGIN {printf "rank %d idle: %.2f%% of a core over %d s (the proxy thread %.2f%%); busy: " \
            "%.0f%% of a core, of which the proxy thread %.0f%%\n", r, 100 * (a - b) / t / s, s,
            100 * (ia - ib) / t / s, 100 * (ba - bb) / t / d, 100 * (pa - pb) / t / d}'
done
awk -v d="$secs" -v c="$calls" -v b="$block" \
  'BEGIN {g = c - int(c / 10); printf "busy: %d all_gathers of %d bytes per rank (world 2) and " \
          "%d barriers in %.2f s: %.2f GB/s into each process\n", g, b, c - g, d, g * b / d / 1e9}'
cat "$work/out.0" "$work/out.1" | grep -vE "idle|calls done"
