// xccl parameters for the ranks of a test run, shared by the host (mp) and gpu suites: each
// returns a before_init (RunOptions) that changes one parameter in every forked process, or
// once in this process for thread ranks; RestoreParams goes back to the environment's values
// (thread ranks share this process's parameters with later tests).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mp/rank_runner.h"

namespace xccl_test {

std::function<void()> WithTimeoutMs(int64_t timeout_ms);
std::function<void()> WithEpochBase(uint32_t epoch_base);
std::function<void()> WithGpuQueues(int64_t queues);
std::function<void()> WithZeroCopy(int64_t zero_copy);         // XCCL_ZERO_COPY
std::function<void()> WithComputeStreams(int64_t streams);     // XCCL_AGGEMM_COMPUTE_STREAMS
std::function<void()> WithSourcesPerGemm(int64_t sources);     // XCCL_AGGEMM_SOURCES_PER_GEMM
std::function<void()> WithGemmRsReduceBlocks(int64_t blocks);  // XCCL_GEMMRS_REDUCE_BLOCKS
std::function<void()> WithGemmRsChunks(int64_t chunks);        // XCCL_GEMMRS_CHUNKS
// XCCL_FAKE_NODES: ranks per node in rank order ("2,1,3"; "" keeps one node).
std::function<void()> WithFakeNodes(const std::string& spec);
std::function<void()> WithNet(const std::string& backend);  // XCCL_NET
std::function<void()> WithSocketsPerLink(int64_t sockets);  // XCCL_SOCKET_NSOCKS
std::function<void()> WithNetChunkBytes(int64_t bytes);     // XCCL_NET_CHUNK_BYTES
// Runs `first` then `second` (either may be empty).
std::function<void()> Both(std::function<void()> first, std::function<void()> second);
void RestoreParams();

// A process run in which rank `victim` kills itself: the others must report it (60 s deadline,
// so that they find the death by its liveness, not by a timeout), and destroy is the body's.
RunOptions KilledRankOptions(int victim);

}  // namespace xccl_test
