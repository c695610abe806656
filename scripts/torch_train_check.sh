#!/usr/bin/env bash
# scripts/torch_train_check.py in every mode (ddp, fsdp): world 1 over plain NCCL and over the
# shim, then TORCH_TRAIN_SHARED processes (default "2 4") sharing GPU 0 over the shim under MPS
# (NCCL refuses ranks sharing a GPU, so there is no NCCL run to set beside those). The shim runs
# with XCCL_DEBUG=INFO and the lines that say which calls ran natively are kept.
# Usage: scripts/torch_train_check.sh [build-dir]   (the shim: build-dir/shim/libnccl.so.2)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
shim=$PWD/$build/shim/libnccl.so.2
[ -f "$shim" ] || { echo "torch_train_check: $shim is not built"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CUDA_VISIBLE_DEVICES=0
real=$(python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print(os.path.join(d, "libnccl.so.2"))' 2>/dev/null)
export XCCL_NCCL_FALLBACK=${real:-none}
log=${OUT:-/tmp}/torch_train.txt
: >"$log"
rc=0
check() { "$@" >>"$log" 2>&1 || rc=1; }
mps=0
nvidia-cuda-mps-control -d >>"$log" 2>&1 && mps=1
for mode in ddp fsdp; do
  check python3 scripts/torch_train_check.py --world 1 --mode "$mode" --label nccl
  check env LD_PRELOAD="$shim" XCCL_DEBUG=INFO python3 scripts/torch_train_check.py --world 1 \
    --mode "$mode" --label shim --expect-lib "$shim"
  for n in ${TORCH_TRAIN_SHARED-2 4}; do
    check env LD_PRELOAD="$shim" XCCL_DEBUG=INFO python3 scripts/torch_train_check.py --world "$n" \
      --mode "$mode" --same-gpu --expect-lib "$shim" --label "shim$([ $mps = 1 ] && echo ', MPS')"
  done
done
[ $mps = 1 ] && echo quit | nvidia-cuda-mps-control
grep -E "^torch_train_check" "$log"
echo "-- shim paths named (count, line):"
grep -oE "xccl nccl shim: INFO [^:]+: .*" "$log" | sort | uniq -c
[ $rc = 0 ] || { echo "-- last lines of the log:"; grep -vE "xccl nccl shim: INFO|XCCL INFO" "$log" | tail -30; }
exit $rc
