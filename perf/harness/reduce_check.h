// The data a checked reduction (reduce_scatter_perf, all_reduce_perf) moves, and the comparison
// after it. Element j of rank r's input vector is a pure function of (seed, r, j), so every rank
// computes the reference of its own result, the reduction of every rank's element j, without any
// exchange: exactly for integers (wrapping at the type's width; avg the wrapped sum divided by the
// rank count, truncated), in double for floats. Float inputs are small integers times powers of
// two with mixed signs, narrow enough that every partial sum and product is exact in the
// accumulator include/xccl.h names (fp32, fp64 for fp64), so the reference is exact and a
// result passes only within one rounding of it in the output type; max and min also meet NaNs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "xccl.h"

namespace xccl_perf {

class ReduceCheck {
 public:
  ReduceCheck(xcclDataType_t type, xcclRedOp_t op, int nranks, uint64_t seed);

  // Elements [first, first + count) of rank's input vector, into host memory at dst.
  void FillInput(void* dst, int rank, size_t first, size_t count) const;
  // How many of the `count` elements at `got` differ, bitwise, from FillInput's (a send buffer
  // the call must leave alone).
  size_t CountInputWrong(const void* got, int rank, size_t first, size_t count) const;

  // Values the check refuses as result elements [first, first + count): NaN where the result is
  // a number, a number where it is NaN, the complement of the expected integer.
  void FillPoison(void* dst, size_t first, size_t count) const;
  // How many of the `count` elements at `got`, result elements [first, first + count), are not
  // the reference (integers) or not within one rounding of it (floats, any NaN where it is NaN).
  size_t CountWrong(const void* got, size_t first, size_t count) const;

 private:
  // What result element j may be: integers exactly `bits`; floats NaN, or a value in
  // [down, up].
  struct Expected {
    uint64_t bits;
    bool nan;
    double down;
    double up;
  };

  uint64_t Hash(int rank, size_t index) const;
  // Input element `index` of `rank`: an integer type's bits, a float type's value (NaN for a
  // NaN), and either as the bits stored in memory.
  uint64_t IntegerInput(int rank, size_t index) const;
  double FloatInput(int rank, size_t index) const;
  uint64_t InputBits(int rank, size_t index) const;
  Expected Reference(size_t index) const;

  xcclDataType_t type_;
  xcclRedOp_t op_;
  int nranks_;
  bool float_;
  size_t word_;
  uint64_t mask_;                    // the type's bits in a uint64_t
  int magnitude_bits_;               // sum, avg, max, min: |integer part| < 2^magnitude_bits_
  bool three_halves_;                // prod: 1.5 may be a factor (the product stays exact)
  std::vector<uint64_t> rank_base_;  // per rank, where its hash sequence starts
};

}  // namespace xccl_perf
