// The host platform's copy into a peer's memory stops between pieces when told to (the receiver
// gave up its call, this rank aborted), so a receiver that has returned is written at most one
// piece later: memcpy for a rank of this process, process_vm_writev (here into this process
// itself) for another.
#include "transport/shm/peer_copy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace xccl {
namespace {

TEST(PeerCopy, StopsBetweenPiecesWhenTold) {
  AllowCrossProcessCopies();
  const size_t pieces = 3, bytes = pieces * kCopyPieceBytes - 4096;  // the last piece short
  std::vector<uint8_t> src(bytes);
  std::mt19937_64 rng(std::random_device{}());
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  for (const pid_t pid : {pid_t(0), getpid()}) {
    SCOPED_TRACE(pid == 0 ? "memcpy" : "process_vm_writev");
    for (size_t stop_at = 1; stop_at <= pieces; ++stop_at) {  // pieces == never stop
      SCOPED_TRACE("stop before piece " + std::to_string(stop_at));
      std::vector<uint8_t> dst(bytes, 0xA5);
      size_t checks = 0;
      PlatformFailure failure;
      const xcclResult_t result = CopyToProcess(
          pid, /*peer=*/1, dst.data(), src.data(), bytes,
          [&](PlatformFailure* f) -> xcclResult_t {
            if (++checks < stop_at) return xcclSuccess;
            f->result = xcclRemoteError;
            f->peer = 1;
            f->message = "told to stop";
            return f->result;
          },
          &failure);
      const bool stopped = stop_at < pieces;
      EXPECT_EQ(result, stopped ? xcclRemoteError : xcclSuccess) << failure.message;
      EXPECT_EQ(checks, stopped ? stop_at : pieces - 1);  // between pieces, never before the first
      const size_t copied = stopped ? stop_at * kCopyPieceBytes : bytes;
      size_t wrong = 0, written_after = 0;
      for (size_t i = 0; i < copied; ++i) wrong += dst[i] != src[i];
      for (size_t i = copied; i < bytes; ++i) written_after += dst[i] != 0xA5;
      EXPECT_EQ(wrong, 0u) << "bytes before the stop are wrong";
      EXPECT_EQ(written_after, 0u) << "bytes after the stop were written";
    }
  }
}

}  // namespace
}  // namespace xccl
