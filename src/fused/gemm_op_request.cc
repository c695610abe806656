#include "fused/gemm_op_request.h"

#include <cstdio>
#include <cstring>

#include "base/datatype.h"
#include "base/error.h"
#include "fused/create_agreement.h"

namespace xccl {

namespace {

bool IsInputType(xcclDataType_t t) {
  return t == xcclBfloat16 || t == xcclFloat16 || t == xcclFloat8e4m3;
}
bool IsOutputType(xcclDataType_t t) { return t == xcclBfloat16 || t == xcclFloat16; }

}  // namespace

GemmOpRequest MakeGemmOpRequest(int64_t n, int64_t k, int64_t m_max, xcclDataType_t in_type,
                                xcclDataType_t out_type, xcclGemmScaleMode_t scales, int mode,
                                int chunks) {
  GemmOpRequest request;
  memset(&request, 0, sizeof(request));
  request.in_type = in_type;
  request.out_type = out_type;
  request.mode = mode;
  request.chunks = chunks;
  request.scales = scales;
  request.n = n;
  request.k = k;
  request.m_max = m_max;
  return request;
}

bool SameGemmOp(const GemmOpRequest& a, const GemmOpRequest& b) {
  return memcmp(&a, &b, sizeof(a)) == 0;
}

std::string DescribeGemmOp(const GemmOpRequest& r, const char* const mode_names[2]) {
  char text[224];
  snprintf(text, sizeof(text), "n=%lld k=%lld m_max=%lld %s -> %s, %s scales, %s, chunks %d",
           static_cast<long long>(r.n), static_cast<long long>(r.k),
           static_cast<long long>(r.m_max), DataTypeName(static_cast<xcclDataType_t>(r.in_type)),
           DataTypeName(static_cast<xcclDataType_t>(r.out_type)),
           r.scales == xcclGemmScaleBlock128 ? "block"
           : r.scales == xcclGemmScalePtpc   ? "ptpc"
                                             : "no",
           r.mode == 0 || r.mode == 1 ? mode_names[r.mode] : "mode ?", r.chunks);
  return text;
}

xcclResult_t AgreeOnGemmOp(Communicator* comm, const char* op, const GemmOpRequest& request,
                           xcclResult_t mine, const char* const mode_names[2]) {
  return AgreeOnCreate(
      comm, op, request, mine, SameGemmOp,
      [mode_names](const GemmOpRequest& r) { return DescribeGemmOp(r, mode_names); },
      "shape, types, scales, mode and chunks");
}

xcclResult_t CheckGemmShape(const char* op, int64_t n, int64_t k, int64_t m_max,
                            xcclDataType_t in_type, xcclDataType_t out_type,
                            xcclGemmScaleMode_t scales) {
  if (n <= 0 || n % 16 != 0)
    return Fail(xcclInvalidArgument, "%s: n = %lld must be a positive multiple of 16", op,
                static_cast<long long>(n));
  if (k < 1 || m_max < 1)
    return Fail(xcclInvalidArgument, "%s: k = %lld and m_max = %lld must be at least 1", op,
                static_cast<long long>(k), static_cast<long long>(m_max));
  if (!IsInputType(in_type) || !IsOutputType(out_type))
    return Fail(xcclInvalidArgument,
                "%s: inputs must be bf16, fp16 or fp8 e4m3 and the output bf16 or fp16, not %s -> "
                "%s",
                op, DataTypeName(in_type), DataTypeName(out_type));
  if (scales != xcclGemmScaleNone && scales != xcclGemmScalePtpc && scales != xcclGemmScaleBlock128)
    return Fail(xcclInvalidArgument,
                "%s: scales %d are none of default (0), ptpc (1) and block128 (2)", op,
                static_cast<int>(scales));
  if ((scales != xcclGemmScaleNone) != (in_type == xcclFloat8e4m3))
    return Fail(xcclInvalidArgument,
                "%s: %s scales with %s inputs; fp8 e4m3 takes ptpc or block scales, bf16 and "
                "fp16 none",
                op,
                scales == xcclGemmScaleBlock128 ? "block"
                : scales == xcclGemmScalePtpc   ? "per-token/channel"
                                                : "no",
                DataTypeName(in_type));
  return xcclSuccess;
}

}  // namespace xccl
