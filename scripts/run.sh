#!/usr/bin/env bash
# Builds xccl and runs the main job, all_gather_perf: on the GPUs when there are (one rank per
# GPU as threads of one process; on a single GPU, 4 ranks sharing it), else over 4 forked ranks
# on the host platform. Extra arguments replace the default flags.
# Usage: scripts/run.sh [all_gather_perf flags]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
./scripts/deps.sh
cmake -S . -B "$build" -DXCCL_PLATFORM="${XCCL_PLATFORM:-auto}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target all_gather_perf
if [ $# -eq 0 ]; then
  gpus=0
  if [ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null; then
    gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  fi
  if [ "$gpus" -ge 2 ]; then
    set -- -t "$gpus" -b 8 -e 1G -f 4
  elif [ "$gpus" -eq 1 ]; then
    set -- -t 4 -b 8 -e 1G -f 4
  else
    set -- -np 4 -b 8 -e 64M -f 4
  fi
fi
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
exec "$build/perf/all_gather_perf" "$@"
