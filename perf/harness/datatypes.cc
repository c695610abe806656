#include "harness/datatypes.h"

#include <strings.h>

namespace xccl_perf {
namespace {

struct TypeEntry {
  xcclDataType_t type;
  size_t size;
  const char* name;
};

constexpr TypeEntry kTypes[] = {
    {xcclInt8, 1, "int8"},         {xcclUint8, 1, "uint8"},        {xcclInt32, 4, "int32"},
    {xcclUint32, 4, "uint32"},     {xcclInt64, 8, "int64"},        {xcclUint64, 8, "uint64"},
    {xcclFloat16, 2, "half"},      {xcclFloat32, 4, "float"},      {xcclFloat64, 8, "double"},
    {xcclBfloat16, 2, "bfloat16"}, {xcclFloat8e4m3, 1, "fp8e4m3"}, {xcclFloat8e5m2, 1, "fp8e5m2"},
};
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == xcclNumTypes, "one entry per type");

// Other spellings that scripts written for nccl-tests or by hand are likely to use.
struct Alias {
  const char* name;
  xcclDataType_t type;
};
constexpr Alias kAliases[] = {
    {"char", xcclInt8},         {"int", xcclInt32},       {"fp16", xcclFloat16},
    {"float16", xcclFloat16},   {"fp32", xcclFloat32},    {"float32", xcclFloat32},
    {"fp64", xcclFloat64},      {"float64", xcclFloat64}, {"bf16", xcclBfloat16},
    {"f8e4m3", xcclFloat8e4m3}, {"e4m3", xcclFloat8e4m3}, {"f8e5m2", xcclFloat8e5m2},
    {"e5m2", xcclFloat8e5m2},
};

const TypeEntry* Find(xcclDataType_t type) {
  for (const TypeEntry& entry : kTypes) {
    if (entry.type == type) return &entry;
  }
  return nullptr;
}

}  // namespace

size_t TypeSize(xcclDataType_t type) {
  const TypeEntry* entry = Find(type);
  return entry ? entry->size : 0;
}

const char* TypeName(xcclDataType_t type) {
  const TypeEntry* entry = Find(type);
  return entry ? entry->name : "unknown";
}

std::vector<xcclDataType_t> AllTypes() {
  std::vector<xcclDataType_t> types;
  for (const TypeEntry& entry : kTypes) types.push_back(entry.type);
  return types;
}

bool ParseTypes(const char* text, std::vector<xcclDataType_t>* types) {
  if (strcasecmp(text, "all") == 0) {
    *types = AllTypes();
    return true;
  }
  for (const TypeEntry& entry : kTypes) {
    if (strcasecmp(text, entry.name) == 0) {
      *types = {entry.type};
      return true;
    }
  }
  for (const Alias& alias : kAliases) {
    if (strcasecmp(text, alias.name) == 0) {
      *types = {alias.type};
      return true;
    }
  }
  return false;
}

}  // namespace xccl_perf
