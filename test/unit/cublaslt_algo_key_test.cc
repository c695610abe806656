// The cublaslt plugin's lookup of a shape's algorithm across m (ext/gemm/cublaslt/algo_key.h):
// a problem whose m has no choice of its own gets the choice made for the largest m of the same
// shape, never one of another shape or a band's row count (a new algorithm inside a call loads a
// kernel there, which stalled ranks sharing a GPU: docs/perf-history.md, fourth round).
#include <gtest/gtest.h>

#include <map>

#include "../ext/gemm/cublaslt/algo_key.h"
#include "common/float_formats.h"
#include "xccl_gemm.h"

namespace {

using xccl_cublaslt::AlgoKey;
using xccl_cublaslt::KeyOf;
using xccl_cublaslt::kShapeAlgo;
using xccl_cublaslt::ShapeAlgoOf;

// The plugin keys on shape, strides and types; the output type is bf16 throughout.
xcclGemmProblem Problem(int64_t m, int64_t n, int64_t k, xcclDataType_t in) {
  return xccl_test::DenseProblem(m, n, k, in, xcclBfloat16);
}

TEST(CublasltAlgoKey, AnotherMTakesTheLargestChosenMOfTheSameShape) {
  std::map<AlgoKey, int> algos;
  // Chosen for m 4096 and 8192 of one shape; a band's row count of m 16384 (not a shape
  // choice); the same n at another k; another type at m 32768.
  algos[KeyOf(Problem(4096, 6400, 7168, xcclFloat8e4m3), kShapeAlgo)] = 1;
  algos[KeyOf(Problem(8192, 6400, 7168, xcclFloat8e4m3), kShapeAlgo)] = 2;
  algos[KeyOf(Problem(16384, 6400, 7168, xcclFloat8e4m3), 2048)] = 3;
  algos[KeyOf(Problem(16384, 6400, 4096, xcclFloat8e4m3), kShapeAlgo)] = 4;
  algos[KeyOf(Problem(32768, 6400, 7168, xcclBfloat16), kShapeAlgo)] = 5;

  auto pick = [&](int64_t m, int64_t n, int64_t k, xcclDataType_t in) {
    const int* found = ShapeAlgoOf(algos, Problem(m, n, k, in));
    return found == nullptr ? 0 : *found;
  };
  EXPECT_EQ(pick(4096, 6400, 7168, xcclFloat8e4m3), 1);  // its own choice first
  EXPECT_EQ(pick(8192, 6400, 7168, xcclFloat8e4m3), 2);
  EXPECT_EQ(pick(2048, 6400, 7168, xcclFloat8e4m3), 2);   // the largest m, not the closest
  EXPECT_EQ(pick(16384, 6400, 7168, xcclFloat8e4m3), 2);  // a band's row count is no choice
  EXPECT_EQ(pick(1024, 6400, 4096, xcclFloat8e4m3), 4);
  EXPECT_EQ(pick(1024, 6400, 7168, xcclBfloat16), 5);
  EXPECT_EQ(pick(1024, 3840, 7168, xcclFloat8e4m3), 0);  // no choice for that n
  EXPECT_EQ(pick(1024, 6400, 7168, xcclFloat16), 0);     // nor for that type
  xcclGemmProblem other_ld = Problem(1024, 6400, 7168, xcclFloat8e4m3);
  other_ld.lda = 8192;
  EXPECT_EQ(ShapeAlgoOf(algos, other_ld), nullptr);  // nor for other strides
}

}  // namespace
