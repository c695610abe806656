#include "mp/test_params.h"

#include <cstdlib>

#include "base/params.h"

namespace xccl_test {

namespace {

std::function<void()> WithChange(const std::function<void(xccl::Params*)>& change) {
  return [change] {
    xccl::Params params = xccl::GetParams();
    change(&params);
    xccl::SetParamsForTesting(params);
  };
}

}  // namespace

std::function<void()> WithTimeoutMs(int64_t timeout_ms) {
  return WithChange([timeout_ms](xccl::Params* p) { p->timeout_ms = timeout_ms; });
}

std::function<void()> WithEpochBase(uint32_t epoch_base) {
  return WithChange([epoch_base](xccl::Params* p) { p->epoch_base = epoch_base; });
}

std::function<void()> WithNetChunkBytes(int64_t bytes) {
  return WithChange([bytes](xccl::Params* p) { p->net_chunk_bytes = bytes; });
}

std::function<void()> WithGpuQueues(int64_t queues) {
  return WithChange([queues](xccl::Params* p) { p->gpu_queues = queues; });
}

std::function<void()> WithZeroCopy(int64_t zero_copy) {
  return WithChange([zero_copy](xccl::Params* p) { p->zero_copy = zero_copy; });
}

std::function<void()> WithComputeStreams(int64_t streams) {
  return WithChange([streams](xccl::Params* p) { p->aggemm_compute_streams = streams; });
}

std::function<void()> WithGemmRsReduceBlocks(int64_t blocks) {
  return WithChange([blocks](xccl::Params* p) { p->gemmrs_reduce_blocks = blocks; });
}

std::function<void()> WithGemmRsChunks(int64_t chunks) {
  return WithChange([chunks](xccl::Params* p) { p->gemmrs_chunks = chunks; });
}

std::function<void()> WithSourcesPerGemm(int64_t sources) {
  return WithChange([sources](xccl::Params* p) { p->aggemm_sources_per_gemm = sources; });
}

RunOptions KilledRankOptions(int victim) {
  RunOptions options;
  options.may_die = {victim};
  options.skip_destroy = true;
  options.timeout_s = 90;
  options.before_init = WithTimeoutMs(60000);
  return options;
}

std::function<void()> WithFakeNodes(const std::string& spec) {
  return WithChange([spec](xccl::Params* p) { p->fake_nodes = spec; });
}

std::function<void()> WithNet(const std::string& backend) {
  return WithChange([backend](xccl::Params* p) { p->net = backend; });
}

std::function<void()> WithSocketsPerLink(int64_t sockets) {
  return WithChange([sockets](xccl::Params* p) { p->socket_nsocks = sockets; });
}

std::function<void()> Both(std::function<void()> first, std::function<void()> second) {
  return [first, second] {
    if (first) first();
    if (second) second();
  };
}

void RestoreParams() {
  xccl::SetParamsForTesting(xccl::ParseParams([](const char* n) { return getenv(n); }));
}

}  // namespace xccl_test
