// The values of xccl's floating types as doubles, for checking reductions against a reference
// computed in double: an element's value, the bits of a value the type holds exactly, and the two
// values of the type around a real number (the results that one rounding of it can give, under
// the overflow rules of include/xccl.h: fp16 and bf16 overflow to inf, fp8 saturates).
#pragma once

#include <cstddef>
#include <cstdint>

#include "xccl.h"

namespace xccl_perf {

// Whether `type` is one of the six floating types (fp16, bf16, fp32, fp64, fp8 e4m3 and e5m2).
bool IsFloatType(xcclDataType_t type);

// Element `index` of `data`, an array of floating `type`, as a double (exact; NaN for any NaN).
double FloatValue(xcclDataType_t type, const void* data, size_t index);

// The bits (in the low TypeSize(type) bytes) of `value`, which `type` must hold exactly; 0 and -0
// both give +0's bits. Aborts otherwise: a caller asking for it has a bug.
uint64_t ExactBits(xcclDataType_t type, double value);

// A quiet NaN of `type`.
uint64_t NanBits(xcclDataType_t type);

// For a real number known to lie in [lo, hi] (lo == hi: exactly that number; otherwise lo and hi
// adjacent doubles with the number strictly between them): *down, the largest value of `type` at
// most lo, and *up, the smallest at least hi. A result rounded once from that number, in either
// direction, lies in [*down, *up]. Beyond the largest finite value: +-inf for fp16, bf16, fp32
// and fp64, the largest finite value for fp8 (saturation).
void RoundingBracket(xcclDataType_t type, double lo, double hi, double* down, double* up);

}  // namespace xccl_perf
