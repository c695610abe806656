// ag_gemm's self test (xcclAgGemmSelfTest): every rank's receive slot filled with a known pattern
// through the staging made at create, exchanged as a call would, every byte of every receive slot
// checked.
#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/failure.h"
#include "collectives/barrier/barrier.h"
#include "fused/ag_gemm/ag_gemm_op.h"
#include "fused/ag_gemm/self_test_pattern.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t AgGemmOp::SetSelfTestStaging(size_t bytes) {
  if (bytes < RecvSlotCheck::kIdentifyingBytes)
    return Fail(xcclInvalidArgument, "ag_gemm: self test staging of %zu bytes (at least %zu)",
                bytes, RecvSlotCheck::kIdentifyingBytes);
  FreeStaging(staging_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  XCCL_TRY(AllocateStaging(bytes, &staging_));
  staging_bytes_ = bytes;
  return xcclSuccess;
}

xcclResult_t AgGemmOp::UploadPattern(size_t offset, size_t bytes, uint32_t round, bool scale,
                                     xcclStream_t stream) {
  unsigned char* staging = static_cast<unsigned char*>(staging_);
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t piece = std::min(staging_bytes_, bytes - done);
    FillPattern(staging, done, piece, round, comm_->rank(), scale);
    XCCL_TRY(CopyAsync(window() + offset + done, staging, piece, stream));
    XCCL_TRY(SyncStream(stream));  // before the staging is refilled
  }
  return xcclSuccess;
}

xcclResult_t AgGemmOp::CheckRecvSlot(size_t offset, size_t bytes, size_t row_bytes, uint32_t round,
                                     int source, bool scale, xcclStream_t stream,
                                     std::string* wrong) {
  unsigned char* staging = static_cast<unsigned char*>(staging_);
  RecvSlotCheck check(round, source, scale);
  for (size_t done = 0; done < bytes; done += staging_bytes_) {
    const size_t piece = std::min(staging_bytes_, bytes - done);
    XCCL_TRY(CopyAsync(staging, window() + offset + done, piece, stream));
    XCCL_TRY(SyncStream(stream));
    check.Check(staging, done, piece);
  }
  if (!check.wrong()) return xcclSuccess;
  // The bytes from the first wrong one on, which may straddle two pieces, read once more.
  const size_t first = check.first_wrong();
  const size_t shown = std::min(RecvSlotCheck::kIdentifyingBytes, bytes - first);
  XCCL_TRY(CopyAsync(staging, window() + offset + first, shown, stream));
  XCCL_TRY(SyncStream(stream));
  *wrong = check.Describe(bytes, row_bytes, staging, shown, comm_->nranks());
  return xcclSuccess;
}

xcclResult_t AgGemmOp::SelfTest(int64_t m, xcclStream_t stream) {
  int64_t padded = 0;
  XCCL_TRY(PaddedRows(m, &padded));
  const int rank = comm_->rank(), world = comm_->nranks();
  // The round number is the epoch every rank is at (all ranks made the same calls).
  const uint32_t round = comm_->current_epoch();
  size_t recv_slot_bytes = 0, base = 0, scale_base = 0;
  XCCL_TRY(layout_.RecvSlotBytes(m, &recv_slot_bytes));
  XCCL_TRY(layout_.RecvSlotOffset(0, m, &base));
  size_t scale_bytes = 0;
  if (has_scales()) {
    XCCL_TRY(layout_.ScaleBytes(m, &scale_bytes));
    XCCL_TRY(layout_.ScaleOffset(0, m, &scale_base));
  }
  // The own slot and scales through the staging (made at create), a piece at a time.
  xcclResult_t result =
      UploadPattern(base + rank * recv_slot_bytes, recv_slot_bytes, round, false, stream);
  if (result == xcclSuccess)
    result = UploadPattern(scale_base + rank * scale_bytes, scale_bytes, round, true, stream);
  if (result != xcclSuccess) {
    // The peers are about to wait for this rank's rows: fail the communicator now, naming this
    // rank and why, rather than leave them to their deadline (or, on a GPU, to a receive slot check
    // that would blame the data).
    PlatformFailure failure;
    // kNoPeer: the fault is this rank's own, so the peers are told that this rank failed.
    SetFailure(&failure, result, kNoPeer, "its self test could not stage its pattern (%s)",
               ThreadLastError().c_str());
    (void)SyncStream(stream);
    return comm_->RecordFailure("ag_gemm", failure);
  }
  result =
      Exchange(m, /*problem=*/nullptr, stream, [](int64_t, int64_t, int) { return xcclSuccess; });
  const size_t corrupt_bytes = corrupt_scales_ ? scale_bytes : recv_slot_bytes;
  if (result == xcclSuccess && corrupt_source_ >= 0 && corrupt_source_ < world &&
      corrupt_bytes > 0) {
    // Tests only: damage one byte of that source's receive slot (or scales) in the window itself.
    unsigned char* bad = static_cast<unsigned char*>(staging_);
    *bad = PatternByte(round, corrupt_source_, corrupt_bytes / 2, corrupt_scales_) ^ 0x5A;
    const size_t at = corrupt_scales_ ? scale_base + corrupt_source_ * scale_bytes
                                      : base + corrupt_source_ * recv_slot_bytes;
    result = CopyAsync(window() + at + corrupt_bytes / 2, bad, 1, stream);
  }
  corrupt_source_ = -1;
  // Check every receive slot, but report only after the barrier, so no healthy rank waits for one
  // that gave up.
  std::string wrong;
  const size_t row_bytes = static_cast<size_t>(shape_.k) * in_size();
  for (int s = 0; s < world && wrong.empty() && result == xcclSuccess; ++s) {
    std::string data, scale;
    result = CheckRecvSlot(base + s * recv_slot_bytes, recv_slot_bytes, row_bytes, round, s, false,
                           stream, &data);
    if (result == xcclSuccess && data.empty())
      result = CheckRecvSlot(scale_base + s * scale_bytes, scale_bytes, sizeof(float), round, s,
                             true, stream, &scale);
    if (!data.empty())
      wrong = "the receive slot of rank " + std::to_string(s) + " is wrong: " + data;
    if (!scale.empty()) wrong = "the scales of rank " + std::to_string(s) + " are wrong: " + scale;
  }
  // Also after a failure: no copy may still read or fill the staging when this returns (the
  // next self test rewrites it, destroy frees it). Every wait on the stream has a deadline.
  const xcclResult_t synced = SyncStream(stream);
  if (result != xcclSuccess) return result;
  XCCL_TRY(synced);
  XCCL_TRY(Barrier(comm_, stream));
  XCCL_TRY(SyncStream(stream));
  // A failure the device recorded (a peer that never took part: GPU waits end at their deadline
  // on the device) is the cause of any wrong receive slot: report it first.
  XCCL_TRY(comm_->CheckHealthy("ag_gemm self test"));
  if (!wrong.empty())
    return Fail(xcclInternalError, "ag_gemm self test on rank %d (m = %lld): %s", rank,
                static_cast<long long>(m), wrong.c_str());
  return xcclSuccess;
}

}  // namespace xccl
