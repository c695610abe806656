// What the GEMM fused ops' perf binaries (ag_gemm_perf, gemm_rs_perf) share: operands staged in
// the platform's memory, and the GEMM plugin called directly for the columns that do not go
// through xccl's op (the vendor split, the GEMM alone).
#pragma once

#include <dlfcn.h>

#include <string>

#include "harness/device_buffers.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_perf {

// A buffer of the platform's memory (device memory on GPUs) holding a copy of host bytes.
struct Staged {
  DeviceBuffers* buffers = nullptr;
  void* ptr = nullptr;
  ~Staged() {
    if (ptr != nullptr) buffers->Release(ptr);
  }
  bool Fill(DeviceBuffers* b, const void* data, size_t bytes) {
    buffers = b;
    ptr = b->Allocate(bytes == 0 ? 1 : bytes);
    return ptr != nullptr && (bytes == 0 || b->CopyToDevice(ptr, data, bytes));
  }
};

// The GEMM plugin called directly, for the split-vendor runs that do not go through xccl's op.
// The library is never closed: its threads or kernels may outlive any owner.
class DirectPlugin {
 public:
  DirectPlugin(const std::string& spec, int device) {
    const std::string path =
        spec.find('/') != std::string::npos ? spec : "libxccl-gemm-" + spec + ".so";
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    // The newest symbol first, as the op's loader takes it: block scales need version 2.
    void* sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V2);
    if (sym == nullptr) sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V1);
    api_ = static_cast<const xcclGemmPlugin_v1_t*>(sym);
    if (api_ == nullptr ||
        (api_->abi_version != XCCL_GEMM_PLUGIN_ABI_V1 &&
         api_->abi_version != XCCL_GEMM_PLUGIN_ABI_V2) ||
        api_->init(&ctx_, device) != xcclSuccess)
      api_ = nullptr;
  }
  ~DirectPlugin() {
    if (api_ != nullptr) api_->finalize(ctx_);
  }
  DirectPlugin(const DirectPlugin&) = delete;
  DirectPlugin& operator=(const DirectPlugin&) = delete;
  bool ok() const { return api_ != nullptr; }
  // Asked once per problem before it is timed, as the op asks at create: a plugin may choose
  // and tune its algorithm there (the cublaslt plugin does), so without it the split-vendor
  // and gemm-only columns would time another algorithm than the ops run.
  bool Prepare(const xcclGemmProblem& problem) {
    // A version 1 plugin does not know a_scale_ld, so it would misread block scales.
    if (problem.scale_mode == xcclGemmScaleBlock128 && api_->abi_version < XCCL_GEMM_PLUGIN_ABI_V2)
      return false;
    return api_->supports(ctx_, &problem) == xcclSuccess;
  }
  bool Run(const xcclGemmProblem& problem, xcclStream_t stream) {
    const xcclGemmBand all{0, problem.m};
    return api_->run(ctx_, &problem, &all, stream) == xcclSuccess;
  }

 private:
  const xcclGemmPlugin_v1_t* api_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace xccl_perf
