#include "fused/gemm_rs/gemm_rs_op.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/byte_range.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/topology.h"
#include "collectives/reduce/reduction.h"
#include "collectives/reduce_scatter/reduce_scatter.h"
#include "fused/gemm_op_request.h"
#include "platform/runtime.h"

namespace xccl {

namespace {

constexpr const char* kOp = "gemm_rs";
constexpr const char* kRunName = "xcclGemmRsRun";  // what a failed call's message names
// The self test's host staging: a fixed size, so that an op of any m_max holds little pinned
// memory; the pattern goes through it a piece at a time.
constexpr size_t kSelfTestStagingBytes = size_t{4} << 20;

bool Aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

// Fused mode's reduce-scatters go on a stream of their own where calls are stream-ordered device
// work, so that the next chunk's GEMMs run beside this chunk's reduce-scatter; the host's calls
// are synchronous.
bool ReduceStreamHelps(const Communicator& comm) {
  return comm.transport()->device_view() != nullptr && comm.nranks() > 1;
}

}  // namespace

GemmRsOp::~GemmRsOp() {
  DestroySideStream(device_, &reduce_side_);  // waits for its reduce-scatters
  gemm_.Close();
  FreeStaging(staging_);
  FreeOpBuffer(device_, self_test_rows_);
  FreeOpBuffer(device_, scale_tiles_);
  FreeOpBuffer(device_, partials_);
}

size_t GemmRsOp::in_size() const { return DataTypeSize(shape_.in_type); }
size_t GemmRsOp::out_size() const { return DataTypeSize(shape_.out_type); }

xcclResult_t GemmRsOp::CheckShape(const Communicator* comm, const Shape& shape) {
  XCCL_TRY(CheckGemmShape(kOp, shape.n, shape.k, shape.m_max, shape.in_type, shape.out_type,
                          shape.scales));
  if (shape.m_max % comm->nranks() != 0)
    return Fail(xcclInvalidArgument,
                "gemm_rs: m_max = %lld is not a multiple of the %d ranks (each rank receives m / "
                "nranks rows; m is never padded)",
                static_cast<long long>(shape.m_max), comm->nranks());
  if (shape.mode != xcclGemmRsFused && shape.mode != xcclGemmRsSplit)
    return Fail(xcclInvalidArgument, "gemm_rs: mode %d is neither fused (0) nor split (1)",
                static_cast<int>(shape.mode));
  if (shape.pinned_chunks < 0 || shape.pinned_chunks > kMaxGemmRsChunks)
    return Fail(xcclInvalidArgument, "gemm_rs: chunks = %d must be 0 (automatic) to %d",
                shape.pinned_chunks, kMaxGemmRsChunks);
  return xcclSuccess;
}

xcclResult_t GemmRsOp::Create(Communicator* comm, const Shape& shape, xcclResult_t local,
                              std::unique_ptr<GemmPlugin> plugin, std::unique_ptr<GemmRsOp>* out) {
  // No check returns before the agreement: a rank that gave up alone would leave its peers
  // waiting there until the deadline, so every local failure becomes this rank's verdict.
  xcclResult_t mine = local != xcclSuccess ? local : CheckShape(comm, shape);
  std::unique_ptr<GemmRsOp> op(new GemmRsOp);
  op->comm_ = comm;
  op->shape_ = shape;
  op->device_ = comm->device();
  if (mine == xcclSuccess) mine = op->PrepareLocally(std::move(plugin));
  // Allocation and the plugin's init come before the agreement: both may wait for the whole
  // device, which no peer past the agreement can then be waiting on (docs/ARCHITECTURE.md,
  // "Device-synchronising calls").
  const xcclResult_t agreed =
      comm->nranks() > 1 ? AgreeAcrossRanks(comm, shape, mine) : xcclSuccess;
  if (mine != xcclSuccess) return mine;  // this rank's own cause first
  XCCL_TRY(agreed);
  *out = std::move(op);
  return xcclSuccess;
}

xcclResult_t GemmRsOp::PrepareLocally(std::unique_ptr<GemmPlugin> plugin) {
  XCCL_TRY(plugin->CheckScaleMode(shape_.scales));
  const xcclGemmProblem problem = ProblemOf(shape_.m_max, nullptr, nullptr);
  char text[160];
  snprintf(text, sizeof(text), "m=%lld n=%lld k=%lld %s -> %s%s", static_cast<long long>(problem.m),
           static_cast<long long>(problem.n), static_cast<long long>(problem.k),
           DataTypeName(shape_.in_type), DataTypeName(shape_.out_type),
           block_scales() ? " with block scales" : "");
  XCCL_TRY(gemm_.Open(std::move(plugin), device_, problem, kOp, text));
  // Where ranks share a GPU, both GEMMs and both reductions run on the same SMs and memory:
  // chunks have nothing to overlap with and only cost (docs/ARCHITECTURE.md, "gemm_rs"). Every
  // rank decides alike (AnyNodeSharesADevice), since all cut the same chunks.
  const bool shared_device =
      comm_->transport()->device_view() != nullptr && AnyNodeSharesADevice(comm_->topology());
  const int asked = static_cast<int>(comm_->params().gemmrs_chunks);  // the same on every rank
  chunks_ = shape_.pinned_chunks > 0 ? shape_.pinned_chunks
            : asked > 0              ? asked
            : shared_device          ? 1
                                     : 0;
  // One chunk runs as split does, on the caller's stream; m_max's blocks cut the most chunks. The
  // reduce stream's blocks go ahead of GEMM blocks not yet running, so that a chunk's
  // reduce-scatter starts as soon as its partials are written rather than after the next GEMM.
  if (ChunksOf(shape_.m_max).size() > 1 && ReduceStreamHelps(*comm_))
    XCCL_TRY(CreateSideStream(device_, &reduce_side_, StreamPriority::kHighest));
  size_t partial_bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(shape_.m_max), static_cast<size_t>(shape_.n),
                             &partial_bytes) ||
      __builtin_mul_overflow(partial_bytes, out_size(), &partial_bytes))
    return Fail(xcclInvalidArgument,
                "gemm_rs: C of %lld x %lld elements does not fit in memory's address range",
                static_cast<long long>(shape_.m_max), static_cast<long long>(shape_.n));
  XCCL_TRY(AllocateOpBuffer(device_, partial_bytes, &partials_));
  XCCL_TRY(AllocateOpBuffer(device_, partial_bytes / comm_->nranks(), &self_test_rows_));
  staging_bytes_ = std::min(kSelfTestStagingBytes, partial_bytes);
  XCCL_TRY(AllocateStaging(staging_bytes_, &staging_));
  if (block_scales())
    XCCL_TRY(AllocateOpBuffer(
        device_, static_cast<size_t>(shape_.m_max * k_blocks()) * sizeof(float), &scale_tiles_));
  return xcclSuccess;
}

