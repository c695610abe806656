// xcclConfig_t handling: a caller built against an older header passes a smaller struct (the
// fields it lacks take their defaults), a newer one a larger struct (fields xccl does not know
// are ignored). The magic proves the struct was set up with XCCL_CONFIG_INITIALIZER.
#pragma once

#include <cstdint>
#include <string>

#include "base/params.h"
#include "xccl.h"

namespace xccl {

struct CommConfig {
  int blocking = 1;
  int64_t timeout_ms = 0;
  std::string name;
};

// config may be NULL (all defaults). xcclInvalidArgument with a message for a missing magic,
// a size too small to hold the header, or an out-of-range value.
xcclResult_t ResolveConfig(const xcclConfig_t* config, const Params& params, CommConfig* out);

}  // namespace xccl
