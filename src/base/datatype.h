// Sizes of the data types; all_gather moves bytes, so the type only fixes the element size.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// 0 for a value outside xcclDataType_t.
size_t DataTypeSize(int datatype);
const char* DataTypeName(int datatype);

}  // namespace xccl
