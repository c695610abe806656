// The ag_gemm entry points of the C API. An op handle is a small shell that is never freed:
// destroy releases the op and marks the shell, so a destroyed handle is refused by name
// instead of being dereferenced after free (as communicator handles are).
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "api/api_guard.h"
#include "api/fused_create.h"
#include "base/error.h"
#include "fused/ag_gemm/ag_gemm_op.h"
#include "fused/ag_gemm/ag_gemm_testing.h"
#include "platform/runtime.h"
#include "xccl_gemm.h"

using namespace xccl;

struct xcclAgGemm {
  static constexpr uint64_t kMagic = 0x78636c6167656d6dull;  // "xclagemm"
  uint64_t magic = kMagic;
  xcclComm_t comm = nullptr;
  std::unique_ptr<AgGemmOp> op;       // null once destroyed
  std::atomic<bool> released{false};  // claimed by the one destroy that frees `op`
};

namespace {

xcclResult_t CheckHandle(xcclAgGemm_t handle, const char* function) {
  if (handle == nullptr) return Fail(xcclInvalidArgument, "%s: op is NULL", function);
  if (handle->magic != xcclAgGemm::kMagic)
    return Fail(xcclInvalidArgument, "%s: %p is not an ag_gemm op", function,
                static_cast<void*>(handle));
  return xcclSuccess;
}

// The op of a live handle whose communicator is live and healthy. The communicator first: after
// its destroy the op must not be touched (a destroy of the op may be freeing it).
xcclResult_t ResolveOp(xcclAgGemm_t handle, const char* function, AgGemmOp** op) {
  XCCL_TRY(CheckHandle(handle, function));
  Communicator* comm = nullptr;
  XCCL_TRY(ResolveComm(handle->comm, function, &comm));
  if (handle->released.load() || !handle->op)
    return Fail(xcclInvalidArgument, "%s: the op was destroyed", function);
  XCCL_TRY(comm->CheckHealthy(function));
  *op = handle->op.get();
  return xcclSuccess;
}

// ResolveOp under the communicator's call guard, held by `exclusive` for the caller's scope: the
// op is looked up once the guard is held, so a destroy on another thread (which takes the same
// guard) can free it neither under the call nor between the lookup and its use.
xcclResult_t ResolveOpExclusive(xcclAgGemm_t handle, const char* function,
                                std::optional<Communicator::OperationGuard>* exclusive,
                                AgGemmOp** op) {
  XCCL_TRY(CheckHandle(handle, function));
  Communicator* comm = nullptr;
  XCCL_TRY(ResolveComm(handle->comm, function, &comm));
  exclusive->emplace(comm);
  XCCL_TRY((*exclusive)->Acquire(function));
  return ResolveOp(handle, function, op);
}

}  // namespace

xcclResult_t xccl::CorruptAgGemmRecvSlotForTesting(xcclAgGemm_t op, int source) {
  AgGemmOp* impl = nullptr;
  XCCL_TRY(ResolveOp(op, "CorruptAgGemmRecvSlotForTesting", &impl));
  impl->CorruptRecvSlotForTesting(source, /*scales=*/false);
  return xcclSuccess;
}

xcclResult_t xccl::CorruptAgGemmScalesForTesting(xcclAgGemm_t op, int source) {
  AgGemmOp* impl = nullptr;
  XCCL_TRY(ResolveOp(op, "CorruptAgGemmScalesForTesting", &impl));
  impl->CorruptRecvSlotForTesting(source, /*scales=*/true);
  return xcclSuccess;
}

xcclResult_t xccl::SetAgGemmSelfTestStagingForTesting(xcclAgGemm_t op, size_t bytes) {
  AgGemmOp* impl = nullptr;
  XCCL_TRY(ResolveOp(op, "SetAgGemmSelfTestStagingForTesting", &impl));
  return impl->SetSelfTestStaging(bytes);
}

namespace {

xcclComm_t CommOf(xcclAgGemm_t handle) {
  return handle != nullptr && handle->magic == xcclAgGemm::kMagic ? handle->comm : nullptr;
}

}  // namespace

