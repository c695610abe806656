// A net comm's first failure, kept: a failed stream or queue pair delivers nothing more, so every
// later call on the comm reports that failure again.
#pragma once

#include <cstdarg>
#include <string>

#include "base/error.h"
#include "xccl.h"

namespace xccl {

class StickyFailure {
 public:
  bool failed() const { return result_ != xcclSuccess; }
  const std::string& message() const { return message_; }
  // Keeps `result` and the formatted message unless a failure is kept already; true if this one
  // is the kept failure now.
  bool Record(xcclResult_t result, const char* format, va_list args) {
    if (failed()) return false;
    message_ = FormatV(format, args);
    result_ = result;
    return true;
  }
  // The kept failure as the thread's last error: quietly at the first report (whoever waits on
  // the comm logs it), as an error when asked again.
  xcclResult_t ReportQuietly() const { return FailQuietly(result_, "%s", message_.c_str()); }
  xcclResult_t Report() const { return Fail(result_, "%s", message_.c_str()); }

 private:
  xcclResult_t result_ = xcclSuccess;
  std::string message_;
};

}  // namespace xccl
