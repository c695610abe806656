// Finds, loads and validates a GEMM plugin (include/xccl_gemm.h) before anything calls it.
// A plugin is checked field by field (ABI version, struct size, required entries) so that an
// older, newer or broken plugin is refused with a message naming it, never called blindly.
#pragma once

#include <memory>
#include <string>

#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

// A validated plugin; owns its library handle when it was loaded from one (dlclose on
// destruction, so a GemmPlugin must outlive every ctx created through it).
class GemmPlugin {
 public:
  ~GemmPlugin();
  GemmPlugin(const GemmPlugin&) = delete;
  GemmPlugin& operator=(const GemmPlugin&) = delete;

  // The entries (the same in versions 1 and 2), copied out of the plugin's struct; abi_version
  // says which version it was built for.
  const xcclGemmPlugin_v1_t& api() const { return api_; }
  const char* name() const { return api_.name; }
  // Where it came from: the library path dlopen resolved, or "caller struct".
  const std::string& origin() const { return origin_; }
  // xcclInvalidUsage naming the plugin and the mode where its ABI version cannot carry `mode`
  // (block scales need version 2); xcclSuccess otherwise.
  xcclResult_t CheckScaleMode(xcclGemmScaleMode_t mode) const;

  // Validates a struct the caller passes in (not copied into until it is valid).
  static xcclResult_t FromStruct(const xcclGemmPlugin_v1_t* plugin,
                                 std::unique_ptr<GemmPlugin>* out);
  // `spec` is a name ("reference": dlopen("libxccl-gemm-reference.so") on the normal library
  // search path) or a path (anything containing '/'). Empty: `configured` (the communicator's
  // XCCL_GEMM_PLUGIN); refused if that is empty too, since which GEMM runs is the caller's
  // choice, not ours.
  static xcclResult_t Load(const std::string& spec, const std::string& configured,
                           std::unique_ptr<GemmPlugin>* out);

 private:
  GemmPlugin() = default;
  xcclGemmPlugin_v1_t api_{};
  void* handle_ = nullptr;
  std::string origin_;
};

// Checks a plugin struct as found at `where` (for messages); fills *out with its v1 entries.
xcclResult_t ValidateGemmPlugin(const xcclGemmPlugin_v1_t* plugin, const char* where,
                                xcclGemmPlugin_v1_t* out);

// The library file name for a plugin name: libxccl-gemm-<name>.so.
std::string GemmPluginLibraryName(const std::string& name);
// The directory of the shared object (libxccl.so, or the executable it is linked into
// statically) that holds the loader: where a plugin named, not found on the search path, is
// looked for next. "." if unknown.
std::string DirectoryOfThisLibrary();

}  // namespace xccl
