#include "mp/bad_arguments.h"

#include <cstdint>
#include <string>
#include <vector>

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

void ExpectBadReductionArgumentsRefused(RankContext& ctx, uint32_t* send, uint32_t* recv,
                                        size_t count, xcclStream_t stream) {
  const int rank = ctx.rank, nranks = ctx.nranks;
  struct Case {
    const char* what;
    bool reduce_scatter;  // else all_reduce
    const void* send;
    void* recv;
    size_t count;
    int dtype;
    int op;
    xcclComm_t comm;
  };
  std::vector<Case> cases;
  for (const bool rs : {true, false}) {
    // The in-place position of this rank's output, and one element past it.
    uint32_t* in_place = rs ? send + rank * count : send;
    cases.push_back({"null comm", rs, send, recv, count, xcclUint32, xcclSum, nullptr});
    cases.push_back({"null sendbuff", rs, nullptr, recv, count, xcclUint32, xcclSum, ctx.comm});
    cases.push_back({"null recvbuff", rs, send, nullptr, count, xcclUint32, xcclSum, ctx.comm});
    cases.push_back({"dtype -1", rs, send, recv, count, -1, xcclSum, ctx.comm});
    cases.push_back({"dtype 12", rs, send, recv, count, 12, xcclSum, ctx.comm});
    cases.push_back({"op -1", rs, send, recv, count, xcclUint32, -1, ctx.comm});
    cases.push_back({"op xcclNumOps", rs, send, recv, count, xcclUint32, xcclNumOps, ctx.comm});
    cases.push_back({"op 1000", rs, send, recv, count, xcclUint32, 1000, ctx.comm});
    cases.push_back({"op -1 with count 0", rs, send, recv, 0, xcclUint32, -1, ctx.comm});
    cases.push_back(
        {"overflowing count", rs, send, recv, SIZE_MAX / 2, xcclUint32, xcclSum, ctx.comm});
    cases.push_back({"overlap one element past in place", rs, send, in_place + 1, count, xcclUint32,
                     xcclMax, ctx.comm});
    cases.push_back({"overlap one element before in place", rs, in_place + 1, in_place, count,
                     xcclUint32, xcclMax, ctx.comm});
    if (rs && nranks > 1)
      cases.push_back({"another rank's in-place slot", rs, send,
                       send + ((rank + 1) % nranks) * count, count, xcclUint32, xcclMin, ctx.comm});
  }
  for (const Case& c : cases) {
    const char* name = c.reduce_scatter ? "xcclReduceScatter" : "xcclAllReduce";
    const xcclDataType_t dtype = static_cast<xcclDataType_t>(c.dtype);
    const xcclRedOp_t op = static_cast<xcclRedOp_t>(c.op);
    const xcclResult_t result =
        c.reduce_scatter ? xcclReduceScatter(c.send, c.recv, c.count, dtype, op, c.comm, stream)
                         : xcclAllReduce(c.send, c.recv, c.count, dtype, op, c.comm, stream);
    const std::string message = xcclGetLastError(c.comm);
    RANK_EXPECT(ctx, result == xcclInvalidArgument,
                name << ", " << c.what << ": got " << xcclGetErrorString(result));
    RANK_EXPECT(ctx, !message.empty(), name << ", " << c.what << ": no message");
    if (c.comm != nullptr)
      RANK_EXPECT(ctx, message.find(name) != std::string::npos,
                  name << ", " << c.what << ": the message does not name the call: " << message);
  }
}

}  // namespace xccl_test
