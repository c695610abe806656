#!/usr/bin/env bash
# perf/fit_chunk_rule.py on a synthetic table whose answers are worked out by hand:
#   world 4, N 6400 (25 column tiles), 3 peers:
#     M 4096 (4 row tiles per rank): c=4 and c=3 give 1*25*3 = 75, c=2 gives 150; best c=4.
#       threshold 140 picks c=2 (80 us against 70: a miss); any threshold <= 75 picks c=4.
#     M 8192 (8 row tiles): c=4 gives 150; best c=4; threshold 140 picks it.
#   world 2, N 256 (1 column tile), 1 peer, M 4096 (8 row tiles per rank): c=4 and c=3 give
#     2, c=2 gives 4; best c=1, which only a threshold above 4 picks.
# So 140 (passed as --current) gets 2 of 3; exactly the thresholds 5 to 75 get all 3, and the script must
# rank those first (lowest first: 5, then 75, the other score-changing candidates); 0 gets 2.
set -uo pipefail
script=$1
sample=$2
out=$(python3 "$script" --current 140 "$sample" 2>&1) || { echo "fit_chunk_rule exited $?: $out"; exit 1; }
echo "$out"
status=0
grep -q "^# 3 cells" <<<"$out" || { echo "FAIL: expected 3 cells"; status=1; }
grep -q "^threshold 140 (current): 2/3 right, 1 missed, 0 unmeasured" <<<"$out" ||
  { echo "FAIL: the current threshold's score"; status=1; }
grep -q "rule c=2 (80.0 us), best c=4 (70.0 us)" <<<"$out" ||
  { echo "FAIL: the current threshold's miss"; status=1; }
grep -q "^threshold 5: 3/3 right" <<<"$out" || { echo "FAIL: threshold 5 gets all 3"; status=1; }
grep -q "^threshold 75: 3/3 right" <<<"$out" || { echo "FAIL: threshold 75 gets all 3"; status=1; }
grep -q "^threshold 0: 2/3 right" <<<"$out" || { echo "FAIL: threshold 0 gets 2 of 3"; status=1; }
if grep -qE "^threshold (7[6-9]|[89][0-9]|[0-9]{3,}|[0-4]): 3/3" <<<"$out"; then
  echo "FAIL: a threshold outside 5-75 claimed all 3"
  status=1
fi
exit $status
