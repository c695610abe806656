// Names of xcclRedOp_t as the perf binaries print and parse them: nccl-tests' redop column and
// its -o values.
#pragma once

#include <vector>

#include "xccl.h"

namespace xccl_perf {

// "sum", "prod", "max", "min", "avg"; "unknown" outside the enum.
const char* OpName(xcclRedOp_t op);

// One name or "all" (every op, in nccl-tests' order: sum prod max min avg; nccl-tests' "mulsum",
// a NCCL premul-sum op, has no xccl counterpart); false if unknown.
bool ParseOps(const char* text, std::vector<xcclRedOp_t>* ops);

}  // namespace xccl_perf
