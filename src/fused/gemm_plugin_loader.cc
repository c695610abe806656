#include "fused/gemm_plugin_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

#include "base/error.h"
#include "base/logging.h"

namespace xccl {

namespace {

// A name becomes part of a file name: refuse anything that could walk the file system or that
// a typo would produce, so the message can say "not a plugin name" rather than "not found".
bool IsPluginName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return name != "." && name != "..";
}

std::string DlError() {
  const char* e = dlerror();
  return e ? e : "(no dlerror)";
}

}  // namespace

std::string GemmPluginLibraryName(const std::string& name) {
  return XCCL_GEMM_PLUGIN_LIB_PREFIX + name + XCCL_GEMM_PLUGIN_LIB_SUFFIX;
}

xcclResult_t ValidateGemmPlugin(const xcclGemmPlugin_v1_t* plugin, const char* where,
                                xcclGemmPlugin_v1_t* out) {
  if (plugin == nullptr) return Fail(xcclInvalidArgument, "GEMM plugin (%s): NULL struct", where);
  // Only the two fields that never move are read until the version is known to be ours.
  const uint32_t version = plugin->abi_version;
  const size_t size = plugin->struct_size;
  if (version > XCCL_GEMM_PLUGIN_ABI_V2)
    return Fail(xcclInvalidUsage,
                "GEMM plugin (%s): ABI version %u is newer than this xccl supports (%u); use a "
                "plugin built against this xccl's xccl_gemm.h, or a newer xccl",
                where, version, XCCL_GEMM_PLUGIN_ABI_V2);
  if (version != XCCL_GEMM_PLUGIN_ABI_V1 && version != XCCL_GEMM_PLUGIN_ABI_V2)
    return Fail(xcclInvalidUsage,
                "GEMM plugin (%s): ABI version %u is not a known version (this xccl supports "
                "1 and %u); an uninitialised struct or a pre-release plugin",
                where, version, XCCL_GEMM_PLUGIN_ABI_V2);
  // A larger struct of the same version has trailing fields this xccl does not know: ignored.
  // A smaller one would have us read past its end.
  if (size < sizeof(xcclGemmPlugin_v1_t))
    return Fail(xcclInvalidUsage,
                "GEMM plugin (%s): struct_size %zu is smaller than ABI version %u's %zu; the "
                "plugin was built against an older or altered xccl_gemm.h",
                where, size, version, sizeof(xcclGemmPlugin_v1_t));
  xcclGemmPlugin_v1_t api;
  std::memcpy(&api, plugin, sizeof(api));
  if (api.name == nullptr || api.name[0] == '\0')
    return Fail(xcclInvalidArgument, "GEMM plugin (%s): name is NULL or empty", where);
  const struct {
    const char* field;
    bool present;
  } required[] = {{"init", api.init != nullptr},
                  {"finalize", api.finalize != nullptr},
                  {"supports", api.supports != nullptr},
                  {"run", api.run != nullptr}};
  for (const auto& r : required) {
    if (!r.present)
      return Fail(xcclInvalidArgument,
                  "GEMM plugin '%s' (%s): required entry %s is NULL (only run_tile_wait may be)",
                  api.name, where, r.field);
  }
  *out = api;
  return xcclSuccess;
}

xcclResult_t GemmPlugin::CheckScaleMode(xcclGemmScaleMode_t mode) const {
  if (mode != xcclGemmScaleBlock128 || api_.abi_version >= XCCL_GEMM_PLUGIN_ABI_V2)
    return xcclSuccess;
  return Fail(xcclInvalidUsage,
              "GEMM plugin '%s' (%s) is built for ABI version %u, which has no block scales: "
              "scale mode blockscale (xcclGemmScaleBlock128) needs a version %u plugin; its "
              "ptpc and unscaled modes still serve",
              api_.name, origin_.c_str(), api_.abi_version, XCCL_GEMM_PLUGIN_ABI_V2);
}

GemmPlugin::~GemmPlugin() {
  if (handle_ != nullptr) dlclose(handle_);
}

