#include "mp/bad_arguments.h"

#include <cstdint>
#include <string>

namespace xccl_test {

void ExpectBadArgumentsRefused(RankContext& ctx, uint32_t* send, uint32_t* recv, size_t count,
                               xcclStream_t stream) {
  struct Case {
    const char* what;
    const void* send;
    void* recv;
    size_t count;
    int dtype;
    xcclComm_t comm;
    xcclResult_t expected;
  } cases[] = {
      {"null comm", send, recv, count, xcclUint32, nullptr, xcclInvalidArgument},
      {"null sendbuff", nullptr, recv, count, xcclUint32, ctx.comm, xcclInvalidArgument},
      {"null recvbuff", send, nullptr, count, xcclUint32, ctx.comm, xcclInvalidArgument},
      {"dtype -1", send, recv, count, -1, ctx.comm, xcclInvalidArgument},
      {"dtype 12", send, recv, count, 12, ctx.comm, xcclInvalidArgument},
      {"overflowing count", send, recv, SIZE_MAX / 4, xcclUint32, ctx.comm, xcclInvalidArgument},
      {"overlap not in place", recv + 1, recv, count, xcclUint32, ctx.comm, xcclInvalidArgument},
  };
  for (const Case& c : cases) {
    xcclResult_t result = xcclAllGather(c.send, c.recv, c.count,
                                        static_cast<xcclDataType_t>(c.dtype), c.comm, stream);
    RANK_EXPECT(ctx, result == c.expected, c.what << ": got " << xcclGetErrorString(result));
    std::string message = xcclGetLastError(c.comm);
    RANK_EXPECT(ctx, !message.empty(), c.what << ": no message from xcclGetLastError");
  }
  RANK_EXPECT(ctx, xcclBarrier(nullptr, stream) == xcclInvalidArgument, "barrier null comm");
  RANK_EXPECT(ctx, xcclCommCount(ctx.comm, nullptr) == xcclInvalidArgument, "count NULL out");
}

}  // namespace xccl_test
