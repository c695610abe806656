// The one switch over xcclDataType_t of the reduction code, for host code and kernels' launches
// alike (no GPU header): f(DataTypeTag<datatype>{}), a template instantiation per type.
#pragma once

#include <type_traits>

#include "xccl.h"

namespace xccl {

template <int kType>
using DataTypeTag = std::integral_constant<int, kType>;

// f(DataTypeTag<datatype>{}), or `otherwise` for a value outside the enum.
template <typename R, typename F>
R SwitchDataType(int datatype, R otherwise, F&& f) {
  switch (datatype) {
    case xcclInt8:
      return f(DataTypeTag<xcclInt8>{});
    case xcclUint8:
      return f(DataTypeTag<xcclUint8>{});
    case xcclInt32:
      return f(DataTypeTag<xcclInt32>{});
    case xcclUint32:
      return f(DataTypeTag<xcclUint32>{});
    case xcclInt64:
      return f(DataTypeTag<xcclInt64>{});
    case xcclUint64:
      return f(DataTypeTag<xcclUint64>{});
    case xcclFloat16:
      return f(DataTypeTag<xcclFloat16>{});
    case xcclFloat32:
      return f(DataTypeTag<xcclFloat32>{});
    case xcclFloat64:
      return f(DataTypeTag<xcclFloat64>{});
    case xcclBfloat16:
      return f(DataTypeTag<xcclBfloat16>{});
    case xcclFloat8e4m3:
      return f(DataTypeTag<xcclFloat8e4m3>{});
    case xcclFloat8e5m2:
      return f(DataTypeTag<xcclFloat8e5m2>{});
    default:
      return otherwise;
  }
}

}  // namespace xccl
