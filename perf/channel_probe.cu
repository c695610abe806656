// Diagnostic for ranks sharing one GPU (docs/ARCHITECTURE.md, "Ranks sharing a GPU"), plain CUDA,
// no xccl: which streams share a hardware work queue, and whether epoch barriers between threads
// of one process stall, with and without a host-side gate.
//   channel_probe pairs  S            S streams made by S threads at once; for each pair (i, j):
//                                     a spinning kernel and a dependent one on i, the release on
//                                     j; a timeout means i and j share a queue
//   channel_probe soak   N K R gate   N thread ranks, each R rounds of K barrier kernels back to
//                                     back; gate: none | enqueued | inflight1 | graph
// Exit code 0 always; the counts are printed.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

__device__ unsigned long long NowNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__global__ void Spin(volatile unsigned* flag, unsigned token, unsigned long long timeout_ns,
                     unsigned* timed_out) {
  const unsigned long long start = NowNs();
  while (*flag != token) {
    if (NowNs() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}
__global__ void Nothing() {}
__global__ void Set(volatile unsigned* flag, unsigned token) {
  __threadfence_system();
  *flag = token;
}

// One block, one warp per peer: store the next epoch into every peer's slot for this rank, then
// wait for every peer's slot of ours.
__global__ void Barrier(unsigned* slots, unsigned* epoch, int rank, int nranks,
                        unsigned long long timeout_ns, unsigned* failed) {
  __shared__ unsigned target;
  if (threadIdx.x == 0) target = *epoch + 1, *epoch = target;
  __syncthreads();
  if (threadIdx.x % 32 != 0) return;
  const int peer = threadIdx.x / 32;
  if (peer >= nranks || peer == rank) return;
  atomicExch(&slots[peer * nranks + rank], target);
  __threadfence_system();
  volatile unsigned* own = slots + rank * nranks + peer;
  const unsigned long long start = NowNs();
  while (static_cast<int>(*own - target) < 0) {
    if (*failed != 0) return;
    if (NowNs() - start > timeout_ns) {
      atomicExch(failed, 1u);
      return;
    }
  }
}

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

// A host barrier counting generations, for the gate between threads.
class HostBarrier {
 public:
  explicit HostBarrier(int n) : n_(n) {}
  void Wait() {
    const int gen = gen_.load();
    if (count_.fetch_add(1) + 1 == n_) {
      count_.store(0);
      gen_.fetch_add(1);
    } else {
      while (gen_.load() == gen) std::this_thread::yield();
    }
  }

 private:
  const int n_;
  std::atomic<int> count_{0}, gen_{0};
};

// How the streams are made: "threads" (one thread each, at once), "serial" (one thread),
// "churn" (serial, then 64 streams made and destroyed), "priority" (threads, highest priority).
std::vector<cudaStream_t> MakeStreams(int s, const std::string& how) {
  std::vector<cudaStream_t> streams(s);
  int low = 0, high = 0;
  CK(cudaDeviceGetStreamPriorityRange(&low, &high));
  auto make = [&](int i) {
    if (how == "priority")
      CK(cudaStreamCreateWithPriority(&streams[i], cudaStreamNonBlocking, high));
    else
      CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  };
  if (how == "serial" || how == "churn") {
    for (int i = 0; i < s; ++i) make(i);
  } else {
    std::vector<std::thread> makers;
    for (int i = 0; i < s; ++i) makers.emplace_back(make, i);
    for (auto& t : makers) t.join();
  }
  if (how == "churn") {
    for (int i = 0; i < 64; ++i) {
      cudaStream_t t;
      CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
      Nothing<<<1, 1, 0, t>>>();
      CK(cudaStreamSynchronize(t));
      CK(cudaStreamDestroy(t));
    }
  }
  return streams;
}

int Pairs(int s, const std::string& how, int trials) {
  unsigned *flag, *timed_out;
  CK(cudaMalloc(&flag, 4));
  CK(cudaMallocHost(&timed_out, 4));
  // Every kernel loaded before the first spin (lazy loading would wait for the device).
  Nothing<<<1, 1>>>();
  Set<<<1, 1>>>(flag, 1);
  Spin<<<1, 1>>>(flag, 1, 1000, timed_out);
  CK(cudaDeviceSynchronize());
  unsigned token = 100;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<cudaStream_t> streams = MakeStreams(s, how);
    int shared = 0;
    std::string which;
    for (int i = 0; i < s; ++i) {
      for (int j = i + 1; j < s; ++j) {
        *timed_out = 0;
        ++token;
        Spin<<<1, 1, 0, streams[i]>>>(flag, token, 20'000'000ull, timed_out);
        Nothing<<<1, 1, 0, streams[i]>>>();
        Set<<<1, 1, 0, streams[j]>>>(flag, token);
        CK(cudaStreamSynchronize(streams[i]));
        CK(cudaStreamSynchronize(streams[j]));
        if (*timed_out) {
          ++shared;
          which += " " + std::to_string(i) + "-" + std::to_string(j);
        }
      }
    }
    std::printf("pairs %s trial %d: %d streams, %d of %d pairs share a queue:%s\n", how.c_str(),
                trial, s, shared, s * (s - 1) / 2, which.c_str());
    for (auto st : streams) CK(cudaStreamDestroy(st));
  }
  return 0;
}

int Soak(int n, int k, int rounds, const std::string& gate) {
  unsigned *slots, *epochs, *failed;
  CK(cudaMalloc(&slots, n * n * 4));
  CK(cudaMemset(slots, 0, n * n * 4));
  CK(cudaMalloc(&epochs, n * 4));
  CK(cudaMemset(epochs, 0, n * 4));
  CK(cudaMallocHost(&failed, 4));
  *failed = 0;
  CK(cudaDeviceSynchronize());
  HostBarrier meet(n);
  std::atomic<int> stalls{0};
  std::vector<std::atomic<long>> enqueued(n);
  for (auto& e : enqueued) e = 0;
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      cudaStream_t stream;
      CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      cudaEvent_t previous;
      CK(cudaEventCreateWithFlags(&previous, cudaEventDisableTiming));
      cudaGraphExec_t exec = nullptr;
      if (gate == "graph") {
        cudaGraph_t graph;
        CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < k; ++i)
          Barrier<<<1, 32 * n, 0, stream>>>(slots, epochs + r, r, n, 500'000'000ull, failed);
        CK(cudaStreamEndCapture(stream, &graph));
        CK(cudaGraphInstantiate(&exec, graph, 0));
      }
      long calls = 0;
      for (int round = 0; round < rounds; ++round) {
        meet.Wait();
        if (gate == "graph") {
          CK(cudaGraphLaunch(exec, stream));
        } else {
          for (int i = 0; i < k; ++i) {
            if (gate == "inflight1") CK(cudaEventSynchronize(previous));
            Barrier<<<1, 32 * n, 0, stream>>>(slots, epochs + r, r, n, 500'000'000ull, failed);
            CK(cudaGetLastError());
            if (gate == "inflight1") CK(cudaEventRecord(previous, stream));
            if (gate == "enqueued") {
              enqueued[r].store(++calls);
              for (int p = 0; p < n; ++p)
                while (enqueued[p].load() < calls) std::this_thread::yield();
            }
          }
        }
        CK(cudaStreamSynchronize(stream));
        meet.Wait();
        if (r == 0 && *failed) {
          ++stalls;
          *failed = 0;
        }
        meet.Wait();
      }
    });
  }
  for (auto& t : ranks) t.join();
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("soak: %d ranks, %d rounds of %d barriers, gate %s, connections %s: %d rounds stalled\n",
              n, rounds, k, gate.c_str(), conn ? conn : "unset", stalls.load());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CK(cudaFree(nullptr));
  if (argc >= 5 && std::strcmp(argv[1], "pairs") == 0)
    return Pairs(std::atoi(argv[2]), argv[3], std::atoi(argv[4]));
  if (argc >= 6 && std::strcmp(argv[1], "soak") == 0)
    return Soak(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  std::fprintf(stderr, "usage: channel_probe pairs S threads|serial|churn|priority TRIALS | soak N K R none|enqueued|inflight1|graph\n");
  return 2;
}
