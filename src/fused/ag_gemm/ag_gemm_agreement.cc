// What ag_gemm's create agrees on (fused/create_agreement.h): shape, types, scales, mode and
// chunks.
#include <cstdio>
#include <cstring>
#include <string>

#include "base/datatype.h"
#include "base/error.h"
#include "fused/ag_gemm/ag_gemm_op.h"
#include "fused/create_agreement.h"

namespace xccl {

namespace {

// What one rank asked create for, as the ranks compare it.
struct CreateRequest {
  int32_t in_type, out_type, mode, chunks;
  int32_t scales;
  int64_t n, k, m_max;
};

CreateRequest RequestOf(const AgGemmOp::Shape& shape) {
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
           r.mode == xcclAgGemmFused ? "fused" : "split", r.chunks);
  return text;
}

bool SameOp(const CreateRequest& a, const CreateRequest& b) {
  return a.in_type == b.in_type && a.out_type == b.out_type && a.mode == b.mode &&
         a.chunks == b.chunks && a.scales == b.scales && a.n == b.n && a.k == b.k &&
         a.m_max == b.m_max;
}

}  // namespace

xcclResult_t AgGemmOp::AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine) {
  return AgreeOnCreate(comm, "ag_gemm", RequestOf(shape), mine, SameOp, Describe,
                       "shape, types, scales, mode and chunks");
}

}  // namespace xccl
