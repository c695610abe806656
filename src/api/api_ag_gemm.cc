// The ag_gemm entry points of the C API; the handle's shell and checks are every fused op's
// (api/fused_handle.h).
#include <memory>
#include <optional>
#include <string>

#include "api/api_guard.h"
#include "api/fused_create.h"
#include "api/fused_handle.h"
#include "base/error.h"
#include "fused/ag_gemm/ag_gemm_op.h"
#include "fused/ag_gemm/ag_gemm_testing.h"
#include "xccl_gemm.h"

using namespace xccl;

struct xcclAgGemm : FusedHandle<AgGemmOp> {
  static constexpr uint64_t kMagic = 0x78636c6167656d6dull;  // "xclagemm"
  static constexpr const char* kWhat = "an ag_gemm op";
  xcclAgGemm() { magic = kMagic; }
};

namespace {

xcclResult_t ResolveOp(xcclAgGemm_t handle, const char* function, AgGemmOp** op) {
  return ResolveFusedOp(handle, function, op);
}

xcclResult_t ResolveOpExclusive(xcclAgGemm_t handle, const char* function,
                                std::optional<Communicator::OperationGuard>* exclusive,
                                AgGemmOp** op) {
  return ResolveFusedOpExclusive(handle, function, exclusive, op);
}

xcclComm_t CommOf(xcclAgGemm_t handle) { return FusedHandleComm(handle); }

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
    return CreateFusedOp(comm, "xcclAgGemmCreate", n, k, m_max, in_type, out_type, scales, mode,
                         chunks, plugin_name, plugin, op);
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
  return GuardedCall("xcclAgGemmDestroy", CommOf(op),
                     [&]() -> xcclResult_t { return DestroyFusedOp(op, "xcclAgGemmDestroy"); });
}

}  // extern "C"
