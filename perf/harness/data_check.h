// The data a checked call moves, and the comparison after it. Element i of rank r's block under
// a seed is a pure function of (seed, r, i), so every rank can recompute every other rank's
// block without any exchange. Values are exact bit patterns, finite for the floating types
// (fp16, bf16, fp8 included), so a copy that routes them through arithmetic or NaN
// canonicalisation still has to reproduce every bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xccl.h"

namespace xccl_perf {

// Writes the `count` elements rank `rank` contributes under `seed` to host memory `dst`.
void FillExpected(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed);

// Writes the bitwise complement of FillExpected's values: an element the collective failed to
// write differs from the expected value in every bit, so it can never pass by coincidence.
void FillPoison(void* dst, xcclDataType_t type, size_t count, int rank, uint64_t seed);

// Number of the `count` elements at `got` that differ (bitwise) from FillExpected's values.
size_t CountWrong(const void* got, xcclDataType_t type, size_t count, int rank, uint64_t seed);

}  // namespace xccl_perf
