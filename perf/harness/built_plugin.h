// Where a perf binary finds a GEMM plugin given by name: the one of that name built in this tree.
#pragma once

#include <unistd.h>

#include <string>

namespace xccl_perf {

// A plugin given by name (not a path) resolves to the one built in this tree where there is one,
// so that `--plugin reference` from the build directory finds what the default finds; else the
// name stands, for the caller to look up (xccl's search path, beside libxccl: installed). The
// tree's plugin folder is fixed at build time (XCCL_PERF_BUILT_PLUGINS, perf/CMakeLists.txt),
// so a binary run from anywhere finds it while the build tree exists.
inline std::string BuiltPlugin(const std::string& name) {
#ifdef XCCL_PERF_BUILT_PLUGINS
  if (!name.empty() && name.find('/') == std::string::npos) {
    const std::string built =
        std::string(XCCL_PERF_BUILT_PLUGINS) + "/" + name + "/libxccl-gemm-" + name + ".so";
    if (access(built.c_str(), R_OK) == 0) return built;
  }
#endif
  return name;
}

}  // namespace xccl_perf
