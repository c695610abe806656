// failure_perf: how soon the survivors of a killed rank hear of it, and what a shrink then costs.
// Each of --kills rounds forks -np rank processes (this process only supervises and holds the
// rendezvous root; it never touches a GPU runtime). The ranks make all_gathers of -b bytes per
// rank back to back, each synchronised and its async error read; the round's victim (drawn at
// random) notes the time in shared memory and SIGKILLs itself at a random call between 5 and 24.
// Each survivor notes when its call or its async error first failed, then times xcclCommShrink
// (XCCL_SHRINK_ABORT, the victim excluded) and makes one all_gather on the new communicator,
// every byte checked. XCCL_TIMEOUT_MS stays at its default unless set: the point is what happens
// without a short deadline. XCCL_FAKE_NODES in the environment splits the ranks into fake nodes.
// Printed per round: the victim, the survivors' time from the kill to their error (median and
// max) and their shrink time (median and max); last the median and max over every survivor of
// every round. Exit status 1 when any survivor failed to see the error, shrink or check.
//
// Usage: failure_perf [-np N] [--kills K] [-b bytes] [--seed S]
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness/device_buffers.h"
#include "xccl.h"

namespace {

constexpr int kMaxRanks = 64;

struct Shared {
  uint64_t kill_ns;
  uint64_t detect_ns[kMaxRanks];
  uint64_t shrink_ns[kMaxRanks];
  int32_t ok[kMaxRanks];  // 1: saw the error, shrank and checked the new communicator
  char why[kMaxRanks][160];
};

uint64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + t.tv_nsec;
}

void Say(Shared* shared, int rank, const std::string& why) {
  snprintf(shared->why[rank], sizeof(shared->why[rank]), "%s", why.c_str());
}

