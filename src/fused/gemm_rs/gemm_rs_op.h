// gemm_rs: a GEMM against this rank's inner-dimension shard, reduce-scattered over the ranks
// (docs/ARCHITECTURE.md, "gemm_rs").
//
// The op owns the partial products ([m_max][n] of out_type, laid out chunk-major as
// gemm_rs_plan.h says), for block scales a buffer of packed A scale tiles, and a GEMM plugin
// context. Split mode: one GEMM over all m rows, then ReduceScatter. Fused mode: chunk by chunk,
// the GEMM calls of every owner's rows of the chunk (the next rank's first) on the caller's
// stream, then the chunk's ReduceScatter; on GPUs those run on a reduce stream of the highest
// priority, so the next chunk's GEMMs run beside this chunk's reduce-scatter (one chunk runs as
// split mode, on the caller's stream alone). Both give the same bytes where the plugin computes a
// band as it computes the whole, since the reductions are ReduceScatter's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

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
  // Collective check of the exchange for m rows (gemm_rs_self_test.cc): every rank's partials
  // hold a known pattern, they are reduce-scattered as a run does, every rank checks its rows,
  // all meet in a barrier, and only then does a rank with wrong rows fail (xcclInternalError).
  xcclResult_t SelfTest(int64_t m, xcclStream_t stream);
  // Tests: the next self test damages one element of this rank's partial for the next rank.
  void CorruptPartialForTesting() { corrupt_next_self_test_ = true; }
  // Tests: the chunks a call of m rows cuts each owner's block into.
  int ChunkCountForTesting(int64_t m) const { return static_cast<int>(ChunksOf(m).size()); }

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
  // ([rows][n]) on `stream`.
  xcclResult_t GemmRows(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t first_row, int64_t rows, void* c, xcclStream_t stream);
  // The chunks of a call of m rows: one for split mode (or world 1), GemmRsChunks(chunks_) for
  // fused.
  std::vector<GemmRsChunk> ChunksOf(int64_t m) const;
  // For each chunk: compute(chunk, region) fills the chunk's partials (region: its [owner][rows]
  // [n] in the partials buffer) on `stream`, then the chunk's ReduceScatter into its rows of
  // `out`, on the reduce stream where there is one and several chunks.
  using ChunkFill = std::function<xcclResult_t(const GemmRsChunk&, char*)>;
  xcclResult_t ReduceChunks(int64_t m, void* out, xcclStream_t stream, const ChunkFill& compute);
  // The self test's pattern: rank `rank`'s partial at global row `row`, column `col` (-1, 0, 1,
  // exact in both output types), and its bits in the output type.
  static int PatternValue(int rank, int64_t row, int64_t col);
  uint16_t OutputBits(float value) const;
  // Copies host bytes into (or out of) op memory through the staging, a piece at a time.
  xcclResult_t Upload(char* device,
                      const std::function<void(char*, size_t offset, size_t bytes)>& fill,
                      size_t bytes, xcclStream_t stream);
  xcclResult_t Download(const char* device, size_t bytes, std::vector<char>* host,
                        xcclStream_t stream);
  xcclResult_t RunSplit(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t m, void* out, xcclStream_t stream);
  xcclResult_t RunFused(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                        int64_t m, void* out, xcclStream_t stream);

  Communicator* comm_ = nullptr;
  Shape shape_;
  GemmStreams gemm_;  // the plugin's context on the caller's stream
  // Fused mode's reduce-scatters where a call can cut several chunks (GPU platforms): the device's
  // highest priority, forked from the caller's stream after each chunk's GEMMs.
  SideStream reduce_side_;
  int device_ = 0;
  void* partials_ = nullptr;     // [m_max][n] of out_type, chunk-major (gemm_rs_plan.h)
  void* scale_tiles_ = nullptr;  // block scales: [m_max][KB] floats, one packed tile per call
  // The self test's rows ([m_max / nranks][n]) and host staging (pinned on GPUs), made at create:
  // allocating either inside a call could wait for the whole device while a peer sharing it
  // waits for this rank.
  void* self_test_rows_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  bool corrupt_next_self_test_ = false;
  // Fused mode's chunks per block: the pinned count, else XCCL_GEMMRS_CHUNKS, else 1 where ranks
  // of a node share a device, else 0 (GemmRsChunks' default).
  int chunks_ = 0;
};

}  // namespace xccl