extern "C" {

xcclResult_t xcclAgGemmCreate(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                              xcclDataType_t in_type, xcclDataType_t out_type,
                              xcclAgGemmMode_t mode, int chunks, const char* plugin_name,
                              const struct xcclGemmPlugin_v1* plugin, xcclAgGemm_t* op) {
  return xcclAgGemmCreateScaled(comm, n, k, m_max, in_type, out_type, xcclAgGemmScalesDefault, mode,
                                chunks, plugin_name, plugin, op);
}

xcclResult_t xcclAgGemmCreateScaled(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                                    xcclDataType_t in_type, xcclDataType_t out_type,
                                    xcclAgGemmScales_t scales, xcclAgGemmMode_t mode, int chunks,
                                    const char* plugin_name, const struct xcclGemmPlugin_v1* plugin,
                                    xcclAgGemm_t* op) {
  return GuardedCall("xcclAgGemmCreate", comm, [&]() -> xcclResult_t {
    if (op != nullptr) *op = nullptr;
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclAgGemmCreate", &impl));
    // Create is collective: a failure here (a failure this communicator recorded earlier too,
    // which its peers may not have seen) is carried into it, which every rank must reach, so
    // that the other ranks fail at once too instead of waiting for this one.
    std::unique_ptr<GemmPlugin> gemm;
    Communicator::OperationGuard exclusive(impl);
    const xcclResult_t local =
        FusedCreateLocalSteps(impl, &exclusive, "xcclAgGemmCreate", op, plugin_name, plugin, &gemm);
    AgGemmOp::Shape shape;
    shape.n = n;
    shape.k = k;
    shape.m_max = m_max;
    shape.in_type = in_type;
    shape.out_type = out_type;
    shape.mode = mode;
    shape.pinned_chunks = chunks;
    shape.scales = ResolveScales(scales, in_type);
    auto handle = std::make_unique<xcclAgGemm>();
    handle->comm = comm;
    XCCL_TRY(AgGemmOp::Create(impl, shape, local, std::move(gemm), &handle->op));
    *op = handle.release();
    return xcclSuccess;
  });
}

xcclResult_t xcclAgGemmPaddedM(xcclAgGemm_t op, int64_t m, int64_t* padded_m) {
  return GuardedCall("xcclAgGemmPaddedM", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmPaddedM", &exclusive, &impl));
    if (padded_m == nullptr)
      return Fail(xcclInvalidArgument, "xcclAgGemmPaddedM: padded_m is NULL");
    return impl->PaddedRows(m, padded_m);
  });
}

xcclResult_t xcclAgGemmLocalRows(xcclAgGemm_t op, int64_t m, void** rows, float** scales) {
  return GuardedCall("xcclAgGemmLocalRows", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmLocalRows", &exclusive, &impl));
    if (rows == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmLocalRows: rows is NULL");
    return impl->LocalRows(m, rows, scales);
  });
}

xcclResult_t xcclAgGemmLocalScaleTile(xcclAgGemm_t op, int64_t m, int tile, int* tiles,
                                      int64_t* row_begin, int64_t* row_end, float** scales) {
  return GuardedCall("xcclAgGemmLocalScaleTile", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmLocalScaleTile", &exclusive, &impl));
    return impl->LocalScaleTile(m, tile, tiles, row_begin, row_end, scales);
  });
}

xcclResult_t xcclAgGemmChunks(xcclAgGemm_t op, int64_t m, int* chunks) {
  return GuardedCall("xcclAgGemmChunks", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmChunks", &exclusive, &impl));
    if (chunks == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmChunks: chunks is NULL");
    return impl->Chunks(m, chunks);
  });
}

xcclResult_t xcclAgGemmRun(xcclAgGemm_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, void** result,
                           xcclStream_t stream) {
  return GuardedCall("xcclAgGemmRun", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmRun", &exclusive, &impl));
    return impl->Run(a, a_scale, b, b_scale, m, out, result, stream);
  });
}

xcclResult_t xcclAgGemmSelfTest(xcclAgGemm_t op, int64_t m, xcclStream_t stream) {
  return GuardedCall("xcclAgGemmSelfTest", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclAgGemmSelfTest", &exclusive, &impl));
    return impl->SelfTest(m, stream);
  });
}

xcclResult_t xcclAgGemmDestroy(xcclAgGemm_t op) {
  return GuardedCall("xcclAgGemmDestroy", CommOf(op), [&]() -> xcclResult_t {
    XCCL_TRY(CheckHandle(op, "xcclAgGemmDestroy"));
    // Not under a call of this communicator on another thread (it may be using the op). After
    // the communicator's destroy or abort there is no guard to take and none needed: that
    // release waited for the calls in flight, later ones are refused, and the op holds only
    // memory of its own (it may be destroyed in either order).
    std::optional<Communicator::OperationGuard> exclusive;
    Communicator* comm = nullptr;
    if (op->comm->magic.load() != xcclComm::kDead) {
      XCCL_TRY(ResolveComm(op->comm, "xcclAgGemmDestroy", &comm));
      exclusive.emplace(comm);
      XCCL_TRY(exclusive->Acquire("xcclAgGemmDestroy"));
    }
    if (op->released.exchange(true))
      return Fail(xcclInvalidArgument, "xcclAgGemmDestroy: the op was destroyed");
    // Destroy is not collective, so a peer sharing this GPU may already be in its next call,
    // waiting for this rank, while freeing here waits for the whole device: the op then goes
    // at the communicator's next create or its end (Communicator::DeferRelease).
    if (comm != nullptr && FreeingWaitsForDevice() && comm->topology().SharesDeviceInProcess()) {
      comm->DeferRelease(std::shared_ptr<AgGemmOp>(std::move(op->op)));
    } else {
      op->op.reset();
    }
    return xcclSuccess;
  });
}

}  // extern "C"