// One rank of one round; the process's exit status is unused (the shared record says it all).
void RankMain(const xcclUniqueId& id, int rank, int nranks, int victim, int kill_at, size_t bytes,
              Shared* shared) {
  auto device = xccl_perf::DeviceBuffers::Create(rank);
  if (!device) return Say(shared, rank, "no device");
  xcclComm_t comm = nullptr;
  if (xcclCommInitRank(&comm, nranks, id, rank) != xcclSuccess)
    return Say(shared, rank, std::string("init: ") + xcclGetLastError(nullptr));
  void* send = device->Allocate(bytes);
  void* recv = device->Allocate(bytes * nranks);
  if (send == nullptr || recv == nullptr) return Say(shared, rank, "allocation");
  std::vector<unsigned char> host(bytes * nranks, static_cast<unsigned char>(rank + 1));
  if (!device->CopyToDevice(send, host.data(), bytes)) return Say(shared, rank, "copy");
  for (int call = 0; call < 100000; ++call) {
    if (rank == victim && call == kill_at) {
      shared->kill_ns = NowNs();
      raise(SIGKILL);
    }
    xcclResult_t r = xcclAllGather(send, recv, bytes, xcclUint8, comm, device->Stream());
    if (r == xcclSuccess && !device->Synchronize()) r = xcclUnhandledDeviceError;
    xcclResult_t async = xcclSuccess;
    if (r == xcclSuccess && xcclCommGetAsyncError(comm, &async) == xcclSuccess) r = async;
    if (r != xcclSuccess) break;
  }
  shared->detect_ns[rank] = NowNs();
  const std::string error = xcclGetLastError(comm);
  if (error.find("rank " + std::to_string(victim)) == std::string::npos)
    return Say(shared, rank, "the error does not name the victim: " + error);
  const int excluded[] = {victim};
  xcclComm_t small = nullptr;
  const uint64_t shrink_start = NowNs();
  if (xcclCommShrink(comm, excluded, 1, &small, nullptr, XCCL_SHRINK_ABORT) != xcclSuccess)
    return Say(shared, rank, std::string("shrink: ") + xcclGetLastError(comm));
  shared->shrink_ns[rank] = NowNs() - shrink_start;
  const int survivors = nranks - 1;
  host.assign(bytes * survivors, 0xEE);
  bool checked =
      device->CopyToDevice(recv, host.data(), host.size()) &&
      xcclAllGather(send, recv, bytes, xcclUint8, small, device->Stream()) == xcclSuccess &&
      device->Synchronize() && device->CopyToHost(host.data(), recv, host.size());
  for (int j = 0; checked && j < survivors; ++j) {
    const unsigned char want = static_cast<unsigned char>((j < victim ? j : j + 1) + 1);
    checked = std::all_of(host.begin() + j * bytes, host.begin() + (j + 1) * bytes,
                          [want](unsigned char b) { return b == want; });
  }
  if (!checked) return Say(shared, rank, "the all_gather on the new communicator was wrong");
  xcclCommDestroy(small);
  xcclCommAbort(comm);
  shared->ok[rank] = 1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 4, kills = 20;
  size_t bytes = 1 << 20;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-np") {
      nranks = atoi(argv[i + 1]);
    } else if (flag == "--kills") {
      kills = atoi(argv[i + 1]);
    } else if (flag == "-b") {
      bytes = strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--seed") {
      seed = strtoull(argv[i + 1], nullptr, 10);
    } else {
      fprintf(stderr, "failure_perf: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (nranks < 2 || nranks > kMaxRanks || kills < 1 || bytes == 0) {
    fprintf(stderr, "failure_perf: -np must be 2-%d, --kills and -b positive\n", kMaxRanks);
    return 2;
  }
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) return 2;
  const char* timeout = getenv("XCCL_TIMEOUT_MS");
  const char* nodes = getenv("XCCL_FAKE_NODES");
  printf(
      "# failure_perf: %d ranks (processes), %zu bytes per rank, platform %s, XCCL_TIMEOUT_MS %s,"
      " XCCL_FAKE_NODES %s, seed %llu\n",
      nranks, bytes, xccl_perf::DeviceBuffers::Platform(), timeout ? timeout : "default",
      nodes ? nodes : "-", static_cast<unsigned long long>(seed));
  printf("# %5s %6s %7s %14s %11s %14s %11s\n", "kill", "victim", "at", "detect-med(ms)",
         "detect-max", "shrink-med(ms)", "shrink-max");
  std::mt19937_64 rng(seed);
  std::vector<double> all_detect, all_shrink;
  int failed = 0;
  for (int round = 0; round < kills; ++round) {
    memset(shared, 0, sizeof(*shared));
    const int victim = static_cast<int>(rng() % nranks), kill_at = 5 + static_cast<int>(rng() % 20);
    xcclUniqueId id;
    if (xcclGetUniqueId(&id) != xcclSuccess) {
      fprintf(stderr, "failure_perf: %s\n", xcclGetLastError(nullptr));
      return 1;
    }
    std::vector<pid_t> children;
    for (int r = 0; r < nranks; ++r) {
      const pid_t pid = fork();
      if (pid == 0) {
        RankMain(id, r, nranks, victim, kill_at, bytes, shared);
        _exit(0);
      }
      children.push_back(pid);
    }
    // 60 s for the round, then whatever still runs is killed (a survivor that never heard).
    const uint64_t deadline = NowNs() + 60000000000ull;
    size_t reaped = 0;
    while (reaped < children.size()) {
      const pid_t done = waitpid(-1, nullptr, WNOHANG);
      if (done > 0) {
        ++reaped;
        continue;
      }
      if (NowNs() > deadline) {
        for (pid_t pid : children) kill(pid, SIGKILL);
        while (waitpid(-1, nullptr, 0) > 0) {
        }
        break;
      }
      usleep(1000);
    }
    std::vector<double> detect, shrink;
    for (int r = 0; r < nranks; ++r) {
      if (r == victim) continue;
      if (shared->ok[r] != 1) {
        ++failed;
        fprintf(stderr, "kill %d: rank %d: %s\n", round, r,
                shared->why[r][0] ? shared->why[r] : "did not finish within 60 s");
        continue;
      }
      detect.push_back((shared->detect_ns[r] - shared->kill_ns) / 1e6);
      shrink.push_back(shared->shrink_ns[r] / 1e6);
    }
    all_detect.insert(all_detect.end(), detect.begin(), detect.end());
    all_shrink.insert(all_shrink.end(), shrink.begin(), shrink.end());
    printf("  %5d %6d %7d %14.2f %11.2f %14.2f %11.2f\n", round, victim, kill_at, Median(detect),
           detect.empty() ? 0 : *std::max_element(detect.begin(), detect.end()), Median(shrink),
           shrink.empty() ? 0 : *std::max_element(shrink.begin(), shrink.end()));
    fflush(stdout);
  }
  printf(
      "# over %zu survivors of %d kills: detect median %.2f ms, max %.2f ms; shrink median "
      "%.2f ms, max %.2f ms; %d survivor(s) failed\n",
      all_detect.size(), kills, Median(all_detect),
      all_detect.empty() ? 0 : *std::max_element(all_detect.begin(), all_detect.end()),
      Median(all_shrink),
      all_shrink.empty() ? 0 : *std::max_element(all_shrink.begin(), all_shrink.end()), failed);
  return failed == 0 ? 0 : 1;
}
