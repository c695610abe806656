// The C handle of a fused op (xcclAgGemm, xcclGemmRs) and the steps every entry point takes with
// it. A handle is a small shell that is never freed: destroy releases the op and marks the
// shell, so a destroyed handle is refused by name instead of being dereferenced after free (as
// communicator handles are). `Handle` derives from FusedHandle<Op> and gives kMagic and kWhat
// ("an ag_gemm op"), the words of the messages.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "api/comm_handle.h"
#include "api/fused_create.h"
#include "base/error.h"
#include "comm/communicator.h"
#include "platform/runtime.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

template <typename Op>
struct FusedHandle {
  uint64_t magic = 0;
  xcclComm_t comm = nullptr;
  std::unique_ptr<Op> op;             // null once destroyed
  std::atomic<bool> released{false};  // claimed by the one destroy that frees `op`
};

template <typename Handle>
xcclResult_t CheckFusedHandle(const Handle* handle, const char* function) {
  if (handle == nullptr) return Fail(xcclInvalidArgument, "%s: op is NULL", function);
  if (handle->magic != Handle::kMagic)
    return Fail(xcclInvalidArgument, "%s: %p is not %s", function, static_cast<const void*>(handle),
                Handle::kWhat);
  return xcclSuccess;
}

// The handle's communicator, for GuardedCall's message; nullptr for a bad handle.
template <typename Handle>
xcclComm_t FusedHandleComm(const Handle* handle) {
  return handle != nullptr && handle->magic == Handle::kMagic ? handle->comm : nullptr;
}

// The op of a live handle whose communicator is live and healthy. The communicator first: after
// its destroy the op must not be touched (a destroy of the op may be freeing it).
template <typename Handle, typename Op>
xcclResult_t ResolveFusedOp(Handle* handle, const char* function, Op** op) {
  XCCL_TRY(CheckFusedHandle(handle, function));
  Communicator* comm = nullptr;
  XCCL_TRY(ResolveComm(handle->comm, function, &comm));
  if (handle->released.load() || !handle->op)
    return Fail(xcclInvalidArgument, "%s: the op was destroyed", function);
  XCCL_TRY(comm->CheckHealthy(function));
  *op = handle->op.get();
  return xcclSuccess;
}

// ResolveFusedOp under the communicator's call guard, held by `exclusive` for the caller's scope:
// the op is looked up once the guard is held, so a destroy on another thread (which takes the
// same guard) can free it neither under the call nor between the lookup and its use.
template <typename Handle, typename Op>
xcclResult_t ResolveFusedOpExclusive(Handle* handle, const char* function,
                                     std::optional<Communicator::OperationGuard>* exclusive,
                                     Op** op) {
  XCCL_TRY(CheckFusedHandle(handle, function));
  Communicator* comm = nullptr;
  XCCL_TRY(ResolveComm(handle->comm, function, &comm));
  exclusive->emplace(comm);
  XCCL_TRY((*exclusive)->Acquire(function));
  return ResolveFusedOp(handle, function, op);
}

// Create (collective): the local steps, whose failure (one this communicator recorded earlier
// too, which its peers may not have seen) is carried into the op's agreement, which every rank
// must reach, so that the other ranks fail at once too instead of waiting for this one. `Mode`
// is the op's mode enum; `Op::Shape` has the fields set here and `Op::Create` makes the op.
template <typename Handle, typename Mode>
xcclResult_t CreateFusedOp(xcclComm_t comm, const char* function, int64_t n, int64_t k,
                           int64_t m_max, xcclDataType_t in_type, xcclDataType_t out_type,
                           xcclAgGemmScales_t scales, Mode mode, int chunks,
                           const char* plugin_name, const xcclGemmPlugin_v1* plugin, Handle** op) {
  using Op = typename decltype(Handle::op)::element_type;
  if (op != nullptr) *op = nullptr;
  Communicator* impl = nullptr;
  XCCL_TRY(ResolveComm(comm, function, &impl));
  std::unique_ptr<GemmPlugin> gemm;
  Communicator::OperationGuard exclusive(impl);
  const xcclResult_t local =
      FusedCreateLocalSteps(impl, &exclusive, function, op, plugin_name, plugin, &gemm);
  typename Op::Shape shape;
  shape.n = n;
  shape.k = k;
  shape.m_max = m_max;
  shape.in_type = in_type;
  shape.out_type = out_type;
  shape.mode = mode;
  shape.pinned_chunks = chunks;
  shape.scales = ResolveScales(scales, in_type);
  auto handle = std::make_unique<Handle>();
  handle->comm = comm;
  XCCL_TRY(Op::Create(impl, shape, local, std::move(gemm), &handle->op));
  *op = handle.release();
  return xcclSuccess;
}

// Destroy: not under a call of this communicator on another thread (it may be using the op).
// After the communicator's destroy or abort there is no guard to take and none needed: that
// release waited for the calls in flight, later ones are refused, and the op holds only memory
// of its own (it may be destroyed in either order). Destroy is not collective, so a peer sharing
// this GPU may already be in its next call, waiting for this rank, while freeing here waits for
// the whole device: the op then goes at the communicator's next create or its end
// (Communicator::DeferRelease).
template <typename Handle>
xcclResult_t DestroyFusedOp(Handle* handle, const char* function) {
  XCCL_TRY(CheckFusedHandle(handle, function));
  std::optional<Communicator::OperationGuard> exclusive;
  Communicator* comm = nullptr;
  if (handle->comm->magic.load() != xcclComm::kDead) {
    XCCL_TRY(ResolveComm(handle->comm, function, &comm));
    exclusive.emplace(comm);
    XCCL_TRY(exclusive->Acquire(function));
  }
  if (handle->released.exchange(true))
    return Fail(xcclInvalidArgument, "%s: the op was destroyed", function);
  if (comm != nullptr && FreeingWaitsForDevice() && comm->topology().SharesDeviceInProcess()) {
    using Op = typename decltype(handle->op)::element_type;
    comm->DeferRelease(std::shared_ptr<Op>(std::move(handle->op)));
  } else {
    handle->op.reset();
  }
  return xcclSuccess;
}

}  // namespace xccl
