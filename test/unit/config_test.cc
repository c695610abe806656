// ResolveConfig: NULL, wrong magic, too small, older and newer callers, out-of-range values.
#include "base/config.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "base/error.h"
#include "base/params.h"
#include "xccl.h"

namespace xccl {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    // A timeout distinct from the built-in default, so a test sees where the value came from.
    params_.timeout_ms = std::uniform_int_distribution<int64_t>(1, 1000000)(rng_) + 300000;
    ClearThreadLastError();
  }

  // A result poisoned with values no default or valid input gives.
  static CommConfig Poisoned() {
    CommConfig c;
    c.blocking = 77;
    c.timeout_ms = -12345;
    c.name = "poison";
    return c;
  }

  // Fills an object with random bytes: a caller's uninitialised fields.
  template <typename T>
  void Garbage(T* object) {
    unsigned char* bytes = reinterpret_cast<unsigned char*>(object);
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<unsigned char>(rng_());
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
  Params params_;
};

TEST_F(ConfigTest, NullGivesDefaults) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  CommConfig out = Poisoned();
  ASSERT_EQ(ResolveConfig(nullptr, params_, &out), xcclSuccess);
  EXPECT_EQ(out.blocking, 1);
  EXPECT_EQ(out.timeout_ms, params_.timeout_ms);
  EXPECT_EQ(out.name, "");
}

TEST_F(ConfigTest, InitializerGivesDefaults) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(config.size, sizeof(xcclConfig_t));
  EXPECT_EQ(config.magic, XCCL_CONFIG_MAGIC);
  EXPECT_EQ(config.version, static_cast<unsigned>(XCCL_VERSION_CODE));
  CommConfig out = Poisoned();
  ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess);
  EXPECT_EQ(out.blocking, 1);
  EXPECT_EQ(out.timeout_ms, params_.timeout_ms);
  EXPECT_EQ(out.name, "");
}

TEST_F(ConfigTest, WrongMagicRejectedWithHint) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const unsigned int magics[] = {0u, XCCL_CONFIG_MAGIC ^ 1u, XCCL_CONFIG_MAGIC + 0x100u,
                                 static_cast<unsigned int>(rng_()) | 0x80000000u};
  for (unsigned int magic : magics) {
    if (magic == XCCL_CONFIG_MAGIC) continue;
    SCOPED_TRACE("magic " + std::to_string(magic));
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.magic = magic;
    ClearThreadLastError();
    CommConfig out;
    EXPECT_EQ(ResolveConfig(&config, params_, &out), xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("XCCL_CONFIG_INITIALIZER"), std::string::npos)
        << ThreadLastError();
    EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("XCCL_CONFIG_INITIALIZER"),
              std::string::npos)
        << xcclGetLastError(nullptr);
  }
}

TEST_F(ConfigTest, UninitialisedStructRejected) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  // A caller who forgot the initializer: every byte random (magic forced wrong).
  for (int i = 0; i < 20; ++i) {
    xcclConfig_t config;
    Garbage(&config);
    if (config.magic == XCCL_CONFIG_MAGIC) config.magic ^= 0x5a5a5a5au;
    CommConfig out;
    ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclInvalidArgument);
  }
}

TEST_F(ConfigTest, SizeSmallerThanHeaderRejected) {
  const size_t header = offsetof(xcclConfig_t, blocking);
  const size_t sizes[] = {0, 1, sizeof(size_t), header - 1};
  for (size_t size : sizes) {
    SCOPED_TRACE("size " + std::to_string(size));
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.size = size;
    ClearThreadLastError();
    CommConfig out;
    EXPECT_EQ(ResolveConfig(&config, params_, &out), xcclInvalidArgument);
    EXPECT_FALSE(ThreadLastError().empty());
  }
}

TEST_F(ConfigTest, HeaderOnlyStructTakesDefaults) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  // The oldest possible caller: size, magic and version only. Everything past them is
  // whatever lies in memory and must not be read.
  for (int i = 0; i < 50; ++i) {
    xcclConfig_t config;
    Garbage(&config);
    config.size = offsetof(xcclConfig_t, blocking);
    config.magic = XCCL_CONFIG_MAGIC;
    config.version = XCCL_VERSION_CODE;
    config.blocking = 2 + static_cast<int>(rng_() % 1000);  // invalid if it were read
    config.timeoutMs = -1 - static_cast<int>(rng_() % 1000);
    config.commName = "must not be read";
    CommConfig out = Poisoned();
    ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess) << ThreadLastError();
    EXPECT_EQ(out.blocking, 1);
    EXPECT_EQ(out.timeout_ms, params_.timeout_ms);
    EXPECT_EQ(out.name, "");
  }
}

