#!/usr/bin/env bash
# temporary: one device call (tests, then a few perf rows)
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
B=build-cuda
timeout ${TEST_S:-330} ctest --test-dir $B -L gpu -R Reduce --timeout 90 --output-on-failure > $OUT/tests.txt 2>&1
grep -E "tests passed|tests failed" $OUT/tests.txt; sed -n '/The following tests FAILED/,$p' $OUT/tests.txt
grep -cE "Test +#" $OUT/tests.txt
timeout 20 $B/perf/copy_roofline -b 64M -e 256M -f 4 > $OUT/perf.txt 2>&1
for n in 8 2; do for p in reduce_scatter all_reduce; do
  echo "## $p t$n" >> $OUT/perf.txt
  timeout 45 $B/perf/${p}_perf -t $n -b 64M -e 256M -f 4 -n 10 -w 3 --repeats 3 -d bf16 >> $OUT/perf.txt 2>&1
done; done
echo "## all_reduce small t8" >> $OUT/perf.txt
timeout 30 $B/perf/all_reduce_perf -t 8 -b 8 -e 64K -f 8 -n 100 -w 10 --repeats 3 >> $OUT/perf.txt 2>&1
grep -E "^##|^ +[0-9]" $OUT/perf.txt | awk '/^##/{print; next} {print $1, $6, $9, $10, $13}'