xcclGemmProblem GemmRsOp::ProblemOf(int64_t m, const void* b, const float* b_scale) const {
  xcclGemmProblem p{};
  p.m = m;
  p.n = shape_.n;
  p.k = shape_.k;
  p.a_type = p.b_type = shape_.in_type;
  p.c_type = shape_.out_type;
  p.scale_mode = shape_.scales;
  p.lda = p.ldb = shape_.k;
  p.ldc = shape_.n;
  p.b = b;
  p.b_scale = b_scale;
  p.a_scale_ld = block_scales() ? m : 0;
  return p;
}

xcclResult_t GemmRsOp::CheckRun(const void* a, const float* a_scale, const void* b,
                                const float* b_scale, int64_t m, const void* out) const {
  const int nranks = comm_->nranks();
  if (m < 0 || m > shape_.m_max || m % nranks != 0)
    return Fail(xcclInvalidArgument,
                "gemm_rs: m = %lld must be a multiple of the %d ranks from 0 to m_max = %lld",
                static_cast<long long>(m), nranks, static_cast<long long>(shape_.m_max));
  if (m == 0) return xcclSuccess;  // nothing is read or written
  if (a == nullptr || b == nullptr || out == nullptr)
    return Fail(xcclInvalidArgument, "gemm_rs: a (%p), b (%p) and out (%p) must not be NULL", a, b,
                out);
  if (!Aligned(a, in_size()) || !Aligned(b, in_size()) || !Aligned(out, out_size()))
    return Fail(xcclInvalidArgument,
                "gemm_rs: a (%p) and b (%p) must be aligned to %zu bytes, out (%p) to %zu", a, b,
                in_size(), out, out_size());
  if (has_scales()) {
    if (a_scale == nullptr || b_scale == nullptr)
      return Fail(xcclInvalidArgument,
                  block_scales()
                      ? "gemm_rs: block-scaled fp8 inputs need a_scale [ceil(k/128)][m] and "
                        "b_scale [ceil(n/128)][ceil(k/128)]"
                      : "gemm_rs: fp8 inputs need a_scale [m] and b_scale [n] (per token, per "
                        "channel)");
    if (!Aligned(a_scale, sizeof(float)) || !Aligned(b_scale, sizeof(float)))
      return Fail(xcclInvalidArgument, "gemm_rs: scales must be 4-byte aligned");
  } else if (a_scale != nullptr || b_scale != nullptr) {
    return Fail(xcclInvalidArgument, "gemm_rs: scales are for fp8 inputs only, not %s",
                DataTypeName(shape_.in_type));
  }
  // out is written while the GEMMs and the reductions still read the operands.
  const size_t n = static_cast<size_t>(shape_.n), k = static_cast<size_t>(shape_.k);
  const size_t kb = static_cast<size_t>(k_blocks());
  const ByteRange out_range{out, static_cast<size_t>(m / nranks) * n * out_size()};
  const ByteRange operands[] = {
      {a, static_cast<size_t>(m) * k * in_size()},
      {b, n * k * in_size()},
      {a_scale, has_scales() ? static_cast<size_t>(m) * (block_scales() ? kb : 1) * 4 : 0},
      {b_scale, has_scales() ? (block_scales() ? (n + 127) / 128 * kb : n) * 4 : 0}};
  for (const ByteRange& operand : operands)
    if (out_range.Overlaps(operand))
      return Fail(xcclInvalidArgument,
                  "gemm_rs: out (%p, %zu bytes) overlaps an operand at %p: the GEMM still reads "
                  "it while out is written",
                  out, out_range.bytes, operand.begin);
  return xcclSuccess;
}

