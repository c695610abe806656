#include "harness/run_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "harness/datatypes.h"
#include "harness/device_buffers.h"
#include "xccl.h"

namespace xccl_perf {
namespace {

std::string UtcNow() {
  time_t now = time(nullptr);
  struct tm utc;
  gmtime_r(&now, &utc);
  char text[32];
  strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string FullHostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

JsonObject Flags(const Options& o) {
  std::vector<std::string> types;
  for (xcclDataType_t type : o.types) types.push_back(TypeName(type));
  JsonObject flags;
  flags.String("command", o.command_line)
      .Int("min_bytes", static_cast<int64_t>(o.min_bytes))
      .Int("max_bytes", static_cast<int64_t>(o.max_bytes))
      .Int("step_bytes", static_cast<int64_t>(o.step_bytes))
      .Int("step_factor", static_cast<int64_t>(o.step_factor))
      .Int("iters", o.iters)
      .Int("warmup_iters", o.warmup_iters)
      .Int("check", o.check)
      .Int("threads", o.threads)
      .Int("gpus", o.gpus)
      .Int("procs", o.procs)
      .Int("blocking", o.blocking)
      .Int("average", static_cast<int>(o.average))
      .Strings("datatypes", types)
      .Int("graph_launches", o.graph_launches)
      .Int("repeats", o.repeats)
      .String("compare", o.compare_vendor ? "vendor" : "none");
  return flags;
}

}  // namespace

RunReport::RunReport(const char* program, const Options& options, RankSync& sync)
    : path_(options.json_path) {
  int version = 0;
  xcclGetVersion(&version);
  std::vector<JsonObject> devices;
  std::vector<std::string> names;
  for (int rank = 0; rank < sync.nranks(); ++rank) {
    const RankInfo& info = sync.Info(rank);
    JsonObject device;
    device.Int("rank", rank)
        .Int("pid", info.pid)
        .String("host", info.host)
        .Int("device", info.device)
        .String("name", info.name)
        .String("bus_id", info.bus_id);
    devices.push_back(device);
    bool seen = false;
    for (const std::string& name : names) seen = seen || name == info.name;
    if (!seen) names.push_back(info.name);
  }
  header_.String("program", program)
      .String("date", UtcNow())
      .String("host", FullHostName())
      .String("platform", DeviceBuffers::Platform())
      .Int("xccl_version", version)
      .Int("nranks", sync.nranks())
      .Strings("gpu_names", names)
      .Array("devices", devices)
      .Object("flags", Flags(options));
}

bool RunReport::Write() const {
  if (path_.empty()) return true;
  FILE* file = fopen(path_.c_str(), "w");
  if (file == nullptr) {
    fprintf(stderr, "%s: cannot write %s: %s\n", program_invocation_short_name, path_.c_str(),
            strerror(errno));
    return false;
  }
  fprintf(file, "{\"header\": %s,\n\"rows\": [", header_.Text().c_str());
  for (size_t i = 0; i < rows_.size(); ++i) {
    fprintf(file, "%s\n%s", i > 0 ? "," : "", rows_[i].Text().c_str());
  }
  fprintf(file, "\n]}\n");
  bool ok = ferror(file) == 0;
  ok = fclose(file) == 0 && ok;
  if (!ok) {
    fprintf(stderr, "%s: writing %s failed: %s\n", program_invocation_short_name, path_.c_str(),
            strerror(errno));
  }
  return ok;
}

std::string AllGatherEngine() {
  const char* algo = getenv("XCCL_ALLGATHER_ALGO");
  return algo != nullptr && *algo != '\0' ? algo : "default";
}

}  // namespace xccl_perf
