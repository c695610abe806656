#include "fused/gemm_streams.h"

#include <utility>

#include "base/error.h"

namespace xccl {

void GemmStreams::Close() {
  DestroySideStream(device_, &side_);
  if (plugin_ && context_ != nullptr) plugin_->api().finalize(context_);
  if (plugin_ && side_context_ != nullptr) plugin_->api().finalize(side_context_);
  context_ = side_context_ = nullptr;
}

xcclResult_t GemmStreams::Open(std::unique_ptr<GemmPlugin> plugin, int device,
                               const xcclGemmProblem& problem, const char* op,
                               const std::string& problem_text) {
  device_ = device;
  void* context = nullptr;
  const xcclResult_t initialised = plugin->api().init(&context, device);
  if (initialised != xcclSuccess)
    return Fail(initialised, "%s: GEMM plugin '%s' failed to initialise on device %d", op,
                plugin->name(), device);
  plugin_ = std::move(plugin);
  context_ = context;
  const xcclResult_t supported = plugin_->api().supports(context, &problem);
  if (supported != xcclSuccess)
    return Fail(supported, "%s: GEMM plugin '%s' does not support %s", op, plugin_->name(),
                problem_text.c_str());
  return xcclSuccess;
}

xcclResult_t GemmStreams::OpenSideStream(const xcclGemmProblem& problem, const char* op) {
  XCCL_TRY(CreateSideStream(device_, &side_));
  void* context = nullptr;
  const xcclResult_t initialised = plugin_->api().init(&context, device_);
  if (initialised != xcclSuccess)
    return Fail(initialised,
                "%s: GEMM plugin '%s' failed to initialise a second context (side stream) on "
                "device %d",
                op, plugin_->name(), device_);
  side_context_ = context;
  const xcclResult_t supported = plugin_->api().supports(context, &problem);
  if (supported != xcclSuccess)
    return Fail(supported, "%s: GEMM plugin '%s' refused the problem in its second context", op,
                plugin_->name());
  return xcclSuccess;
}

}  // namespace xccl
