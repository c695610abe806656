// One all_gather checked on every byte, shared by the host suites: fresh data for the call,
// a poisoned output, misaligned buffers, in or out of place.
#pragma once

#include <string>
#include <vector>

#include "base/datatype.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "xccl.h"

namespace xccl_test {

// One checked all_gather: fresh data for `call`, poisoned output, `offset` bytes of
// misalignment, in or out of place; every byte compared.
inline void CheckedAllGather(RankContext& ctx, size_t count, int dtype, bool in_place,
                             size_t offset, uint64_t call) {
  const size_t elem = xccl::DataTypeSize(dtype);
  const size_t block = count * elem;
  std::vector<unsigned char> recv_storage(block * ctx.nranks + offset + 1);
  std::vector<unsigned char> send_storage(block + offset + 1);
  unsigned char* recv = recv_storage.data() + offset;
  unsigned char* send = in_place ? recv + ctx.rank * block : send_storage.data() + offset;
  Poison(recv, block * ctx.nranks);
  FillBlock(send, block, ctx.seed, ctx.rank, call);
  xcclResult_t result =
      xcclAllGather(send, recv, count, static_cast<xcclDataType_t>(dtype), ctx.comm, nullptr);
  RANK_EXPECT(
      ctx, result == xcclSuccess,
      "call " << call << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(ctx.comm));
  if (result != xcclSuccess) return;
  std::string wrong = CheckGathered(recv, block, ctx.nranks, ctx.seed, call, elem);
  RANK_EXPECT(ctx, wrong.empty(),
              "call " << call << " (" << xccl::DataTypeName(dtype) << ", count " << count
                      << (in_place ? ", in place" : ", out of place") << ", offset " << offset
                      << "): " << wrong);
}

}  // namespace xccl_test
