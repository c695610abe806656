// ag_gemm: all-gather of A fused with the GEMM against this rank's B (docs/ARCHITECTURE.md,
// "ag_gemm").
//
// The op owns a receive window laid out by WindowLayout ([world][padded_m][k] of A, then the
// fp8 scales), an output buffer for callers that pass none, and a GEMM plugin context.
// Fused mode (host platform): the caller's rows go into the own slot, then every peer gets
// them over this rank's DMA queue to it, band by band, each band's last put raising the band's
// flag in the peer's control window; meanwhile the calling thread runs the GEMM on its own rows
// and then on the peers' rows in the calls of FusedGemmSchedule (band by band, sources rotated
// from rank-1, two adjacent sources per call where bands are small), as their flags reach the
// call's epoch. A peer writes into this rank's window only after this rank published
// it for the call's epoch, which it does at the start of the call, after its previous GEMM:
// no closing barrier is needed. Split mode: xcclAllGather of the receive slots (and scales), then
// one GEMM over all rows. Both give the same bytes (a plugin's band results equal its full run). On
// GPU platforms the window and output are device memory and everything is enqueued on the caller's
// stream: fused mode maps every peer's window at create (IPC), pushes the bands over the DMA queues
// with flags that copy the device epoch, waits per band in a kernel that reads the device epoch (so
// a captured graph replays correctly), and closes with a device barrier, which keeps a rank a call
// ahead from writing a window a slower rank's GEMM still reads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "comm/communicator.h"
#include "fused/ag_gemm/chunk_rule.h"
#include "fused/ag_gemm/window_layout.h"
#include "fused/gemm_plugin_loader.h"
#include "fused/gemm_streams.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class AgGemmOp {
 public:
  struct Shape {
    int64_t n = 0, k = 0, m_max = 0;
    xcclDataType_t in_type = xcclBfloat16, out_type = xcclBfloat16;
    xcclAgGemmMode_t mode = xcclAgGemmFused;
    int pinned_chunks = 0;                           // 0: the default rule
    xcclGemmScaleMode_t scales = xcclGemmScaleNone;  // resolved: never "default"
  };

  ~AgGemmOp();

  // Validates the shape, the communicator and the plugin, then allocates. Fails with a message
  // (nothing allocated) on a bad shape, a plugin that does not support it, a communicator the
  // op cannot run on, or ranks that asked for different ops. Collective: `local` is this rank's
  // result of the caller's own steps (its argument checks, loading `plugin`: null when that
  // failed, its message already recorded), so that a rank that failed alone still takes part in
  // the ranks' agreement and every rank fails together, at once.
  static xcclResult_t Create(Communicator* comm, const Shape& shape, xcclResult_t local,
                             std::unique_ptr<GemmPlugin> plugin, std::unique_ptr<AgGemmOp>* out);

  xcclResult_t PaddedRows(int64_t m, int64_t* padded) const;
  xcclResult_t LocalRows(int64_t m, void** rows, float** scales);
  // Blockscale: tile `tile` of this rank's scales for a call of m rows (xcclAgGemmLocalScaleTile).
  xcclResult_t LocalScaleTile(int64_t m, int tile, int* tiles, int64_t* row_begin, int64_t* row_end,
                              float** scales);
  xcclResult_t Chunks(int64_t m, int* chunks) const;
  xcclResult_t Run(const void* a, const float* a_scale, const void* b, const float* b_scale,
                   int64_t m, void* out, void** result, xcclStream_t stream);
  xcclResult_t SelfTest(int64_t m, xcclStream_t stream);

  Communicator* comm() const { return comm_; }
  // Tests: the next SelfTest damages this source's receive slot after the exchange, before the
  // check.
  void CorruptRecvSlotForTesting(int source, bool scales) {
    corrupt_source_ = source;
    corrupt_scales_ = scales;
  }
  // The self test's staging, replaced by one of `bytes` (at least RecvSlotCheck::kIdentifyingBytes;
  // create makes min(kSelfTestStagingBytes, a receive slot at m_max)). Tests use a small one to
  // check receive slots in many pieces. Not during a call.
  xcclResult_t SetSelfTestStaging(size_t bytes);
  static constexpr size_t kSelfTestStagingBytes = size_t{4} << 20;

 private:
  AgGemmOp() = default;
  bool has_scales() const { return shape_.scales != xcclGemmScaleNone; }
  bool block_scales() const { return shape_.scales == xcclGemmScaleBlock128; }
  // The bands of one source's `padded` rows as the window's scale tiles and the fused pushes
  // cut them: fused with peers, the chunk rule's; split or world 1, one band.
  std::vector<RowRange> BandsOf(int64_t padded) const;
  // Blockscale: the packed [KB][row_end - row_begin] scale tile of a GEMM call over rows
  // [row_begin, row_end) of the gathered operand: a band's own tile where the call is one band,
  // else the call's tile in the window, packed from its bands' tiles by 2D copies on `stream`.
  xcclResult_t CallScaleTile(int64_t padded, int64_t row_begin, int64_t row_end,
                             xcclStream_t stream, const float** tile);
  size_t in_size() const;
  size_t out_size() const;
  char* window() const { return static_cast<char*>(window_); }
  // Create's steps that involve no other rank: the plugin's init and supports (for `problem`, the
  // whole problem at m_max), then the window and output buffers.
  xcclResult_t PrepareLocally(std::unique_ptr<GemmPlugin> plugin, const xcclGemmProblem& problem);
  // The self test's steps through the staging, a piece at a time, each piece waited for: this
  // rank's pattern of `round` into the window at `offset`; and the check of the window's bytes
  // [offset, offset + bytes) as `source`'s pattern (*wrong: "" or what is wrong).
  xcclResult_t UploadPattern(size_t offset, size_t bytes, uint32_t round, bool scale,
                             xcclStream_t stream);
  xcclResult_t CheckRecvSlot(size_t offset, size_t bytes, size_t row_bytes, uint32_t round,
                             int source, bool scale, xcclStream_t stream, std::string* wrong);
  // The checks of Create's arguments that need no other rank.
  static xcclResult_t CheckShape(const Communicator* comm, const Shape& shape);
  // Every rank learns whether every rank's `mine` succeeded (xcclRemoteError naming the first
  // rank that failed; this rank's own failure is left for its caller to report) and whether
  // every rank asked for this `shape` (xcclInvalidUsage naming a rank that did not).
  static xcclResult_t AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine);
  xcclResult_t CheckRun(const void* a, const float* a_scale, const void* b, const float* b_scale,
                        int64_t m) const;
  // Where the caller's buffers lie: none in the window (peers' rows land there during the
  // call) except A and its scales at this rank's own slot (LocalRows), and out clear of B and
  // its scales (the GEMM reads them while it writes C).
  xcclResult_t CheckRunBuffers(const void* a, const float* a_scale, const void* b,
                               const float* b_scale, int64_t m, const void* out);
  // Puts A's m rows (and scales) into the own slot, zeroing the padding rows.
  xcclResult_t FillOwnSlot(const void* a, const float* a_scale, int64_t m, xcclStream_t stream);
  // gemm_band(row_begin, row_end, compute_stream): one GEMM call over those rows (counted from
  // source 0's receive slot); compute stream 0 is the caller's stream and plugin context, compute
  // stream 1 the side ones.
  using GemmBandFn = std::function<xcclResult_t(int64_t, int64_t, int)>;
  // Exchanges the receive slots: every rank ends with every source's rows. `problem` is the call's
  // GEMM (nullptr for the self test, which multiplies nothing). Split (or world 1): ExchangeSplit.
  // Fused: ExchangeFused.
  xcclResult_t Exchange(int64_t m, const xcclGemmProblem* problem, xcclStream_t stream,
                        const GemmBandFn& gemm_band);
  // all_gather of the receive slots, then of the scales, then gemm_band over all rows.
  xcclResult_t ExchangeSplit(int64_t m, xcclStream_t stream, const GemmBandFn& gemm_band);
  // Over the queues, band by band: PushBands, then RunFusedSchedule, then the operation's end.
  xcclResult_t ExchangeFused(int64_t m, const xcclGemmProblem* problem, xcclStream_t stream,
                             const GemmBandFn& gemm_band);
  // This rank's bands (rows, scales, the band's flag) put to every peer's window.
  xcclResult_t PushBands(uint32_t epoch, int64_t m, const std::vector<RowRange>& bands);
  // The GEMM calls of FusedGemmSchedule as their bands arrive (a wait per flag first), or with
  // a tile-wait plugin (a non-null `problem`) RunTileWaits. Returns a wait's failure; a GEMM's
  // goes to *gemm and stops only the GEMMs.
  xcclResult_t RunFusedSchedule(uint32_t epoch, int64_t padded, const std::vector<RowRange>& bands,
                                const xcclGemmProblem* problem, const Deadline& deadline,
                                xcclStream_t stream, const GemmBandFn& gemm_band,
                                xcclResult_t* gemm);
  // One tile-wait launch per peer source: its tiles wait on the device for their band's flag.
  xcclResult_t RunTileWaits(int64_t padded, const std::vector<RowRange>& bands,
                            const xcclGemmProblem* problem, xcclStream_t stream);
  // The GEMM of a call whose receive slots hold `padded` rows per source: shape, types and strides
  // (the operand pointers are the caller's to fill).
  xcclGemmProblem ProblemOf(int64_t padded) const;
  // Whether fused calls hand each source's rows to the plugin's tile-wait entry (a platform
  // whose waits the device can read, and a plugin with that entry) instead of band by band.
  bool TileWait() const;
  xcclResult_t RunGemm(const xcclGemmProblem& problem, int64_t row_begin, int64_t row_end,
                       int compute_stream, xcclStream_t stream);

  Communicator* comm_ = nullptr;
  Shape shape_;
  WindowLayout layout_;
  SlotRange band_flags_;  // fused mode's flags (band_flags.h)
  // The plugin and its compute streams: a second one (side stream and context) for fused bands
  // where XCCL_AGGEMM_COMPUTE_STREAMS is 2, or 0 on a platform whose default is 2 (GPUs).
  GemmStreams gemm_;
  int device_ = 0;          // where window_ and output_ live (AllocateOpBuffer)
  void* window_ = nullptr;  // the receive slots and scales (WindowLayout)
  void* output_ = nullptr;  // C when the caller passes no buffer
  // The self test's host staging (pinned on GPUs), made at create and freed with the op:
  // allocating or freeing pinned memory waits for the whole device, which inside a call could
  // wait for a peer that shares the GPU and waits for this rank. The self test goes through it
  // a piece of staging_bytes_ at a time.
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  // Fused: every rank's window as this rank addresses it (GPU; nullptr on the host, whose puts go
  // into the window each rank publishes per call).
  std::unique_ptr<PeerMappings> peer_windows_;
  int corrupt_source_ = -1;
  bool corrupt_scales_ = false;  // the next self test damages the scales instead of the rows
};

}  // namespace xccl
