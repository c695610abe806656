// gemm_rs: a GEMM against this rank's inner-dimension shard, reduce-scattered over the ranks
// (docs/ARCHITECTURE.md, "gemm_rs").
//
// The op owns the partial products ([m_max][n] of out_type, laid out chunk-major as
// gemm_rs_plan.h says), for block scales a buffer of packed A scale tiles, and a GEMM plugin
// context. Split mode: one GEMM over all m rows, then ReduceScatter. Fused mode: chunk by chunk,
// the GEMM calls of every owner's rows of the chunk (the next rank's first), then the chunk's
// ReduceScatter on the caller's stream; on GPUs the GEMMs run on a side stream, so the next
// chunk's GEMMs run beside this chunk's reduce-scatter. Both give the same bytes where the plugin
// computes a band as it computes the whole, since the reductions are ReduceScatter's.
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"
#include "fused/gemm_plugin_loader.h"
#include "fused/gemm_rs/gemm_rs_plan.h"
#include "fused/gemm_streams.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

class GemmRsOp {
 public:
  struct Shape {
    int64_t n = 0, k = 0, m_max = 0;
    xcclDataType_t in_type = xcclBfloat16, out_type = xcclBfloat16;
    xcclGemmRsMode_t mode = xcclGemmRsFused;
    int pinned_chunks = 0;                           // 0: the default (GemmRsChunks)
    xcclGemmScaleMode_t scales = xcclGemmScaleNone;  // resolved: never "default"
  };

  ~GemmRsOp();

  // Validates, loads nothing (the caller hands `plugin`, null where that failed with `local`
  // recorded), allocates, and agrees with every rank (fused/create_agreement.h): a rank that
  // failed alone fails every rank at once.
  static xcclResult_t Create(Communicator* comm, const Shape& shape, xcclResult_t local,
                             std::unique_ptr<GemmPlugin> plugin, std::unique_ptr<GemmRsOp>* out);

  xcclResult_t Run(const void* a, const float* a_scale, const void* b, const float* b_scale,
                   int64_t m, void* out, xcclStream_t stream);

 private:
  GemmRsOp() = default;
  bool has_scales() const { return shape_.scales != xcclGemmScaleNone; }
  bool block_scales() const { return shape_.scales == xcclGemmScaleBlock128; }
  int64_t k_blocks() const { return (shape_.k + 127) / 128; }
  size_t in_size() const;
  size_t out_size() const;
  static xcclResult_t CheckShape(const Communicator* comm, const Shape& shape);
  static xcclResult_t AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine);
  xcclResult_t PrepareLocally(std::unique_ptr<GemmPlugin> plugin);
  xcclResult_t CheckRun(const void* a, const float* a_scale, const void* b, const float* b_scale,
                        int64_t m, const void* out) const;
  // The whole problem of a call of m rows: shape, types, strides, B and its scales (A, C and A's
  // scales are each GEMM call's).
  xcclGemmProblem ProblemOf(int64_t m, const void* b, const float* b_scale) const;
  // One GEMM call: rows [first_row, first_row + rows) of the caller's A (and scales) into `c`
  // ([rows][n]) on compute stream `compute_stream`.
  xcclResult_t GemmRows(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t first_row, int64_t rows, void* c, int compute_stream,
                        xcclStream_t stream);
  xcclResult_t RunSplit(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t m, void* out, xcclStream_t stream);
  xcclResult_t RunFused(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t m, void* out, xcclStream_t stream);

  Communicator* comm_ = nullptr;
  Shape shape_;
  GemmStreams gemm_;
  int device_ = 0;
  void* partials_ = nullptr;     // [m_max][n] of out_type, chunk-major (gemm_rs_plan.h)
  void* scale_tiles_ = nullptr;  // block scales: [m_max][KB] floats, one packed tile per call
};

}  // namespace xccl
