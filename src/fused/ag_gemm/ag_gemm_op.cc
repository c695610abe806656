#include "fused/ag_gemm/ag_gemm_op.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/byte_range.h"
#include "base/datatype.h"
#include "base/deadline.h"
#include "base/error.h"
#include "base/failure.h"
#include "base/topology.h"
#include "collectives/all_gather/all_gather.h"
#include "collectives/launch_gate.h"
#include "collectives/queued_operation.h"
#include "fused/ag_gemm/band_flags.h"
#include "fused/ag_gemm/chunk_rule.h"
#include "fused/ag_gemm/gemm_schedule.h"
#include "fused/ag_gemm/self_test_pattern.h"
#include "fused/gemm_op_request.h"
#include "platform/runtime.h"

namespace xccl {

namespace {

bool Aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

// XCCL_AGGEMM_COMPUTE_STREAMS, or where it is 0: 2 where the band GEMMs are stream-ordered
// device work, since bands on one stream serialise each band's tail wave, which a second stream
// overlaps with the next band (docs/perf-history.md, third round); 1 on the host, whose calls are
// synchronous (a side stream would run nothing beside the caller and cost a plugin context).
int ComputeStreams(const Communicator& comm) {
  const int64_t asked = comm.params().aggemm_compute_streams;
  if (asked > 0) return static_cast<int>(asked);
  return comm.transport()->device_view() != nullptr ? 2 : 1;
}

}  // namespace

AgGemmOp::~AgGemmOp() {
  gemm_.Close();
  // The output first: freeing device memory waits for the device, so no queued put still
  // writes into a peer's window when its mapping is closed below.
  FreeOpBuffer(device_, output_);
  peer_windows_.reset();
  FreeOpBuffer(device_, window_);
  FreeStaging(staging_);
}

size_t AgGemmOp::in_size() const { return DataTypeSize(shape_.in_type); }
size_t AgGemmOp::out_size() const { return DataTypeSize(shape_.out_type); }

xcclResult_t AgGemmOp::CheckShape(const Communicator* comm, const Shape& shape) {
  XCCL_TRY(CheckGemmShape("ag_gemm", shape.n, shape.k, shape.m_max, shape.in_type, shape.out_type,
                          shape.scales));
  if (shape.mode != xcclAgGemmFused && shape.mode != xcclAgGemmSplit)
    return Fail(xcclInvalidArgument, "ag_gemm: mode %d is neither fused (0) nor split (1)",
                static_cast<int>(shape.mode));
  if (shape.pinned_chunks < 0 || shape.pinned_chunks > kMaxBands)
    return Fail(xcclInvalidArgument, "ag_gemm: chunks = %d must be 0 (automatic) to %d",
                shape.pinned_chunks, kMaxBands);
  if (shape.mode == xcclAgGemmFused && comm->topology().node_count > 1)
    return Fail(xcclInvalidUsage,
                "ag_gemm's fused mode puts its bands into the peers' windows, which ranks of "
                "other nodes do not map; these %d ranks span %d nodes: use split mode",
                comm->nranks(), comm->topology().node_count);
  const int queues = comm->transport()->queue_count();
  if (shape.mode == xcclAgGemmFused && comm->nranks() > 1 && queues < comm->nranks() - 1)
    return Fail(xcclInvalidUsage,
                "ag_gemm's fused mode needs one DMA queue per peer; this communicator has %d for "
                "%d peers (ranks sharing a GPU have none: use split mode there)",
                queues, comm->nranks() - 1);
  return xcclSuccess;
}

xcclResult_t AgGemmOp::Create(Communicator* comm, const Shape& shape, xcclResult_t local,
                              std::unique_ptr<GemmPlugin> plugin, std::unique_ptr<AgGemmOp>* out) {
  // No check returns before the agreement below: a rank that gave up alone would leave its
  // peers waiting there until the deadline, so every local failure becomes this rank's verdict.
  xcclResult_t mine = local != xcclSuccess ? local : CheckShape(comm, shape);
  std::unique_ptr<AgGemmOp> op(new AgGemmOp);
  if (mine == xcclSuccess) mine = kBandFlagSlots.Find(comm->slots(), &op->band_flags_);
  op->comm_ = comm;
  op->shape_ = shape;
  op->device_ = comm->device();
  const int world = comm->nranks();
  if (mine == xcclSuccess)
    mine = WindowLayout::Create(world, comm->rank(), shape.m_max, shape.k, op->in_size(),
                                op->block_scales() ? ScaleLayout::kBlock128
                                : op->has_scales() ? ScaleLayout::kPerRow
                                                   : ScaleLayout::kNone,
                                &op->layout_);
  if (mine == xcclSuccess) {
    // The plugin must take the whole problem at m_max; bands are row ranges of it.
    const xcclGemmProblem problem = op->ProblemOf(op->layout_.padded_m_max());
    mine = op->PrepareLocally(std::move(plugin), problem);
    // A side stream for the bands' GEMMs where they run band by band (not through a tile-wait
    // entry, which takes each source in one launch).
    if (mine == xcclSuccess && shape.mode == xcclAgGemmFused && world > 1 &&
        ComputeStreams(*comm) == 2 && !op->TileWait())
      mine = op->gemm_.OpenSideStream(problem, "ag_gemm");
  }
  // Every rank learns at once whether every rank's local steps succeeded and asked for the same
  // op (a rank whose arguments were bad, whose plugin did not load or refused the shape fails
  // every rank now, not at their first run). On GPUs it also keeps any rank from launching
  // kernels before every rank has allocated and its plugin has loaded its kernels (init,
  // supports): both can wait for the whole device, which, where ranks share a GPU in one
  // process, would stall behind a peer's call waiting for this rank.
  const xcclResult_t agreed = world > 1 ? AgreeAcrossRanks(comm, shape, mine) : xcclSuccess;
  if (mine != xcclSuccess) return mine;  // this rank's own cause first, even if the round failed
  XCCL_TRY(agreed);
  if (shape.mode == xcclAgGemmFused && world > 1) {
    XCCL_TRY(comm->transport()->MapPeerBuffers(comm->bootstrap(), op->window_, &op->peer_windows_));
  }
  *out = std::move(op);
  return xcclSuccess;
}

xcclResult_t AgGemmOp::PrepareLocally(std::unique_ptr<GemmPlugin> plugin,
                                      const xcclGemmProblem& problem) {
  XCCL_TRY(plugin->CheckScaleMode(shape_.scales));
  char text[160];
  snprintf(text, sizeof(text), "m=%lld n=%lld k=%lld %s -> %s%s", static_cast<long long>(problem.m),
           static_cast<long long>(problem.n), static_cast<long long>(problem.k),
           DataTypeName(shape_.in_type), DataTypeName(shape_.out_type),
           block_scales() ? " with block scales" : "");
  XCCL_TRY(gemm_.Open(std::move(plugin), device_, problem, "ag_gemm", text));
  size_t output_bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(problem.m), static_cast<size_t>(shape_.n),
                             &output_bytes) ||
      __builtin_mul_overflow(output_bytes, out_size(), &output_bytes))
    return Fail(xcclInvalidArgument,
                "ag_gemm: C of %lld x %lld elements does not fit in memory's address range",
                static_cast<long long>(problem.m), static_cast<long long>(shape_.n));
  XCCL_TRY(AllocateOpBuffer(device_, layout_.total_bytes(), &window_));
  XCCL_TRY(AllocateOpBuffer(device_, output_bytes, &output_));
  // The self test's staging, here rather than in the call: allocating pinned memory waits for
  // the device, which inside a call could wait for a peer sharing the GPU that waits for this
  // rank. A fixed size, so that an op of any m_max holds little pinned memory.
  size_t max_recv_slot = 0;
  XCCL_TRY(layout_.RecvSlotBytes(shape_.m_max, &max_recv_slot));
  return SetSelfTestStaging(
      std::min(kSelfTestStagingBytes, std::max(max_recv_slot, RecvSlotCheck::kIdentifyingBytes)));
}

