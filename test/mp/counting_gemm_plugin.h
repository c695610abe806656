// A GEMM plugin struct that wraps a real one (loaded from a path) and counts, per context, the
// bands run() computes, and lists in order the contexts that ran them and their rows, for tests
// of which context and rows ag_gemm hands each call. The contexts a thread creates, and the runs it
// makes, are listed for that thread (ranks create and run on their own thread).
#pragma once

#include <dlfcn.h>

#include <vector>

#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_test {

struct CountedGemmContext {
  void* inner = nullptr;
  int bands = 0;
};

inline const xcclGemmPlugin_v1_t*& WrappedGemmPlugin() {
  static const xcclGemmPlugin_v1_t* wrapped = nullptr;
  return wrapped;
}

// The live contexts this thread created, in creation order.
inline std::vector<CountedGemmContext*>& CountedGemmContexts() {
  thread_local std::vector<CountedGemmContext*> contexts;
  return contexts;
}

// The contexts of this thread's run() calls, in call order (a test clears it between calls).
inline std::vector<const CountedGemmContext*>& CountedGemmRuns() {
  thread_local std::vector<const CountedGemmContext*> runs;
  return runs;
}

// The rows of this thread's run() calls, in call order (a test clears it between calls).
inline std::vector<xcclGemmBand>& CountedGemmBands() {
  thread_local std::vector<xcclGemmBand> bands;
  return bands;
}

// Tests of a failing GEMM: the n-th run() this thread makes from now on fails (0: none does).
inline int& CountedGemmFailIn() {
  thread_local int n = 0;
  return n;
}

inline xcclResult_t CountingInit(void** ctx, int device) {
  auto* counted = new CountedGemmContext;
  const xcclResult_t r = WrappedGemmPlugin()->init(&counted->inner, device);
  if (r != xcclSuccess) {
    delete counted;
    return r;
  }
  CountedGemmContexts().push_back(counted);
  *ctx = counted;
  return xcclSuccess;
}

inline xcclResult_t CountingFinalize(void* ctx) {
  auto* counted = static_cast<CountedGemmContext*>(ctx);
  auto& contexts = CountedGemmContexts();
  for (size_t i = 0; i < contexts.size(); ++i)
    if (contexts[i] == counted) contexts.erase(contexts.begin() + i);
  const xcclResult_t r = WrappedGemmPlugin()->finalize(counted->inner);
  delete counted;
  return r;
}

inline xcclResult_t CountingSupports(void* ctx, const xcclGemmProblem* problem) {
  return WrappedGemmPlugin()->supports(static_cast<CountedGemmContext*>(ctx)->inner, problem);
}

inline xcclResult_t CountingRun(void* ctx, const xcclGemmProblem* problem, const xcclGemmBand* band,
                                void* stream) {
  auto* counted = static_cast<CountedGemmContext*>(ctx);
  int& fail_in = CountedGemmFailIn();
  if (fail_in > 0 && --fail_in == 0) return xcclInternalError;
  ++counted->bands;
  CountedGemmRuns().push_back(counted);
  CountedGemmBands().push_back(*band);
  return WrappedGemmPlugin()->run(counted->inner, problem, band, stream);
}

// The counting wrapper of the plugin at `path` (loaded once per process; nullptr if it does not
// load). Its tile-wait entry is left out, so bands always go through run().
inline const xcclGemmPlugin_v1_t* CountingGemmPlugin(const char* path) {
  static xcclGemmPlugin_v1_t counting{};
  if (WrappedGemmPlugin() == nullptr) {
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    WrappedGemmPlugin() =
        static_cast<const xcclGemmPlugin_v1_t*>(dlsym(library, XCCL_GEMM_PLUGIN_SYMBOL_V1));
    if (WrappedGemmPlugin() == nullptr) return nullptr;
    counting = *WrappedGemmPlugin();
    counting.name = "counting";
    counting.init = CountingInit;
    counting.finalize = CountingFinalize;
    counting.supports = CountingSupports;
    counting.run = CountingRun;
    counting.run_tile_wait = nullptr;
  }
  return &counting;
}

}  // namespace xccl_test
