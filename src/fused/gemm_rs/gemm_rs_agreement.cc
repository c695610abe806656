// What gemm_rs's create agrees on (fused/create_agreement.h): shape, types, scales, mode and
// chunks.
#include <cstdio>
#include <cstring>
#include <string>

#include "base/datatype.h"
#include "fused/create_agreement.h"
#include "fused/gemm_rs/gemm_rs_op.h"

namespace xccl {

namespace {

struct CreateRequest {
  int32_t in_type, out_type, mode, chunks, scales, pad;
  int64_t n, k, m_max;
};

CreateRequest RequestOf(const GemmRsOp::Shape& shape) {
  CreateRequest request;
  memset(&request, 0, sizeof(request));
  request.in_type = shape.in_type;
  request.out_type = shape.out_type;
  request.mode = shape.mode;
  request.chunks = shape.pinned_chunks;
  request.scales = shape.scales;
  request.n = shape.n;
  request.k = shape.k;
  request.m_max = shape.m_max;
  return request;
}

std::string Describe(const CreateRequest& r) {
  char text[224];
  snprintf(text, sizeof(text), "n=%lld k=%lld m_max=%lld %s -> %s, %s scales, %s, chunks %d",
           static_cast<long long>(r.n), static_cast<long long>(r.k),
           static_cast<long long>(r.m_max), DataTypeName(static_cast<xcclDataType_t>(r.in_type)),
           DataTypeName(static_cast<xcclDataType_t>(r.out_type)),
           r.scales == xcclGemmScaleBlock128 ? "block"
           : r.scales == xcclGemmScalePtpc   ? "ptpc"
                                             : "no",
           r.mode == xcclGemmRsFused ? "fused" : "split", r.chunks);
  return text;
}

bool SameOp(const CreateRequest& a, const CreateRequest& b) {
  return memcmp(&a, &b, sizeof(a)) == 0;
}

}  // namespace

xcclResult_t GemmRsOp::AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine) {
  return AgreeOnCreate(comm, "gemm_rs", RequestOf(shape), mine, SameOp, Describe,
                       "shape, types, scales, mode and chunks");
}

}  // namespace xccl
