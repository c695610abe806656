// ag_gemm create's agreement: every rank's request (shape, types, scales, mode, chunks, and
// whether its local steps succeeded) gathered and compared, so that all ranks fail together.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "base/error.h"
#include "fused/ag_gemm_op.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {

namespace {

// What one rank asked create for, as the ranks compare it.
struct CreateRequest {
  int32_t ok;
  int32_t in_type, out_type, mode, chunks;
  int32_t scales;
  int64_t n, k, m_max;
};

CreateRequest RequestOf(const AgGemmOp::Shape& shape, bool ok) {
  CreateRequest request;
  memset(&request, 0, sizeof(request));
  request.ok = ok ? 1 : 0;
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
  const int rank = comm->rank();
  std::vector<CreateRequest> requests(comm->nranks());
  requests[rank] = RequestOf(shape, mine == xcclSuccess);
  XCCL_TRY(comm->bootstrap()->AllGather(requests.data(), sizeof(CreateRequest)));
  if (mine != xcclSuccess) return xcclSuccess;  // this rank's own failure speaks for itself
  for (int r = 0; r < comm->nranks(); ++r) {
    if (!requests[r].ok)
      return Fail(xcclRemoteError, "ag_gemm: rank %d could not create its part of the op", r);
  }
  for (int r = 0; r < comm->nranks(); ++r) {
    if (!SameOp(requests[r], requests[rank]))
      return Fail(xcclInvalidUsage,
                  "ag_gemm: the ranks disagree on the op: rank %d asked for %s, this rank (%d) "
                  "for %s; every rank must pass the same shape, types, scales, mode and chunks",
                  r, Describe(requests[r]).c_str(), rank, Describe(requests[rank]).c_str());
  }
  return xcclSuccess;
}

}  // namespace xccl
