// A GEMM plugin struct whose entries compute nothing, for tests of the plugin loader and of
// ag_gemm's create: supports() accepts every problem, or, for a refusing plugin, refuses every
// one (and run() then fails, should it be called anyway).
#pragma once

#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_test {

inline xcclResult_t FakeGemmInit(void** ctx, int) {
  *ctx = nullptr;
  return xcclSuccess;
}
inline xcclResult_t FakeGemmFinalize(void*) { return xcclSuccess; }
inline xcclResult_t FakeGemmSupports(void*, const xcclGemmProblem*) { return xcclSuccess; }
inline xcclResult_t FakeGemmRun(void*, const xcclGemmProblem*, const xcclGemmBand*, void*) {
  return xcclSuccess;
}
inline xcclResult_t FakeGemmRefuses(void*, const xcclGemmProblem*) { return xcclInvalidArgument; }
inline xcclResult_t FakeGemmRunFails(void*, const xcclGemmProblem*, const xcclGemmBand*, void*) {
  return xcclInternalError;
}

inline xcclGemmPlugin_v1_t FakeGemmPlugin(bool refusing = false) {
  xcclGemmPlugin_v1_t p{};
  p.abi_version = XCCL_GEMM_PLUGIN_ABI_V1;
  p.struct_size = sizeof(xcclGemmPlugin_v1_t);
  p.name = refusing ? "refusing" : "fake";
  p.init = FakeGemmInit;
  p.finalize = FakeGemmFinalize;
  p.supports = refusing ? FakeGemmRefuses : FakeGemmSupports;
  p.run = refusing ? FakeGemmRunFails : FakeGemmRun;
  return p;
}

}  // namespace xccl_test