xcclResult_t GemmPlugin::FromStruct(const xcclGemmPlugin_v1_t* plugin,
                                    std::unique_ptr<GemmPlugin>* out) {
  if (out == nullptr) return Fail(xcclInvalidArgument, "GemmPlugin::FromStruct: out is NULL");
  std::unique_ptr<GemmPlugin> p(new GemmPlugin());
  XCCL_TRY(ValidateGemmPlugin(plugin, "caller struct", &p->api_));
  p->origin_ = "caller struct";
  *out = std::move(p);
  return xcclSuccess;
}

std::string DirectoryOfThisLibrary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DirectoryOfThisLibrary), &info) == 0 ||
      info.dli_fname == nullptr)
    return ".";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

xcclResult_t GemmPlugin::Load(const std::string& spec_in, const std::string& configured,
                              std::unique_ptr<GemmPlugin>* out) {
  if (out == nullptr) return Fail(xcclInvalidArgument, "GemmPlugin::Load: out is NULL");
  std::string spec = spec_in;
  const char* from = "argument";
  if (spec.empty()) {
    spec = configured;
    from = "XCCL_GEMM_PLUGIN";
  }
  if (spec.empty())
    return Fail(xcclInvalidUsage,
                "no GEMM plugin given: pass a plugin name, path or struct, or set "
                "XCCL_GEMM_PLUGIN (e.g. XCCL_GEMM_PLUGIN=reference)");
  const bool is_path = spec.find('/') != std::string::npos;
  if (!is_path && !IsPluginName(spec))
    return Fail(xcclInvalidArgument,
                "GEMM plugin '%s' (from %s) is neither a path (no '/') nor a plugin name "
                "(letters, digits, '-', '_', '.')",
                spec.c_str(), from);
  const std::string file = is_path ? spec : GemmPluginLibraryName(spec);

  dlerror();
  // RTLD_LOCAL: two plugins may define the same internal symbols without clashing.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string origin = file;
  if (handle == nullptr) {
    const std::string why = DlError();
    if (is_path)
      return Fail(xcclInvalidArgument, "GEMM plugin path '%s' (from %s) cannot be loaded: %s",
                  file.c_str(), from, why.c_str());
    // A name is also looked for beside the library holding this code (libxccl.so, where the
    // plugins are installed too), so that an install outside the search path still finds them.
    const std::string beside = DirectoryOfThisLibrary() + "/" + file;
    handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
      return Fail(xcclInvalidArgument,
                  "unknown GEMM plugin '%s' (from %s): %s is not on the library search path "
                  "(LD_LIBRARY_PATH, rpath, ld.so.conf) nor beside libxccl (%s), or give its "
                  "path: %s",
                  spec.c_str(), from, file.c_str(), beside.c_str(), why.c_str());
    origin = beside;
  }
  std::unique_ptr<GemmPlugin> p(new GemmPlugin());
  p->handle_ = handle;  // closed by ~GemmPlugin on every failure below
  p->origin_ = origin;

  dlerror();
  // The newest version this xccl knows first: a plugin may export several.
  void* sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V2);
  if (sym == nullptr) sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V1);
  if (sym == nullptr) {
    // Name the newer version it does export, so the message says "too new", not "broken".
    for (int v = 9; v >= 3; --v) {
      const std::string newer = "xcclGemmPlugin_v" + std::to_string(v);
      if (dlsym(handle, newer.c_str()) != nullptr)
        return Fail(xcclInvalidUsage,
                    "GEMM plugin %s exports only %s, newer than this xccl's ABI version %u (%s)",
                    file.c_str(), newer.c_str(), XCCL_GEMM_PLUGIN_ABI_V2,
                    XCCL_GEMM_PLUGIN_SYMBOL_V2);
    }
    return Fail(xcclInvalidUsage, "%s is not an xccl GEMM plugin: it exports no %s or %s symbol",
                file.c_str(), XCCL_GEMM_PLUGIN_SYMBOL_V2, XCCL_GEMM_PLUGIN_SYMBOL_V1);
  }
  XCCL_TRY(
      ValidateGemmPlugin(static_cast<const xcclGemmPlugin_v1_t*>(sym), file.c_str(), &p->api_));
  XCCL_INFO(kLogInit, "GEMM plugin '%s' (ABI version %u) loaded from %s (%s)%s", p->api_.name,
            p->api_.abi_version, file.c_str(), from,
            p->api_.run_tile_wait ? ", with tile-wait" : "");
  *out = std::move(p);
  return xcclSuccess;
}

}  // namespace xccl
