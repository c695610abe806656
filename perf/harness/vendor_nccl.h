// The vendor's collective library, NCCL (RCCL has the same C API), opened at run time with
// dlopen for --compare vendor: the benchmarks time it on the same buffers, sizes and streams as
// xccl. Nothing here includes nccl.h or links libnccl, so the benchmarks build and run where
// neither exists; the few types of NCCL's ABI used are restated in vendor_nccl.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "xccl.h"

namespace xccl_perf {

// ncclUniqueId: 128 opaque bytes, made by one rank and handed to the others.
struct VendorId {
  char internal[128];
};

class VendorLibrary {
 public:
  // Opens the library named by env XCCL_VENDOR_LIB (default "libnccl.so.2") once per process and
  // resolves its entry points; nullptr, with *why saying what failed, if that is impossible.
  // Safe to call from every rank thread.
  static const VendorLibrary* Get(std::string* why);

  const std::string& path() const { return path_; }
  // As ncclGetVersion reports it (22803 for 2.28.3) and as "2.28.3".
  int version() const { return version_; }
  std::string VersionText() const;

  // "" where this version can reduce `type` with `op`, else why not, for a "# vendor:" line.
  // Types and ops are numbered as NCCL's, so the values pass through unchanged.
  std::string CannotReduce(xcclDataType_t type, xcclRedOp_t op) const;

  // ncclGetUniqueId. Some versions initialise CUDA in it, so only a rank thread after fork()
  // may call it, never the parent before.
  bool GetUniqueId(VendorId* id, int rank) const;

  struct Api;  // the resolved entry points
  const Api& api() const { return *api_; }

 private:
  VendorLibrary();
  ~VendorLibrary();  // defined where Api is complete; never called, the library stays loaded

  std::string path_;
  int version_ = 0;
  std::unique_ptr<Api> api_;
};

// One vendor communicator; destroyed with ncclCommDestroy.
class VendorComm {
 public:
  // Blocks until all nranks ranks have joined, as ncclCommInitRank does; call it in the rank's
  // thread after DeviceBuffers::Create has selected its device. nullptr after reporting a
  // failure.
  static std::unique_ptr<VendorComm> Init(const VendorLibrary& library, int nranks,
                                          const VendorId& id, int rank);
  ~VendorComm();
  VendorComm(const VendorComm&) = delete;
  VendorComm& operator=(const VendorComm&) = delete;

  const VendorLibrary& library() const { return library_; }

  // ncclAllGather of `bytes` bytes per rank. The data travels as ncclInt8: an all-gather copies
  // bytes whatever their type, and so a vendor version without fp8 types still runs those rows.
  bool AllGather(const void* send, void* recv, size_t bytes, xcclStream_t stream);
  // ncclBroadcast of `bytes` bytes from `root`, as ncclInt8 (a copy, as AllGather's).
  bool Broadcast(const void* send, void* recv, size_t bytes, int root, xcclStream_t stream);
  // ncclAllReduce (sum) of `count` floats.
  bool AllReduceFloatSum(const void* send, void* recv, size_t count, xcclStream_t stream);
  // ncclReduceScatter (`count` elements received per rank) and ncclAllReduce, of any type and op
  // that VendorLibrary::CannotReduce accepts.
  bool ReduceScatter(const void* send, void* recv, size_t count, xcclDataType_t type,
                     xcclRedOp_t op, xcclStream_t stream);
  bool AllReduce(const void* send, void* recv, size_t count, xcclDataType_t type, xcclRedOp_t op,
                 xcclStream_t stream);

 private:
  VendorComm(const VendorLibrary& library, void* comm, int rank)
      : library_(library), comm_(comm), rank_(rank) {}
  bool Ok(int result, const char* call) const;

  const VendorLibrary& library_;
  void* comm_;  // ncclComm_t
  int rank_;
};

}  // namespace xccl_perf
