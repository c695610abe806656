#include "base/params.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "base/logging.h"

namespace xccl {

namespace {

bool ParseInt64(const char* text, int64_t min, int64_t max, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long value = strtoll(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) return false;
  *out = value;
  return true;
}

// One row per parameter: its name, what it does, and how it lands in Params.
struct ParamSpec {
  const char* name;
  const char* help;
  // Parses `text` into `params`; false if malformed.
  bool (*parse)(const char* text, Params* params);
  // Prints the current value.
  std::string (*show)(const Params& params);
};

const std::vector<ParamSpec>& Specs() {
  static const std::vector<ParamSpec> specs = {
      {"XCCL_DEBUG", "log level: WARN, INFO or TRACE",
       [](const char* t, Params* p) {
         p->debug = t;
         return true;
       },
       [](const Params& p) { return p.debug; }},
      {"XCCL_DEBUG_SUBSYS", "subsystems logged: INIT,COLL,BOOTSTRAP,PLATFORM,ENV,ALL (^ negates)",
       [](const char* t, Params* p) {
         p->debug_subsys = t;
         return true;
       },
       [](const Params& p) { return p.debug_subsys; }},
      {"XCCL_DEBUG_FILE", "log file (%h host, %p pid); default stderr",
       [](const char* t, Params* p) {
         p->debug_file = t;
         return true;
       },
       [](const Params& p) { return p.debug_file; }},
      {"XCCL_TIMEOUT_MS", "deadline of every wait, in milliseconds (>= 1)",
       [](const char* t, Params* p) {
         return ParseInt64(t, 1, INT64_MAX / 1000000, &p->timeout_ms);
       },
       [](const Params& p) { return std::to_string(p.timeout_ms); }},
      {"XCCL_COMM_ID", "host:port of the rendezvous, served by rank 0",
       [](const char* t, Params* p) {
         p->comm_id = t;
         return true;
       },
       [](const Params& p) { return p.comm_id; }},
      {"XCCL_SOCKET_IFNAME", "interfaces for bootstrap sockets (prefix list, ^ excludes, = exact)",
       [](const char* t, Params* p) {
         p->socket_ifname = t;
         return true;
       },
       [](const Params& p) { return p.socket_ifname; }},
      {"XCCL_ALLGATHER_ALGO", "force the all_gather engine: dma or kernel",
       [](const char* t, Params* p) {
         std::string v = t;
         if (v != "" && v != "dma" && v != "kernel") return false;
         p->allgather_algo = v;
         return true;
       },
       [](const Params& p) { return p.allgather_algo; }},
      {"XCCL_ZERO_COPY",
       "GPU platforms: 1 lets an all_gather write straight into the receive buffers its peers "
       "can reach (ranks of one process, registered windows); 0 sends every block through the "
       "inboxes",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 1, &p->zero_copy); },
       [](const Params& p) { return std::to_string(p.zero_copy); }},
      {"XCCL_EPOCH_BASE", "first value of every signal and epoch (tests preset 0xFFFFFFFE)",
       [](const char* t, Params* p) {
         int64_t v;
         if (!ParseInt64(t, 0, UINT32_MAX, &v)) return false;
         p->epoch_base = static_cast<uint32_t>(v);
         return true;
       },
       [](const Params& p) { return std::to_string(p.epoch_base); }},
      {"XCCL_SPIN_COUNT",
       "polls of a flag before a waiter sleeps; -1: as many as suit the cores per rank",
       [](const char* t, Params* p) { return ParseInt64(t, -1, INT32_MAX, &p->spin_count); },
       [](const Params& p) { return std::to_string(p.spin_count); }},
      {"XCCL_YIELD_COUNT",
       "polls, each followed by sched_yield, after the spins and before a waiter sleeps; "
       "-1: 100 where ranks outnumber cores, else 0",
       [](const char* t, Params* p) { return ParseInt64(t, -1, INT32_MAX, &p->yield_count); },
       [](const Params& p) { return std::to_string(p.yield_count); }},
      {"XCCL_WINDOW_BYTES",
       "GPU platforms: device memory per rank for the inboxes of its peers (a larger block "
       "goes in several operations; none for a communicator of one rank)",
       [](const char* t, Params* p) {
         return ParseInt64(t, 4096, int64_t(1) << 40, &p->window_bytes);
       },
       [](const Params& p) { return std::to_string(p.window_bytes); }},
      {"XCCL_HOSTID",
       "this process's node identity instead of its hostname and boot id (as NCCL_HOSTID): "
       "processes of one machine with different values are different nodes",
       [](const char* t, Params* p) {
         p->hostid = t;
         return true;
       },
       [](const Params& p) { return p.hostid; }},
      {"XCCL_FAKE_NODES",
       "testing: ranks per node in rank order (\"2,1,3\"), whatever their hosts, also for "
       "ranks of one process; the same on every rank",
       [](const char* t, Params* p) {
         p->fake_nodes = t;
         return true;
       },
       [](const Params& p) { return p.fake_nodes; }},
      {"XCCL_NET",
       "the net backend between nodes: auto (ibverbs where a device is present, else sockets), "
       "socket, or ib; the same on every rank",
       [](const char* t, Params* p) {
         const std::string v = t;
         if (v != "auto" && v != "socket" && v != "ib") return false;
         p->net = v;
         return true;
       },
       [](const Params& p) { return p.net; }},
      {"XCCL_SOCKET_NSOCKS",
       "net socket backend: TCP data sockets per connection, a large message striped over them",
       [](const char* t, Params* p) { return ParseInt64(t, 1, 16, &p->socket_nsocks); },
       [](const Params& p) { return std::to_string(p.socket_nsocks); }},
      {"XCCL_IBVERBS_LIB", "net ib backend: the libibverbs to dlopen (a path or a soname)",
       [](const char* t, Params* p) {
         if (*t == '\0') return false;
         p->ibverbs_lib = t;
         return true;
       },
       [](const Params& p) { return p.ibverbs_lib; }},
      {"XCCL_IB_HCA",
       "net ib backend: the RDMA devices to use, as NCCL_IB_HCA (mlx5_0:1,mlx5_1; ^ excludes, "
       "= exact); empty: every active port",
       [](const char* t, Params* p) {
         p->ib_hca = t;
         return true;
       },
       [](const Params& p) { return p.ib_hca; }},
      {"XCCL_IB_GID_INDEX",
       "net ib backend: the GID table entry of each port to address peers by on Ethernet (RoCE; "
       "v2 deployments usually need one other than 0); InfiniBand routes by LID",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 255, &p->ib_gid_index); },
       [](const Params& p) { return std::to_string(p.ib_gid_index); }},
      {"XCCL_NET_CHUNK_BYTES",
       "ranks on several nodes: the all_gather pipeline step (a block crosses the network and "
       "is forwarded inside the node in pieces of this size); 4096 to 1 GiB, the same on every "
       "rank",
       [](const char* t, Params* p) {
         return ParseInt64(t, 4096, int64_t(1) << 30, &p->net_chunk_bytes);
       },
       [](const Params& p) { return std::to_string(p.net_chunk_bytes); }},
      {"XCCL_GPU_QUEUES",
       "GPU platforms: copy-engine streams (DMA queues) per rank; 0: one per peer, fewer when "
       "ranks share a device",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 1024, &p->gpu_queues); },
       [](const Params& p) { return std::to_string(p.gpu_queues); }},
      {"XCCL_EAGER_BYTES",
       "host platform: blocks up to this many bytes are copied through the shared window "
       "by the calling thread (0 disables); the same on every rank",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 1 << 24, &p->eager_bytes); },
       [](const Params& p) { return std::to_string(p.eager_bytes); }},
      {"XCCL_ALLGATHER_LL_BYTES",
       "GPU platforms, kernel engine: blocks up to this many bytes per rank travel with a flag "
       "in every 8-byte line (no fence, one trip); at most 32768, 0 disables",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 32768, &p->ll_bytes); },
       [](const Params& p) { return std::to_string(p.ll_bytes); }},
      {"XCCL_ALLGATHER_LANES",
       "GPU platforms, kernel engine: thread blocks pushing (and as many draining) per peer for "
       "blocks above 16 KiB; 0 chooses about 16 / (ranks - 1); at most 32; the same on every rank",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 32, &p->allgather_lanes); },
       [](const Params& p) { return std::to_string(p.allgather_lanes); }},
      {"XCCL_ALLGATHER_CHUNK_BYTES",
       "GPU platforms, kernel engine: the largest piece a lane pushes before its flag (the ring "
       "slot size; halved while a lane's ring would have fewer than 2 slots); a multiple of 256 "
       "from 4096 to 64 MiB; the same on every rank",
       [](const char* t, Params* p) {
         int64_t v = 0;
         if (!ParseInt64(t, 4096, int64_t(64) << 20, &v) || v % 256 != 0) return false;
         p->allgather_chunk_bytes = v;
         return true;
       },
       [](const Params& p) { return std::to_string(p.allgather_chunk_bytes); }},
      {"XCCL_REDUCE_BLOCKS",
       "GPU platforms, reductions' read engine: the most thread blocks of 512 a rank's kernel "
       "takes (fewer for small calls); 0 chooses two per multiprocessor shared by the ranks on "
       "the device; at most 4096",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 4096, &p->reduce_blocks); },
       [](const Params& p) { return std::to_string(p.reduce_blocks); }},
      {"XCCL_GEMMRS_REDUCE_BLOCKS",
       "GPU platforms, gemm_rs fused mode with several chunks: the most blocks of each chunk's "
       "reduce-scatter, which runs beside GEMMs; 0 takes the reductions' grid "
       "(XCCL_REDUCE_BLOCKS), "
       "where ranks share a GPU an eighth of it before the last chunk and half for the last; at "
       "most 4096",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 4096, &p->gemmrs_reduce_blocks); },
       [](const Params& p) { return std::to_string(p.gemmrs_reduce_blocks); }},
      {"XCCL_GEMMRS_CHUNKS",
       "gemm_rs fused mode: chunks per owner's block where the op pins none (fewer for blocks of "
       "fewer rows); 0 chooses 1 where ranks share a GPU, else 4 (fewer for short blocks); every "
       "rank must set the same; at most 8",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 8, &p->gemmrs_chunks); },
       [](const Params& p) { return std::to_string(p.gemmrs_chunks); }},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES",
       "all_reduce through the receive region (the host; GPU ranks whose buffers the read engine "
       "cannot reach): calls up to this many bytes go in one trip (every rank's input to every "
       "peer), larger ones as reduce_scatter then all_gather; at most 64 MiB; the same on every "
       "rank",
       [](const char* t, Params* p) {
         return ParseInt64(t, 0, int64_t(64) << 20, &p->allreduce_oneshot_bytes);
       },
       [](const Params& p) { return std::to_string(p.allreduce_oneshot_bytes); }},
      {"XCCL_AGGEMM_COMPUTE_STREAMS",
       "ag_gemm fused mode: streams its bands' GEMMs take in turn (1: the caller's; 2: also a "
       "side stream forked from and joined into it, with its own plugin context; 0: the "
       "platform's choice, 2 on GPUs and 1 on the host)",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 2, &p->aggemm_compute_streams); },
       [](const Params& p) { return std::to_string(p.aggemm_compute_streams); }},
      {"XCCL_AGGEMM_SOURCES_PER_GEMM",
       "ag_gemm fused mode with one band per source: how many peers' rows one GEMM call takes "
       "(1, or 2: two sources adjacent in the window); 0: 2 where one source's rows make fewer "
       "than 128 output tiles of 256 x 256, else 1",
       [](const char* t, Params* p) { return ParseInt64(t, 0, 2, &p->aggemm_sources_per_gemm); },
       [](const Params& p) { return std::to_string(p.aggemm_sources_per_gemm); }},
      {"XCCL_GEMM_PLUGIN",
       "ag_gemm's GEMM plugin when the caller names none: a name (loads "
       "libxccl-gemm-<name>.so) or a path",
       [](const char* t, Params* p) {
         p->gemm_plugin = t;
         return true;
       },
       [](const Params& p) { return p.gemm_plugin; }},
  };
  return specs;
}

}  // namespace

Params ParseParams(const std::function<const char*(const char*)>& lookup, std::string* errors) {
  Params params;
  for (const ParamSpec& spec : Specs()) {
    const char* text = lookup(spec.name);
    if (text == nullptr) continue;
    Params candidate = params;
    if (spec.parse(text, &candidate)) {
      params = candidate;
    } else if (errors != nullptr) {
      *errors += std::string(spec.name) + "='" + text + "' is malformed; using the default\n";
    }
  }
  return params;
}

namespace {
Params& ProcessParams() {
  static Params params = ParseParams([](const char* n) { return getenv(n); });
  return params;
}
}  // namespace

const Params& GetParams() { return ProcessParams(); }

void SetParamsForTesting(const Params& params) { ProcessParams() = params; }

void LogParamsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Params& params = GetParams();
    std::string errors;
    ParseParams([](const char* n) { return getenv(n); }, &errors);
    if (!errors.empty()) XCCL_WARN(kLogEnv, "%s", errors.c_str());
    for (const ParamSpec& spec : Specs()) {
      XCCL_INFO(kLogEnv, "%s=%s%s (%s)", spec.name, spec.show(params).c_str(),
                getenv(spec.name) ? "" : " [default]", spec.help);
    }
  });
}

}  // namespace xccl
