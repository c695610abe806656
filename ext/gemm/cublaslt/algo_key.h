// The cublaslt plugin's algorithm cache keys, and the lookup of a shape's algorithm across m.
// Header-only and free of CUDA, so that the host unit tests check it.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

#include "xccl_gemm.h"

namespace xccl_cublaslt {

// A problem (m, n, k, leading dimensions, types, scale mode) and the row count of a run of it.
// The scale mode is part of it: ptpc and block scales of one shape are different cuBLASLt
// problems (different kernels), which must never share a cached algorithm.
struct AlgoKey {
  int64_t rows, m, n, k, lda, ldb, ldc;
  int in, out, scale;
  bool operator<(const AlgoKey& o) const {
    return std::tie(rows, m, n, k, lda, ldb, ldc, in, out, scale) <
           std::tie(o.rows, o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.in, o.out, o.scale);
  }
};

// AlgoKey::rows of the algorithm chosen for the whole problem (not a band's row count).
constexpr int64_t kShapeAlgo = -1;

inline AlgoKey KeyOf(const xcclGemmProblem& p, int64_t rows) {
  return AlgoKey{rows,
                 p.m,
                 p.n,
                 p.k,
                 p.lda,
                 p.ldb,
                 p.ldc,
                 static_cast<int>(p.a_type),
                 static_cast<int>(p.c_type),
                 static_cast<int>(p.scale_mode)};
}

// Whether two keys differ at most in m.
inline bool SameButM(const AlgoKey& a, const AlgoKey& b) {
  return std::tie(a.rows, a.n, a.k, a.lda, a.ldb, a.ldc, a.in, a.out, a.scale) ==
         std::tie(b.rows, b.n, b.k, b.lda, b.ldb, b.ldc, b.in, b.out, b.scale);
}

// The whole-problem algorithm for p's shape in `algos`: the one chosen for p.m, else the one
// chosen for the largest other m of the same n, k, strides, types and scale mode (an op chooses at
// m_max and then runs any m up to it), else nullptr.
template <typename Algo>
const Algo* ShapeAlgoOf(const std::map<AlgoKey, Algo>& algos, const xcclGemmProblem& p) {
  const AlgoKey want = KeyOf(p, kShapeAlgo);
  auto exact = algos.find(want);
  if (exact != algos.end()) return &exact->second;
  const Algo* found = nullptr;
  int64_t found_m = -1;
  for (const auto& [key, algo] : algos) {
    if (SameButM(key, want) && key.m > found_m) {
      found = &algo;
      found_m = key.m;
    }
  }
  return found;
}

}  // namespace xccl_cublaslt
