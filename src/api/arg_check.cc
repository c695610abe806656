#include "api/arg_check.h"

#include <cstdint>

#include "base/byte_range.h"
#include "base/datatype.h"
#include "base/error.h"

namespace xccl {

xcclResult_t CheckAllGatherArgs(const void* send, void* recv, size_t count, int datatype, int rank,
                                int nranks, size_t* block_bytes) {
  size_t size = DataTypeSize(datatype);
  if (size == 0)
    return Fail(xcclInvalidArgument, "xcclAllGather: datatype %d is not an xcclDataType_t",
                datatype);
  if (count > SIZE_MAX / size / static_cast<size_t>(nranks))
    return Fail(xcclInvalidArgument,
                "xcclAllGather: sendcount %zu x %zu bytes x %d ranks overflows size_t", count, size,
                nranks);
  *block_bytes = count * size;
  if (count == 0) return xcclSuccess;
  if (send == nullptr || recv == nullptr)
    return Fail(xcclInvalidArgument, "xcclAllGather: %s is NULL with sendcount %zu",
                send == nullptr ? "sendbuff" : "recvbuff", count);
  const uintptr_t recv_begin = reinterpret_cast<uintptr_t>(recv);
  const uintptr_t send_begin = reinterpret_cast<uintptr_t>(send);
  const size_t total = *block_bytes * nranks;
  if (send_begin > UINTPTR_MAX - *block_bytes)
    return Fail(xcclInvalidArgument, "xcclAllGather: sendbuff + %zu bytes wraps the address space",
                *block_bytes);
  if (recv_begin > UINTPTR_MAX - total)
    return Fail(xcclInvalidArgument, "xcclAllGather: recvbuff + %zu bytes wraps the address space",
                total);
  const bool in_place = send_begin == recv_begin + rank * *block_bytes;
  const bool overlaps = ByteRange{send, *block_bytes}.Overlaps(ByteRange{recv, total});
  if (overlaps && !in_place)
    return Fail(xcclInvalidArgument,
                "xcclAllGather: sendbuff overlaps recvbuff but is not recvbuff + rank * "
                "sendcount elements (the in-place position of rank %d)",
                rank);
  return xcclSuccess;
}

}  // namespace xccl
