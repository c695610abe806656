// What a GEMM fused op's create agrees on across ranks (create_agreement.h), the same fields for
// every such op (ag_gemm, gemm_rs): shape, types, scales, mode and chunks; and the checks of those
// fields that do not depend on the op.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl {

// Plain bytes, compared whole: every field set, the padding zero.
struct GemmOpRequest {
  int32_t in_type, out_type, mode, chunks, scales, pad;
  int64_t n, k, m_max;
};

GemmOpRequest MakeGemmOpRequest(int64_t n, int64_t k, int64_t m_max, xcclDataType_t in_type,
                                xcclDataType_t out_type, xcclGemmScaleMode_t scales, int mode,
                                int chunks);
bool SameGemmOp(const GemmOpRequest& a, const GemmOpRequest& b);
// "n=... k=... m_max=... bf16 -> bf16, no scales, <mode_names[mode]>, chunks c".
std::string DescribeGemmOp(const GemmOpRequest& r, const char* const mode_names[2]);

// The create agreement of a GEMM fused op `op` ("ag_gemm", "gemm_rs") whose modes 0 and 1 are
// named `mode_names` (AgreeOnCreate with this request).
xcclResult_t AgreeOnGemmOp(Communicator* comm, const char* op, const GemmOpRequest& request,
                           xcclResult_t mine, const char* const mode_names[2]);

// `op`: the name the messages start with. n a positive multiple of 16, k and m_max at least 1;
// bf16/fp16/fp8 e4m3 in, bf16/fp16 out; fp8 with ptpc or block scales and the others with none.
xcclResult_t CheckGemmShape(const char* op, int64_t n, int64_t k, int64_t m_max,
                            xcclDataType_t in_type, xcclDataType_t out_type,
                            xcclGemmScaleMode_t scales);

}  // namespace xccl
