#include "base/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/params.h"

namespace xccl {

namespace {

struct LogState {
  LogLevel level = LogLevel::kWarn;
  uint32_t subsys = kLogAll;
  FILE* out = stderr;
  std::atomic<pid_t> out_pid{0};  // the process that opened `out`
  char host[64] = "";
};

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// "%h" -> host name, "%p" -> pid, as NCCL_DEBUG_FILE does.
std::string ExpandFileName(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        out += host;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        continue;
      }
      out += '%';
    }
    out += pattern[i];
  }
  return out;
}

// XCCL_DEBUG_FILE is per process (%p): a process forked after its parent logged must open its
// own file rather than write into the parent's.
void OpenLogFileForThisProcess(LogState* state) {
  static std::mutex mutex;
  const std::string& pattern = GetParams().debug_file;
  if (pattern.empty() || state->out_pid == getpid()) return;
  std::lock_guard<std::mutex> lock(mutex);
  if (state->out_pid == getpid()) return;
  std::string name = ExpandFileName(pattern, state->host);
  if (FILE* file = fopen(name.c_str(), "w")) {
    setvbuf(file, nullptr, _IOLBF, 0);
    state->out = file;  // a parent's FILE stays open in the child: closing it could flush twice
  }
  state->out_pid = getpid();
}

LogState& State() {
  static LogState state;
  static std::once_flag once;
  std::call_once(once, [] {
    const Params& params = GetParams();
    gethostname(state.host, sizeof(state.host) - 1);
    state.level = params.debug.empty() ? LogLevel::kWarn : ParseLogLevel(params.debug);
    if (!params.debug_subsys.empty()) state.subsys = ParseLogSubsys(params.debug_subsys);
  });
  OpenLogFileForThisProcess(&state);
  return state;
}

}  // namespace

LogLevel ParseLogLevel(const std::string& text) {
  std::string upper = Upper(text);
  if (upper == "WARN") return LogLevel::kWarn;
  if (upper == "INFO") return LogLevel::kInfo;
  if (upper == "TRACE") return LogLevel::kTrace;
  return LogLevel::kNone;
}

uint32_t ParseLogSubsys(const std::string& text) {
  static const struct {
    const char* name;
    uint32_t bit;
  } kNames[] = {{"INIT", kLogInit},         {"COLL", kLogColl}, {"BOOTSTRAP", kLogBootstrap},
                {"PLATFORM", kLogPlatform}, {"ENV", kLogEnv},   {"ALL", kLogAll}};
  std::string upper = Upper(text);
  bool invert = !upper.empty() && upper[0] == '^';
  if (invert) upper.erase(0, 1);
  uint32_t mask = 0;
  size_t start = 0;
  while (start <= upper.size()) {
    size_t comma = upper.find(',', start);
    std::string name =
        upper.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (const auto& entry : kNames)
      if (name == entry.name) mask |= entry.bit;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return invert ? ~mask : mask;
}

bool LogEnabled(LogLevel level, uint32_t subsys) {
  const LogState& state = State();
  // A warning is shown whatever the subsystem filter says, as NCCL does.
  if (level == LogLevel::kWarn) return state.level >= LogLevel::kWarn;
  return static_cast<int>(level) <= static_cast<int>(state.level) && (subsys & state.subsys);
}

void Log(LogLevel level, uint32_t /*subsys*/, const char* file, int line, const char* fmt, ...) {
  const LogState& state = State();
  char message[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  const char* level_name = level == LogLevel::kWarn   ? "WARN"
                           : level == LogLevel::kInfo ? "INFO"
                                                      : "TRACE";
  long tid = syscall(SYS_gettid);
  if (level == LogLevel::kTrace) {
    const char* base = strrchr(file, '/');
    fprintf(state.out, "%s:%d:%ld XCCL TRACE %s:%d %s\n", state.host, getpid(), tid,
            base ? base + 1 : file, line, message);
  } else {
    fprintf(state.out, "%s:%d:%ld XCCL %s %s\n", state.host, getpid(), tid, level_name, message);
  }
}

}  // namespace xccl
