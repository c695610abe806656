// The most arrays one reduction combines, for host code and kernels alike (no GPU header needed),
// and the grid of the owner-step kernels (reduce_kernel.cu, grouped_reduce_kernel.cu).
#pragma once

#include <cstddef>

namespace xccl {

// The ranks of an 8-GPU node, four times over.
constexpr int kMaxReduceInputs = 32;

// Threads per block of the owner-step kernels; they stride over what a grid of at most
// kStepMaxBlocks does not cover.
constexpr int kStepThreads = 256;
constexpr unsigned kStepMaxBlocks = 1024;

inline unsigned StepBlocks(size_t count) {
  const size_t wanted = (count + kStepThreads - 1) / kStepThreads;
  return wanted < kStepMaxBlocks ? static_cast<unsigned>(wanted) : kStepMaxBlocks;
}

}  // namespace xccl
