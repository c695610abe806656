// Data types and result codes: numbered and sized as NCCL's, so values cast across.
#include "base/datatype.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "xccl.h"

namespace xccl {
namespace {

// NCCL's ncclDataType_t, as documented (nccl.h is not on the include path without CUDA).
struct NcclType {
  xcclDataType_t xccl;
  int nccl_value;
  size_t nccl_size;
  const char* nccl_name;
};

const NcclType kNcclTypes[] = {
    {xcclInt8, 0, 1, "ncclInt8"},
    {xcclUint8, 1, 1, "ncclUint8"},
    {xcclInt32, 2, 4, "ncclInt32"},
    {xcclUint32, 3, 4, "ncclUint32"},
    {xcclInt64, 4, 8, "ncclInt64"},
    {xcclUint64, 5, 8, "ncclUint64"},
    {xcclFloat16, 6, 2, "ncclFloat16"},
    {xcclFloat32, 7, 4, "ncclFloat32"},
    {xcclFloat64, 8, 8, "ncclFloat64"},
    {xcclBfloat16, 9, 2, "ncclBfloat16"},
    {xcclFloat8e4m3, 10, 1, "ncclFloat8e4m3"},
    {xcclFloat8e5m2, 11, 1, "ncclFloat8e5m2"},
};

TEST(DataTypeTest, NumberedAsNccl) {
  for (const NcclType& t : kNcclTypes)
    EXPECT_EQ(static_cast<int>(t.xccl), t.nccl_value) << t.nccl_name;
  // The aliases NCCL also has.
  EXPECT_EQ(xcclChar, 0);
  EXPECT_EQ(xcclInt, 2);
  EXPECT_EQ(xcclHalf, 6);
  EXPECT_EQ(xcclFloat, 7);
  EXPECT_EQ(xcclDouble, 8);
  EXPECT_EQ(xcclNumTypes, 12);
}

TEST(DataTypeTest, SizedAsNccl) {
  for (const NcclType& t : kNcclTypes) EXPECT_EQ(DataTypeSize(t.xccl), t.nccl_size) << t.nccl_name;
  EXPECT_EQ(DataTypeSize(xcclChar), 1u);
  EXPECT_EQ(DataTypeSize(xcclInt), 4u);
  EXPECT_EQ(DataTypeSize(xcclHalf), 2u);
  EXPECT_EQ(DataTypeSize(xcclFloat), 4u);
  EXPECT_EQ(DataTypeSize(xcclDouble), 8u);
}

TEST(DataTypeTest, EveryValidTypeHasASize) {
  for (int t = 0; t < xcclNumTypes; ++t) EXPECT_GT(DataTypeSize(t), 0u) << t;
}

TEST(DataTypeTest, InvalidTypesHaveSizeZero) {
  for (int t : {-1, 12, 13, 1000, -1000, static_cast<int>(xcclNumTypes), INT32_MIN, INT32_MAX})
    EXPECT_EQ(DataTypeSize(t), 0u) << t;
}

TEST(DataTypeTest, NamesDistinctAndInvalidNamed) {
  std::set<std::string> names;
  for (int t = 0; t < xcclNumTypes; ++t) {
    const char* name = DataTypeName(t);
    ASSERT_NE(name, nullptr) << t;
    EXPECT_STRNE(name, "") << t;
    EXPECT_STRNE(name, "invalid") << t;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(xcclNumTypes));
  for (int t : {-1, 12, 1000, INT32_MIN}) EXPECT_STREQ(DataTypeName(t), "invalid") << t;
}

// NCCL's ncclResult_t for 0..7, and xccl's own timeout as 8.
TEST(ResultCodeTest, NumberedAsNccl) {
  EXPECT_EQ(xcclSuccess, 0);               // ncclSuccess
  EXPECT_EQ(xcclUnhandledDeviceError, 1);  // ncclUnhandledCudaError
  EXPECT_EQ(xcclSystemError, 2);           // ncclSystemError
  EXPECT_EQ(xcclInternalError, 3);         // ncclInternalError
  EXPECT_EQ(xcclInvalidArgument, 4);       // ncclInvalidArgument
  EXPECT_EQ(xcclInvalidUsage, 5);          // ncclInvalidUsage
  EXPECT_EQ(xcclRemoteError, 6);           // ncclRemoteError
  EXPECT_EQ(xcclInProgress, 7);            // ncclInProgress
  EXPECT_EQ(xcclTimeout, 8);
  EXPECT_EQ(xcclNumResults, 9);
}

TEST(ResultCodeTest, UniqueIdSizeAsNccl) {
  EXPECT_EQ(sizeof(xcclUniqueId), 128u);  // NCCL_UNIQUE_ID_BYTES
}

}  // namespace
}  // namespace xccl
