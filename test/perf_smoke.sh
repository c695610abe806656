#!/usr/bin/env bash
# The perf binaries on the host platform, small and quick, as the README's main job would run
# them: each must exit 0, all_gather_perf and broadcast_perf must report 0 wrong values,
# barrier_perf a latency,
# and ag_gemm_perf and gemm_rs_perf (bf16, and fp8 with block scales) a row whose largest relative
# error is within bf16's rounding (5e-3).
# Usage: perf_smoke.sh <build>/perf
set -uo pipefail
perf=$1
status=0
fail() { echo "perf smoke: $*"; status=1; }

out=$("$perf/all_gather_perf" -np 2 -b 8 -e 1M -f 16 -n 2 -w 1 2>&1) || fail "all_gather_perf exited $?"
grep -q "Out of bounds values : 0 OK" <<<"$out" || fail "all_gather_perf: wrong values or no summary: $out"
[ "$(grep -cE '^ +[0-9]+ ' <<<"$out")" -ge 3 ] || fail "all_gather_perf printed too few rows: $out"

out=$("$perf/barrier_perf" -np 4 -n 10 -w 2 --repeats 3 2>&1) || fail "barrier_perf exited $?"
grep -qE "Avg barrier latency +: [0-9.]+ us" <<<"$out" || fail "barrier_perf: no latency: $out"
# One row per sub-communicator (2, then 4 ranks): ranks outside a row must still meet its members.
[ "$(grep -cE '^ +[24] +[0-9.]+ ' <<<"$out")" -eq 2 ] || fail "barrier_perf: no rows for 2 and 4 ranks: $out"

# broadcast_perf from the last of 3 ranks, every type: each row names root 2, every value checked.
out=$("$perf/broadcast_perf" -np 3 -r 2 -b 8 -e 8K -f 32 -n 2 -w 1 -d all 2>&1) ||
  fail "broadcast_perf exited $?: $(tail -3 <<<"$out")"
grep -q "Out of bounds values : 0 OK" <<<"$out" || fail "broadcast_perf: wrong values or no summary: $out"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +none +2 ' <<<"$out")" -eq 36 ] ||
  fail "broadcast_perf: not 36 rows (12 types x 3 sizes) from root 2: $out"

# ag_gemm_row "M N K": $out must hold that row, its relative error a number within 5e-3.
ag_gemm_row() {
  local row l2
  row=$(grep -E "^ +${1// / +} " <<<"$out")
  [ -n "$row" ] || { fail "ag_gemm_perf printed no row $1: $out"; return; }
  l2=$(awk '{print $NF}' <<<"$row")
  [[ $l2 =~ ^[0-9]+(\.[0-9]+)?e[-+][0-9]+$ ]] || fail "ag_gemm_perf relative error '$l2' is not a number: $row"
  awk -v e="${l2:-1}" 'BEGIN { exit !(e + 0 <= 5e-3) }' || fail "ag_gemm_perf relative error $l2: $row"
}
out=$("$perf/ag_gemm_perf" -np 2 --m 1024 --shapes 32x16 --rounds 1 2>&1) || fail "ag_gemm_perf exited $?"
ag_gemm_row "1024 32 16"
# Block scales: K 160 is two K blocks (the last short), N 144 two column blocks, so a scale read
# from the wrong block moves the error far past 5e-3 (about 0.25 when B's K block is ignored).
out=$("$perf/ag_gemm_perf" -np 2 --m 512 --shapes 144x160 --dtype fp8-block --rounds 1 -n 1 -w 0 \
  2>&1) || fail "ag_gemm_perf --dtype fp8-block exited $?: $(tail -3 <<<"$out")"
grep -q "fp8 e4m3 (blockscale 1x128 / 128x128)" <<<"$out" || fail "ag_gemm_perf fp8-block header: $out"
ag_gemm_row "512 144 160"

