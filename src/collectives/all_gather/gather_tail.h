// A second part of every rank's block, gathered in the same call as the first (ag_gemm's scales
// after its rows; docs/ARCHITECTURE.md, "The life of one all_gather call"): `bytes` per rank
// from `send`, rank r's landing at `recv` + r * bytes. No tail where `bytes` is 0.
#pragma once

#include <cstddef>

namespace xccl {

struct GatherTail {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t bytes = 0;
};

}  // namespace xccl
