// Every rank's block of an all_gather as its parts: the head, then a GatherTail (empty where its
// bytes are 0). The paths that cut a block into pieces (through the inboxes) walk a piece's runs
// here, a piece that spans both parts being two runs.
#pragma once

#include <algorithm>
#include <cstddef>

namespace xccl {

struct BlockParts {
  struct Part {
    const char* send;  // this rank's part
    char* recv;        // rank r's lands at recv + r * bytes
    size_t bytes;
  } part[2];

  size_t bytes() const { return part[0].bytes + part[1].bytes; }

  // The runs of [offset, offset + n) of the block, in order: fn(part, offset within the part,
  // length, offset within [offset, offset + n), whether it is the last run).
  template <typename Fn>
  void ForEachRun(size_t offset, size_t n, Fn fn) const {
    size_t in_piece = 0;
    for (const Part& p : part) {
      if (n == 0) return;
      if (offset >= p.bytes) {
        offset -= p.bytes;
        continue;
      }
      const size_t run = std::min(n, p.bytes - offset);
      fn(p, offset, run, in_piece, run == n);
      in_piece += run;
      n -= run;
      offset = 0;
    }
  }
};

}  // namespace xccl
