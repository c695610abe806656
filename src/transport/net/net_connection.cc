#include "transport/net/net_connection.h"

namespace xccl {

void NetConnection::Queue(NetOp::Kind kind, uint32_t epoch, int slot, size_t offset,
                          const void* src, size_t bytes) {
  NetOp op;
  op.kind = kind;
  op.slot = slot;
  op.epoch = epoch;
  op.offset = offset;
  op.bytes = bytes;
  proxy_->Enqueue(peer(), op, src);
}

void NetConnection::Put(uint32_t epoch, void* /*dst*/, size_t dst_offset, const void* src,
                        size_t bytes, int signal_slot) {
  Queue(NetOp::kPut, epoch, signal_slot, dst_offset, src, bytes);
}

void NetConnection::PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                                int signal_slot) {
  // Below this rank's slice the offset wraps to one the peer's landing refuses.
  Queue(NetOp::kRegion, epoch, signal_slot, region_offset - own_slice_, src, bytes);
}

void NetConnection::Signal(int slot, uint32_t epoch) {
  Queue(NetOp::kSignal, epoch, slot, 0, nullptr, 0);
}

xcclResult_t NetConnection::Flush(const Deadline& deadline, PlatformFailure* failure) {
  return proxy_->Flush(peer(), deadline, failure);
}

}  // namespace xccl
