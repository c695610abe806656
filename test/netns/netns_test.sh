#!/usr/bin/env bash
# Ranks in network namespaces joined by veth pairs, each namespace its own node (XCCL_HOSTID),
# bound by XCCL_SOCKET_IFNAME; traffic stays inside the namespaces this script makes. Cases:
#   2 nodes x 2 ranks and 3 nodes (2+1+1): every call validated, all ranks ok, all_gathers and
#   then every op in turn (reduce_scatter, all_reduce, broadcast too);
#   containers: ranks sharing a hostname but each with its own /dev/shm, IPC and pid namespace
#   (no XCCL_HOSTID) find that they cannot share memory and run over the network;
#   a rank killed mid-reduction, and the link brought down mid-reduction: every survivor fails
#   within 2 s of the event, naming a peer.
# Skips (exit 77, saying why) where namespaces cannot be made (not root, no iproute2).
# Usage: netns_test.sh RANK_BINARY
set -uo pipefail
rank_bin=${1:?usage: netns_test.sh RANK_BINARY}
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "SKIP: needs root and iproute2 to make network namespaces"
  exit 77
fi
tag=x$$
work=$(mktemp -d)
spaces=()
cleanup() {
  for ns in "${spaces[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
  for ns in "${spaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
# make_nodes N: namespaces n0..n(N-1) of this run, n0 joined to each other by its own veth
# (n0 is the hub: 10.231.<i>.1 on its side, 10.231.<i>.2 in n<i>).
make_nodes() {
  for ((i = 0; i < $1; ++i)); do
    ip netns add "xccl-$tag-n$i" || { echo "SKIP: ip netns add failed"; exit 77; }
    spaces+=("xccl-$tag-n$i")
    ip -n "xccl-$tag-n$i" link set lo up
  done
  for ((i = 1; i < $1; ++i)); do
    ip link add "h$tag$i" type veth peer name "l$tag$i" || { echo "SKIP: veth failed"; exit 77; }
    ip link set "h$tag$i" netns "xccl-$tag-n0"
    ip link set "l$tag$i" netns "xccl-$tag-n$i"
    ip -n "xccl-$tag-n0" addr add "10.231.$i.1/24" dev "h$tag$i"
    ip -n "xccl-$tag-n$i" addr add "10.231.$i.2/24" dev "l$tag$i"
    ip -n "xccl-$tag-n0" link set "h$tag$i" up
    ip -n "xccl-$tag-n$i" link set "l$tag$i" up
    # Spokes reach each other through the hub.
    ip -n "xccl-$tag-n$i" route add 10.231.0.0/16 via "10.231.$i.1"
  done
  ip netns exec "xccl-$tag-n0" sysctl -qw net.ipv4.ip_forward=1
}
# run_ranks CASE CALLS NODE_OF_RANK...: starts one process per rank in its node's namespace.
pids=()
run_ranks() {  # XCCL_NETNS_OPS from the caller's OPS (all_gather when unset)
  local case=$1 calls=$2
  shift 2
  local nranks=$# seed=$RANDOM  # one seed per run: the ranks draw the same sizes
  rm -f "$work/id" "$work/$case".*
  pids=()
  local r=0
  for node in "$@"; do
    local ifname="h$tag"
    [ "$node" -ne 0 ] && ifname="=l$tag$node"
    ip netns exec "xccl-$tag-n$node" env XCCL_HOSTID="node$node" XCCL_SOCKET_IFNAME="$ifname" \
      XCCL_NETNS_RANK=$r XCCL_NETNS_NRANKS=$nranks XCCL_NETNS_CALLS="$calls" \
      XCCL_NETNS_ID_FILE="$work/id" XCCL_NETNS_SEED=$seed XCCL_TIMEOUT_MS=30000 \
      XCCL_NETNS_OPS="${OPS:-}" \
      "$rank_bin" >"$work/$case.$r" 2>&1 &
    pids+=($!)
    r=$((r + 1))
  done
}
failed=0
check() {  # check NAME COND MESSAGE
  if eval "$2"; then echo "ok   $1"; else echo "FAIL $1: $3"; failed=1; fi
}
wait_all() { for p in "${pids[@]}"; do wait "$p"; done; }

shm_before=$(ls /dev/shm | grep -c '^xccl-')
make_nodes 3
# Correctness: 2 nodes x 2 ranks, then 2+1+1 (ranks 0,1 on n0; 2 on n1; 3 on n2).
run_ranks two 300 0 0 1 1
wait_all
check "2x2: every rank ok" '[ "$(grep -l "ok 300" "$work"/two.* | wc -l)" -eq 4 ]' \
  "$(cat "$work"/two.*)"
run_ranks three 300 0 0 1 2
wait_all
check "2+1+1: every rank ok" '[ "$(grep -l "ok 300" "$work"/three.* | wc -l)" -eq 4 ]' \
  "$(cat "$work"/three.*)"
# Every op in turn (all_gather, reduce_scatter, all_reduce, broadcast, barrier), 2x2 and 2+1+1.
OPS=mixed run_ranks mix 200 0 0 1 1
wait_all
check "2x2 mixed: every rank ok" '[ "$(grep -l "ok 200" "$work"/mix.* | wc -l)" -eq 4 ]' \
  "$(cat "$work"/mix.*)"
OPS=mixed run_ranks mix3 200 0 0 1 2
wait_all
check "2+1+1 mixed: every rank ok" '[ "$(grep -l "ok 200" "$work"/mix3.* | wc -l)" -eq 4 ]' \
  "$(cat "$work"/mix3.*)"

# Containers that share a hostname but not /dev/shm, IPC or pid namespace (each rank its own, as
# pods with host networking have; ranks 0 and 1 also share a network namespace): no XCCL_HOSTID,
# so the ranks must find for themselves that they cannot share memory; every call over the
# network, all validated.
rm -f "$work/id"
pids=()
seed=$RANDOM
for r in 0 1 2 3; do
  node=$((r / 2))
  ifname="h$tag"
  [ "$node" -ne 0 ] && ifname="=l$tag$node"
  ip netns exec "xccl-$tag-n$node" unshare --mount --ipc --pid --fork sh -c \
    'mount -t tmpfs tmpfs /dev/shm && exec "$@"' sh env XCCL_SOCKET_IFNAME="$ifname" \
    XCCL_DEBUG=INFO XCCL_NETNS_RANK=$r XCCL_NETNS_NRANKS=4 XCCL_NETNS_CALLS=100 \
    XCCL_NETNS_ID_FILE="$work/id" XCCL_NETNS_SEED=$seed XCCL_TIMEOUT_MS=30000 \
    "$rank_bin" >"$work/pods.$r" 2>&1 &
  pids+=($!)
done
wait_all
check "containers: every rank ok" '[ "$(grep -l "ok 100" "$work"/pods.* | wc -l)" -eq 4 ]' \
  "$(cat "$work"/pods.*)"
check "containers: rank 0 says rank 1 is in another container" \
  'grep -q "rank 1 runs on this host .* in another container" "$work/pods.0"' \
  "$(grep -h "container\|COMPLETE" "$work"/pods.* | head -4)"

# A rank killed mid-run (rank 3, on n1): the survivors fail within 2 s, naming a peer; the calls
# are reductions, so it dies inside one.
OPS=reductions run_ranks kill 1000000 0 0 1 1
sleep 2
kill -9 "$(ip netns pids "xccl-$tag-n1" | tail -1)"
wait_all
for r in 0 1 2 3; do
  line=$(cat "$work/kill.$r" 2>/dev/null)
  [ -z "$line" ] && continue  # the killed one
  check "kill: rank $r failed naming a rank" 'grep -q "failed after .* rank [0-9]" <<<"$line"' "$line"
  secs=$(sed -n 's/.*calls, \([0-9.]*\) s into.*/\1/p' <<<"$line")
  check "kill: rank $r noticed within 2 s" 'awk -v s="${secs:-99}" "BEGIN {exit !(s < 2.0)}"' "$line"
done

# The link to n1 brought down mid-run: everyone fails within 2 s (heartbeats stop).
OPS=reductions run_ranks cut 1000000 0 0 1 1
sleep 2
ip -n "xccl-$tag-n1" link set "l${tag}1" down
wait_all
for r in 0 1 2 3; do
  line=$(cat "$work/cut.$r")
  check "cut: rank $r failed naming a rank" 'grep -q "failed after .* rank [0-9]" <<<"$line"' "$line"
  secs=$(sed -n 's/.*calls, \([0-9.]*\) s into.*/\1/p' <<<"$line")
  check "cut: rank $r noticed within 2 s" 'awk -v s="${secs:-99}" "BEGIN {exit !(s < 2.0)}"' "$line"
done
# Nothing left behind: no shared-memory window, no rank process in the namespaces.
sleep 0.2
check "no xccl shared memory left" '[ "$(ls /dev/shm | grep -c "^xccl-")" -le "$shm_before" ]' \
  "$(ls /dev/shm | grep '^xccl-')"
for ns in "${spaces[@]}"; do
  check "no process left in $ns" '[ -z "$(ip netns pids "$ns")" ]' "$(ip netns pids "$ns")"
done
exit $failed
