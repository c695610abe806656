#!/usr/bin/env bash
# Builds xccl and runs the main job: all_gather_perf over 4 forked ranks on the host platform
# (the GPUs, one rank each, once a GPU platform is built). Extra arguments go to all_gather_perf.
# Usage: scripts/run.sh [all_gather_perf flags]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
./scripts/deps.sh
cmake -S . -B "$build" -DXCCL_PLATFORM="${XCCL_PLATFORM:-auto}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target all_gather_perf
if [ $# -eq 0 ]; then set -- -np 4 -b 8 -e 64M -f 4; fi
exec "$build/perf/all_gather_perf" "$@"
