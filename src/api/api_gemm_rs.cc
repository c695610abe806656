// The gemm_rs entry points of the C API; the handle's shell and checks are every fused op's
// (api/fused_handle.h).
#include <memory>
#include <optional>

#include "api/api_guard.h"
#include "api/fused_create.h"
#include "api/fused_handle.h"
#include "base/error.h"
#include "fused/gemm_rs/gemm_rs_op.h"
#include "fused/gemm_rs/gemm_rs_testing.h"
#include "xccl_gemm.h"

using namespace xccl;

struct xcclGemmRs : FusedHandle<GemmRsOp> {
  static constexpr uint64_t kMagic = 0x78636c67656d7273ull;  // "xclgemrs"
  static constexpr const char* kWhat = "a gemm_rs op";
  xcclGemmRs() { magic = kMagic; }
};

namespace {

xcclComm_t CommOf(xcclGemmRs_t handle) { return FusedHandleComm(handle); }

xcclResult_t ResolveOpExclusive(xcclGemmRs_t handle, const char* function,
                                std::optional<Communicator::OperationGuard>* exclusive,
                                GemmRsOp** op) {
  return ResolveFusedOpExclusive(handle, function, exclusive, op);
}

}  // namespace

xcclResult_t xccl::CorruptGemmRsPartialForTesting(xcclGemmRs_t op) {
  std::optional<Communicator::OperationGuard> exclusive;
  GemmRsOp* impl = nullptr;
  XCCL_TRY(ResolveOpExclusive(op, "CorruptGemmRsPartialForTesting", &exclusive, &impl));
  impl->CorruptPartialForTesting();
  return xcclSuccess;
}

xcclResult_t xccl::GemmRsChunksForTesting(xcclGemmRs_t op, int64_t m, int* chunks) {
  std::optional<Communicator::OperationGuard> exclusive;
  GemmRsOp* impl = nullptr;
  XCCL_TRY(ResolveOpExclusive(op, "GemmRsChunksForTesting", &exclusive, &impl));
  *chunks = impl->ChunkCountForTesting(m);
  return xcclSuccess;
}

extern "C" {

xcclResult_t xcclGemmRsCreate(xcclComm_t comm, int64_t n, int64_t k, int64_t m_max,
                              xcclDataType_t in_type, xcclDataType_t out_type,
                              xcclAgGemmScales_t scales, xcclGemmRsMode_t mode, int chunks,
                              const char* plugin_name, const struct xcclGemmPlugin_v1* plugin,
                              xcclGemmRs_t* op) {
  return GuardedCall("xcclGemmRsCreate", comm, [&]() -> xcclResult_t {
    return CreateFusedOp(comm, "xcclGemmRsCreate", n, k, m_max, in_type, out_type, scales, mode,
                         chunks, plugin_name, plugin, op);
  });
}

xcclResult_t xcclGemmRsRun(xcclGemmRs_t op, const void* a, const float* a_scale, const void* b,
                           const float* b_scale, int64_t m, void* out, xcclStream_t stream) {
  return GuardedCall("xcclGemmRsRun", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    GemmRsOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclGemmRsRun", &exclusive, &impl));
    return impl->Run(a, a_scale, b, b_scale, m, out, stream);
  });
}

xcclResult_t xcclGemmRsSelfTest(xcclGemmRs_t op, int64_t m, xcclStream_t stream) {
  return GuardedCall("xcclGemmRsSelfTest", CommOf(op), [&]() -> xcclResult_t {
    std::optional<Communicator::OperationGuard> exclusive;
    GemmRsOp* impl = nullptr;
    XCCL_TRY(ResolveOpExclusive(op, "xcclGemmRsSelfTest", &exclusive, &impl));
    return impl->SelfTest(m, stream);
  });
}

xcclResult_t xcclGemmRsDestroy(xcclGemmRs_t op) {
  return GuardedCall("xcclGemmRsDestroy", CommOf(op),
                     [&]() -> xcclResult_t { return DestroyFusedOp(op, "xcclGemmRsDestroy"); });
}

}  // extern "C"
