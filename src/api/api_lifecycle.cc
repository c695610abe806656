// Communicator life cycle of the C API: unique id, init (one rank, or several in this process),
// finalize, destroy, abort.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "api/api_guard.h"
#include "api/comm_handle.h"
#include "base/config.h"
#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "base/params.h"
#include "platform/runtime.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/unique_id.h"

namespace xccl {

namespace {

// InitOneRank's device argument for "the calling thread's current device".
constexpr int kCurrentDevice = -1;

xcclResult_t InitOneRank(xcclComm_t* comm, int nranks, const xcclUniqueId& id, int rank, int device,
                         const xcclConfig_t* config, const char* op) {
  LogParamsOnce();
  if (comm == nullptr) return Fail(xcclInvalidArgument, "%s: comm (output) is NULL", op);
  *comm = nullptr;
  if (nranks < 1) return Fail(xcclInvalidArgument, "%s: nranks %d must be >= 1", op, nranks);
  if (rank < 0 || rank >= nranks)
    return Fail(xcclInvalidArgument, "%s: rank %d is outside [0, %d)", op, rank, nranks);
  UniqueIdContents contents;
  XCCL_TRY(DecodeUniqueId(id, &contents));
  CommConfig resolved;
  XCCL_TRY(ResolveConfig(config, GetParams(), &resolved));
  // The device is looked up only once the arguments are known good, so that a bad argument is
  // reported as such even where no GPU is usable.
  if (device == kCurrentDevice) XCCL_TRY(DefaultDevice(-1, &device));
  std::unique_ptr<Communicator> impl;
  XCCL_TRY(Communicator::Create(id, nranks, rank, device, resolved, &impl));
  auto handle = new xcclComm();
  handle->impl = std::move(impl);
  *comm = handle;
  return xcclSuccess;
}

// Destroy and abort both end in this: the communicator goes, the handle stays marked dead.
xcclResult_t ReleaseComm(xcclComm_t comm, const char* op, bool abort) {
  Communicator* impl = nullptr;
  XCCL_TRY(ResolveComm(comm, op, &impl));
  // Claim the handle: of two threads releasing it, one wins and the other is told it is gone.
  uint64_t live = xcclComm::kLive;
  if (!comm->magic.compare_exchange_strong(live, xcclComm::kDead))
    return Fail(xcclInvalidArgument, "%s: comm %p was destroyed or aborted", op, (void*)comm);
  // Abort wakes calls blocked on other threads (their waits see it within milliseconds); then
  // both wait for every other call in flight on the handle to leave before freeing what they
  // use. Past their own deadline and a margin, the communicator is left allocated rather than
  // freed under a call that still runs.
  // A failed communicator's destroy is an abort: its peers' waits must end, naming it.
  if (abort || impl->async_error() != xcclSuccess) impl->Abort();
  const Deadline deadline(impl->timeout_ms() + 2000);
  while (comm->in_flight.load() > 1) {  // this call is one of them
    if (deadline.Expired())
      return Fail(xcclInternalError,
                  "%s: %d calls on comm %p did not leave within their deadline; it is not freed",
                  op, comm->in_flight.load() - 1, (void*)comm);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  comm->impl.reset();
  return xcclSuccess;
}

}  // namespace
}  // namespace xccl

using namespace xccl;

extern "C" {

xcclResult_t xcclGetUniqueId(xcclUniqueId* unique_id) {
  return GuardedCall("xcclGetUniqueId", nullptr, [&]() -> xcclResult_t {
    LogParamsOnce();
    if (unique_id == nullptr) return Fail(xcclInvalidArgument, "xcclGetUniqueId: id is NULL");
    return Bootstrap::CreateUniqueId(unique_id, GetParams());
  });
}

xcclResult_t xcclCommInitRank(xcclComm_t* comm, int nranks, xcclUniqueId id, int rank) {
  return GuardedCall("xcclCommInitRank", nullptr, [&] {
    return InitOneRank(comm, nranks, id, rank, kCurrentDevice, nullptr, "xcclCommInitRank");
  });
}

xcclResult_t xcclCommInitRankConfig(xcclComm_t* comm, int nranks, xcclUniqueId id, int rank,
                                    xcclConfig_t* config) {
  return GuardedCall("xcclCommInitRankConfig", nullptr, [&] {
    return InitOneRank(comm, nranks, id, rank, kCurrentDevice, config, "xcclCommInitRankConfig");
  });
}

xcclResult_t xcclCommInitAll(xcclComm_t* comms, int ndev, const int* devlist) {
  return GuardedCall("xcclCommInitAll", nullptr, [&]() -> xcclResult_t {
    if (comms == nullptr) return Fail(xcclInvalidArgument, "xcclCommInitAll: comms is NULL");
    if (ndev < 1) return Fail(xcclInvalidArgument, "xcclCommInitAll: ndev %d must be >= 1", ndev);
    for (int i = 0; i < ndev; ++i) {
      comms[i] = nullptr;
      if (devlist != nullptr && devlist[i] < 0)
        return Fail(xcclInvalidArgument, "xcclCommInitAll: devlist[%d] = %d", i, devlist[i]);
    }
    xcclUniqueId id;
    XCCL_TRY(xcclGetUniqueId(&id));
    // Each rank joins the rendezvous from a thread of its own, as separate processes would.
    std::vector<xcclResult_t> results(ndev, xcclSuccess);
    std::vector<std::string> messages(ndev);
    std::vector<std::thread> threads;
    std::vector<int> devices(ndev, 0);
    for (int i = 0; i < ndev; ++i) {
      if (devlist != nullptr) {
        devices[i] = devlist[i];
      } else {
        XCCL_TRY(DefaultDevice(i, &devices[i]));
      }
    }
    int unstarted = -1;  // the rank whose thread could not start, if any
    std::string why;
    // The threads wait at a gate until every one of them has started: where one cannot start,
    // the others leave without joining the rendezvous, which would wait for it until the
    // deadline.
    std::mutex gate_mutex;
    std::condition_variable gate_opened;
    int gate = 0;  // 0: closed, 1: go, -1: give up
    for (int i = 0; i < ndev && unstarted < 0; ++i) {
      try {
        threads.emplace_back([&, i] {
          {
            std::unique_lock<std::mutex> lock(gate_mutex);
            gate_opened.wait(lock, [&] { return gate != 0; });
            if (gate < 0) return;
          }
          // Nothing may escape a thread (std::terminate): an exception becomes the rank's result.
          try {
            results[i] =
                InitOneRank(&comms[i], ndev, id, i, devices[i], nullptr, "xcclCommInitAll");
          } catch (const std::exception& e) {
            results[i] = Fail(xcclSystemError, "unexpected exception: %s", e.what());
          }
          messages[i] = ThreadLastError();
        });
      } catch (const std::system_error& e) {
        unstarted = i;
        why = e.what();
      }
    }
    {
      std::lock_guard<std::mutex> lock(gate_mutex);
      gate = unstarted < 0 ? 1 : -1;
    }
    gate_opened.notify_all();
    for (auto& thread : threads) thread.join();
    // Given up at the gate, no rank made a communicator: nothing to release.
    if (unstarted >= 0)
      return Fail(xcclSystemError, "xcclCommInitAll: cannot start the thread of rank %d: %s",
                  unstarted, why.c_str());
    for (int i = 0; i < ndev; ++i) {
      if (results[i] == xcclSuccess) continue;
      for (int j = 0; j < ndev; ++j)
        if (comms[j] != nullptr) ReleaseComm(comms[j], "xcclCommInitAll", /*abort=*/true);
      for (int j = 0; j < ndev; ++j) comms[j] = nullptr;
      return Fail(results[i], "xcclCommInitAll: rank %d: %s", i, messages[i].c_str());
    }
    if (ndev > 1) XCCL_INFO(kLogInit, "xcclCommInitAll: %d ranks in this process", ndev);
    return xcclSuccess;
  });
}

xcclResult_t xcclCommFinalize(xcclComm_t comm) {
  // Calls complete before they return on the host platform, so nothing is outstanding.
  return GuardedCall("xcclCommFinalize", comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    return ResolveComm(comm, "xcclCommFinalize", &impl);
  });
}

xcclResult_t xcclCommDestroy(xcclComm_t comm) {
  return GuardedCall("xcclCommDestroy", comm,
                     [&] { return ReleaseComm(comm, "xcclCommDestroy", /*abort=*/false); });
}

xcclResult_t xcclCommAbort(xcclComm_t comm) {
  return GuardedCall("xcclCommAbort", comm,
                     [&] { return ReleaseComm(comm, "xcclCommAbort", /*abort=*/true); });
}

}  // extern "C"
