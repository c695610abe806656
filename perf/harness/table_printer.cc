#include "harness/table_printer.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace xccl_perf {

std::string ShortHostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  std::string name = host;
  size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

void PrintRunHeader(const Options& o) {
  bool factor = o.step_factor > 1;
  printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d\n",
      o.threads, o.gpus, o.min_bytes, o.max_bytes, factor ? o.step_factor : o.step_bytes,
      factor ? "factor" : "bytes", o.warmup_iters, o.iters, o.agg_iters, o.check, o.graph_launches);
  if (o.blocking)
    printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  if (o.repeats > 1)
    printf("# Repeats: %d timed loops per measurement, each row the median of them\n", o.repeats);
  printf("#\n");
}

void PrintDevices(RankSync& sync) {
  printf("# Using devices\n");
  for (int rank = 0; rank < sync.nranks(); ++rank) {
    const RankInfo& info = sync.Info(rank);
    // Group is nccl-tests' MPI split colour; the ranks here always form one group.
    printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d %s\n", rank, 0,
           static_cast<int>(info.pid), info.host, static_cast<int>(info.device), info.describe);
  }
}

std::string FormatTime(double usec) {
  char text[32];
  if (usec >= 10000.0) {
    snprintf(text, sizeof(text), "%7.0f", usec);
  } else if (usec >= 100.0) {
    snprintf(text, sizeof(text), "%7.1f", usec);
  } else {
    snprintf(text, sizeof(text), "%7.2f", usec);
  }
  return text;
}

void PrintTableHeader(bool vendor) {
  printf("#\n");
  printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "%s\n",
      "", "", "", "", "", vendor ? "  vendor out-of-place      vendor in-place" : "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "size", "count",
         "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
         "#wrong");
  if (vendor)
    printf("  %7s  %6s  %6s  %7s  %6s  %6s", "time", "busbw", "ratio", "time", "busbw", "ratio");
  printf("\n");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s", "(B)", "(elements)",
         "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (vendor) printf("  %7s  %6s  %6s  %7s  %6s  %6s", "(us)", "(GB/s)", "", "(us)", "(GB/s)", "");
  printf("\n");
}

std::string FormatRowStart(size_t bytes, size_t count, const char* type, const char* redop,
                           int root) {
  char text[128];
  snprintf(text, sizeof(text), "%12zu  %12zu  %8s  %6s  %6i", bytes, count, type, redop, root);
  return text;
}

std::string FormatResult(double usec, double algbw, double busbw, bool checked, int64_t wrong) {
  char text[128];
  std::string time = FormatTime(usec);
  if (checked) {
    snprintf(text, sizeof(text), "  %7s  %6.2f  %6.2f  %5g", time.c_str(), algbw, busbw,
             static_cast<double>(wrong));
  } else {
    snprintf(text, sizeof(text), "  %7s  %6.2f  %6.2f  %5s", time.c_str(), algbw, busbw, "N/A");
  }
  return text;
}

std::string FormatVendorResult(double usec, double busbw, double ratio) {
  char text[64];
  // Rows of zero elements move nothing on either side, so their ratio is undefined.
  if (std::isfinite(ratio)) {
    snprintf(text, sizeof(text), "  %7s  %6.2f  %6.2f", FormatTime(usec).c_str(), busbw, ratio);
  } else {
    snprintf(text, sizeof(text), "  %7s  %6.2f  %6s", FormatTime(usec).c_str(), busbw, "-");
  }
  return text;
}

std::string FormatVendorMissing() {
  char text[64];
  snprintf(text, sizeof(text), "  %7s  %6s  %6s", "-", "-", "-");
  return text;
}

void PrintFooter(int64_t errors, double avg_busbw) {
  printf("# Out of bounds values : %lld %s\n", static_cast<long long>(errors),
         errors ? "FAILED" : "OK");
  // The trailing space is nccl-tests' (an empty NCCL_TESTS_MIN_BW verdict follows it).
  printf("# Avg bus bandwidth    : %g %s\n", avg_busbw, "");
  printf("#\n");
  printf("\n");
}

void PrintBarrierRunHeader(const Options& o) {
  printf("# nThread %d nGpus %d nProcs %d warmup iters: %d iters: %d", o.threads, o.gpus, o.procs,
         o.warmup_iters, o.iters);
  // Only where graphs were asked for, so that the line stays as it was without -G.
  if (o.graph_launches > 0) printf(" graph: %d", o.graph_launches);
  if (o.repeats > 1) printf(" repeats: %d (median)", o.repeats);
  printf("\n");
  printf("#\n");
}

void PrintBarrierTableHeader(bool vendor) {
  printf("#\n");
  if (vendor) printf("# %10s  %25s  %s\n", "", "", "  vendor allreduce of 1 float");
  printf("# %10s  %7s  %7s  %7s", "nranks", "time", "min", "max");
  if (vendor) printf("  %7s  %7s  %7s  %6s", "time", "min", "max", "ratio");
  printf("\n");
  printf("# %10s  %7s  %7s  %7s", "", "(us)", "(us)", "(us)");
  if (vendor) printf("  %7s  %7s  %7s  %6s", "(us)", "(us)", "(us)", "");
  printf("\n");
}

std::string FormatBarrierRow(int nranks, double usec, double min_usec, double max_usec) {
  char text[128];
  snprintf(text, sizeof(text), "%12d  %7s  %7s  %7s", nranks, FormatTime(usec).c_str(),
           FormatTime(min_usec).c_str(), FormatTime(max_usec).c_str());
  return text;
}

std::string FormatBarrierVendor(double usec, double min_usec, double max_usec, double ratio) {
  char text[128];
  snprintf(text, sizeof(text), "  %7s  %7s  %7s  %6.2f", FormatTime(usec).c_str(),
           FormatTime(min_usec).c_str(), FormatTime(max_usec).c_str(), ratio);
  return text;
}

std::string FormatBarrierVendorMissing() {
  char text[64];
  snprintf(text, sizeof(text), "  %7s  %7s  %7s  %6s", "-", "-", "-", "-");
  return text;
}

void PrintBarrierFooter(double avg_usec) {
  printf("# Avg barrier latency  : %g us\n", avg_usec);
  printf("#\n");
  printf("\n");
}

}  // namespace xccl_perf