xcclResult_t GemmRsOp::GemmRows(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                                int64_t first_row, int64_t rows, void* c, xcclStream_t stream) {
  if (rows == 0) return xcclSuccess;
  xcclGemmProblem call = whole;
  call.m = rows;
  call.a = static_cast<const char*>(a) +
           static_cast<size_t>(first_row) * static_cast<size_t>(shape_.k) * in_size();
  call.c = c;
  if (block_scales()) {
    // The rows' tile, packed [KB][rows]: cuBLASLt takes no scale leading dimension (cuBLAS
    // docs, cublasLtMatmulMatrixScale_t). Each call of a run has its own place in the buffer.
    float* tile = static_cast<float*>(scale_tiles_) + first_row * k_blocks();
    if (rows == whole.m) {
      call.a_scale = a_scale;
    } else {
      XCCL_TRY(Copy2DAsync(tile, static_cast<size_t>(rows) * sizeof(float), a_scale + first_row,
                           static_cast<size_t>(whole.m) * sizeof(float),
                           static_cast<size_t>(rows) * sizeof(float),
                           static_cast<size_t>(k_blocks()), stream));
      call.a_scale = tile;
    }
    call.a_scale_ld = rows;
  } else if (has_scales()) {
    call.a_scale = a_scale + first_row;
  }
  const xcclGemmBand band{0, rows};
  const xcclResult_t result = gemm_.plugin().api().run(gemm_.context(0), &call, &band, stream);
  if (result != xcclSuccess)
    return Fail(result, "gemm_rs: GEMM plugin '%s' failed on rows [%lld, %lld)",
                gemm_.plugin().name(), static_cast<long long>(first_row),
                static_cast<long long>(first_row + rows));
  return xcclSuccess;
}

std::vector<GemmRsChunk> GemmRsOp::ChunksOf(int64_t m) const {
  const int64_t block_rows = m / comm_->nranks();
  if (shape_.mode == xcclGemmRsSplit || comm_->nranks() == 1) return {GemmRsChunk{0, block_rows}};
  return GemmRsChunks(block_rows, chunks_);
}

