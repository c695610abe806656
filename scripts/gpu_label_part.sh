#!/usr/bin/env bash
# One part of the gpu test label from a build made beforehand (carried to the device), so that the
# whole label fits several device calls of at most 10 minutes: the label's tests are dealt
# round-robin into PARTS parts (slow groups spread over all of them) and part PART runs with
# --output-on-failure. The log goes to $OUT/gpu_part<PART>.txt; the last lines printed are the
# count and every failed test.
# Usage: PARTS=3 PART=1 scripts/gpu_label_part.sh [build-dir]     (build-dir: build-cuda)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
parts=${PARTS:-3}
part=${PART:-1}
out=${OUT:-/tmp}
budget=${GPU_PART_SECONDS:-560}
export NCCL_NVLS_ENABLE=0  # never NVLink multicast here
mapfile -t names < <(ctest --test-dir "$build" -L gpu -N | sed -nE 's/^ *Test +#[0-9]+: ([^ ]+).*/\1/p')
[ "${#names[@]}" -gt 0 ] || { echo "gpu_label_part: no gpu tests in $build"; exit 2; }
regex=""
count=0
for i in "${!names[@]}"; do
  [ $((i % parts)) -eq $((part - 1)) ] || continue
  name=${names[$i]//./\\.}
  # A prefix (ctest's regex allows few groups; a parameterised name goes on with "  # GetParam()"):
  # a name that prefixes another only runs that one twice.
  regex+="${regex:+|}^${name}"
  count=$((count + 1))
done
log=$out/gpu_part$part.txt
echo "gpu_label_part: part $part of $parts, $count of ${#names[@]} gpu tests" | tee "$log"
timeout "$budget" ctest --test-dir "$build" -L gpu -R "$regex" --timeout 200 --output-on-failure \
  >>"$log" 2>&1
rc=$?
grep -E "tests passed|tests failed" "$log"
sed -n '/The following tests FAILED/,$p' "$log"
[ $rc -eq 124 ] && echo "gpu_label_part: stopped at ${budget} s; the rest of the part did not run"
exit $rc
