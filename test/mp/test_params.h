// xccl parameters for the ranks of a test run, shared by the host (mp) and gpu suites: each
// returns a before_init (RunOptions) that changes one parameter in every forked process, or
// once in this process for thread ranks; RestoreParams goes back to the environment's values
// (thread ranks share this process's parameters with later tests).
#pragma once

#include <cstdint>
#include <functional>

namespace xccl_test {

std::function<void()> WithTimeoutMs(int64_t timeout_ms);
std::function<void()> WithEpochBase(uint32_t epoch_base);
void RestoreParams();

}  // namespace xccl_test
