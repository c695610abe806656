// Logging in the manner of NCCL_DEBUG: XCCL_DEBUG=WARN|INFO|TRACE chooses the level,
// XCCL_DEBUG_SUBSYS (INIT,COLL,BOOTSTRAP,PLATFORM,ENV,ALL; ^ negates) the subsystems and
// XCCL_DEBUG_FILE the destination (%h host, %p pid).
#pragma once

#include <cstdint>
#include <string>

namespace xccl {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum LogSubsys : uint32_t {
  kLogInit = 1u << 0,
  kLogColl = 1u << 1,
  kLogBootstrap = 1u << 2,
  kLogPlatform = 1u << 3,
  kLogEnv = 1u << 4,
  kLogAll = ~0u,
};

// Parses "WARN" / "INFO" / "TRACE" (case-insensitive); anything else is kNone.
LogLevel ParseLogLevel(const std::string& text);
// Parses a comma list of subsystem names; a leading '^' selects all but those listed.
uint32_t ParseLogSubsys(const std::string& text);

bool LogEnabled(LogLevel level, uint32_t subsys);
void Log(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace xccl

#define XCCL_LOG_(level, subsys, ...)                              \
  do {                                                             \
    if (::xccl::LogEnabled(level, subsys))                         \
      ::xccl::Log(level, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define XCCL_WARN(subsys, ...) XCCL_LOG_(::xccl::LogLevel::kWarn, subsys, __VA_ARGS__)
#define XCCL_INFO(subsys, ...) XCCL_LOG_(::xccl::LogLevel::kInfo, subsys, __VA_ARGS__)
#define XCCL_TRACE(subsys, ...) XCCL_LOG_(::xccl::LogLevel::kTrace, subsys, __VA_ARGS__)
