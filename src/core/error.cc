#include "core/error.h"

#include <cstdarg>
#include <cstdio>

#include "core/logging.h"

namespace xccl {

namespace {
thread_local std::string t_last_error;
}

xcclResult_t Fail(xcclResult_t result, const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  t_last_error = buffer;
  XCCL_WARN(kLogAll, "%s", buffer);
  return result;
}

xcclResult_t FailQuietly(xcclResult_t result, const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  t_last_error = buffer;
  XCCL_INFO(kLogAll, "%s", buffer);
  return result;
}

const std::string& ThreadLastError() { return t_last_error; }
void ClearThreadLastError() { t_last_error.clear(); }

}  // namespace xccl
