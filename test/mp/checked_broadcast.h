// One checked broadcast on the host platform, shared by the broadcast suites
// (broadcast_test.cc, reduce_failure_test.cc's interleaving): random bytes from the root (every
// float type's NaN payloads and signed zeros must arrive as they left), guard bytes around the
// output, root's input and the others' send buffers untouched.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "xccl.h"

namespace xccl_test {

constexpr size_t kBroadcastGuard = 64;

// One checked broadcast of `count` elements of `dtype` from `root`, `offset` bytes off alignment;
// non-root ranks pass a NULL send buffer every other call. False once the call failed.
inline bool CheckedBroadcast(RankContext& ctx, xcclComm_t comm, int root, int dtype, size_t count,
                             bool in_place, size_t offset, uint64_t call) {
  const size_t bytes = count * xccl::DataTypeSize(dtype);
  std::vector<unsigned char> recv_area(2 * kBroadcastGuard + offset + bytes, 0xA5);
  std::vector<unsigned char> send_area(2 * kBroadcastGuard + offset + bytes, 0x5A);
  unsigned char* recv = recv_area.data() + kBroadcastGuard + offset;
  unsigned char* send = send_area.data() + kBroadcastGuard + offset;
  std::vector<unsigned char> expected(bytes);
  FillBlock(expected.data(), bytes, ctx.seed, root, call);
  if (ctx.rank == root) memcpy(in_place ? recv : send, expected.data(), bytes);
  const void* send_arg = ctx.rank == root ? (in_place ? recv : send)
                         : call % 2 == 0  ? nullptr
                                          : send;
  const std::string what = "broadcast of " + std::to_string(count) + " " +
                           xccl::DataTypeName(dtype) + " from root " + std::to_string(root) +
                           (in_place ? ", in place" : "") + ", offset " + std::to_string(offset) +
                           ", call " + std::to_string(call);
  const xcclResult_t result =
      xcclBroadcast(send_arg, recv, count, static_cast<xcclDataType_t>(dtype), root, comm, nullptr);
  RANK_EXPECT(ctx, result == xcclSuccess,
              what << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(comm));
  if (result != xcclSuccess) return false;
  if (bytes > 0 && memcmp(recv, expected.data(), bytes) != 0) {
    size_t wrong = 0, first = bytes;
    for (size_t i = 0; i < bytes; ++i)
      if (recv[i] != expected[i] && wrong++ == 0) first = i;
    RANK_EXPECT(
        ctx, false,
        what << ": " << wrong << " of " << bytes << " bytes wrong, first at byte " << first);
  }
  const auto poisoned = [](unsigned char b) { return b == 0xA5; };
  RANK_EXPECT(
      ctx, std::all_of(recv_area.begin(), recv_area.begin() + kBroadcastGuard + offset, poisoned),
      what << ": written before the receive buffer");
  RANK_EXPECT(
      ctx,
      std::all_of(recv_area.begin() + kBroadcastGuard + offset + bytes, recv_area.end(), poisoned),
      what << ": written past the receive buffer");
  if (ctx.rank == root && !in_place)
    RANK_EXPECT(ctx, memcmp(send, expected.data(), bytes) == 0, what << ": root's input changed");
  if (ctx.rank != root)
    RANK_EXPECT(
        ctx,
        std::all_of(send_area.begin(), send_area.end(), [](unsigned char b) { return b == 0x5A; }),
        what << ": a non-root rank's send buffer was written");
  return true;
}

}  // namespace xccl_test
