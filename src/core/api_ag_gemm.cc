// The ag_gemm entry points of the C API. An op handle is a small shell that is never freed:
// destroy releases the op and marks the shell, so a destroyed handle is refused by name
// instead of being dereferenced after free (as communicator handles are).
#include <memory>
#include <string>

#include "core/api_guard.h"
#include "core/error.h"
#include "fused/ag_gemm_op.h"
#include "fused/ag_gemm_testing.h"
#include "xccl_gemm.h"

using namespace xccl;

struct xcclAgGemm {
  static constexpr uint64_t kMagic = 0x78636c6167656d6dull;  // "xclagemm"
  uint64_t magic = kMagic;
  xcclComm_t comm = nullptr;
  std::unique_ptr<AgGemmOp> op;  // null once destroyed
};

namespace {

xcclResult_t ResolveOp(xcclAgGemm_t handle, const char* function, AgGemmOp** op) {
  if (handle == nullptr) return Fail(xcclInvalidArgument, "%s: op is NULL", function);
  if (handle->magic != xcclAgGemm::kMagic)
    return Fail(xcclInvalidArgument, "%s: %p is not an ag_gemm op", function,
                static_cast<void*>(handle));
  if (!handle->op) return Fail(xcclInvalidArgument, "%s: the op was destroyed", function);
  // The communicator may have been destroyed under the op: its handle says so.
  Communicator* comm = nullptr;
  XCCL_TRY(ResolveComm(handle->comm, function, &comm));
  XCCL_TRY(comm->CheckHealthy(function));
  *op = handle->op.get();
  return xcclSuccess;
}

}  // namespace

xcclResult_t xccl::CorruptAgGemmSlotForTesting(xcclAgGemm_t op, int source) {
  AgGemmOp* impl = nullptr;
  XCCL_TRY(ResolveOp(op, "CorruptAgGemmSlotForTesting", &impl));
  impl->CorruptSlotForTesting(source);
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
  return GuardedCall("xcclAgGemmCreate", comm, [&]() -> xcclResult_t {
    if (op != nullptr) *op = nullptr;
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, "xcclAgGemmCreate", &impl));
    // Create is collective: a failure here (a failure this communicator recorded earlier too,
    // which its peers may not have seen) is carried into it, which every rank must reach, so
    // that the other ranks fail at once too instead of waiting for this one.
    std::unique_ptr<GemmPlugin> gemm;
    Communicator::OperationGuard exclusive(impl);
    auto local_steps = [&]() -> xcclResult_t {
      XCCL_TRY(exclusive.Acquire("xcclAgGemmCreate"));
      XCCL_TRY(impl->CheckHealthy("xcclAgGemmCreate"));
      if (op == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmCreate: op is NULL");
      if (plugin != nullptr && plugin_name != nullptr && *plugin_name != '\0')
        return Fail(xcclInvalidArgument,
                    "xcclAgGemmCreate: pass a plugin name or a plugin struct, not both");
      return plugin != nullptr ? GemmPlugin::FromStruct(plugin, &gemm)
                               : GemmPlugin::Load(plugin_name != nullptr ? plugin_name : "", &gemm);
    };
    const xcclResult_t local = local_steps();
    AgGemmOp::Shape shape;
    shape.n = n;
    shape.k = k;
    shape.m_max = m_max;
    shape.in_type = in_type;
    shape.out_type = out_type;
    shape.mode = mode;
    shape.pinned_chunks = chunks;
    auto handle = std::make_unique<xcclAgGemm>();
    handle->comm = comm;
    XCCL_TRY(AgGemmOp::Create(impl, shape, local, std::move(gemm), &handle->op));
    *op = handle.release();
    return xcclSuccess;
  });
}

xcclResult_t xcclAgGemmPaddedM(xcclAgGemm_t op, int64_t m, int64_t* padded_m) {
  return GuardedCall("xcclAgGemmPaddedM", CommOf(op), [&]() -> xcclResult_t {
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOp(op, "xcclAgGemmPaddedM", &impl));
    if (padded_m == nullptr)
      return Fail(xcclInvalidArgument, "xcclAgGemmPaddedM: padded_m is NULL");
    return impl->PaddedRows(m, padded_m);
  });
}

xcclResult_t xcclAgGemmLocalRows(xcclAgGemm_t op, int64_t m, void** rows, float** scales) {
  return GuardedCall("xcclAgGemmLocalRows", CommOf(op), [&]() -> xcclResult_t {
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOp(op, "xcclAgGemmLocalRows", &impl));
    if (rows == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmLocalRows: rows is NULL");
    return impl->LocalRows(m, rows, scales);
  });
}

xcclResult_t xcclAgGemmChunks(xcclAgGemm_t op, int64_t m, int* chunks) {
  return GuardedCall("xcclAgGemmChunks", CommOf(op), [&]() -> xcclResult_t {
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOp(op, "xcclAgGemmChunks", &impl));
    if (chunks == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmChunks: chunks is NULL");
    return impl->Chunks(m, chunks);
  });
}

xcclResult_t xcclAgGemmRun(xcclAgGemm_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, void** result,
                           xcclStream_t stream) {
  return GuardedCall("xcclAgGemmRun", CommOf(op), [&]() -> xcclResult_t {
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOp(op, "xcclAgGemmRun", &impl));
    Communicator::OperationGuard exclusive(impl->comm());
    XCCL_TRY(exclusive.Acquire("xcclAgGemmRun"));
    return impl->Run(a, a_scale, b, b_scale, m, out, result, stream);
  });
}

xcclResult_t xcclAgGemmSelfTest(xcclAgGemm_t op, int64_t m, xcclStream_t stream) {
  return GuardedCall("xcclAgGemmSelfTest", CommOf(op), [&]() -> xcclResult_t {
    AgGemmOp* impl = nullptr;
    XCCL_TRY(ResolveOp(op, "xcclAgGemmSelfTest", &impl));
    Communicator::OperationGuard exclusive(impl->comm());
    XCCL_TRY(exclusive.Acquire("xcclAgGemmSelfTest"));
    return impl->SelfTest(m, stream);
  });
}

xcclResult_t xcclAgGemmDestroy(xcclAgGemm_t op) {
  return GuardedCall("xcclAgGemmDestroy", CommOf(op), [&]() -> xcclResult_t {
    if (op == nullptr) return Fail(xcclInvalidArgument, "xcclAgGemmDestroy: op is NULL");
    if (op->magic != xcclAgGemm::kMagic)
      return Fail(xcclInvalidArgument, "xcclAgGemmDestroy: %p is not an ag_gemm op",
                  static_cast<void*>(op));
    if (!op->op) return Fail(xcclInvalidArgument, "xcclAgGemmDestroy: the op was destroyed");
    // Not under a call of this communicator on another thread (it may be using the op).
    Communicator::OperationGuard exclusive(op->op->comm());
    XCCL_TRY(exclusive.Acquire("xcclAgGemmDestroy"));
    op->op.reset();
    return xcclSuccess;
  });
}

}  // extern "C"
