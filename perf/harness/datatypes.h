// Names and element sizes of xccl's data types, as the perf binaries print and parse them.
#pragma once

#include <cstddef>
#include <vector>

#include "xccl.h"

namespace xccl_perf {

// Size in bytes of one element; 0 for a value outside xcclDataType_t.
size_t TypeSize(xcclDataType_t type);

// The name printed in the "type" column (nccl-tests' names; fp8 as fp8e4m3 / fp8e5m2).
const char* TypeName(xcclDataType_t type);

// Every type, in xcclDataType_t order: what "-d all" runs.
std::vector<xcclDataType_t> AllTypes();

// One name ("float", "bf16", "fp8e4m3", NCCL aliases too) or "all"; false if unknown.
bool ParseTypes(const char* text, std::vector<xcclDataType_t>* types);

}  // namespace xccl_perf
