// The frame all_gather_perf, reduce_scatter_perf and all_reduce_perf share, nccl-tests' TimeTest
// and BenchTime for xccl: per type (and op, for a reduction) a warm-up at both ends of the sweep,
// then per size the calls timed out of place and in place, each checked on a fresh call element
// by element, rank 0 printing the row; --compare vendor times the vendor's call on the same
// buffers after each row; -J records the rows. A binary describes its collective (a Collective)
// and hands main to CollectiveBenchMain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/vendor_nccl.h"
#include "xccl.h"

namespace xccl_perf {

// One row's element counts for a size in bytes, as nccl-tests' <Coll>GetCollByteCount gives them.
// The row prints max(send, recv) * word as its size and `count` as its count; in place, both
// pointers lie in the receive buffer: send at rank * send_in_place elements, recv at
// rank * recv_in_place.
struct RowShape {
  size_t count = 0;  // the call's count argument
  size_t send_count = 0;
  size_t recv_count = 0;
  size_t send_in_place = 0;
  size_t recv_in_place = 0;
};

// count = bytes / word elements in and out, in place the same pointer on every rank (nccl-tests'
// all_reduce.cu and broadcast.cu); the size column count * typesize.
inline RowShape SameCountInAndOut(size_t bytes, size_t word) {
  RowShape shape;
  shape.count = bytes / word;
  shape.send_count = shape.count;
  shape.recv_count = shape.count;
  return shape;
}

// One call's arguments, for xccl and the vendor alike.
struct CallArgs {
  const void* send;
  void* recv;
  size_t count;
  xcclDataType_t type;
  xcclRedOp_t op;  // xcclSum for collectives that do not reduce
  int root;        // -r, for collectives with a root (broadcast)
  xcclComm_t comm;
  xcclStream_t stream;
  int rank;  // for the failure message
};

// A checked call's data, in host memory laid out as the call sees it: `send` and `recv` point
// into host copies of the send and receive buffers (in place, both into the receive buffer's).
struct CheckArgs {
  char* send;
  char* recv;
  const RowShape& shape;
  xcclDataType_t type;
  xcclRedOp_t op;
  int root;
  int rank;
  int nranks;
  uint64_t seed;  // the same on every rank, new for every checked call
  bool in_place;
};

class Collective {
 public:
  virtual ~Collective() = default;
  // "all_gather": the program is <name>_perf, and the JSON's op.
  virtual const char* Name() const = 0;
  // Whether -o picks ops (and the redop column names them); otherwise the column shows "none".
  virtual bool Reduces() const = 0;
  // Whether -r names a root (broadcast): the root column shows it, else -1.
  virtual bool Rooted() const { return false; }
  // The engine a row measured, for the JSON ("default" unless an environment variable picks).
  virtual std::string Engine() const { return "default"; }
  virtual RowShape Shape(size_t bytes, size_t word, int nranks) const = 0;
  // busbw = algbw * BusFactor (nccl-tests' <Coll>GetBw); algbw = size / time.
  virtual double BusFactor(int nranks) const = 0;

  // Issue the call on args.stream; false after saying why.
  virtual bool Call(const CallArgs& args) const = 0;
  // The vendor's call ("ncclAllGather" names it in the header line) and why it cannot run a
  // type and op ("" if it can).
  virtual const char* VendorCallName() const = 0;
  virtual bool CallVendor(VendorComm& vendor, const CallArgs& args) const = 0;
  virtual std::string VendorCannot(const VendorLibrary& library, xcclDataType_t type,
                                   xcclRedOp_t op) const = 0;

  // Before a checked call: the inputs, and a poison in every receive element the call must write
  // that the check refuses. After it: the number of wrong elements.
  virtual void Prepare(const CheckArgs& args) const = 0;
  virtual size_t CountWrong(const CheckArgs& args) const = 0;
  // Whether every rank must receive the same bits (all_reduce): the checked call then also
  // compares a digest of every rank's result.
  virtual bool SameResultEverywhere() const { return false; }
};

// The whole program: parses the flags (nccl-tests' flags, -o where the collective reduces),
// forks and runs the ranks, prints the table. Returns the exit status.
int CollectiveBenchMain(int argc, char** argv, const Collective& collective);

}  // namespace xccl_perf
