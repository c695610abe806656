// gemm_rs's self test (gemm_rs_op.h): the exchange of a run, with a known pattern for partials.
#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "base/error.h"
#include "collectives/barrier/barrier.h"
#include "collectives/reduce/small_floats.h"
#include "fused/gemm_rs/gemm_rs_op.h"
#include "platform/runtime.h"

namespace xccl {

int GemmRsOp::PatternValue(int rank, int64_t row, int64_t col) {
  return static_cast<int>((rank * 5 + row * 3 + col) % 3) - 1;
}

uint16_t GemmRsOp::OutputBits(float value) const {
  return static_cast<uint16_t>(shape_.out_type == xcclFloat16 ? Fp16::FromFloat(value)
                                                              : Bf16::FromFloat(value));
}

xcclResult_t GemmRsOp::Upload(char* device, const std::function<void(char*, size_t, size_t)>& fill,
                              size_t bytes, xcclStream_t stream) {
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t piece = std::min(staging_bytes_, bytes - done);
    XCCL_TRY(SyncStream(stream));  // the staging's last piece has left
    fill(static_cast<char*>(staging_), done, piece);
    XCCL_TRY(CopyAsync(device + done, staging_, piece, stream));
  }
  return SyncStream(stream);
}

xcclResult_t GemmRsOp::Download(const char* device, size_t bytes, std::vector<char>* host,
                                xcclStream_t stream) {
  host->resize(bytes);
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t piece = std::min(staging_bytes_, bytes - done);
    XCCL_TRY(CopyAsync(staging_, device + done, piece, stream));
    XCCL_TRY(SyncStream(stream));
    memcpy(host->data() + done, staging_, piece);
  }
  return xcclSuccess;
}

xcclResult_t GemmRsOp::SelfTest(int64_t m, xcclStream_t stream) {
  const int nranks = comm_->nranks(), rank = comm_->rank();
  if (m < 1 || m > shape_.m_max || m % nranks != 0)
    return Fail(xcclInvalidArgument,
                "gemm_rs self test: m = %lld must be a multiple of the %d ranks from 1 to m_max = "
                "%lld",
                static_cast<long long>(m), nranks, static_cast<long long>(shape_.m_max));
  const int64_t n = shape_.n, block_rows = m / nranks;
  const size_t row_bytes = static_cast<size_t>(n) * out_size();
  const std::vector<GemmRsChunk> chunks = ChunksOf(m);
  // This rank's partials, chunk-major as a run lays them: row by row, the global row of each.
  std::vector<int64_t> global_rows;
  for (const GemmRsChunk& chunk : chunks)
    for (int owner = 0; owner < nranks; ++owner)
      for (int64_t r = 0; r < chunk.rows; ++r)
        global_rows.push_back(owner * block_rows + chunk.first_row + r);
  const uint16_t bits[3] = {OutputBits(-1), OutputBits(0), OutputBits(1)};
  XCCL_TRY(Upload(
      static_cast<char*>(partials_),
      [&](char* to, size_t offset, size_t bytes) {
        for (size_t b = 0; b < bytes; b += 2) {
          const size_t element = (offset + b) / 2;
          const int64_t row = global_rows[element / n], col = static_cast<int64_t>(element % n);
          memcpy(to + b, &bits[PatternValue(rank, row, col) + 1], 2);
        }
      },
      static_cast<size_t>(m) * row_bytes, stream));
  if (corrupt_next_self_test_) {
    // One element of the piece the next rank owns, in the first chunk: its first row's.
    corrupt_next_self_test_ = false;
    const int owner = (rank + 1) % nranks;
    const size_t at = static_cast<size_t>(owner * chunks[0].rows) * row_bytes;
    XCCL_TRY(Upload(
        static_cast<char*>(partials_) + at, [](char* to, size_t, size_t) { memset(to, 0x7f, 2); },
        2, stream));
  }
  const size_t out_bytes = static_cast<size_t>(block_rows) * row_bytes;
  XCCL_TRY(ReduceChunks(m, self_test_rows_, stream,
                        [](const GemmRsChunk&, char*) { return xcclSuccess; }));
  std::vector<char> got;
  XCCL_TRY(Download(static_cast<const char*>(self_test_rows_), out_bytes, &got, stream));
  int64_t wrong = 0, first_row = -1, first_col = -1;
  uint16_t got_bits = 0, want_bits = 0;
  for (int64_t r = 0; r < block_rows; ++r) {
    for (int64_t col = 0; col < n; ++col) {
      const int64_t row = rank * block_rows + r;
      int sum = 0;
      for (int s = 0; s < nranks; ++s) sum += PatternValue(s, row, col);
      const uint16_t want = OutputBits(static_cast<float>(sum));
      uint16_t have = 0;
      memcpy(&have, got.data() + (r * n + col) * 2, 2);
      if (have != want && wrong++ == 0) {
        first_row = row;
        first_col = col;
        got_bits = have;
        want_bits = want;
      }
    }
  }
  // Every rank checks before any fails: a rank that failed alone would leave its peers' next
  // call waiting for it.
  XCCL_TRY(Barrier(comm_, stream));
  XCCL_TRY(SyncStream(stream));
  if (wrong > 0)
    return Fail(xcclInternalError,
                "gemm_rs self test on rank %d: %lld of %lld elements of its rows are wrong, the "
                "first at row %lld column %lld: bits 0x%04x where the ranks' pattern sums to "
                "0x%04x",
                rank, static_cast<long long>(wrong), static_cast<long long>(block_rows * n),
                static_cast<long long>(first_row), static_cast<long long>(first_col), got_bits,
                want_bits);
  return xcclSuccess;
}

}  // namespace xccl
