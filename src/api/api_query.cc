// Queries and error reporting of the C API.
#include <initializer_list>
#include <string>
#include <utility>

#include "api/api_guard.h"
#include "api/comm_handle.h"
#include "base/error.h"
#include "base/topology.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t ResolveComm(xcclComm_t comm, const char* op, Communicator** out) {
  if (comm == nullptr) return Fail(xcclInvalidArgument, "%s: comm is NULL", op);
  const uint64_t magic = comm->magic.load();
  if (magic == xcclComm::kDead)
    return Fail(xcclInvalidArgument, "%s: comm %p was destroyed or aborted", op, (void*)comm);
  if (magic != xcclComm::kLive || !comm->impl)
    return Fail(xcclInvalidArgument, "%s: %p is not an xccl communicator", op, (void*)comm);
  *out = comm->impl.get();
  return xcclSuccess;
}

bool IsHandle(xcclComm_t comm) {
  if (comm == nullptr) return false;
  const uint64_t magic = comm->magic.load();
  return magic == xcclComm::kLive || magic == xcclComm::kDead;
}

void RememberLastError(xcclComm_t comm) {
  if (!IsHandle(comm)) return;
  std::lock_guard<std::mutex> lock(comm->last_error_mutex);
  comm->last_error = ThreadLastError();
}

namespace {

template <typename Getter>
xcclResult_t QueryInt(const char* op, xcclComm_t comm, int* out, Getter getter) {
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    if (out == nullptr) return Fail(xcclInvalidArgument, "%s: output pointer is NULL", op);
    *out = getter(impl);
    return xcclSuccess;
  });
}

// Names the first NULL among `outputs` (all are required), or nullptr.
const char* FirstNull(std::initializer_list<std::pair<const char*, const int*>> outputs) {
  for (const auto& output : outputs)
    if (output.second == nullptr) return output.first;
  return nullptr;
}

// `rank`'s index among the ranks of its node, in ascending rank order.
int LocalRankOf(const Topology& topology, int rank) {
  int local = 0;
  for (int r = 0; r < rank; ++r) local += topology.node_of_rank[r] == topology.node_of_rank[rank];
  return local;
}

}  // namespace
}  // namespace xccl

using namespace xccl;

extern "C" {

xcclResult_t xcclGetVersion(int* version) {
  return GuardedCall("xcclGetVersion", nullptr, [&]() -> xcclResult_t {
    if (version == nullptr) return Fail(xcclInvalidArgument, "xcclGetVersion: version is NULL");
    *version = XCCL_VERSION_CODE;
    return xcclSuccess;
  });
}

const char* xcclGetPlatformName(void) { return PlatformName(); }

xcclResult_t xcclCommCount(const xcclComm_t comm, int* count) {
  return QueryInt("xcclCommCount", comm, count, [](Communicator* c) { return c->nranks(); });
}

xcclResult_t xcclCommUserRank(const xcclComm_t comm, int* rank) {
  return QueryInt("xcclCommUserRank", comm, rank, [](Communicator* c) { return c->rank(); });
}

xcclResult_t xcclCommDevice(const xcclComm_t comm, int* device) {
  return QueryInt("xcclCommDevice", comm, device, [](Communicator* c) { return c->device(); });
}

xcclResult_t xcclCommQueueCount(const xcclComm_t comm, int* count) {
  return QueryInt("xcclCommQueueCount", comm, count,
                  [](Communicator* c) { return c->transport()->queue_count(); });
}

xcclResult_t xcclCommNodeInfo(const xcclComm_t comm, int* node, int* node_count, int* local_rank,
                              int* local_size) {
  const char* op = "xcclCommNodeInfo";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    const char* null_output = FirstNull({{"node", node},
                                         {"nodeCount", node_count},
                                         {"localRank", local_rank},
                                         {"localSize", local_size}});
    if (null_output != nullptr) return Fail(xcclInvalidArgument, "%s: %s is NULL", op, null_output);
    const Topology& topology = impl->topology();
    *node = topology.node_of_rank[topology.rank];
    *node_count = topology.node_count;
    *local_rank = LocalRankOf(topology, topology.rank);
    *local_size = static_cast<int>(topology.local_ranks.size());
    return xcclSuccess;
  });
}

xcclResult_t xcclCommRankNode(const xcclComm_t comm, int rank, int* node, int* local_rank) {
  const char* op = "xcclCommRankNode";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    const Topology& topology = impl->topology();
    if (rank < 0 || rank >= topology.nranks)
      return Fail(xcclInvalidArgument, "%s: rank %d is not a rank of this communicator (0..%d)", op,
                  rank, topology.nranks - 1);
    const char* null_output = FirstNull({{"node", node}, {"localRank", local_rank}});
    if (null_output != nullptr) return Fail(xcclInvalidArgument, "%s: %s is NULL", op, null_output);
    *node = topology.node_of_rank[rank];
    *local_rank = LocalRankOf(topology, rank);
    return xcclSuccess;
  });
}

xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t* async_error) {
  return GuardedCall("xcclCommGetAsyncError", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclCommGetAsyncError", &impl));
    if (async_error == nullptr)
      return Fail(xcclInvalidArgument, "xcclCommGetAsyncError: asyncError is NULL");
    *async_error = impl->async_error();
    // A failure found on the device reaches the caller here first: its message becomes the
    // communicator's last error, so that xcclGetLastError(comm) names the peer.
    if (*async_error != xcclSuccess) {
      std::lock_guard<std::mutex> lock(comm->last_error_mutex);
      comm->last_error = impl->failure_message();
    }
    return xcclSuccess;
  });
}

const char* xcclGetErrorString(xcclResult_t result) {
  switch (result) {
    case xcclSuccess:
      return "no error";
    case xcclUnhandledDeviceError:
      return "unhandled device (CUDA/HIP) error";
    case xcclSystemError:
      return "unhandled system error (socket, shared memory, thread)";
    case xcclInternalError:
      return "internal error - please report this issue";
    case xcclInvalidArgument:
      return "invalid argument";
    case xcclInvalidUsage:
      return "invalid usage";
    case xcclRemoteError:
      return "remote process exited or there was a network error";
    case xcclInProgress:
      return "operation in progress";
    case xcclTimeout:
      return "a wait passed its deadline (XCCL_TIMEOUT_MS)";
    default:
      return "unknown result code";
  }
}

const char* xcclGetLastError(xcclComm_t comm) {
  if (IsHandle(comm)) {
    // The string lives as long as the handle (forever) and changes only on a later failure.
    thread_local std::string copy;
    std::lock_guard<std::mutex> lock(comm->last_error_mutex);
    copy = comm->last_error;
    return copy.c_str();
  }
  return ThreadLastError().c_str();
}

}  // extern "C"
