#!/usr/bin/env bash
# PyTorch's torch.distributed (nccl backend) with the xccl shim preloaded in place of NCCL:
# world 1 (all_gather native, all_reduce and barrier forwarded to the real NCCL), 2 and 4
# processes sharing GPU 0 (all_gather only: NCCL itself refuses ranks sharing a GPU), and,
# where the machine has several GPUs, one process per GPU with the shim and then with plain
# NCCL for the time comparison. Usage: scripts/torch_shim_check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
shim=$PWD/$build/shim/libnccl.so.2
[ -f "$shim" ] || { echo "torch_shim_check: $shim is not built"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# The real NCCL that torch would load, for the shim's forwarded calls.
real=$(python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print(os.path.join(d, "libnccl.so.2"))' 2>/dev/null)
[ -f "${real:-}" ] || real=$(ldconfig -p | awk '/libnccl.so.2 / {print $NF; exit}')
echo "torch_shim_check: shim $shim, vendor fallback ${real:-none found}"
export XCCL_NCCL_FALLBACK=${real:-none}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
rc=0
run() { "$@" || rc=1; }
# TORCH_SHIM_CHECK_SHARED lists the world sizes run with processes sharing GPU 0.
if ! env LD_PRELOAD="$shim" python3 scripts/torch_shim_check.py --world 1 --label shim; then
  rc=1
  # Narrowing down a forwarding failure: the same run with NCCL's and xccl's logs, then with the
  # vendor opened without RTLD_DEEPBIND, then with the vendor communicator made at init.
  echo "torch_shim_check: world 1 failed; diagnostics follow"
  env LD_PRELOAD="$shim" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,ENV,CALL XCCL_DEBUG=INFO \
    python3 scripts/torch_shim_check.py --world 1 --label shim-debug 2>&1 |
    grep -E "NCCL (WARN|INFO)|XCCL|shim|Error|error" | grep -v "^\[rank0\]:  " |
    grep -vE "Channel [0-9]+/[0-9]+ :|Trees \[|P2P Chunksize|CPU core|Plugin: Could not" | tail -70
  env LD_PRELOAD="$shim" XCCL_NCCL_DEEPBIND=0 python3 scripts/torch_shim_check.py --world 1 \
    --label shim-no-deepbind 2>&1 | tail -3
  env LD_PRELOAD="$shim" XCCL_NCCL_VENDOR_INIT=eager python3 scripts/torch_shim_check.py \
    --world 1 --label shim-eager-vendor 2>&1 | tail -3
fi
for n in ${TORCH_SHIM_CHECK_SHARED-2 4}; do
  run env LD_PRELOAD="$shim" python3 scripts/torch_shim_check.py --world $n --same-gpu \
    --gather-only --label shim
done
if [ "$gpus" -ge 2 ]; then
  run env LD_PRELOAD="$shim" python3 scripts/torch_shim_check.py --world "$gpus" --label shim
  run python3 scripts/torch_shim_check.py --world "$gpus" --label plain-nccl
fi
exit $rc
