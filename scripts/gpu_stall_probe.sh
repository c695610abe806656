#!/usr/bin/env bash
# On a GPU machine: runs one gpu test (a gtest filter) from a carried build, and if it is still
# running after PROBE_AFTER_S seconds, records what every thread is doing: its kernel wait channel
# and stack (/proc), then, where a debugger is found (gdb, else cuda-gdb), every thread's
# backtrace. The attach is killed after PROBE_GDB_S seconds and the test is resumed (an attach
# killed by `timeout` can leave the test stopped, and the call waits out its whole limit: seen on
# a lent H100, 2026-12-06). The test is killed after PROBE_KILL_S seconds. The log goes to
# $OUT/stall-NAME.txt; a summary line and the test's rank messages are printed.
# Usage: [PROBE_AFTER_S=6] [PROBE_KILL_S=70] scripts/gpu_stall_probe.sh NAME BUILD-DIR FILTER
#        (extra environment, e.g. XCCL_ZERO_COPY=0 XCCL_TIMEOUT_MS=10000, passes through)
set -uo pipefail
cd "$(dirname "$0")/.."
name=$1 build=$2 filter=$3
log=${OUT:-/tmp}/stall-$name.txt
debugger=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)

dump() {  # dump PID: every thread's state into the log
  echo "== $(date +%T) pid $1 (debugger: ${debugger:-none})"
  for task in /proc/"$1"/task/*; do
    echo "-- tid ${task##*/} $(cat "$task"/comm) wchan=$(cat "$task"/wchan 2>/dev/null)"
    head -6 "$task"/stack 2>/dev/null
  done
  if [ -n "$debugger" ]; then
    DEBUGINFOD_URLS= timeout -s KILL "${PROBE_GDB_S:-25}" "$debugger" -nx -p "$1" -batch \
      -iex "set debuginfod enabled off" -iex "set auto-load off" -ex "set pagination off" \
      -ex "thread apply all bt 16" -ex detach 2>&1 | grep -E "^Thread|^#" | cut -c1-220
    kill -CONT "$1" 2>/dev/null
  fi
}

LD_LIBRARY_PATH=$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$build/test/xccl_gpu_tests" --gtest_filter="$filter" >"$log.run" 2>&1 &
pid=$!
start=$SECONDS
dumped=0
while kill -0 "$pid" 2>/dev/null; do
  sleep 0.5
  if [ $dumped -eq 0 ] && [ $((SECONDS - start)) -ge "${PROBE_AFTER_S:-6}" ]; then
    dump "$pid" >"$log.stack"
    dumped=1
  fi
  if [ $((SECONDS - start)) -ge "${PROBE_KILL_S:-70}" ]; then
    kill -KILL "$pid"
    echo "gpu_stall_probe: $name killed after ${PROBE_KILL_S:-70} s"
    break
  fi
done
wait "$pid"
rc=$?
echo "gpu_stall_probe: $name exit $rc after $((SECONDS - start)) s; $(grep -c '^\[       OK' "$log.run") ok," \
  "$(grep -c '^\[  FAILED' "$log.run") failed; stacks taken: $dumped"
grep -hE "rank [0-9]+:|XCCL WARN" "$log.run" | cut -c1-240 | sort | uniq -c | sort -rn | head -8
cat "$log.run" "$log.stack" 2>/dev/null >"$log"
rm -f "$log.run" "$log.stack"
