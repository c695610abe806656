// The GEMM plugin loader: every malformed struct and every unloadable name or path is refused
// with the code and message include/xccl_gemm.h promises, and the built reference plugin loads by
// path, by name (once its library is resident), through XCCL_GEMM_PLUGIN and as a caller struct.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "base/error.h"
#include "common/fake_gemm_plugin.h"
#include "fused/gemm_plugin_loader.h"
#include "xccl_gemm.h"

namespace xccl {
namespace {

using xccl_test::FakeGemmRun;

xcclGemmPlugin_v1_t ValidFake() { return xccl_test::FakeGemmPlugin(); }

// Expects `result` with a recorded message containing every one of `parts`.
void ExpectRefused(xcclResult_t got, xcclResult_t want, std::initializer_list<const char*> parts) {
  EXPECT_EQ(got, want) << xcclGetErrorString(got);
  const std::string& message = ThreadLastError();
  for (const char* part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(GemmPluginLoaderTest, AcceptsValidStructAndKeepsOptionalTileWaitNull) {
  const xcclGemmPlugin_v1_t fake = ValidFake();
  std::unique_ptr<GemmPlugin> plugin;
  ASSERT_EQ(GemmPlugin::FromStruct(&fake, &plugin), xcclSuccess) << ThreadLastError();
  ASSERT_NE(plugin, nullptr);
  EXPECT_STREQ(plugin->name(), "fake");
  EXPECT_EQ(plugin->origin(), "caller struct");
  EXPECT_EQ(plugin->api().run, &FakeGemmRun);
  EXPECT_EQ(plugin->api().run_tile_wait, nullptr);
}

TEST(GemmPluginLoaderTest, RefusesNullStruct) {
  std::unique_ptr<GemmPlugin> plugin;
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::FromStruct(nullptr, &plugin), xcclInvalidArgument, {"NULL struct"});
  EXPECT_EQ(plugin, nullptr);
}

TEST(GemmPluginLoaderTest, RefusesWrongAbiVersion) {
  struct Case {
    uint32_t version;
    const char* says;
  } cases[] = {{3, "newer"}, {0xFFFFFFFFu, "newer"}, {0, "not a known version"}};
  for (const Case& c : cases) {
    xcclGemmPlugin_v1_t fake = ValidFake();
    fake.abi_version = c.version;
    std::unique_ptr<GemmPlugin> plugin;
    ClearThreadLastError();
    ExpectRefused(GemmPlugin::FromStruct(&fake, &plugin), xcclInvalidUsage,
                  {"ABI version", std::to_string(c.version).c_str(), c.says});
    EXPECT_EQ(plugin, nullptr);
  }
}

TEST(GemmPluginLoaderTest, RefusesTooSmallStruct) {
  for (size_t size : {size_t{0}, size_t{16}, sizeof(xcclGemmPlugin_v1_t) - sizeof(void*)}) {
    xcclGemmPlugin_v1_t fake = ValidFake();
    fake.struct_size = size;
    std::unique_ptr<GemmPlugin> plugin;
    ClearThreadLastError();
    ExpectRefused(GemmPlugin::FromStruct(&fake, &plugin), xcclInvalidUsage,
                  {"struct_size", std::to_string(size).c_str(), "smaller"});
    EXPECT_EQ(plugin, nullptr) << size;
  }
}

// A plugin built against a later header of the same version has trailing fields we ignore.
TEST(GemmPluginLoaderTest, AcceptsLargerStructOfSameVersion) {
  struct Extended {
    xcclGemmPlugin_v1_t v1;
    void* later_entry;
  } extended{ValidFake(), nullptr};
  extended.v1.struct_size = sizeof(Extended);
  std::unique_ptr<GemmPlugin> plugin;
  EXPECT_EQ(GemmPlugin::FromStruct(&extended.v1, &plugin), xcclSuccess) << ThreadLastError();
}

TEST(GemmPluginLoaderTest, RefusesNullRequiredEntries) {
  struct Case {
    const char* field;
    void (*clear)(xcclGemmPlugin_v1_t*);
  } cases[] = {
      {"init", [](xcclGemmPlugin_v1_t* p) { p->init = nullptr; }},
      {"finalize", [](xcclGemmPlugin_v1_t* p) { p->finalize = nullptr; }},
      {"supports", [](xcclGemmPlugin_v1_t* p) { p->supports = nullptr; }},
      {"run", [](xcclGemmPlugin_v1_t* p) { p->run = nullptr; }},
  };
  for (const Case& c : cases) {
    xcclGemmPlugin_v1_t fake = ValidFake();
    c.clear(&fake);
    std::unique_ptr<GemmPlugin> plugin;
    ClearThreadLastError();
    ExpectRefused(GemmPlugin::FromStruct(&fake, &plugin), xcclInvalidArgument,
                  {"'fake'", (std::string("entry ") + c.field + " is NULL").c_str()});
    EXPECT_EQ(plugin, nullptr) << c.field;
  }
  for (const char* name : {static_cast<const char*>(nullptr), ""}) {
    xcclGemmPlugin_v1_t fake = ValidFake();
    fake.name = name;
    std::unique_ptr<GemmPlugin> plugin;
    ClearThreadLastError();
    ExpectRefused(GemmPlugin::FromStruct(&fake, &plugin), xcclInvalidArgument,
                  {"name is NULL or empty"});
  }
}

TEST(GemmPluginLoaderTest, RefusesUnknownNameAndBadPaths) {
  std::unique_ptr<GemmPlugin> plugin;
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::Load("no-such-gemm-xyz", "", &plugin), xcclInvalidArgument,
                {"unknown GEMM plugin 'no-such-gemm-xyz'", "libxccl-gemm-no-such-gemm-xyz.so"});
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::Load("bad name", "", &plugin), xcclInvalidArgument,
                {"'bad name'", "neither a path"});
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::Load("/nonexistent/libxccl-gemm-x.so", "", &plugin),
                xcclInvalidArgument, {"/nonexistent/libxccl-gemm-x.so", "cannot be loaded"});
  EXPECT_EQ(plugin, nullptr);
}

