#include "base/error.h"

#include <cstdarg>
#include <cstdio>

#include "base/logging.h"

namespace xccl {

namespace {
thread_local std::string t_last_error;
}

std::string FormatV(const char* fmt, va_list args) {
  char buffer[1024];
  vsnprintf(buffer, sizeof(buffer), fmt, args);
  return buffer;
}

xcclResult_t Fail(xcclResult_t result, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  t_last_error = FormatV(fmt, args);
  va_end(args);
  XCCL_WARN(kLogAll, "%s", t_last_error.c_str());
  return result;
}

xcclResult_t FailQuietly(xcclResult_t result, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  t_last_error = FormatV(fmt, args);
  va_end(args);
  XCCL_INFO(kLogAll, "%s", t_last_error.c_str());
  return result;
}

const std::string& ThreadLastError() { return t_last_error; }
void ClearThreadLastError() { t_last_error.clear(); }

}  // namespace xccl
