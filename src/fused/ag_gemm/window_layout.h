// Where ag_gemm's receive window keeps each source rank's rows (docs/ARCHITECTURE.md, "ag_gemm").
//
// The window holds one receive slot per source rank, [world][M][K] elements of A's type, then
// the fp32 scales: ptpc one per row, [world][M]; blockscale KB = ceil(K / 128) per row, each
// source's [KB * M] cut into one packed [KB][rows] tile per band (the unit one put carries and
// a GEMM call over one band reads), then as much again for the GEMM calls that span several
// bands or sources, each packing its tiles by 2D copies at CallTileOffset. Laid out for the
// *current* M, not for m_max: source s's rows start at s * M * K elements, so for any M the receive
// slots form one contiguous [world * M, K] operand (and the scales one contiguous [world * M]
// vector) and the GEMM reads the gathered A without a copy or a per-source pointer table. A smaller
// M simply uses the front of the allocation made for m_max.
//
// M here is always PaddedM(m): every rank pads its row count up to whole 256-row GEMM tiles, so
// that each source's receive slot starts on a tile boundary of the gathered operand and no output
// tile (nor band, see chunk_rule.h) mixes two sources' rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xccl.h"

namespace xccl {

// The M every rank must use for a call with m rows: m rounded up to a multiple of 256 (the GEMM
// tile rows), and 0 for m == 0 (an empty call stays empty instead of moving a tile of padding).
// -1 for m < 0 or when the rounded value does not fit int64_t; callers validate m first.
int64_t PaddedM(int64_t m);

// Which scales a window holds beside the rows.
enum class ScaleLayout { kNone, kPerRow, kBlock128 };

// K blocks of 128 elements (the last may be shorter): the block scales per row.
int64_t KBlocks(int64_t k);

class WindowLayout {
 public:
  WindowLayout() = default;

  // Validates and computes the layout of the window of rank `rank` in a world of `world` ranks
  // for up to m_max rows per rank and K columns of a_dtype_size-byte elements, with `scales`.
  // xcclInvalidArgument (through Fail) for world < 1, rank outside [0, world), m_max < 1, k < 1,
  // a_dtype_size 0, or a window whose size does not fit size_t.
  static xcclResult_t Create(int world, int rank, int64_t m_max, int64_t k, size_t a_dtype_size,
                             ScaleLayout scales, WindowLayout* out);

  // Every query below takes the row count m of a call (or PaddedM(m) - the same layout, since
  // padding is idempotent) and uses PaddedM(m). It refuses, with xcclInvalidArgument, m < 0 or
  // m above the rows the window was sized for, PaddedM(m_max): a caller's m above m_max is the
  // op's operand check to make, with the caller's own numbers in the message.

  // Bytes of one source's receive slot, PaddedM(m) * K * element size.
  xcclResult_t RecvSlotBytes(int64_t m, size_t* bytes) const;
  // Bytes of all world receive slots for this m: the contiguous [world * PaddedM(m), K] operand.
  xcclResult_t DataBytes(int64_t m, size_t* bytes) const;
  // Byte offset, from the window's start, of source `source`'s receive slot for this m.
  xcclResult_t RecvSlotOffset(int source, int64_t m, size_t* offset) const;
  // Byte offset of source `source`'s scales (PaddedM(m) * scale_blocks() fp32; blockscale: its
  // band tiles one after the other); refused if the layout has none.
  xcclResult_t ScaleOffset(int source, int64_t m, size_t* offset) const;
  // Bytes of one source's scales for this m.
  xcclResult_t ScaleBytes(int64_t m, size_t* bytes) const;
  // Blockscale: where a GEMM call whose rows of the gathered operand begin at row_begin packs
  // its [KB][rows] scale tile (calls cover disjoint rows, so concurrent calls never share one).
  xcclResult_t CallTileOffset(int64_t row_begin, int64_t m, size_t* offset) const;
  // This rank's receive slot for this m (so a caller can quantise straight into it):
  // RecvSlotOffset(rank).
  xcclResult_t LocalRows(int64_t m, size_t* offset) const;

  // Where the scales begin: after the data sized for m_max, aligned to kScaleAlignment, so that
  // no M's data can reach the scales. 0 when the layout has no scales.
  size_t scale_base() const { return scale_base_; }
  // Bytes to allocate: the data and scales for PaddedM(m_max).
  size_t total_bytes() const { return total_bytes_; }
  int64_t padded_m_max() const { return padded_m_max_; }
  int world() const { return world_; }
  int rank() const { return rank_; }
  int64_t k() const { return k_; }
  size_t element_size() const { return element_size_; }
  bool has_scales() const { return scales_ != ScaleLayout::kNone; }
  ScaleLayout scales() const { return scales_; }
  // fp32 scales per row: 0, 1 (ptpc) or KBlocks(k) (blockscale).
  int64_t scale_blocks() const { return scale_blocks_; }

  // The scales' alignment: generous enough for any vector load or DMA descriptor.
  static constexpr size_t kScaleAlignment = 256;

 private:
  // Checks source and m, and returns PaddedM(m) in *rows.
  xcclResult_t Check(int source, int64_t m, int64_t* rows) const;

  int world_ = 0;
  int rank_ = 0;
  int64_t padded_m_max_ = 0;
  int64_t k_ = 0;
  size_t element_size_ = 0;
  ScaleLayout scales_ = ScaleLayout::kNone;
  int64_t scale_blocks_ = 0;
  size_t scale_base_ = 0;
  size_t call_tile_base_ = 0;  // blockscale only
  size_t total_bytes_ = 0;
};

}  // namespace xccl
