#include "comm/shared_settings.h"

#include <vector>

#include "base/error.h"
#include "base/fnv1a.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {

namespace {

struct Setting {
  const char* parameter;
  int64_t value;
};

// In a fixed order, the same on every rank. XCCL_ALLGATHER_ALGO compares as 1 for dma, else 0
// (the empty default and "kernel" choose the same engine).
std::vector<Setting> SharedSettingsOf(const Params& params) {
  return {
      {"XCCL_EPOCH_BASE", static_cast<int64_t>(params.epoch_base)},
      {"XCCL_EAGER_BYTES", params.eager_bytes},
      {"XCCL_WINDOW_BYTES", params.window_bytes},
      {"XCCL_ALLGATHER_LL_BYTES", params.ll_bytes},
      {"XCCL_ALLGATHER_LANES (lanes per peer)", params.allgather_lanes},
      {"XCCL_ALLGATHER_CHUNK_BYTES (ring slot bytes)", params.allgather_chunk_bytes},
      {"XCCL_ALLGATHER_ALGO (1: dma)", params.allgather_algo == "dma" ? 1 : 0},
      {"XCCL_ALLREDUCE_ONESHOT_BYTES", params.allreduce_oneshot_bytes},
      {"XCCL_GEMMRS_CHUNKS", params.gemmrs_chunks},
      {"XCCL_FAKE_NODES (its hash)", static_cast<int64_t>(Fnv1a(params.fake_nodes))},
      {"XCCL_SOCKET_NSOCKS", params.socket_nsocks},
      {"XCCL_NET_CHUNK_BYTES", params.net_chunk_bytes},
      {"XCCL_NET (0 auto, 1 socket, 2 ib)", params.net == "socket" ? 1
                                            : params.net == "ib"   ? 2
                                                                   : 0},
  };
}

}  // namespace

xcclResult_t RequireSharedSettings(Bootstrap* bootstrap, const Params& params) {
  const std::vector<Setting> mine = SharedSettingsOf(params);
  const size_t count = mine.size();
  const int rank = bootstrap->rank(), nranks = bootstrap->nranks();
  std::vector<int64_t> all(count * nranks, 0);
  for (size_t i = 0; i < count; ++i) all[rank * count + i] = mine[i].value;
  XCCL_TRY(bootstrap->AllGather(all.data(), count * sizeof(int64_t)));
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) {
      const int64_t theirs = all[r * count + i];
      if (theirs != mine[i].value)
        return Fail(xcclInvalidUsage,
                    "rank %d has %s = %lld, this rank (%d) %lld: it must be the same on every rank",
                    r, mine[i].parameter, static_cast<long long>(theirs), rank,
                    static_cast<long long>(mine[i].value));
    }
  }
  return xcclSuccess;
}

}  // namespace xccl
