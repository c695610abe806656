#include "harness/redops.h"

#include <cstring>

namespace xccl_perf {
namespace {

struct OpEntry {
  xcclRedOp_t op;
  const char* name;
};

constexpr OpEntry kOps[] = {
    {xcclSum, "sum"}, {xcclProd, "prod"}, {xcclMax, "max"}, {xcclMin, "min"}, {xcclAvg, "avg"},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == xcclNumOps, "one entry per op");

}  // namespace

const char* OpName(xcclRedOp_t op) {
  for (const OpEntry& entry : kOps) {
    if (entry.op == op) return entry.name;
  }
  return "unknown";
}

bool ParseOps(const char* text, std::vector<xcclRedOp_t>* ops) {
  if (strcmp(text, "all") == 0) {
    ops->clear();
    for (const OpEntry& entry : kOps) ops->push_back(entry.op);
    return true;
  }
  for (const OpEntry& entry : kOps) {
    if (strcmp(text, entry.name) == 0) {
      *ops = {entry.op};
      return true;
    }
  }
  return false;
}

}  // namespace xccl_perf
