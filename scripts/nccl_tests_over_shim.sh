#!/usr/bin/env bash
# nccl-tests' own all_gather_perf over the shim (build/shim/libnccl.so.2) and over NCCL, one
# after the other in one call, on GPU 0 (world 1 by default: the shim's copy-or-nothing against
# NCCL's). The binary comes built against nccl.h on another machine (the lent one cannot fetch
# nccl-tests): make -C nccl-tests/src NCCL_HOME=<nccl.h + the shim's libnccl.so> ...
# Usage: scripts/nccl_tests_over_shim.sh <all_gather_perf> [build-dir] [nccl-tests flags...]
set -uo pipefail
bin=${1:?nccl-tests all_gather_perf}
build=${2:-build-gpu}
shift 2 2>/dev/null || shift $#
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-b 8 -e 512M -f 8 -g 1 -n 50 -w 10)
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
vendor_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
for run in shim vendor; do
  dir=$build/shim
  [ "$run" = vendor ] && dir=$vendor_dir
  echo "## nccl-tests all_gather_perf over $run ($dir)"
  LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 120 "$bin" "${flags[@]}"
done
