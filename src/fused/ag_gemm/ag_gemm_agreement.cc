// What ag_gemm's create agrees on: fused/gemm_op_request.h's request (shape, types, scales,
// mode and chunks).
#include "fused/ag_gemm/ag_gemm_op.h"
#include "fused/gemm_op_request.h"

namespace xccl {

xcclResult_t AgGemmOp::AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine) {
  static const char* const kModes[2] = {"fused", "split"};  // xcclAgGemmFused, xcclAgGemmSplit
  return AgreeOnGemmOp(
      comm, "ag_gemm",
      MakeGemmOpRequest(shape.n, shape.k, shape.m_max, shape.in_type, shape.out_type, shape.scales,
                        shape.mode, shape.pinned_chunks),
      mine, kModes);
}

}  // namespace xccl
