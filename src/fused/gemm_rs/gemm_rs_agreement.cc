// What gemm_rs's create agrees on: fused/gemm_op_request.h's request (shape, types, scales,
// mode and chunks).
#include "fused/gemm_op_request.h"
#include "fused/gemm_rs/gemm_rs_op.h"

namespace xccl {

xcclResult_t GemmRsOp::AgreeAcrossRanks(Communicator* comm, const Shape& shape, xcclResult_t mine) {
  static const char* const kModes[2] = {"fused", "split"};  // xcclGemmRsFused, xcclGemmRsSplit
  return AgreeOnGemmOp(
      comm, "gemm_rs",
      MakeGemmOpRequest(shape.n, shape.k, shape.m_max, shape.in_type, shape.out_type, shape.scales,
                        shape.mode, shape.pinned_chunks),
      mine, kModes);
}

}  // namespace xccl
