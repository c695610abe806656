#include "base/datatype.h"

namespace xccl {

size_t DataTypeSize(int datatype) {
  switch (datatype) {
    case xcclInt8:
    case xcclUint8:
    case xcclFloat8e4m3:
    case xcclFloat8e5m2:
      return 1;
    case xcclFloat16:
    case xcclBfloat16:
      return 2;
    case xcclInt32:
    case xcclUint32:
    case xcclFloat32:
      return 4;
    case xcclInt64:
    case xcclUint64:
    case xcclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* DataTypeName(int datatype) {
  static const char* kNames[xcclNumTypes] = {"int8",   "uint8",    "int32",   "uint32",
                                             "int64",  "uint64",   "half",    "float",
                                             "double", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return datatype >= 0 && datatype < xcclNumTypes ? kNames[datatype] : "invalid";
}

}  // namespace xccl