// A real shared library that is not a plugin: libc, found through a symbol it defines.
TEST(GemmPluginLoaderTest, RefusesLibraryWithoutPluginSymbol) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&strlen), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  std::string path = info.dli_fname;
  if (path.find('/') == std::string::npos) GTEST_SKIP() << "libc has no path: " << path;
  std::unique_ptr<GemmPlugin> plugin;
  ClearThreadLastError();
  ExpectRefused(
      GemmPlugin::Load(path, "", &plugin), xcclInvalidUsage,
      {"is not an xccl GEMM plugin", XCCL_GEMM_PLUGIN_SYMBOL_V2, XCCL_GEMM_PLUGIN_SYMBOL_V1});
  EXPECT_EQ(plugin, nullptr);
}

// A library built for a newer ABI (it exports only xcclGemmPlugin_v3) is refused as too new,
// naming the symbol it has and the version this xccl speaks, without being called.
TEST(GemmPluginLoaderTest, RefusesANewerAbiLibrary) {
  std::unique_ptr<GemmPlugin> plugin;
  ClearThreadLastError();
  ExpectRefused(
      GemmPlugin::Load(XCCL_TEST_FUTURE_PLUGIN_PATH, "", &plugin), xcclInvalidUsage,
      {"exports only xcclGemmPlugin_v3", "newer than this xccl", XCCL_GEMM_PLUGIN_SYMBOL_V2});
  EXPECT_EQ(plugin, nullptr);
}

// Block scales need ABI version 2: a version 1 plugin still loads and serves ptpc and the
// unscaled modes, and is refused for block scales naming the plugin and the mode.
TEST(GemmPluginLoaderTest, VersionOnePluginIsRefusedForBlockScalesOnly) {
  const xcclGemmPlugin_v1_t v1 = ValidFake();
  std::unique_ptr<GemmPlugin> plugin;
  ASSERT_EQ(GemmPlugin::FromStruct(&v1, &plugin), xcclSuccess) << ThreadLastError();
  EXPECT_EQ(plugin->CheckScaleMode(xcclGemmScaleNone), xcclSuccess);
  EXPECT_EQ(plugin->CheckScaleMode(xcclGemmScalePtpc), xcclSuccess);
  ClearThreadLastError();
  ExpectRefused(plugin->CheckScaleMode(xcclGemmScaleBlock128), xcclInvalidUsage,
                {"'fake'", "ABI version 1", "blockscale", "xcclGemmScaleBlock128"});
  xcclGemmPlugin_v2_t v2 = ValidFake();
  v2.abi_version = XCCL_GEMM_PLUGIN_ABI_V2;
  ASSERT_EQ(GemmPlugin::FromStruct(&v2, &plugin), xcclSuccess) << ThreadLastError();
  EXPECT_EQ(plugin->CheckScaleMode(xcclGemmScaleBlock128), xcclSuccess) << ThreadLastError();
}

// The built reference plugin exports both versions; the loader takes version 2.
TEST(GemmPluginLoaderTest, ReferenceLoadsAsVersionTwo) {
#ifndef XCCL_GEMM_REFERENCE_PATH
  GTEST_SKIP() << "the reference plugin is not built";
#else
  std::unique_ptr<GemmPlugin> plugin;
  ASSERT_EQ(GemmPlugin::Load(XCCL_GEMM_REFERENCE_PATH, "", &plugin), xcclSuccess)
      << ThreadLastError();
  EXPECT_EQ(plugin->api().abi_version, XCCL_GEMM_PLUGIN_ABI_V2);
  EXPECT_EQ(plugin->CheckScaleMode(xcclGemmScaleBlock128), xcclSuccess);
#endif
}

