#!/usr/bin/env bash
# One of nccl-tests' own binaries (all_gather_perf, all_reduce_perf, reduce_scatter_perf, ...)
# over the shim (build/shim/libnccl.so.2) and over NCCL, one after the other in one call, on
# GPU 0 (world 1: one process, -g 1). With NP=n, instead: mpirun -np n processes sharing GPU 0
# (NCCL_TESTS_DEVICE=0; under MPS, started here if it is not running) over the shim alone, since
# NCCL refuses ranks sharing a GPU; the binary must then be nccl-tests built with MPI=1. The
# binaries come built against nccl.h on another machine (the lent one cannot fetch nccl-tests):
# make -C nccl-tests/src NCCL_HOME=<nccl.h + the shim's libnccl.so> [MPI=1 MPI_HOME=...] ...
# Usage: [NP=n] scripts/nccl_tests_over_shim.sh <nccl-tests binary> [build-dir] [nccl-tests flags...]
set -uo pipefail
bin=${1:?an nccl-tests binary}
build=${2:-build-gpu}
shift 2 2>/dev/null || shift $#
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-b 8 -e 512M -f 8 -g 1 -n 50 -w 10)
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
name=$(basename "$bin")
if [ -n "${NP:-}" ]; then
  started=0
  if ! echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then
    nvidia-cuda-mps-control -d && started=1
  fi
  echo "## nccl-tests $name over shim, mpirun -np $NP sharing GPU 0"
  timeout 180 mpirun --allow-run-as-root --oversubscribe -np "$NP" -x NCCL_TESTS_DEVICE=0 \
    -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES -x XCCL_DEBUG \
    -x LD_LIBRARY_PATH="$build/shim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "${flags[@]}"
  rc=$?
  [ $started = 1 ] && echo quit | nvidia-cuda-mps-control
  exit $rc
fi
vendor_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
rc=0
for run in shim vendor; do
  dir=$build/shim
  [ "$run" = vendor ] && dir=$vendor_dir
  echo "## nccl-tests $name over $run ($dir)"
  LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 180 "$bin" "${flags[@]}" || rc=1
done
exit $rc