# gemm_rs_row "M N K": as ag_gemm_row, for gemm_rs_perf, whose every column but split-vendor
# (fields 5 to 11: split-xccl, the four fused, gemm-only, rs-only) must have run.
gemm_rs_row() {
  local row l2
  row=$(grep -E "^ +${1// / +} " <<<"$out")
  [ -n "$row" ] || { fail "gemm_rs_perf printed no row $1: $out"; return; }
  awk '{ for (i = 5; i <= 11; ++i) if ($i !~ /^[0-9.]+$/) exit 1 }' <<<"$row" ||
    fail "gemm_rs_perf: a column did not run: $row"
  l2=$(awk '{print $NF}' <<<"$row")
  [[ $l2 =~ ^[0-9]+(\.[0-9]+)?e[-+][0-9]+$ ]] || fail "gemm_rs_perf relative error '$l2' is not a number: $row"
  awk -v e="${l2:-1}" 'BEGIN { exit !(e + 0 <= 5e-3) }' || fail "gemm_rs_perf relative error $l2: $row"
}
out=$("$perf/gemm_rs_perf" -np 2 --m 256 --shapes 32x16 --rounds 1 2>&1) || fail "gemm_rs_perf exited $?"
gemm_rs_row "256 32 16"
# Block scales over two K blocks and two column blocks, as for ag_gemm_perf above.
out=$("$perf/gemm_rs_perf" -np 2 --m 128 --shapes 144x160 --dtype fp8-block --rounds 1 -n 1 -w 0 \
  2>&1) || fail "gemm_rs_perf --dtype fp8-block exited $?: $(tail -3 <<<"$out")"
grep -q "fp8 e4m3 (blockscale 1x128 / 128x128)" <<<"$out" || fail "gemm_rs_perf fp8-block header: $out"
gemm_rs_row "128 144 160"

# Bad input ends the run at once with a non-zero status and a message naming it: a receive
# buffer no machine can give (the run used to go on allocating and filling the send buffers
# until a timeout), and ag_gemm_perf values with trailing junk or out of range.
refused() {  # expected-status command...: the command must exit with that status within 20 s
  local want=$1
  shift
  local got=0
  out=$(timeout 20 "$@" 2>&1) || got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, not $want: $(tail -2 <<<"$out")"
}
# (200000G: beyond a process's address space, refused whatever the overcommit policy)
refused 1 "$perf/all_gather_perf" -t 2 -b 200000G -e 200000G
refused 2 "$perf/all_gather_perf" -t 2 -b 1K -e 1K -R 3
# -R 1 and 2 (xcclMemAlloc memory, registered or a window) run and check their data.
for reg in 1 2; do
  out=$("$perf/all_gather_perf" -np 2 -b 1K -e 1M -f 32 -n 2 -w 1 -R $reg 2>&1) ||
    fail "all_gather_perf -R $reg exited $?: $(tail -3 <<<"$out")"
  grep -q "Out of bounds values : 0 OK" <<<"$out" || fail "all_gather_perf -R $reg: $out"
done
refused 2 "$perf/all_gather_perf" -t 2 -b 1K -e 1K -J /nonexistent-dir/x.json
# nccl-tests' own flags are taken, -m (calls per timed iteration) shown in the header.
out=$("$perf/all_gather_perf" -t 2 -b 1K -e 4K -f 2 -o sum -r 0 -p 1 -N 1 -R 0 -C 0 -T 20 -m 4 \
  -n 4 -w 1 2>&1) || fail "all_gather_perf with nccl-tests flags exited $?: $out"
grep -q "agg iters: 4 " <<<"$out" || fail "all_gather_perf -m 4: not in the header: $out"
grep -q "Out of bounds values : 0 OK" <<<"$out" || fail "all_gather_perf -m 4: wrong values: $out"
refused 2 "$perf/ag_gemm_perf" -t 2 --m 256 --rounds 3abc
refused 2 "$perf/ag_gemm_perf" -t 2 --m 256 --rounds 99999999999
refused 2 "$perf/ag_gemm_perf" -t 2 --m 256 --shapes 16x16,32x32
refused 2 "$perf/ag_gemm_perf" -t 2 --m 256 --shapes 15x16
# gemm_rs_perf: an M not a multiple of the world size (3 ranks) is refused before any rank starts.
refused 2 "$perf/gemm_rs_perf" -t 3 --m "64 96" --shapes 32x16
refused 2 "$perf/gemm_rs_perf" -t 2 --m 256 --shapes 15x16
# broadcast_perf: a root that is no rank of the run.
refused 2 "$perf/broadcast_perf" -t 2 -r 2

[ $status -eq 0 ] && echo "perf smoke: OK"
exit $status