xcclResult_t GemmRsOp::ReduceChunks(int64_t m, void* out, xcclStream_t stream,
                                    const ChunkFill& compute) {
  const int nranks = comm_->nranks();
  const size_t n = static_cast<size_t>(shape_.n);
  char* region = static_cast<char*>(partials_);
  const std::vector<GemmRsChunk> chunks = ChunksOf(m);
  // Several chunks: each chunk's reduce-scatter on the reduce stream, after the GEMMs enqueued so
  // far, beside the next chunk's GEMMs; the caller's stream waits for the last at the end.
  const bool beside = chunks.size() > 1 && reduce_side_.stream != nullptr;
  xcclResult_t result = xcclSuccess;
  for (size_t j = 0; j < chunks.size() && result == xcclSuccess; ++j) {
    const GemmRsChunk& chunk = chunks[j];
    const size_t piece = static_cast<size_t>(chunk.rows) * n;
    result = compute(chunk, region);
    // A chunk's reduce-scatter waits in the kernel for peers whose GEMMs share the device: its
    // grid leaves them SMs, the last chunk's only the peers' (read_reduce_grid.h).
    GridLimit grid;
    if (chunks.size() > 1) {
      grid.most_blocks = static_cast<int>(comm_->params().gemmrs_reduce_blocks);
      grid.beside = j + 1 < chunks.size() ? Beside::kOwnAndPeersCompute : Beside::kPeersCompute;
    }
    if (result == xcclSuccess && beside) result = ForkSideStream(reduce_side_, stream);
    if (result == xcclSuccess)
      result = ReduceScatter(comm_, kRunName, region,
                             static_cast<char*>(out) + chunk.first_row * n * out_size(), piece,
                             shape_.out_type, static_cast<int>(RedOp::kSum),
                             beside ? reduce_side_.stream : stream, piece, grid);
    region += nranks * piece * out_size();
  }
  // Joined whatever failed, so the caller's stream never runs ahead of a reduce-scatter enqueued.
  const xcclResult_t joined = beside ? JoinSideStream(reduce_side_, stream) : xcclSuccess;
  return result != xcclSuccess ? result : joined;
}

xcclResult_t GemmRsOp::RunSplit(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                                int64_t m, void* out, xcclStream_t stream) {
  return ReduceChunks(m, out, stream, [&](const GemmRsChunk&, char* region) {
    return GemmRows(whole, a, a_scale, 0, m, region, stream);
  });
}

xcclResult_t GemmRsOp::RunFused(const xcclGemmProblem& whole, const void* a, const float* a_scale,
                                int64_t m, void* out, xcclStream_t stream) {
  // One chunk lies as split's partial does ([owner][rows][n] is [m][n]) and has nothing to
  // overlap: one GEMM over all rows, as split makes, rather than one per owner.
  if (ChunksOf(m).size() == 1) return RunSplit(whole, a, a_scale, m, out, stream);
  const int nranks = comm_->nranks(), rank = comm_->rank();
  const int64_t block_rows = m / nranks;
  // The GEMMs on the caller's stream, after the last call's reduce-scatters (joined into it),
  // which have read the partials they overwrite (and every peer has: ReduceScatter closes so).
  return ReduceChunks(m, out, stream, [&](const GemmRsChunk& chunk, char* region) {
    const size_t piece = static_cast<size_t>(chunk.rows) * static_cast<size_t>(shape_.n);
    for (int position = 0; position < nranks; ++position) {
      const int owner = GemmRsOwnerAt(rank, nranks, position);
      XCCL_TRY(GemmRows(whole, a, a_scale, owner * block_rows + chunk.first_row, chunk.rows,
                        region + owner * piece * out_size(), stream));
    }
    return xcclSuccess;
  });
}

xcclResult_t GemmRsOp::Run(const void* a, const float* a_scale, const void* b, const float* b_scale,
                           int64_t m, void* out, xcclStream_t stream) {
  XCCL_TRY(CheckRun(a, a_scale, b, b_scale, m, out));
  if (m == 0) return xcclSuccess;  // no rank takes part
  const xcclGemmProblem whole = ProblemOf(m, b, b_scale);
  return shape_.mode == xcclGemmRsSplit ? RunSplit(whole, a, a_scale, m, out, stream)
                                        : RunFused(whole, a, a_scale, m, out, stream);
}

}  // namespace xccl