TEST_F(ConfigTest, OlderCallerWithoutTimeoutIgnoresMemoryBeyondSize) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const size_t older_size = offsetof(xcclConfig_t, timeoutMs);
  for (int blocking : {0, 1}) {
    // Beyond `size`, a timeout that would be rejected, then one that would be taken.
    for (int beyond : {-5, 0, 1 + static_cast<int>(rng_() % 100000)}) {
      SCOPED_TRACE("blocking " + std::to_string(blocking) + " timeoutMs beyond size " +
                   std::to_string(beyond));
      xcclConfig_t config;
      Garbage(&config);
      config.size = older_size;
      config.magic = XCCL_CONFIG_MAGIC;
      config.version = XCCL_VERSION(0, 0, 1);
      config.blocking = blocking;
      config.timeoutMs = beyond;
      config.commName = "must not be read";
      CommConfig out = Poisoned();
      ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess) << ThreadLastError();
      EXPECT_EQ(out.blocking, blocking);  // within size: honoured
      EXPECT_EQ(out.timeout_ms, params_.timeout_ms);
      EXPECT_EQ(out.name, "");
    }
  }
}

TEST_F(ConfigTest, OlderCallerWithoutNameIgnoresPointerBeyondSize) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int timeout = 1 + static_cast<int>(rng_() % 100000);
  xcclConfig_t config;
  Garbage(&config);
  config.size = offsetof(xcclConfig_t, commName);
  config.magic = XCCL_CONFIG_MAGIC;
  config.version = XCCL_VERSION_CODE;
  config.blocking = XCCL_CONFIG_UNDEF_INT;
  config.timeoutMs = timeout;
  config.commName = "must not be read";
  CommConfig out = Poisoned();
  ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess) << ThreadLastError();
  EXPECT_EQ(out.blocking, 1);
  EXPECT_EQ(out.timeout_ms, timeout);
  EXPECT_EQ(out.name, "");
}

TEST_F(ConfigTest, NewerCallerWithTrailingGarbageAccepted) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  // A caller built against a future header: more fields after commName that xccl does not know.
  struct NewerConfig {
    xcclConfig_t known;
    uint64_t future[9];
  };
  for (int i = 0; i < 50; ++i) {
    NewerConfig config;
    Garbage(&config);
    const int blocking = static_cast<int>(rng_() % 2);
    const int timeout = 1 + static_cast<int>(rng_() % 0x7FFFFFFE);
    const std::string name = "newer-" + std::to_string(rng_());
    config.known.size = sizeof(NewerConfig);
    config.known.magic = XCCL_CONFIG_MAGIC;
    config.known.version = XCCL_VERSION(9, 9, 9);
    config.known.blocking = blocking;
    config.known.timeoutMs = timeout;
    config.known.commName = name.c_str();
    CommConfig out = Poisoned();
    ASSERT_EQ(ResolveConfig(&config.known, params_, &out), xcclSuccess) << ThreadLastError();
    EXPECT_EQ(out.blocking, blocking);
    EXPECT_EQ(out.timeout_ms, timeout);
    EXPECT_EQ(out.name, name);
  }
}

TEST_F(ConfigTest, BlockingOutOfRangeRejected) {
  for (int blocking : {2, -1, 100, INT32_MAX, INT32_MIN + 1}) {
    SCOPED_TRACE("blocking " + std::to_string(blocking));
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    ClearThreadLastError();
    CommConfig out;
    EXPECT_EQ(ResolveConfig(&config, params_, &out), xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("blocking"), std::string::npos) << ThreadLastError();
  }
}

TEST_F(ConfigTest, BlockingZeroAndOneAccepted) {
  for (int blocking : {0, 1}) {
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    CommConfig out = Poisoned();
    ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess);
    EXPECT_EQ(out.blocking, blocking);
  }
}

TEST_F(ConfigTest, TimeoutOutOfRangeRejected) {
  for (int timeout : {0, -5, -1, INT32_MIN + 1}) {
    SCOPED_TRACE("timeoutMs " + std::to_string(timeout));
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.timeoutMs = timeout;
    ClearThreadLastError();
    CommConfig out;
    EXPECT_EQ(ResolveConfig(&config, params_, &out), xcclInvalidArgument);
    EXPECT_NE(ThreadLastError().find("timeoutMs"), std::string::npos) << ThreadLastError();
  }
}

TEST_F(ConfigTest, TimeoutTakenFromConfig) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (int timeout : {1, INT32_MAX, 1 + static_cast<int>(rng_() % 0x7FFFFFFE)}) {
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.timeoutMs = timeout;
    CommConfig out = Poisoned();
    ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess);
    EXPECT_EQ(out.timeout_ms, timeout);
  }
}

TEST_F(ConfigTest, NameCopied) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::string name = "comm-" + std::to_string(rng_());
  const std::string expected = name;
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  config.commName = name.c_str();
  CommConfig out = Poisoned();
  ASSERT_EQ(ResolveConfig(&config, params_, &out), xcclSuccess);
  // The caller's string may go away after init: the name must be a copy.
  for (char& c : name) c = 'X';
  EXPECT_EQ(out.name, expected);
}

}  // namespace
}  // namespace xccl
