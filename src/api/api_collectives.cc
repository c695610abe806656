// Collective entry points of the C API: argument checks, then the algorithm.
#include "api/api_guard.h"
#include "api/arg_check.h"
#include "base/datatype.h"
#include "base/logging.h"
#include "collectives/all_gather/all_gather.h"
#include "collectives/all_reduce/all_reduce.h"
#include "collectives/barrier/barrier.h"
#include "collectives/broadcast/broadcast.h"
#include "collectives/reduce_scatter/reduce_scatter.h"

using namespace xccl;

extern "C" {

xcclResult_t xcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           xcclDataType_t datatype, xcclComm_t comm, xcclStream_t stream) {
  return GuardedCall("xcclAllGather", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclAllGather", &impl));
    size_t block_bytes = 0;
    XCCL_TRY(CheckAllGatherArgs(sendbuff, recvbuff, sendcount, datatype, impl->rank(),
                                impl->nranks(), &block_bytes));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire("xcclAllGather"));
    XCCL_TRY(impl->CheckHealthy("xcclAllGather"));
    XCCL_TRACE(kLogColl, "xcclAllGather rank %d send %p recv %p count %zu type %s", impl->rank(),
               sendbuff, recvbuff, sendcount, DataTypeName(datatype));
    return AllGather(impl, sendbuff, recvbuff, block_bytes, stream);
  });
}

xcclResult_t xcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               xcclDataType_t datatype, xcclRedOp_t op, xcclComm_t comm,
                               xcclStream_t stream) {
  return GuardedCall("xcclReduceScatter", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclReduceScatter", &impl));
    size_t block_bytes = 0;
    XCCL_TRY(CheckReduceScatterArgs(sendbuff, recvbuff, recvcount, datatype, op, impl->rank(),
                                    impl->nranks(), &block_bytes));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire("xcclReduceScatter"));
    XCCL_TRY(impl->CheckHealthy("xcclReduceScatter"));
    XCCL_TRACE(kLogColl, "xcclReduceScatter rank %d send %p recv %p count %zu type %s op %d",
               impl->rank(), sendbuff, recvbuff, recvcount, DataTypeName(datatype), op);
    return ReduceScatter(impl, "xcclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op,
                         stream, recvcount);
  });
}

xcclResult_t xcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           xcclDataType_t datatype, xcclRedOp_t op, xcclComm_t comm,
                           xcclStream_t stream) {
  return GuardedCall("xcclAllReduce", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclAllReduce", &impl));
    size_t bytes = 0;
    XCCL_TRY(CheckAllReduceArgs(sendbuff, recvbuff, count, datatype, op, &bytes));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire("xcclAllReduce"));
    XCCL_TRY(impl->CheckHealthy("xcclAllReduce"));
    XCCL_TRACE(kLogColl, "xcclAllReduce rank %d send %p recv %p count %zu type %s op %d",
               impl->rank(), sendbuff, recvbuff, count, DataTypeName(datatype), op);
    return AllReduce(impl, sendbuff, recvbuff, count, datatype, op, stream);
  });
}

xcclResult_t xcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           xcclDataType_t datatype, int root, xcclComm_t comm,
                           xcclStream_t stream) {
  return GuardedCall("xcclBroadcast", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclBroadcast", &impl));
    size_t bytes = 0;
    XCCL_TRY(CheckBroadcastArgs(sendbuff, recvbuff, count, datatype, root, impl->rank(),
                                impl->nranks(), &bytes));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire("xcclBroadcast"));
    XCCL_TRY(impl->CheckHealthy("xcclBroadcast"));
    XCCL_TRACE(kLogColl, "xcclBroadcast rank %d send %p recv %p count %zu type %s root %d",
               impl->rank(), sendbuff, recvbuff, count, DataTypeName(datatype), root);
    return Broadcast(impl, sendbuff, recvbuff, bytes, root, stream);
  });
}

xcclResult_t xcclBarrier(xcclComm_t comm, xcclStream_t stream) {
  return GuardedCall("xcclBarrier", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclBarrier", &impl));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire("xcclBarrier"));
    XCCL_TRY(impl->CheckHealthy("xcclBarrier"));
    return Barrier(impl, stream);
  });
}

}  // extern "C"
