// One rank of a communicator whose ranks run in several network namespaces (netns_test.sh):
// XCCL_NETNS_RANK and XCCL_NETNS_NRANKS give its place; rank 0 makes the unique id (its root
// listens on rank 0's interface) and writes it to XCCL_NETNS_ID_FILE, the others read it there. It
// makes XCCL_NETNS_CALLS validated all_gathers of random sizes (0 to 1 MiB per rank, the same draws
// on every rank; XCCL_NETNS_BLOCK_BYTES fixes the size) and barriers, and prints one line: "ok
// <calls>", or "failed after <calls> calls, <seconds> s into the failing call: <message>". Exit 0
// on ok. XCCL_NETNS_OPS=mixed turns the calls into all_gathers, reduce_scatters, all_reduces and
// broadcasts in turn (and the barriers); =reductions into reduce_scatters and all_reduces only.
// The reductions sum uint32 words, which wrap the same in any order, so every rank checks every
// word exactly.
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

enum class Op { kAllGather, kReduceScatter, kAllReduce, kBroadcast };

// One reduction or broadcast of `words` uint32 per rank block; "" or what was wrong.
std::string CheckedWords(xcclComm_t comm, Op op, int rank, int nranks, uint64_t seed, int call,
                         size_t words, xcclResult_t* result) {
  const size_t send_words = op == Op::kReduceScatter ? words * nranks : words;
  std::vector<uint32_t> send(send_words + 1), recv(words + 1, 0xA5A5A5A5u);
  xccl_test::FillBlock(send.data(), send_words * 4, seed, rank, call);
  const int root = call % nranks;
  *result = op == Op::kReduceScatter ? xcclReduceScatter(send.data(), recv.data(), words,
                                                         xcclUint32, xcclSum, comm, nullptr)
            : op == Op::kAllReduce
                ? xcclAllReduce(send.data(), recv.data(), words, xcclUint32, xcclSum, comm, nullptr)
                : xcclBroadcast(send.data(), recv.data(), words, xcclUint32, root, comm, nullptr);
  if (*result != xcclSuccess) return "";
  // Every rank's whole input, once per call (words are cheap to make again).
  std::vector<std::vector<uint32_t>> inputs(nranks, std::vector<uint32_t>(send_words));
  for (int r = 0; r < nranks; ++r)
    xccl_test::FillBlock(inputs[r].data(), send_words * 4, seed, r, call);
  const size_t at = op == Op::kReduceScatter ? rank * words : 0;
  for (size_t i = 0; i < words; ++i) {
    uint32_t want = 0;
    if (op == Op::kBroadcast) {
      want = inputs[root][i];
    } else {
      for (int r = 0; r < nranks; ++r) want += inputs[r][at + i];
    }
    if (recv[i] != want)
      return "word " + std::to_string(i) + " is " + std::to_string(recv[i]) + ", want " +
             std::to_string(want);
  }
  return recv[words] == 0xA5A5A5A5u ? "" : "written past the output";
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
  const std::string ops = getenv("XCCL_NETNS_OPS") != nullptr ? getenv("XCCL_NETNS_OPS") : "";
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
    // The op of this call: all_gather, or in turn every op (mixed), or the reductions.
    const Op op = ops == "mixed"        ? static_cast<Op>(call % 4)
                  : ops == "reductions" ? (call % 2 == 0 ? Op::kReduceScatter : Op::kAllReduce)
                                        : Op::kAllGather;
    std::string wrong_words;
    xcclResult_t result = xcclSuccess;
    if (call % 10 == 9) {
      result = xcclBarrier(comm, nullptr);
    } else if (op == Op::kAllGather) {
      result = xcclAllGather(send.data(), recv.data(), bytes, xcclUint8, comm, nullptr);
    } else {
      wrong_words = CheckedWords(comm, op, rank, nranks, seed, call, bytes / 4 + 1, &result);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (result != xcclSuccess) {
      printf("rank %d: failed after %d calls, %.2f s into the failing call: %s\n", rank, call,
             seconds, xcclGetLastError(comm));
      fflush(stdout);
      xcclCommAbort(comm);
      return 1;
    }
    if (!wrong_words.empty()) {
      printf("rank %d: failed after %d calls: wrong data: %s\n", rank, call, wrong_words.c_str());
      return 1;
    }
    if (call % 10 != 9 && op == Op::kAllGather && fixed_bytes == 0) {
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
  if (const int hold_ms = EnvInt("XCCL_NETNS_HOLD_MS", 0)) {
    // XCCL_NETNS_HOLD_FILE ends the hold early once it exists (perf/scale_probe.sh).
    const char* release = getenv("XCCL_NETNS_HOLD_FILE");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_ms);
    while (std::chrono::steady_clock::now() < until &&
           (release == nullptr || access(release, F_OK) != 0))
      std::this_thread::sleep_for(std::chrono::milliseconds(release == nullptr ? hold_ms : 50));
  }
  return xcclCommDestroy(comm) == xcclSuccess ? 0 : 1;
}
