// The read engine's grid for one call (read_reduce_engine.cu), apart so that the host tests check
// the rule. Its blocks wait in the kernel for the peers' calls. Where ranks share a GPU and a
// peer's stream still has a GEMM before its call (gemm_rs), a grid with a block on every SM leaves
// that GEMM, whose blocks need a whole SM, none: the peer's call never comes and the wait ends at
// its deadline. A smaller grid leaves the GEMMs SMs (docs/ARCHITECTURE.md, "Ranks sharing a GPU").
#pragma once

#include <algorithm>
#include <cstddef>

namespace xccl {

// What may run beside a call on a device ranks share.
enum class Beside {
  kNothing,             // the call's own share (plain collectives)
  kPeersCompute,        // the peers' GEMMs: half the share
  kOwnAndPeersCompute,  // this rank's next GEMMs too: an eighth of the share
};

// What the caller asks of the grid.
struct GridLimit {
  int most_blocks = 0;  // at most this many blocks (0: by `beside`)
  Beside beside = Beside::kNothing;
};

// A rank's share is 2 x SMs / ranks on the device. With half of it, SMs / ranks, the grids of all
// ranks but one (those that can wait while the last still computes) leave at least one SM free;
// with an eighth, the grids of every rank take at most a quarter of the SMs.
constexpr int kBesidePeersShare = 2;
constexpr int kBesideOwnShare = 8;

// Blocks for `vectors` 16-byte vectors at `threads_per_block` where the rank's share of the
// device is `engine_blocks`: at least 1.
inline int ReadReduceGrid(size_t vectors, int threads_per_block, int engine_blocks,
                          bool shared_device, const GridLimit& limit) {
  int grid = engine_blocks;
  if (limit.most_blocks > 0)
    grid = std::min(limit.most_blocks, engine_blocks);
  else if (shared_device && limit.beside == Beside::kPeersCompute)
    grid = std::max(1, engine_blocks / kBesidePeersShare);
  else if (shared_device && limit.beside == Beside::kOwnAndPeersCompute)
    grid = std::max(1, engine_blocks / kBesideOwnShare);
  const size_t wanted = (vectors + threads_per_block - 1) / threads_per_block;
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(wanted, grid)));
}

}  // namespace xccl