xcclResult_t AgGemmOp::PaddedRows(int64_t m, int64_t* padded) const {
  if (m < 0 || m > shape_.m_max)
    return Fail(xcclInvalidArgument, "ag_gemm: m = %lld is outside [0, m_max = %lld]",
                static_cast<long long>(m), static_cast<long long>(shape_.m_max));
  *padded = PaddedM(m);
  return xcclSuccess;
}

xcclResult_t AgGemmOp::LocalRows(int64_t m, void** rows, float** scales) {
  int64_t padded = 0;
  XCCL_TRY(PaddedRows(m, &padded));
  size_t offset = 0;
  XCCL_TRY(layout_.LocalRows(m, &offset));
  *rows = window() + offset;
  if (scales != nullptr) {
    *scales = nullptr;
    if (has_scales()) {
      size_t scale_offset = 0;
      XCCL_TRY(layout_.ScaleOffset(comm_->rank(), m, &scale_offset));
      *scales = reinterpret_cast<float*>(window() + scale_offset);
    }
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::LocalScaleTile(int64_t m, int tile, int* tiles, int64_t* row_begin,
                                      int64_t* row_end, float** scales) {
  if (!block_scales())
    return Fail(xcclInvalidArgument, "ag_gemm: the op has no block scales (created with %s)",
                has_scales() ? "per-token/channel scales" : "no scales");
  int64_t padded = 0;
  XCCL_TRY(PaddedRows(m, &padded));
  const std::vector<RowRange> bands = BandsOf(padded);
  if (tiles != nullptr) *tiles = static_cast<int>(bands.size());
  if (tile < 0 || tile >= static_cast<int>(bands.size()))
    return Fail(xcclInvalidArgument, "ag_gemm: scale tile %d outside [0, %zu) for m = %lld", tile,
                bands.size(), static_cast<long long>(m));
  size_t offset = 0;
  XCCL_TRY(layout_.ScaleOffset(comm_->rank(), m, &offset));
  const RowRange& band = bands[tile];
  if (row_begin != nullptr) *row_begin = band.begin;
  if (row_end != nullptr) *row_end = band.end;
  if (scales != nullptr)
    *scales = reinterpret_cast<float*>(window() + offset) + band.begin * layout_.scale_blocks();
  return xcclSuccess;
}

std::vector<RowRange> AgGemmOp::BandsOf(int64_t padded) const {
  if (shape_.mode == xcclAgGemmSplit || comm_->nranks() == 1) return BandRows(padded, 1);
  return BandRows(padded, ChooseChunks(padded, shape_.n, comm_->nranks(), shape_.pinned_chunks));
}

xcclResult_t AgGemmOp::CallScaleTile(int64_t padded, int64_t row_begin, int64_t row_end,
                                     xcclStream_t stream, const float** tile) {
  const int64_t blocks = layout_.scale_blocks();
  const int64_t m = padded;  // the layout's queries take m; padded gives the same layout
  size_t scale_base = 0;
  XCCL_TRY(layout_.ScaleOffset(0, m, &scale_base));
  // Band tiles follow each other in row order over all sources, so a band starting at global
  // row r lies at r * KB floats from source 0's.
  const float* tiles = reinterpret_cast<const float*>(window() + scale_base);
  const std::vector<RowRange> bands = BandsOf(padded);
  std::vector<RowRange> pieces;  // the band tiles the call covers, in global rows
  for (int64_t source = row_begin / padded; source * padded < row_end; ++source) {
    for (const RowRange& band : bands) {
      const RowRange global{source * padded + band.begin, source * padded + band.end};
      if (global.end > row_begin && global.begin < row_end) pieces.push_back(global);
    }
  }
  if (pieces.empty() || pieces.front().begin != row_begin || pieces.back().end != row_end)
    return Fail(xcclInternalError,
                "ag_gemm: GEMM rows [%lld, %lld) are not whole bands of %lld-row slots",
                static_cast<long long>(row_begin), static_cast<long long>(row_end),
                static_cast<long long>(padded));
  if (pieces.size() == 1) {
    *tile = tiles + row_begin * blocks;
    return xcclSuccess;
  }
  size_t call_offset = 0;
  XCCL_TRY(layout_.CallTileOffset(row_begin, m, &call_offset));
  float* call_tile = reinterpret_cast<float*>(window() + call_offset);
  const size_t call_pitch = static_cast<size_t>(row_end - row_begin) * sizeof(float);
  for (const RowRange& piece : pieces) {
    const size_t width = static_cast<size_t>(piece.end - piece.begin) * sizeof(float);
    XCCL_TRY(Copy2DAsync(call_tile + (piece.begin - row_begin), call_pitch,
                         tiles + piece.begin * blocks, width, width, static_cast<size_t>(blocks),
                         stream));
  }
  *tile = call_tile;
  return xcclSuccess;
}

xcclResult_t AgGemmOp::Chunks(int64_t m, int* chunks) const {
  int64_t padded = 0;
  XCCL_TRY(PaddedRows(m, &padded));
  *chunks = ChooseChunks(padded, shape_.n, comm_->nranks(), shape_.pinned_chunks);
  return xcclSuccess;
}

xcclResult_t AgGemmOp::CheckRun(const void* a, const float* a_scale, const void* b,
                                const float* b_scale, int64_t m) const {
  int64_t padded = 0;
  XCCL_TRY(PaddedRows(m, &padded));
  if (m > 0 && a == nullptr) return Fail(xcclInvalidArgument, "ag_gemm: a is NULL");
  if (b == nullptr) return Fail(xcclInvalidArgument, "ag_gemm: b is NULL");
  if (!Aligned(a, in_size()) || !Aligned(b, in_size()))
    return Fail(xcclInvalidArgument, "ag_gemm: a (%p) and b (%p) must be aligned to %zu bytes", a,
                b, in_size());
  if (has_scales()) {
    if ((m > 0 && a_scale == nullptr) || b_scale == nullptr)
      return Fail(xcclInvalidArgument,
                  block_scales()
                      ? "ag_gemm: block-scaled fp8 inputs need a_scale [ceil(k/128)][m] and "
                        "b_scale [ceil(n/128)][ceil(k/128)]"
                      : "ag_gemm: fp8 inputs need a_scale [m] and b_scale [n] (per token, per "
                        "channel)");
    if (!Aligned(a_scale, sizeof(float)) || !Aligned(b_scale, sizeof(float)))
      return Fail(xcclInvalidArgument, "ag_gemm: scales must be 4-byte aligned");
  } else if (a_scale != nullptr || b_scale != nullptr) {
    return Fail(xcclInvalidArgument, "ag_gemm: scales are for fp8 inputs only, not %s",
                DataTypeName(shape_.in_type));
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::CheckRunBuffers(const void* a, const float* a_scale, const void* b,
                                       const float* b_scale, int64_t m, const void* out) {
  if (m == 0) return xcclSuccess;  // nothing is read or written
  void* rows = nullptr;
  float* scales = nullptr;
  XCCL_TRY(LocalRows(m, &rows, &scales));
  const size_t blocks = static_cast<size_t>(layout_.scale_blocks());
  const size_t n = static_cast<size_t>(shape_.n);
  const size_t b_scales = block_scales() ? (n + 127) / 128 * blocks : has_scales() ? n : 0;
  const ByteRange window_range{window_, layout_.total_bytes()};
  const ByteRange a_range{a, static_cast<size_t>(m * shape_.k) * in_size()};
  const ByteRange a_scale_range{a_scale, static_cast<size_t>(m) * blocks * sizeof(float)};
  const ByteRange b_range{b, static_cast<size_t>(shape_.n * shape_.k) * in_size()};
  const ByteRange b_scale_range{b_scale, b_scales * sizeof(float)};
  const ByteRange out_range{
      out, out == nullptr
               ? 0
               : static_cast<size_t>(comm_->nranks() * PaddedM(m) * shape_.n) * out_size()};
  if ((a != rows && a_range.Overlaps(window_range)) ||
      (a_scale != scales && a_scale_range.Overlaps(window_range)))
    return Fail(xcclInvalidArgument,
                "ag_gemm: a (%p) or a_scale (%p) lies in the op's window but not at this rank's "
                "own rows for m = %lld (%p, %p: xcclAgGemmLocalRows); peers' rows land there",
                a, static_cast<const void*>(a_scale), static_cast<long long>(m), rows,
                static_cast<void*>(scales));
  if (b_range.Overlaps(window_range) || b_scale_range.Overlaps(window_range))
    return Fail(xcclInvalidArgument,
                "ag_gemm: b (%p) or b_scale (%p) lies in the op's window, where peers' rows land "
                "during the call",
                b, static_cast<const void*>(b_scale));
  if (out_range.Overlaps(window_range))
    return Fail(xcclInvalidArgument,
                "ag_gemm: out (%p, %zu bytes) overlaps the op's window (%p, %zu bytes), which "
                "holds the gathered rows the GEMM reads",
                out, out_range.bytes, window_, window_range.bytes);
  if (out_range.Overlaps(b_range) || out_range.Overlaps(b_scale_range))
    return Fail(xcclInvalidArgument,
                "ag_gemm: out (%p, %zu bytes) overlaps b or b_scale, which the GEMM reads while "
                "it writes C",
                out, out_range.bytes);
  return xcclSuccess;
}

xcclResult_t AgGemmOp::FillOwnSlot(const void* a, const float* a_scale, int64_t m,
                                   xcclStream_t stream) {
  const int64_t padded = PaddedM(m);
  size_t offset = 0;
  XCCL_TRY(layout_.LocalRows(m, &offset));
  char* slot = window() + offset;
  const size_t row_bytes = static_cast<size_t>(shape_.k) * in_size();
  if (a != slot) XCCL_TRY(CopyAsync(slot, a, static_cast<size_t>(m) * row_bytes, stream));
  XCCL_TRY(ZeroAsync(slot + m * row_bytes, static_cast<size_t>(padded - m) * row_bytes, stream));
  if (!has_scales()) return xcclSuccess;
  size_t scale_offset = 0;
  XCCL_TRY(layout_.ScaleOffset(comm_->rank(), m, &scale_offset));
  float* scales = reinterpret_cast<float*>(window() + scale_offset);
  if (!block_scales()) {
    if (a_scale != scales)
      XCCL_TRY(CopyAsync(scales, a_scale, static_cast<size_t>(m) * sizeof(float), stream));
    // 0.0f is all zero bits.
    return ZeroAsync(scales + m, static_cast<size_t>(padded - m) * sizeof(float), stream);
  }
  // The caller's [KB][m] into one packed [KB][band rows] tile per band, padding columns zero.
  const size_t blocks = static_cast<size_t>(layout_.scale_blocks());
  for (const RowRange& band : BandsOf(padded)) {
    float* tile = scales + band.begin * static_cast<int64_t>(blocks);
    const size_t pitch = static_cast<size_t>(band.end - band.begin) * sizeof(float);
    const int64_t real = std::max<int64_t>(0, std::min(band.end, m) - band.begin);
    const size_t real_bytes = static_cast<size_t>(real) * sizeof(float);
    if (a_scale != scales)
      XCCL_TRY(Copy2DAsync(tile, pitch, a_scale + band.begin,
                           static_cast<size_t>(m) * sizeof(float), real_bytes, blocks, stream));
    XCCL_TRY(Zero2DAsync(tile + real, pitch, pitch - real_bytes, blocks, stream));
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::Exchange(int64_t m, const xcclGemmProblem* problem, xcclStream_t stream,
                                const GemmBandFn& gemm_band) {
  if (shape_.mode == xcclAgGemmSplit || comm_->nranks() == 1)
    return ExchangeSplit(m, stream, gemm_band);
  return ExchangeFused(m, problem, stream, gemm_band);
}

xcclResult_t AgGemmOp::ExchangeSplit(int64_t m, xcclStream_t stream, const GemmBandFn& gemm_band) {
  const int rank = comm_->rank();
  size_t recv_slot_offset = 0, base = 0, recv_slot_bytes = 0;
  XCCL_TRY(layout_.RecvSlotOffset(rank, m, &recv_slot_offset));
  XCCL_TRY(layout_.RecvSlotOffset(0, m, &base));
  XCCL_TRY(layout_.RecvSlotBytes(m, &recv_slot_bytes));
  // The scales ride in the same all_gather as the rows (its tail).
  GatherTail scales;
  if (has_scales()) {
    size_t scale_offset = 0, scale_base = 0;
    XCCL_TRY(layout_.ScaleOffset(rank, m, &scale_offset));
    XCCL_TRY(layout_.ScaleOffset(0, m, &scale_base));
    XCCL_TRY(layout_.ScaleBytes(m, &scales.bytes));
    scales.send = window() + scale_offset;
    scales.recv = window() + scale_base;
  }
  XCCL_TRY(AllGather(comm_, window() + recv_slot_offset, window() + base, recv_slot_bytes, stream,
                     scales));
  // One GEMM over all world * padded rows.
  return gemm_band(0, comm_->nranks() * PaddedM(m), 0);
}

xcclResult_t AgGemmOp::PushBands(uint32_t epoch, int64_t m, const std::vector<RowRange>& bands) {
  const int rank = comm_->rank(), world = comm_->nranks();
  const size_t row_bytes = static_cast<size_t>(shape_.k) * in_size();
  const size_t scale_row_bytes = static_cast<size_t>(layout_.scale_blocks()) * sizeof(float);
  size_t recv_slot_offset = 0, scale_offset = 0;
  XCCL_TRY(layout_.RecvSlotOffset(rank, m, &recv_slot_offset));
  if (has_scales()) XCCL_TRY(layout_.ScaleOffset(rank, m, &scale_offset));
  Transport* transport = comm_->transport();
  auto put = [&](int peer, size_t offset, size_t bytes, int flag) {
    transport->connection(peer).Put(epoch, peer_windows_->at(peer), offset, window() + offset,
                                    bytes, flag);
  };
  for (int step = 1; step < world; ++step) {
    const int peer = (rank + step) % world;
    for (size_t b = 0; b < bands.size(); ++b) {
      const int flag = BandFlag(band_flags_, rank, static_cast<int>(b));
      put(peer, recv_slot_offset + bands[b].begin * row_bytes,
          (bands[b].end - bands[b].begin) * row_bytes,
          has_scales() ? ControlLayout::kNoSignal : flag);
      if (has_scales()) {
        // The band's scales are one tile (ptpc: its rows' scales): one contiguous put.
        put(peer, scale_offset + bands[b].begin * scale_row_bytes,
            (bands[b].end - bands[b].begin) * scale_row_bytes, flag);
      }
    }
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::RunTileWaits(int64_t padded, const std::vector<RowRange>& bands,
                                    const xcclGemmProblem* problem, xcclStream_t stream) {
  const int rank = comm_->rank(), world = comm_->nranks();
  const DeviceView& view = *comm_->transport()->device_view();
  for (int step = 1; step < world; ++step) {
    const int source = (rank - step + world) % world;
    xcclGemmTileWait wait{};
    wait.row_begin = source * padded;
    wait.row_end = (source + 1) * padded;
    wait.band_rows = bands[0].end - bands[0].begin;
    wait.num_bands = static_cast<int>(bands.size());
    wait.flags = view.own_slots + BandFlag(band_flags_, source, 0);
    wait.epoch = view.device_epoch;
    wait.timeout_ns = static_cast<uint64_t>(comm_->timeout_ms()) * 1000000ull;
    const xcclResult_t gemm =
        gemm_.plugin().api().run_tile_wait(gemm_.context(0), problem, &wait, stream);
    if (gemm != xcclSuccess)
      return Fail(gemm, "ag_gemm: GEMM plugin '%s' failed on the tile-wait rows of rank %d",
                  gemm_.plugin().name(), source);
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::RunFusedSchedule(uint32_t epoch, int64_t padded,
                                        const std::vector<RowRange>& bands,
                                        const xcclGemmProblem* problem, const Deadline& deadline,
                                        xcclStream_t stream, const GemmBandFn& gemm_band,
                                        xcclResult_t* gemm) {
  const int rank = comm_->rank(), world = comm_->nranks();
  Transport* transport = comm_->transport();
  // Own rows first, never waiting; then the peers' rows as they arrive, in the order and
  // grouping of FusedGemmSchedule (host: the calling thread waits; GPU: a wait kernel on the
  // compute stream per flag before the GEMM, or, with a tile-wait plugin, one launch per source
  // whose tiles wait for their own band's flag). With a side stream the peer calls take the two
  // compute streams in turn, the side stream forked before the own rows' GEMM (it waits for the
  // epoch advance above) so its first call may overlap it.
  const bool tile_wait = problem != nullptr && TileWait();
  const bool two_streams = gemm_.two_streams() && !tile_wait;
  const int chunks = static_cast<int>(bands.size());
  const std::vector<GemmStep> steps =
      FusedGemmSchedule(rank, world, padded, bands,
                        SourcesPerGemm(padded, shape_.n, world, chunks,
                                       static_cast<int>(comm_->params().aggemm_sources_per_gemm)),
                        two_streams ? 2 : 1);
  xcclResult_t result = two_streams ? gemm_.Fork(stream) : xcclSuccess;
  const bool forked = two_streams && result == xcclSuccess;  // else nothing to join
  // No steps only for an empty receive slot (nothing to multiply).
  if (result == xcclSuccess && !steps.empty())
    *gemm = gemm_band(steps[0].row_begin, steps[0].row_end, 0);
  // Tile-wait launches are GEMM and waits in one: after a failed one nothing more is launched
  // (the device's own waits and the closing barrier bound the rest).
  if (tile_wait && result == xcclSuccess && *gemm == xcclSuccess)
    *gemm = RunTileWaits(padded, bands, problem, stream);
  PlatformFailure failure;
  for (size_t i = 1; i < steps.size() && !tile_wait && result == xcclSuccess; ++i) {
    const GemmStep& step = steps[i];
    for (const BandWait& w : step.waits) {
      result = transport->WaitSlot(BandFlag(band_flags_, w.source, w.band), epoch, w.source,
                                   "its ag_gemm rows", deadline,
                                   gemm_.stream(step.compute_stream, stream), &failure);
      if (result != xcclSuccess) break;
    }
    if (result != xcclSuccess) {
      result = comm_->RecordFailure("ag_gemm", failure);
      break;
    }
    if (*gemm == xcclSuccess) *gemm = gemm_band(step.row_begin, step.row_end, step.compute_stream);
  }
  // The caller's stream waits for the side stream's bands, even after a failure (nothing of the
  // call may be left running beside the stream).
  if (forked) {
    const xcclResult_t joined = gemm_.Join(stream);
    if (result == xcclSuccess) result = joined;
  }
  return result;
}

xcclResult_t AgGemmOp::ExchangeFused(int64_t m, const xcclGemmProblem* problem, xcclStream_t stream,
                                     const GemmBandFn& gemm_band) {
  // Every peer's queue gets this rank's bands (data, scales, then the band's flag).
  Transport* transport = comm_->transport();
  DirectPuts* direct = transport->direct_puts();
  const int64_t padded = PaddedM(m);
  const std::vector<RowRange> bands = BandsOf(padded);
  const Deadline deadline(comm_->timeout_ms());
  LaunchGate gate(comm_, "ag_gemm");
  XCCL_TRY(gate.Enter(stream));
  const uint32_t epoch = comm_->NextEpoch();  // the host's; GPUs advance theirs on the stream
  {
    PlatformFailure failure;
    if (transport->BeginOperation(stream, /*queued=*/true, &failure) != xcclSuccess)
      return comm_->RecordFailure("ag_gemm", failure);
  }
  // The peers' puts land in this window: published for this epoch where they go into published
  // buffers (host), mapped at create otherwise.
  if (direct != nullptr)
    direct->PublishRecvBuffer(epoch, window(), layout_.total_bytes(), /*block: any*/ 0,
                              ControlLayout::kNoSignal);
  XCCL_TRY(PushBands(epoch, m, bands));
  // A GEMM that fails does not end the call: the waits go on (only the GEMMs stop), so every
  // peer's rows have landed before this rank ends the operation, the peers see a call like any
  // other, and only this rank reports the failure; the communicator stays usable. A failed
  // wait ends the call and fails the communicator.
  xcclResult_t gemm = xcclSuccess;
  const xcclResult_t result =
      RunFusedSchedule(epoch, padded, bands, problem, deadline, stream, gemm_band, &gemm);
  // Host: the queues still read the own slot until they are done. GPU: the queues join the
  // stream and a closing barrier follows. Either way, even after a failure, and then with a
  // deadline of its own (the call's may have passed in a wait that timed out, and the queues
  // must be drained before the caller may destroy the op).
  PlatformFailure end_failure;
  const bool failed = result != xcclSuccess || gemm != xcclSuccess;
  xcclResult_t ended = EndQueuedOperation(
      comm_, stream, failed ? Deadline(comm_->timeout_ms()) : deadline, &end_failure);
  // After a failed wait no peer may write the window any more: the caller may destroy the op.
  // (After a failed GEMM every wait was met: every peer's rows have landed.)
  if ((result != xcclSuccess || ended != xcclSuccess) && direct != nullptr)
    direct->CloseRecvBuffer(epoch, Deadline(comm_->timeout_ms()));
  if (result != xcclSuccess) return result;
  if (ended != xcclSuccess) return comm_->RecordFailure("ag_gemm", end_failure);
  XCCL_TRY(gate.Leave());
  return gemm;
}

bool AgGemmOp::TileWait() const {
  // Block scales go band by band: one tile-wait launch per source would need the source's
  // scales as one [KB][padded] array, which the band tiles are not.
  return comm_->transport()->device_view() != nullptr &&
         gemm_.plugin().api().run_tile_wait != nullptr && !block_scales();
}

xcclGemmProblem AgGemmOp::ProblemOf(int64_t padded) const {
  xcclGemmProblem problem{};
  problem.m = comm_->nranks() * padded;
  problem.n = shape_.n;
  problem.k = shape_.k;
  problem.a_type = problem.b_type = shape_.in_type;
  problem.c_type = shape_.out_type;
  problem.scale_mode = shape_.scales;
  problem.lda = problem.ldb = shape_.k;
  problem.ldc = shape_.n;
  if (block_scales()) problem.a_scale_ld = problem.m;
  return problem;
}

xcclResult_t AgGemmOp::RunGemm(const xcclGemmProblem& problem, int64_t row_begin, int64_t row_end,
                               int compute_stream, xcclStream_t stream) {
  if (row_end <= row_begin) return xcclSuccess;
  xcclGemmBand band{row_begin, row_end};
  const xcclGemmProblem* run = &problem;
  xcclGemmProblem call;
  if (block_scales()) {
    // A call of its own over the band's rows, reading their packed scale tile (cuBLASLt takes
    // no scale leading dimension, cuBLAS docs, cublasLtMatmulMatrixScale_t).
    const int64_t padded = problem.m / comm_->nranks();
    call = problem;
    call.m = row_end - row_begin;
    call.a = static_cast<const char*>(problem.a) +
             static_cast<size_t>(row_begin) * static_cast<size_t>(shape_.k) * in_size();
    call.c = static_cast<char*>(problem.c) +
             static_cast<size_t>(row_begin) * static_cast<size_t>(shape_.n) * out_size();
    call.a_scale_ld = call.m;
    XCCL_TRY(CallScaleTile(padded, row_begin, row_end, gemm_.stream(compute_stream, stream),
                           &call.a_scale));
    band = xcclGemmBand{0, call.m};
    run = &call;
  }
  xcclResult_t result = gemm_.plugin().api().run(gemm_.context(compute_stream), run, &band,
                                                 gemm_.stream(compute_stream, stream));
  if (result != xcclSuccess)
    return Fail(result, "ag_gemm: GEMM plugin '%s' failed on rows [%lld, %lld)",
                gemm_.plugin().name(), static_cast<long long>(row_begin),
                static_cast<long long>(row_end));
  return xcclSuccess;
}

xcclResult_t AgGemmOp::Run(const void* a, const float* a_scale, const void* b, const float* b_scale,
                           int64_t m, void* out, void** result, xcclStream_t stream) {
  XCCL_TRY(CheckRun(a, a_scale, b, b_scale, m));
  if (out != nullptr && !Aligned(out, out_size()))
    return Fail(xcclInvalidArgument, "ag_gemm: out (%p) must be aligned to %zu bytes", out,
                out_size());
  XCCL_TRY(CheckRunBuffers(a, a_scale, b, b_scale, m, out));
  void* c = out != nullptr ? out : output_;
  if (result != nullptr) *result = c;
  if (m == 0) return xcclSuccess;  // every rank has m == 0: nothing to gather or multiply
  XCCL_TRY(FillOwnSlot(a, a_scale, m, stream));
  const int64_t padded = PaddedM(m);
  size_t base = 0, scale_base = 0;
  XCCL_TRY(layout_.RecvSlotOffset(0, m, &base));
  if (has_scales()) XCCL_TRY(layout_.ScaleOffset(0, m, &scale_base));
  xcclGemmProblem problem = ProblemOf(padded);
  problem.a = window() + base;
  problem.b = b;
  problem.c = c;
  problem.a_scale = has_scales() ? reinterpret_cast<const float*>(window() + scale_base) : nullptr;
  problem.b_scale = b_scale;
  return Exchange(m, &problem, stream, [&](int64_t row_begin, int64_t row_end, int compute_stream) {
    return RunGemm(problem, row_begin, row_end, compute_stream, stream);
  });
}

}  // namespace xccl
