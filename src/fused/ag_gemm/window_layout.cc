#include "fused/ag_gemm/window_layout.h"

#include <limits>

#include "base/error.h"
#include "fused/ag_gemm/chunk_rule.h"

namespace xccl {

namespace {

// a * b into *out; false on overflow of size_t.
bool MulSize(size_t a, size_t b, size_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool AddSize(size_t a, size_t b, size_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace

int64_t PaddedM(int64_t m) {
  if (m < 0) return -1;
  if (m > std::numeric_limits<int64_t>::max() - (kGemmTileRows - 1)) return -1;
  return (m + kGemmTileRows - 1) / kGemmTileRows * kGemmTileRows;
}

int64_t KBlocks(int64_t k) { return k <= 0 ? 0 : (k + 127) / 128; }

xcclResult_t WindowLayout::Create(int world, int rank, int64_t m_max, int64_t k,
                                  size_t a_dtype_size, ScaleLayout scale_layout,
                                  WindowLayout* out) {
  if (out == nullptr) return Fail(xcclInvalidArgument, "ag_gemm window layout: out is NULL");
  if (world < 1) return Fail(xcclInvalidArgument, "ag_gemm window layout: world %d < 1", world);
  if (rank < 0 || rank >= world) {
    return Fail(xcclInvalidArgument, "ag_gemm window layout: rank %d outside [0, %d)", rank, world);
  }
  if (m_max < 1) {
    return Fail(xcclInvalidArgument, "ag_gemm window layout: m_max %lld < 1",
                static_cast<long long>(m_max));
  }
  if (k < 1) {
    return Fail(xcclInvalidArgument, "ag_gemm window layout: k %lld < 1",
                static_cast<long long>(k));
  }
  if (a_dtype_size == 0) {
    return Fail(xcclInvalidArgument, "ag_gemm window layout: element size 0");
  }
  const int64_t padded = PaddedM(m_max);
  // Every later query multiplies numbers no larger than these, so checking the largest window
  // once here makes all of them overflow-free.
  const int64_t blocks = scale_layout == ScaleLayout::kNone     ? 0
                         : scale_layout == ScaleLayout::kPerRow ? 1
                                                                : KBlocks(k);
  size_t slot = 0, data = 0, scales = 0, base = 0, call_base = 0, total = 0;
  bool ok = padded > 0 && MulSize(static_cast<size_t>(padded), static_cast<size_t>(k), &slot) &&
            MulSize(slot, a_dtype_size, &slot) && MulSize(slot, static_cast<size_t>(world), &data);
  if (ok && blocks > 0) {
    ok = AddSize(data, kScaleAlignment - 1, &base) &&
         MulSize(static_cast<size_t>(padded), sizeof(float), &scales) &&
         MulSize(scales, static_cast<size_t>(blocks), &scales) &&
         MulSize(scales, static_cast<size_t>(world), &scales);
    base = base / kScaleAlignment * kScaleAlignment;
    ok = ok && AddSize(base, scales, &total);
    if (ok && scale_layout == ScaleLayout::kBlock128) {
      call_base = total;  // a multiple of the alignment: base is, and tiles are 256-row multiples
      ok = AddSize(call_base, scales, &total);
    }
  } else {
    base = 0;
    total = data;
  }
  if (!ok) {
    return Fail(xcclInvalidArgument,
                "ag_gemm window layout: world %d x m_max %lld (padded %lld) x k %lld x %zu bytes "
                "does not fit in size_t",
                world, static_cast<long long>(m_max), static_cast<long long>(padded),
                static_cast<long long>(k), a_dtype_size);
  }
  WindowLayout layout;
  layout.world_ = world;
  layout.rank_ = rank;
  layout.padded_m_max_ = padded;
  layout.k_ = k;
  layout.element_size_ = a_dtype_size;
  layout.scales_ = scale_layout;
  layout.scale_blocks_ = blocks;
  layout.scale_base_ = base;
  layout.call_tile_base_ = call_base;
  layout.total_bytes_ = total;
  *out = layout;
  return xcclSuccess;
}

xcclResult_t WindowLayout::Check(int source, int64_t m, int64_t* rows) const {
  if (world_ < 1) return Fail(xcclInvalidArgument, "ag_gemm window layout: not created");
  if (source < 0 || source >= world_) {
    return Fail(xcclInvalidArgument, "ag_gemm window layout: source %d outside [0, %d)", source,
                world_);
  }
  if (m < 0 || m > padded_m_max_) {
    return Fail(xcclInvalidArgument,
                "ag_gemm window layout: m %lld outside [0, %lld] (the window's padded m_max)",
                static_cast<long long>(m), static_cast<long long>(padded_m_max_));
  }
  *rows = PaddedM(m);  // <= padded_m_max_, since padded_m_max_ is itself a tile multiple
  return xcclSuccess;
}

xcclResult_t WindowLayout::RecvSlotBytes(int64_t m, size_t* bytes) const {
  int64_t rows = 0;
  XCCL_TRY(Check(0, m, &rows));
  *bytes = static_cast<size_t>(rows) * static_cast<size_t>(k_) * element_size_;
  return xcclSuccess;
}

xcclResult_t WindowLayout::DataBytes(int64_t m, size_t* bytes) const {
  size_t slot = 0;
  XCCL_TRY(RecvSlotBytes(m, &slot));
  *bytes = slot * static_cast<size_t>(world_);
  return xcclSuccess;
}

xcclResult_t WindowLayout::RecvSlotOffset(int source, int64_t m, size_t* offset) const {
  int64_t rows = 0;
  XCCL_TRY(Check(source, m, &rows));
  *offset = static_cast<size_t>(source) * static_cast<size_t>(rows) * static_cast<size_t>(k_) *
            element_size_;
  return xcclSuccess;
}

xcclResult_t WindowLayout::ScaleOffset(int source, int64_t m, size_t* offset) const {
  size_t bytes = 0;
  XCCL_TRY(ScaleBytes(m, &bytes));
  int64_t rows = 0;
  XCCL_TRY(Check(source, m, &rows));
  *offset = scale_base_ + static_cast<size_t>(source) * bytes;
  return xcclSuccess;
}

xcclResult_t WindowLayout::ScaleBytes(int64_t m, size_t* bytes) const {
  if (!has_scales())
    return Fail(xcclInvalidArgument, "ag_gemm window layout: no scales in this window");
  int64_t rows = 0;
  XCCL_TRY(Check(0, m, &rows));
  *bytes = static_cast<size_t>(rows) * static_cast<size_t>(scale_blocks_) * sizeof(float);
  return xcclSuccess;
}

xcclResult_t WindowLayout::CallTileOffset(int64_t row_begin, int64_t m, size_t* offset) const {
  if (scales_ != ScaleLayout::kBlock128)
    return Fail(xcclInvalidArgument, "ag_gemm window layout: no block scales in this window");
  int64_t rows = 0;
  XCCL_TRY(Check(0, m, &rows));
  if (row_begin < 0 || row_begin > rows * world_)
    return Fail(xcclInvalidArgument, "ag_gemm window layout: row %lld outside [0, %lld]",
                static_cast<long long>(row_begin), static_cast<long long>(rows * world_));
  *offset = call_tile_base_ +
            static_cast<size_t>(row_begin) * static_cast<size_t>(scale_blocks_) * sizeof(float);
  return xcclSuccess;
}

xcclResult_t WindowLayout::LocalRows(int64_t m, size_t* offset) const {
  return RecvSlotOffset(rank_, m, offset);
}

}  // namespace xccl
