// Every XCCL_* environment parameter, read in one place (params.cc) and listed at INFO.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace xccl {

struct Params {
  std::string debug;            // XCCL_DEBUG
  std::string debug_subsys;     // XCCL_DEBUG_SUBSYS
  std::string debug_file;       // XCCL_DEBUG_FILE
  int64_t timeout_ms = 300000;  // XCCL_TIMEOUT_MS: deadline of every wait
  std::string comm_id;          // XCCL_COMM_ID=host:port, the rendezvous address
  std::string socket_ifname;    // XCCL_SOCKET_IFNAME: interface(s) to bind/advertise
  std::string hostid;           // XCCL_HOSTID: this process's node identity (as NCCL_HOSTID)
  std::string fake_nodes;       // XCCL_FAKE_NODES: testing, ranks per node ("2,1,3")
  std::string net = "auto";     // XCCL_NET: auto|socket|ib, the backend between nodes
  int64_t socket_nsocks = 4;    // XCCL_SOCKET_NSOCKS: data sockets per net socket connection
  std::string ibverbs_lib = "libibverbs.so.1";  // XCCL_IBVERBS_LIB: dlopen'd by the ib backend
  std::string ib_hca;        // XCCL_IB_HCA: RDMA devices to use (prefix list, ^, =, :port)
  int64_t ib_gid_index = 0;  // XCCL_IB_GID_INDEX: the GID of a RoCE port the ib backend uses
  int64_t net_chunk_bytes = int64_t(1) << 20;  // XCCL_NET_CHUNK_BYTES: across-node pipeline step
  std::string allgather_algo;  // XCCL_ALLGATHER_ALGO=dma|kernel ("" = kernel, see gpu_platform)
  uint32_t epoch_base = 0;     // XCCL_EPOCH_BASE: first value of every signal (tests: wrap)
  int64_t spin_count = -1;     // XCCL_SPIN_COUNT: polls before a waiter sleeps (-1: auto)
  int64_t yield_count = -1;    // XCCL_YIELD_COUNT: polls with sched_yield, then sleep (-1: auto)
  int64_t window_bytes = int64_t(512) << 20;  // XCCL_WINDOW_BYTES: GPU inboxes per rank
  int64_t gpu_queues = 0;       // XCCL_GPU_QUEUES: copy-engine streams per rank (0: auto)
  int64_t eager_bytes = 65536;  // XCCL_EAGER_BYTES: blocks up to this go through the window
  int64_t zero_copy = 1;        // XCCL_ZERO_COPY: 0 sends every GPU all_gather through inboxes
  int64_t ll_bytes = 8192;      // XCCL_ALLGATHER_LL_BYTES: GPU all_gather with flags in the data
  int64_t allgather_lanes = 0;  // XCCL_ALLGATHER_LANES: GPU kernel engine lanes per peer (0: auto)
  int64_t allgather_chunk_bytes = int64_t(512) << 10;  // XCCL_ALLGATHER_CHUNK_BYTES: ring slot
  int64_t reduce_blocks = 0;         // XCCL_REDUCE_BLOCKS: GPU read engine's largest grid (0: auto)
  int64_t gemmrs_reduce_blocks = 0;  // XCCL_GEMMRS_REDUCE_BLOCKS: fused chunks' grid (0: auto)
  int64_t gemmrs_chunks = 0;         // XCCL_GEMMRS_CHUNKS: fused chunks unless pinned (0: auto)
  int64_t allreduce_oneshot_bytes = 65536;  // XCCL_ALLREDUCE_ONESHOT_BYTES: one trip up to this
  int64_t aggemm_compute_streams = 0;   // XCCL_AGGEMM_COMPUTE_STREAMS: fused bands' GEMM streams
  int64_t aggemm_sources_per_gemm = 0;  // XCCL_AGGEMM_SOURCES_PER_GEMM: 0 auto, 1 or 2
  std::string gemm_plugin;              // XCCL_GEMM_PLUGIN: ag_gemm's GEMM plugin, a name or a path
};

// Pure parser, for tests: reads every parameter through `lookup` (returns nullptr if unset).
// On a malformed value it keeps the default and appends a line to `*errors` if given.
Params ParseParams(const std::function<const char*(const char*)>& lookup,
                   std::string* errors = nullptr);

// The process's parameters, parsed from the environment once (thread-safe).
const Params& GetParams();

// Replaces the process's parameters (tests only: e.g. a preset epoch base in a forked rank).
void SetParamsForTesting(const Params& params);

// Logs every parameter and its value at INFO once per process.
void LogParamsOnce();

}  // namespace xccl