TEST(GemmPluginLoaderTest, NothingNamedAndNoEnvironmentIsRefused) {
  std::unique_ptr<GemmPlugin> plugin;
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::Load("", "", &plugin), xcclInvalidUsage,
                {"no GEMM plugin given", "XCCL_GEMM_PLUGIN"});
  ClearThreadLastError();
  ExpectRefused(GemmPlugin::Load("", "no-such-gemm-env", &plugin), xcclInvalidArgument,
                {"no-such-gemm-env", "from XCCL_GEMM_PLUGIN"});
}

#ifdef XCCL_GEMM_REFERENCE_PATH
#define REQUIRE_REFERENCE() (void)0
#else
#define XCCL_GEMM_REFERENCE_PATH ""
#define REQUIRE_REFERENCE() GTEST_SKIP() << "the reference plugin is not built"
#endif

void ExpectReference(const GemmPlugin& plugin) {
  EXPECT_STREQ(plugin.name(), "reference");
#if defined(XCCL_PLATFORM_HOST)
  EXPECT_EQ(plugin.api().run_tile_wait, nullptr);  // host builds let the op wait per band
#else
  EXPECT_NE(plugin.api().run_tile_wait, nullptr);  // GPU builds: the kernel waits per tile
#endif
  void* ctx = nullptr;
  ASSERT_EQ(plugin.api().init(&ctx, 0), xcclSuccess);
  EXPECT_EQ(plugin.api().finalize(ctx), xcclSuccess);
}

TEST(GemmPluginLoaderTest, LoadsReferenceByPath) {
  REQUIRE_REFERENCE();
  std::unique_ptr<GemmPlugin> plugin;
  ASSERT_EQ(GemmPlugin::Load(XCCL_GEMM_REFERENCE_PATH, "", &plugin), xcclSuccess)
      << ThreadLastError();
  EXPECT_EQ(plugin->origin(), XCCL_GEMM_REFERENCE_PATH);
  ExpectReference(*plugin);
}

// The communicator's XCCL_GEMM_PLUGIN, where the call names none.
TEST(GemmPluginLoaderTest, LoadsReferenceThroughEnvironment) {
  REQUIRE_REFERENCE();
  std::unique_ptr<GemmPlugin> plugin;
  ASSERT_EQ(GemmPlugin::Load("", XCCL_GEMM_REFERENCE_PATH, &plugin), xcclSuccess)
      << ThreadLastError();
  ExpectReference(*plugin);
}

// The name path builds libxccl-gemm-reference.so; the build tree is not on the search path, but
// the dynamic linker matches a name against the SONAME of a library already loaded.
TEST(GemmPluginLoaderTest, LoadsReferenceByNameOnceResident) {
  REQUIRE_REFERENCE();
  void* resident = dlopen(XCCL_GEMM_REFERENCE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(resident, nullptr) << dlerror();
  std::unique_ptr<GemmPlugin> plugin;
  EXPECT_EQ(GemmPlugin::Load("reference", "", &plugin), xcclSuccess) << ThreadLastError();
  if (plugin) {
    EXPECT_EQ(plugin->origin(), "libxccl-gemm-reference.so");
    ExpectReference(*plugin);
  }
  plugin.reset();
  dlclose(resident);
}

// A name not on the search path is looked for beside the library holding the loader (here the
// test executable, which links xccl statically): a link to the reference plugin placed there
// under a name of its own loads by that name, and without the link the name is refused, naming
// where it looked.
TEST(GemmPluginLoaderTest, LoadsANameBesideTheLibrary) {
  REQUIRE_REFERENCE();
  const std::string name = "beside" + std::to_string(getpid());
  const std::string link = DirectoryOfThisLibrary() + "/" + GemmPluginLibraryName(name);
  std::unique_ptr<GemmPlugin> plugin;
  ExpectRefused(GemmPlugin::Load(name, "", &plugin), xcclInvalidArgument, {link.c_str()});
  ASSERT_EQ(symlink(XCCL_GEMM_REFERENCE_PATH, link.c_str()), 0) << link << ": " << strerror(errno);
  const xcclResult_t loaded = GemmPlugin::Load(name, "", &plugin);
  unlink(link.c_str());
  ASSERT_EQ(loaded, xcclSuccess) << ThreadLastError();
  EXPECT_EQ(plugin->origin(), link);
  ExpectReference(*plugin);
}

TEST(GemmPluginLoaderTest, LoadsReferenceAsCallerStruct) {
  REQUIRE_REFERENCE();
  void* handle = dlopen(XCCL_GEMM_REFERENCE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto* sym = static_cast<const xcclGemmPlugin_v1_t*>(dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V1));
  ASSERT_NE(sym, nullptr) << dlerror();
  EXPECT_EQ(sym->abi_version, XCCL_GEMM_PLUGIN_ABI_V1);
  EXPECT_EQ(sym->struct_size, sizeof(xcclGemmPlugin_v1_t));
  {
    std::unique_ptr<GemmPlugin> plugin;
    ASSERT_EQ(GemmPlugin::FromStruct(sym, &plugin), xcclSuccess) << ThreadLastError();
    ExpectReference(*plugin);
  }
  dlclose(handle);
}

}  // namespace
}  // namespace xccl
