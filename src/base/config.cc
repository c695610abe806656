#include "base/config.h"

#include <cstddef>

#include "base/error.h"

namespace xccl {

namespace {

// True when a caller's struct of `size` bytes is large enough to hold the field at `offset`.
bool Holds(size_t size, size_t offset, size_t field_size) { return offset + field_size <= size; }

}  // namespace

xcclResult_t ResolveConfig(const xcclConfig_t* config, const Params& params, CommConfig* out) {
  *out = CommConfig{};
  out->timeout_ms = params.timeout_ms;
  if (config == nullptr) return xcclSuccess;
  const size_t header = offsetof(xcclConfig_t, blocking);
  if (config->magic != XCCL_CONFIG_MAGIC) {
    return Fail(xcclInvalidArgument,
                "config magic is 0x%x, not 0x%x: initialise xcclConfig_t with "
                "XCCL_CONFIG_INITIALIZER",
                config->magic, XCCL_CONFIG_MAGIC);
  }
  if (config->size < header) {
    return Fail(xcclInvalidArgument, "config size %zu is smaller than its header (%zu bytes)",
                config->size, header);
  }
  const size_t size = config->size;
  if (Holds(size, offsetof(xcclConfig_t, blocking), sizeof(int)) &&
      config->blocking != XCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1)
      return Fail(xcclInvalidArgument, "config blocking=%d: must be 0 or 1", config->blocking);
    out->blocking = config->blocking;
  }
  if (Holds(size, offsetof(xcclConfig_t, timeoutMs), sizeof(int)) &&
      config->timeoutMs != XCCL_CONFIG_UNDEF_INT) {
    if (config->timeoutMs <= 0)
      return Fail(xcclInvalidArgument, "config timeoutMs=%d: must be > 0", config->timeoutMs);
    out->timeout_ms = config->timeoutMs;
  }
  if (Holds(size, offsetof(xcclConfig_t, commName), sizeof(const char*)) &&
      config->commName != nullptr) {
    out->name = config->commName;
  }
  return xcclSuccess;
}

}  // namespace xccl
