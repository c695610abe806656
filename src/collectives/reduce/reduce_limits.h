// The most arrays one reduction combines, for host code and kernels alike (no GPU header needed).
#pragma once

namespace xccl {

// The ranks of an 8-GPU node, four times over.
constexpr int kMaxReduceInputs = 32;

}  // namespace xccl
