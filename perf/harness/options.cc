#include "harness/options.h"

#include <libgen.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness/datatypes.h"
#include "harness/device_buffers.h"
#include "harness/node_namespace.h"
#include "harness/redops.h"

namespace xccl_perf {
namespace {

enum class Group { kAlways, kSizes, kCheck, kTypes, kBlocking, kTimedLoop, kNcclTests, kOps };

struct Flag {
  char short_name;  // 0: long form only
  const char* long_name;
  Group group;
  bool takes_value;
  const char* usage;
};

// -np is not a getopt-style flag (getopt would read it as -n with value "p"), which is why the
// parser below is hand-written rather than getopt_long.
constexpr Flag kFlags[] = {
    {'t', "nthreads", Group::kAlways, true, "<num threads per process>"},
    {'g', "ngpus", Group::kAlways, true, "<ranks per thread>"},
    {0, "np", Group::kAlways, true, "<processes forked on this node>"},
    {'b', "minbytes", Group::kSizes, true, "<min size in bytes, K/M/G suffix>"},
    {'e', "maxbytes", Group::kSizes, true, "<max size in bytes, K/M/G suffix>"},
    {'i', "stepbytes", Group::kSizes, true, "<increment size>"},
    {'f', "stepfactor", Group::kSizes, true, "<increment factor>"},
    {'n', "iters", Group::kAlways, true, "<iteration count>"},
    {'w', "warmup_iters", Group::kAlways, true, "<warmup iteration count>"},
    {'c', "check", Group::kCheck, true, "<check iteration count, 0 to skip>"},
    {'o', "op", Group::kOps, true, "<sum/prod/max/min/avg/all>"},
    {'d', "datatype", Group::kTypes, true,
     "<int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/fp8e4m3/fp8e5m2/all>"},
    {'z', "blocking", Group::kBlocking, true,
     "<0/1> wait for completion and barrier after each collective"},
    {'a', "average", Group::kTimedLoop, true,
     "<0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>"},
    {'G', "cudagraph", Group::kTimedLoop, true,
     "<num graph launches> capture -n calls into a graph, time this many launches (GPU only)"},
    {'J', "output_file", Group::kTimedLoop, true, "<file> write every row as JSON"},
    {0, "repeats", Group::kTimedLoop, true,
     "<R> time every measurement R times, report the median"},
    {0, "compare", Group::kAlways, true,
     "<vendor> also time the vendor library (XCCL_VENDOR_LIB, default libnccl.so.2)"},
    {'m', "agg_iters", Group::kTimedLoop, true,
     "<n> calls per timed iteration, issued back to back (xccl has no group calls)"},
    {'T', "timeout", Group::kNcclTests, true, "<seconds> every wait's deadline (XCCL_TIMEOUT_MS)"},
    {0, "netns", Group::kAlways, true,
     "<ns1,ns2,...> process p of np runs in namespace p*count/np, a node of its own (root)"},
    // nccl-tests' flags that mean nothing here, taken so that its scripts run; values that would
    // ask for something not built are refused.
    {'o', "op", Group::kNcclTests, true,
     "<sum/prod/min/max/avg/all> taken for nccl-tests scripts: nothing here reduces"},
    {'r', "root", Group::kNcclTests, true,
     "<root> broadcast_perf's root rank (default 0); the other binaries ignore it"},
    {'p', "parallel_init", Group::kNcclTests, true, "<0/1> ranks always initialise in parallel"},
    {'N', "run_cycles", Group::kNcclTests, true, "<1> one pass over the sizes (only 1)"},
    {'R', "local_register", Group::kNcclTests, true,
     "<0/1/2> buffers: 0 plain, 1 the receive buffer from xcclMemAlloc and both registered "
     "(xcclCommRegister), 2 the receive buffer a window in xcclMemAlloc memory"},
    {'C', "report_cputime", Group::kNcclTests, true, "<0> the device's time (only 0)"},
    {'h', "help", Group::kAlways, false, ""},
};

bool Enabled(const Flag& flag, const FlagSet& set) {
  // A binary that reduces takes the -o above instead.
  if (flag.group == Group::kNcclTests && flag.short_name == 'o' && set.ops) return false;
  switch (flag.group) {
    case Group::kSizes:
      return set.sizes;
    case Group::kCheck:
      return set.check;
    case Group::kTypes:
      return set.types;
    case Group::kBlocking:
      return set.blocking;
    case Group::kTimedLoop:
      return set.timed_loop;
    case Group::kNcclTests:
      return set.nccl_tests;
    case Group::kOps:
      return set.ops;
    case Group::kAlways:
      return true;
  }
  return false;
}

void PrintUsage(const char* argv0, const FlagSet& set) {
  std::string name = argv0;
  printf("USAGE: %s \n", basename(&name[0]));
  for (const Flag& flag : kFlags) {
    if (!Enabled(flag, set)) continue;
    if (flag.short_name == 0 && std::string(flag.long_name) == "np") {
      printf("\t[-%s,--%s %s] \n", flag.long_name, flag.long_name, flag.usage);
    } else if (flag.short_name == 0) {
      printf("\t[--%s %s] \n", flag.long_name, flag.usage);
    } else if (flag.takes_value) {
      printf("\t[-%c,--%s %s] \n", flag.short_name, flag.long_name, flag.usage);
    } else {
      printf("\t[-%c,--%s]\n", flag.short_name, flag.long_name);
    }
  }
  printf("\tTotal ranks = np * nthreads * ngpus; every rank runs in its own thread.\n");
}

bool ParseInt(const char* text, long min_value, long* out) {
  errno = 0;
  char* end = nullptr;
  long value = strtol(text, &end, 10);  // decimal: "010" is ten, as -b reads it
  if (errno != 0 || end == text || *end != '\0' || value < min_value || value > INT_MAX) {
    return false;
  }
  *out = value;
  return true;
}

// Applies one flag; false (after saying why) if its value is bad.
bool Apply(const Flag& flag, const char* value, Options* o) {
  long number = 0;
  size_t bytes = 0;
  auto bad = [&](const char* what) {
    fprintf(stderr, "invalid value '%s' for --%s: %s\n", value, flag.long_name, what);
    return false;
  };
  std::string name = flag.long_name;
  if (name == "minbytes" || name == "maxbytes" || name == "stepbytes") {
    if (!ParseSize(value, &bytes)) return bad("expected a size such as 8, 64K, 32M, 1G");
    (name == "minbytes" ? o->min_bytes : name == "maxbytes" ? o->max_bytes : o->step_bytes) = bytes;
    return true;
  }
  if (name == "datatype") {
    if (!ParseTypes(value, &o->types)) return bad("unknown data type");
    return true;
  }
  if (name == "output_file") {
    if (*value == '\0') return bad("expected a file name");
    o->json_path = value;
    return true;
  }
  if (name == "op" && flag.group == Group::kOps) {
    if (!ParseOps(value, &o->ops)) return bad("expected sum, prod, max, min, avg or all");
    return true;
  }
  if (name == "op") {
    for (const char* op : {"sum", "prod", "min", "max", "avg", "all"})
      if (strcmp(value, op) == 0) return true;
    return bad("expected sum, prod, min, max, avg or all");
  }
  if (name == "compare") {
    if (strcmp(value, "vendor") == 0) {
      o->compare_vendor = true;
    } else if (strcmp(value, "none") == 0) {
      o->compare_vendor = false;
    } else {
      return bad("expected 'vendor' or 'none'");
    }
    return true;
  }
  if (name == "netns") {
    if (!ParseNamespaces(value, &o->netns)) return bad("expected namespace names: a,b");
    return true;
  }
  // Every other flag is an integer with a lower bound.
  struct IntFlag {
    const char* name;
    long min_value;
    long max_value;
  };
  constexpr IntFlag kInts[] = {
      {"nthreads", 1, 1024},      {"ngpus", 1, 1024},       {"np", 1, 1024},
      {"stepfactor", 1, INT_MAX}, {"iters", 1, INT_MAX},    {"warmup_iters", 0, INT_MAX},
      {"check", 0, INT_MAX},      {"blocking", 0, 1},       {"average", 0, 3},
      {"cudagraph", 0, INT_MAX},  {"repeats", 1, 1000},     {"agg_iters", 1, 1 << 20},
      {"timeout", 1, 86400},      {"root", 0, INT_MAX},     {"parallel_init", 0, 1},
      {"run_cycles", 1, 1},       {"local_register", 0, 2}, {"report_cputime", 0, 0},
  };
  for (const IntFlag& spec : kInts) {
    if (name != spec.name) continue;
    if (!ParseInt(value, spec.min_value, &number) || number > spec.max_value) {
      char range[160];
      if (spec.min_value == spec.max_value)  // an nccl-tests flag whose other values are not built
        snprintf(range, sizeof(range), "only %ld is supported here (%s)", spec.min_value,
                 flag.usage);
      else
        snprintf(range, sizeof(range), "expected an integer in [%ld, %ld]", spec.min_value,
                 spec.max_value);
      return bad(range);
    }
    int v = static_cast<int>(number);
    if (name == "nthreads") o->threads = v;
    if (name == "ngpus") o->gpus = v;
    if (name == "np") o->procs = v;
    if (name == "stepfactor") o->step_factor = static_cast<size_t>(v);
    if (name == "iters") o->iters = v;
    if (name == "warmup_iters") o->warmup_iters = v;
    if (name == "check") o->check = v;
    if (name == "blocking") o->blocking = v;
    if (name == "average") o->average = static_cast<Average>(v);
    if (name == "cudagraph") o->graph_launches = v;
    if (name == "repeats") o->repeats = v;
    if (name == "agg_iters") o->agg_iters = v;
    if (name == "root") o->root = v;
    if (name == "timeout") o->timeout_s = v;
    if (name == "local_register") o->local_register = v;
    return true;
  }
  return bad("unhandled flag");
}

const Flag* FindShort(char c, const FlagSet& set) {
  for (const Flag& flag : kFlags) {
    if (flag.short_name == c && Enabled(flag, set)) return &flag;
  }
  return nullptr;
}

const Flag* FindLong(const std::string& name, const FlagSet& set) {
  for (const Flag& flag : kFlags) {
    if (name == flag.long_name && Enabled(flag, set)) return &flag;
  }
  // nccl-tests-style long name for the process count, for symmetry with --nthreads.
  if (name == "nprocs") return FindLong("np", set);
  return nullptr;
}

}  // namespace

bool ParseSize(const char* text, size_t* bytes) {
  char* end = nullptr;
  errno = 0;
  double value = strtod(text, &end);
  if (errno != 0 || end == text || !(value >= 0)) return false;
  double unit = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      unit = 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
    case 'G':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default:
      return false;
  }
  // Tolerate "32MB" / "1KiB", which people type.
  if (*end == 'i' || *end == 'I') ++end;
  if (*end == 'b' || *end == 'B') ++end;
  if (*end != '\0') return false;
  double total = value * unit;
  if (total > 9.0e18) return false;
  *bytes = static_cast<size_t>(total);
  return true;
}

