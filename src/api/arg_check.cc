#include "api/arg_check.h"

#include <cstdint>

#include "base/byte_range.h"
#include "base/datatype.h"
#include "base/error.h"

namespace xccl {

namespace {

// The element size of `datatype`, with `count` x size x `blocks` checked against size_t.
xcclResult_t CheckCount(const char* op, const char* count_name, size_t count, int datatype,
                        int blocks, size_t* element_bytes) {
  const size_t size = DataTypeSize(datatype);
  if (size == 0)
    return Fail(xcclInvalidArgument, "%s: datatype %d is not an xcclDataType_t", op, datatype);
  if (count > SIZE_MAX / size / static_cast<size_t>(blocks))
    return Fail(xcclInvalidArgument, "%s: %s %zu x %zu bytes x %d ranks overflows size_t", op,
                count_name, count, size, blocks);
  *element_bytes = size;
  return xcclSuccess;
}

xcclResult_t CheckRedOp(const char* op_name, int op) {
  if (op < xcclSum || op >= xcclNumOps)
    return Fail(xcclInvalidArgument,
                "%s: op %d is not an xcclRedOp_t (sum 0, prod 1, max 2, min 3, avg 4)", op_name,
                op);
  return xcclSuccess;
}

// Neither buffer NULL or wrapping the address space, and the two overlapping only where the
// smaller one sits `in_place_at` bytes into the larger (NCCL's in-place layout, named by
// `in_place_rule`).
xcclResult_t CheckBuffers(const char* op, const void* send, size_t send_bytes, const void* recv,
                          size_t recv_bytes, size_t in_place_at, const char* in_place_rule) {
  if (send == nullptr || recv == nullptr)
    return Fail(xcclInvalidArgument, "%s: %s is NULL with a count above 0", op,
                send == nullptr ? "sendbuff" : "recvbuff");
  const uintptr_t send_begin = reinterpret_cast<uintptr_t>(send);
  const uintptr_t recv_begin = reinterpret_cast<uintptr_t>(recv);
  if (send_begin > UINTPTR_MAX - send_bytes)
    return Fail(xcclInvalidArgument, "%s: sendbuff + %zu bytes wraps the address space", op,
                send_bytes);
  if (recv_begin > UINTPTR_MAX - recv_bytes)
    return Fail(xcclInvalidArgument, "%s: recvbuff + %zu bytes wraps the address space", op,
                recv_bytes);
  const bool in_place = send_bytes <= recv_bytes ? send_begin == recv_begin + in_place_at
                                                 : recv_begin == send_begin + in_place_at;
  if (!in_place && ByteRange{send, send_bytes}.Overlaps(ByteRange{recv, recv_bytes}))
    return Fail(xcclInvalidArgument, "%s: sendbuff overlaps recvbuff but is not in place (%s)", op,
                in_place_rule);
  return xcclSuccess;
}

}  // namespace

xcclResult_t CheckAllGatherArgs(const void* send, void* recv, size_t count, int datatype, int rank,
                                int nranks, size_t* block_bytes) {
  size_t size = 0;
  XCCL_TRY(CheckCount("xcclAllGather", "sendcount", count, datatype, nranks, &size));
  *block_bytes = count * size;
  if (count == 0) return xcclSuccess;
  return CheckBuffers("xcclAllGather", send, *block_bytes, recv, *block_bytes * nranks,
                      rank * *block_bytes, "sendbuff == recvbuff + rank * sendcount elements");
}

xcclResult_t CheckReduceScatterArgs(const void* send, void* recv, size_t count, int datatype,
                                    int op, int rank, int nranks, size_t* block_bytes) {
  size_t size = 0;
  XCCL_TRY(CheckCount("xcclReduceScatter", "recvcount", count, datatype, nranks, &size));
  XCCL_TRY(CheckRedOp("xcclReduceScatter", op));
  *block_bytes = count * size;
  if (count == 0) return xcclSuccess;
  return CheckBuffers("xcclReduceScatter", send, *block_bytes * nranks, recv, *block_bytes,
                      rank * *block_bytes, "recvbuff == sendbuff + rank * recvcount elements");
}

xcclResult_t CheckAllReduceArgs(const void* send, void* recv, size_t count, int datatype, int op,
                                size_t* bytes) {
  size_t size = 0;
  XCCL_TRY(CheckCount("xcclAllReduce", "count", count, datatype, 1, &size));
  XCCL_TRY(CheckRedOp("xcclAllReduce", op));
  *bytes = count * size;
  if (count == 0) return xcclSuccess;
  return CheckBuffers("xcclAllReduce", send, *bytes, recv, *bytes, 0, "sendbuff == recvbuff");
}

xcclResult_t CheckBroadcastArgs(const void* send, void* recv, size_t count, int datatype, int root,
                                int rank, int nranks, size_t* bytes) {
  size_t size = 0;
  XCCL_TRY(CheckCount("xcclBroadcast", "count", count, datatype, 1, &size));
  if (root < 0 || root >= nranks)
    return Fail(xcclInvalidArgument, "xcclBroadcast: root %d is not a rank (0..%d)", root,
                nranks - 1);
  *bytes = count * size;
  if (count == 0) return xcclSuccess;
  if (rank != root) {
    // Only root reads sendbuff (NCCL's rule), so the others' may be anything.
    if (recv == nullptr)
      return Fail(xcclInvalidArgument, "xcclBroadcast: recvbuff is NULL with a count above 0");
    if (reinterpret_cast<uintptr_t>(recv) > UINTPTR_MAX - *bytes)
      return Fail(xcclInvalidArgument,
                  "xcclBroadcast: recvbuff + %zu bytes wraps the address space", *bytes);
    return xcclSuccess;
  }
  return CheckBuffers("xcclBroadcast", send, *bytes, recv, *bytes, 0, "sendbuff == recvbuff");
}

}  // namespace xccl
