#!/usr/bin/env bash
# Builds xccl and runs every test (unit + multi-rank on the host platform; the gpu label too
# where a GPU is present). Usage: scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
./scripts/deps.sh
cmake -S . -B "$build" -DXCCL_PLATFORM="${XCCL_PLATFORM:-auto}" >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure --timeout 300