int ParseOptions(int argc, char** argv, const FlagSet& set, Options* options) {
  options->command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) options->command_line += ' ';
    options->command_line += argv[i];
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const Flag* flag = nullptr;
    std::string value;
    bool has_value = false;
    if (arg == "-np") {
      flag = FindLong("np", set);
    } else if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      std::string name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        has_value = true;
        name = name.substr(0, eq);
      }
      flag = FindLong(name, set);
    } else if (arg.size() >= 2 && arg[0] == '-') {
      flag = FindShort(arg[1], set);
      if (arg.size() > 2) {
        value = arg.substr(2);
        has_value = true;
      }
    }
    if (flag == nullptr) {
      fprintf(stderr, "invalid option '%s'\n", arg.c_str());
      PrintUsage(argv[0], set);
      return 2;
    }
    if (!flag->takes_value) {
      PrintUsage(argv[0], set);
      return 0;  // -h is the only flag without a value
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        fprintf(stderr, "option '%s' needs a value\n", arg.c_str());
        return 2;
      }
      value = argv[++i];
    }
    if (!Apply(*flag, value.c_str(), options)) return 2;
  }
  if (options->min_bytes > options->max_bytes) {
    fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n", options->min_bytes,
            options->max_bytes);
    return 2;
  }
  if (options->step_factor <= 1 && options->step_bytes == 0) {
    fprintf(stderr, "stepbytes must be positive when stepfactor is 1\n");
    return 2;
  }
  if (options->step_factor > 1 && options->min_bytes == 0) {
    // Multiplying zero never reaches maxbytes.
    fprintf(stderr, "minbytes must be positive when stepfactor is above 1\n");
    return 2;
  }
  if (!options->json_path.empty()) {
    // Found out now, not after a sweep of minutes: the file is written at the end.
    std::string dir = options->json_path;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
    if (access(dir.c_str(), W_OK) != 0) {
      fprintf(stderr, "cannot write -J %s: %s: %s\n", options->json_path.c_str(), dir.c_str(),
              strerror(errno));
      return 2;
    }
  }
  if (options->timeout_s > 0) {
    // Read by every rank's init (threads now, processes after the fork).
    setenv("XCCL_TIMEOUT_MS", std::to_string(options->timeout_s * 1000L).c_str(), 1);
  }
  // Process 0 makes the rendezvous id next, inside its namespace: the others must reach it.
  if (!EnterNodeNamespace(options->netns, 0, options->procs)) return 2;
  if (options->graph_launches > 0 && !DeviceBuffers::SupportsGraphs()) {
    fprintf(stderr, "-G (graph launches) needs a GPU platform; this build is for %s\n",
            DeviceBuffers::Platform());
    return 2;
  }
  if (options->graph_launches > 0 && options->blocking) {
    // A graph cannot wait for the host between the calls it holds.
    fprintf(stderr, "-G and -z 1 exclude each other\n");
    return 2;
  }
  return -1;
}

}  // namespace xccl_perf
