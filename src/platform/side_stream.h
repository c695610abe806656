// A second stream an op may run work on within one call: forked from the caller's stream (it
// waits for everything enqueued there so far) and joined back into it (the caller's stream waits
// for everything enqueued on it), so the call stays one stream-ordered, graph-capturable unit.
// Ops run part of a call's work on it beside the rest (docs/ARCHITECTURE.md, "ag_gemm" and
// "gemm_rs"); a stream of the highest priority gets its blocks onto SMs ahead of the other's.
//
// GPU platforms: a non-blocking stream of the device and two events without timing. Host
// platform: calls are synchronous, so the stream is nullptr and fork and join do nothing.
#pragma once

#include "xccl.h"

namespace xccl {

// How the device schedules the side stream's blocks against other streams' waiting ones.
enum class StreamPriority {
  kDefault,  // as the caller's streams (the device's least priority)
  kHighest,  // ahead of every default stream's blocks not yet running
};

struct SideStream {
  xcclStream_t stream = nullptr;
  void* fork = nullptr;  // event recorded on the caller's stream (GPU)
  void* join = nullptr;  // event recorded on this stream (GPU)
};

xcclResult_t CreateSideStream(int device, SideStream* side,
                              StreamPriority priority = StreamPriority::kDefault);
// Safe on a SideStream that Create never filled or filled partly; waits for the stream's work.
void DestroySideStream(int device, SideStream* side);
// `side` waits for the work enqueued on `from` so far.
xcclResult_t ForkSideStream(const SideStream& side, xcclStream_t from);
// `into` waits for the work enqueued on `side` so far.
xcclResult_t JoinSideStream(const SideStream& side, xcclStream_t into);

}  // namespace xccl
