// The device-to-device copy rate of this GPU, the roofline an all_gather on one GPU is measured
// against: on one device every rank's copies share the same memory, so an all_gather's device
// copy rate (all bytes copied by all ranks per second) can at best approach this.
// Usage: copy_roofline [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-d device]
// Prints: size, time per copy (us), copy rate (GB/s, bytes copied / time), median of 5 rounds.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "platform/gpu.h"

namespace {

size_t ParseSize(const char* text) {
  char* end = nullptr;
  double value = strtod(text, &end);
  switch (end != nullptr ? *end : 0) {
    case 'K':
    case 'k':
      value *= 1024;
      break;
    case 'M':
    case 'm':
      value *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      value *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<size_t>(value);
}

bool Ok(gpuError_t err, const char* what) {
  if (err == gpuSuccess) return true;
  fprintf(stderr, "copy_roofline: %s failed: %s\n", what, gpuGetErrorString(err));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 1 << 20, max_bytes = size_t(1) << 30;
  int factor = 4, iters = 20, device = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b"))
      min_bytes = ParseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-e"))
      max_bytes = ParseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "-f"))
      factor = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n"))
      iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-d"))
      device = atoi(argv[i + 1]);
    else {
      fprintf(stderr,
              "usage: copy_roofline [-b min] [-e max] [-f factor] [-n iters] [-d device]\n");
      return 2;
    }
  }
  if (factor < 2 || iters < 1 || min_bytes == 0 || min_bytes > max_bytes) {
    fprintf(stderr, "copy_roofline: bad arguments\n");
    return 2;
  }
  void* src = nullptr;
  void* dst = nullptr;
  gpuStream_t stream = nullptr;
  gpuEvent_t start = nullptr, stop = nullptr;
  if (!Ok(gpuSetDevice(device), "set device") || !Ok(gpuMalloc(&src, max_bytes), "malloc") ||
      !Ok(gpuMalloc(&dst, max_bytes), "malloc") ||
      !Ok(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking), "stream") ||
      !Ok(gpuEventCreate(&start), "event") || !Ok(gpuEventCreate(&stop), "event") ||
      !Ok(gpuMemsetAsync(src, 1, max_bytes, stream), "memset"))
    return 1;
  printf("# device-to-device copy, median of 5 rounds of %d copies\n", iters);
  printf("# %12s %12s %14s\n", "size(B)", "time(us)", "rate(GB/s)");
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    std::vector<double> rounds;
    for (int round = 0; round < 6; ++round) {  // the first is a warm-up
      if (!Ok(gpuEventRecord(start, stream), "record")) return 1;
      for (int i = 0; i < iters; ++i)
        if (!Ok(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, stream), "copy")) return 1;
      float ms = 0;
      if (!Ok(gpuEventRecord(stop, stream), "record") || !Ok(gpuEventSynchronize(stop), "sync") ||
          !Ok(gpuEventElapsedTime(&ms, start, stop), "elapsed"))
        return 1;
      if (round > 0) rounds.push_back(ms * 1000.0 / iters);
    }
    std::sort(rounds.begin(), rounds.end());
    const double us = rounds[rounds.size() / 2];
    printf("  %12zu %12.2f %14.1f\n", bytes, us, bytes / us / 1e3);
    if (bytes > max_bytes / factor) break;
  }
  (void)gpuFree(src);
  (void)gpuFree(dst);
  return 0;
}
