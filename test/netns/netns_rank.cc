// One rank of a communicator whose ranks run in several network namespaces (netns_test.sh):
// XCCL_NETNS_RANK and XCCL_NETNS_NRANKS give its place; rank 0 makes the unique id (its root
// listens on rank 0's interface) and writes it to XCCL_NETNS_ID_FILE, the others read it there. It
// makes XCCL_NETNS_CALLS validated all_gathers of random sizes (0 to 1 MiB per rank, the same draws
// on every rank; XCCL_NETNS_BLOCK_BYTES fixes the size) and barriers, and prints one line: "ok
// <calls>", or "failed after <calls> calls, <seconds> s into the failing call: <message>". Exit 0
// on ok.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mp/data_pattern.h"
#include "xccl.h"

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != nullptr ? atoi(v) : fallback;
}

}  // namespace

int main() {
  const int rank = EnvInt("XCCL_NETNS_RANK", -1), nranks = EnvInt("XCCL_NETNS_NRANKS", 0);
  const int calls = EnvInt("XCCL_NETNS_CALLS", 200);
  if (calls < 1) {
    fprintf(stderr, "XCCL_NETNS_CALLS must be at least 1\n");
    return 2;
  }
  const int fixed_bytes = EnvInt("XCCL_NETNS_BLOCK_BYTES", 0);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("XCCL_NETNS_SEED", 1));
  if (rank < 0 || nranks < 1 || rank >= nranks) {
    fprintf(stderr, "set XCCL_NETNS_RANK and XCCL_NETNS_NRANKS\n");
    return 2;
  }
  const char* id_file = getenv("XCCL_NETNS_ID_FILE");
  if (id_file == nullptr) {
    fprintf(stderr, "set XCCL_NETNS_ID_FILE\n");
    return 2;
  }
  xcclUniqueId id;
  if (rank == 0) {
    if (xcclGetUniqueId(&id) != xcclSuccess) {
      printf("rank 0: failed after 0 calls, 0.00 s into init: %s\n", xcclGetLastError(nullptr));
      return 1;
    }
    const std::string partial = std::string(id_file) + ".partial";
    FILE* f = fopen(partial.c_str(), "wb");
    if (f == nullptr || fwrite(&id, sizeof(id), 1, f) != 1 || fclose(f) != 0 ||
        rename(partial.c_str(), id_file) != 0) {
      perror(id_file);
      return 2;
    }
  } else {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    FILE* f = nullptr;
    while ((f = fopen(id_file, "rb")) == nullptr && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (f == nullptr || fread(&id, sizeof(id), 1, f) != 1) {
      fprintf(stderr, "rank %d: no unique id in %s\n", rank, id_file);
      return 2;
    }
    fclose(f);
  }
  xcclComm_t comm = nullptr;
  if (xcclCommInitRank(&comm, nranks, id, rank) != xcclSuccess) {
    printf("rank %d: failed after 0 calls, 0.00 s into init: %s\n", rank,
           xcclGetLastError(nullptr));
    return 1;
  }
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> send, recv;
  // A fixed size is a measurement (perf/proxy_cpu.sh): the data is made before the idle hold and
  // checked after the last all_gather, once "calls done" is printed, so the busy window holds
  // the transfers only.
  if (fixed_bytes > 0) {
    send.resize(fixed_bytes + 1);
    recv.resize(static_cast<size_t>(fixed_bytes) * nranks + 1);
    xccl_test::FillBlock(send.data(), fixed_bytes, seed, rank, 0);
    xccl_test::Poison(recv.data(), recv.size() - 1);
  }
  if (const int idle_ms = EnvInt("XCCL_NETNS_IDLE_MS", 0)) {
    printf("rank %d: idle %d\n", rank, static_cast<int>(getpid()));
    fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  }
  for (int call = 0; call < calls; ++call) {
    const size_t bytes = fixed_bytes > 0  ? static_cast<size_t>(fixed_bytes)
                         : rng() % 3 == 0 ? rng() % 64
                                          : rng() % (1u << 20);
    if (fixed_bytes == 0) {
      send.resize(bytes + 1);
      recv.resize(bytes * nranks + 1);
      xccl_test::FillBlock(send.data(), bytes, seed, rank, call);
      xccl_test::Poison(recv.data(), bytes * nranks);
    }
    const auto start = std::chrono::steady_clock::now();
    xcclResult_t result =
        call % 10 == 9 ? xcclBarrier(comm, nullptr)
                       : xcclAllGather(send.data(), recv.data(), bytes, xcclUint8, comm, nullptr);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (result != xcclSuccess) {
      printf("rank %d: failed after %d calls, %.2f s into the failing call: %s\n", rank, call,
             seconds, xcclGetLastError(comm));
      fflush(stdout);
      xcclCommAbort(comm);
      return 1;
    }
    if (call % 10 != 9 && fixed_bytes == 0) {
      const std::string wrong = xccl_test::CheckGathered(recv.data(), bytes, nranks, seed, call, 1);
      if (!wrong.empty()) {
        printf("rank %d: failed after %d calls: wrong data: %s\n", rank, call, wrong.c_str());
        return 1;
      }
    }
  }
  if (fixed_bytes > 0) {
    printf("rank %d: calls done\n", rank);
    fflush(stdout);
    const std::string wrong =
        xccl_test::CheckGathered(recv.data(), fixed_bytes, nranks, seed, 0, 1);
    if (!wrong.empty()) {
      printf("rank %d: failed after %d calls: wrong data: %s\n", rank, calls, wrong.c_str());
      return 1;
    }
  }
  printf("rank %d: ok %d\n", rank, calls);
  fflush(stdout);
  if (const int hold_ms = EnvInt("XCCL_NETNS_HOLD_MS", 0))
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  return xcclCommDestroy(comm) == xcclSuccess ? 0 : 1;
}
