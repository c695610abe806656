#include "api/fused_create.h"

#include "base/error.h"

namespace xccl {

xcclResult_t FusedCreateLocalSteps(Communicator* comm, Communicator::OperationGuard* exclusive,
                                   const char* function, const void* op_out,
                                   const char* plugin_name, const xcclGemmPlugin_v1* plugin,
                                   std::unique_ptr<GemmPlugin>* gemm) {
  XCCL_TRY(exclusive->Acquire(function));
  comm->ReleaseDeferred();
  XCCL_TRY(comm->CheckHealthy(function));
  if (op_out == nullptr) return Fail(xcclInvalidArgument, "%s: op is NULL", function);
  if (plugin != nullptr && plugin_name != nullptr && *plugin_name != '\0')
    return Fail(xcclInvalidArgument, "%s: pass a plugin name or a plugin struct, not both",
                function);
  return plugin != nullptr ? GemmPlugin::FromStruct(plugin, gemm)
                           : GemmPlugin::Load(plugin_name != nullptr ? plugin_name : "",
                                              comm->params().gemm_plugin, gemm);
}

xcclGemmScaleMode_t ResolveScales(xcclAgGemmScales_t scales, xcclDataType_t in_type) {
  if (scales == xcclAgGemmScalesDefault)
    return in_type == xcclFloat8e4m3 ? xcclGemmScalePtpc : xcclGemmScaleNone;
  return static_cast<xcclGemmScaleMode_t>(scales);
}

}  // namespace xccl
