// ParseLogLevel and ParseLogSubsys: XCCL_DEBUG and XCCL_DEBUG_SUBSYS as NCCL reads its own.
#include "base/logging.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace xccl {
namespace {

TEST(LoggingTest, ParseLogLevel) {
  const std::pair<const char*, LogLevel> cases[] = {
      {"WARN", LogLevel::kWarn},   {"warn", LogLevel::kWarn},   {"Warn", LogLevel::kWarn},
      {"INFO", LogLevel::kInfo},   {"info", LogLevel::kInfo},   {"iNfO", LogLevel::kInfo},
      {"TRACE", LogLevel::kTrace}, {"trace", LogLevel::kTrace}, {"", LogLevel::kNone},
      {"NONE", LogLevel::kNone},   {"bogus", LogLevel::kNone},  {"WARNING", LogLevel::kNone},
      {"INF", LogLevel::kNone},    {"2", LogLevel::kNone},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseLogLevel(c.first), c.second) << '"' << c.first << '"';
}

TEST(LoggingTest, LevelsOrdered) {
  // LogEnabled compares levels numerically: more verbose must be larger.
  EXPECT_LT(static_cast<int>(LogLevel::kNone), static_cast<int>(LogLevel::kWarn));
  EXPECT_LT(static_cast<int>(LogLevel::kWarn), static_cast<int>(LogLevel::kInfo));
  EXPECT_LT(static_cast<int>(LogLevel::kInfo), static_cast<int>(LogLevel::kTrace));
}

TEST(LoggingTest, SubsysBitsDistinct) {
  const uint32_t bits[] = {kLogInit, kLogColl, kLogBootstrap, kLogPlatform, kLogEnv};
  uint32_t seen = 0;
  for (uint32_t bit : bits) {
    EXPECT_NE(bit, 0u);
    EXPECT_EQ(bit & (bit - 1), 0u) << "one bit each";
    EXPECT_EQ(seen & bit, 0u) << "distinct";
    seen |= bit;
  }
  EXPECT_EQ(seen & kLogAll, seen);
}

TEST(LoggingTest, ParseLogSubsysFixedCases) {
  EXPECT_EQ(ParseLogSubsys("INIT,COLL"), static_cast<uint32_t>(kLogInit | kLogColl));
  EXPECT_EQ(ParseLogSubsys("init,coll"), static_cast<uint32_t>(kLogInit | kLogColl));
  EXPECT_EQ(ParseLogSubsys("Init,Coll"), static_cast<uint32_t>(kLogInit | kLogColl));
  EXPECT_EQ(ParseLogSubsys("INIT"), static_cast<uint32_t>(kLogInit));
  EXPECT_EQ(ParseLogSubsys("BOOTSTRAP"), static_cast<uint32_t>(kLogBootstrap));
  EXPECT_EQ(ParseLogSubsys("PLATFORM"), static_cast<uint32_t>(kLogPlatform));
  EXPECT_EQ(ParseLogSubsys("ENV"), static_cast<uint32_t>(kLogEnv));
  EXPECT_EQ(ParseLogSubsys("^INIT"), ~static_cast<uint32_t>(kLogInit));
  EXPECT_EQ(ParseLogSubsys("^init,coll"), ~static_cast<uint32_t>(kLogInit | kLogColl));
  EXPECT_EQ(ParseLogSubsys("all"), static_cast<uint32_t>(kLogAll));
  EXPECT_EQ(ParseLogSubsys("ALL"), static_cast<uint32_t>(kLogAll));
  EXPECT_EQ(ParseLogSubsys("^ALL"), 0u);
  EXPECT_EQ(ParseLogSubsys("INIT,ALL"), static_cast<uint32_t>(kLogAll));
  // Unknown names select nothing; known ones beside them still count.
  EXPECT_EQ(ParseLogSubsys("NOSUCH"), 0u);
  EXPECT_EQ(ParseLogSubsys("INIT,NOSUCH,ENV"), static_cast<uint32_t>(kLogInit | kLogEnv));
  EXPECT_EQ(ParseLogSubsys("INITX"), 0u);
  EXPECT_EQ(ParseLogSubsys("INIT,INIT"), static_cast<uint32_t>(kLogInit));
}

TEST(LoggingTest, ParseLogSubsysRandomLists) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::pair<std::string, uint32_t> names[] = {{"INIT", kLogInit},
                                                    {"COLL", kLogColl},
                                                    {"BOOTSTRAP", kLogBootstrap},
                                                    {"PLATFORM", kLogPlatform},
                                                    {"ENV", kLogEnv}};
  for (int round = 0; round < 500; ++round) {
    std::vector<std::pair<std::string, uint32_t>> chosen;
    for (const auto& n : names)
      if (rng() % 2) chosen.push_back(n);
    if (chosen.empty()) chosen.push_back(names[rng() % 5]);
    std::shuffle(chosen.begin(), chosen.end(), rng);
    std::string text;
    uint32_t expected = 0;
    for (const auto& n : chosen) {
      std::string name = n.first;
      for (char& c : name)
        if (rng() % 2) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!text.empty()) text += ',';
      text += name;
      expected |= n.second;
    }
    const bool invert = rng() % 2;
    if (invert) {
      text = "^" + text;
      expected = ~expected;
    }
    ASSERT_EQ(ParseLogSubsys(text), expected) << '"' << text << '"';
  }
}

}  // namespace
}  // namespace xccl
