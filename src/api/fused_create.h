// What every GEMM fused op's create does on this rank alone before its agreement (api_ag_gemm.cc,
// api_gemm_rs.cc): take the call guard, free ops destroyed since the last create (no peer can be
// past this create's agreement), check the communicator and the arguments, and load the plugin.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "fused/gemm_plugin_loader.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

// `function`: the API name for messages; `op_out`: the caller's op pointer (refused if NULL).
xcclResult_t FusedCreateLocalSteps(Communicator* comm, Communicator::OperationGuard* exclusive,
                                   const char* function, const void* op_out,
                                   const char* plugin_name, const xcclGemmPlugin_v1* plugin,
                                   std::unique_ptr<GemmPlugin>* gemm);

// The scales of `in_type` inputs for xcclAgGemmScalesDefault (fp8: ptpc; else none); other values
// pass as given, for the shape check to judge.
xcclGemmScaleMode_t ResolveScales(xcclAgGemmScales_t scales, xcclDataType_t in_type);

}  // namespace xccl
