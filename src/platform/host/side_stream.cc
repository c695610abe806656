// The host platform's side stream: every call is synchronous there, so there is nothing to fork
// or join, and a band "on the side stream" simply runs in turn on the calling thread.
#include "platform/side_stream.h"

namespace xccl {

xcclResult_t CreateSideStream(int /*device*/, SideStream* side, StreamPriority /*priority*/) {
  *side = SideStream();
  return xcclSuccess;
}

void DestroySideStream(int /*device*/, SideStream* side) { *side = SideStream(); }

xcclResult_t ForkSideStream(const SideStream& /*side*/, xcclStream_t /*from*/) {
  return xcclSuccess;
}

xcclResult_t JoinSideStream(const SideStream& /*side*/, xcclStream_t /*into*/) {
  return xcclSuccess;
}

}  // namespace xccl
