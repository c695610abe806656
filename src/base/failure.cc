#include "base/failure.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

namespace xccl {

xcclResult_t SetFailure(PlatformFailure* failure, xcclResult_t result, int peer, const char* format,
                        ...) {
  if (failure == nullptr) return result;
  va_list args;
  va_start(args, format);
  // Measured first (on a copy: a va_list is spent by one use), so no message is cut short.
  va_list measure;
  va_copy(measure, args);
  const int length = vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  std::string message;
  if (length > 0) {
    message.resize(static_cast<size_t>(length) + 1);  // room for vsnprintf's terminator
    vsnprintf(&message[0], message.size(), format, args);
    message.resize(static_cast<size_t>(length));
  }
  va_end(args);
  failure->result = result;
  failure->peer = peer;
  failure->message = std::move(message);
  return result;
}

}  // namespace xccl
