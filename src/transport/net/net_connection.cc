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

void NetConnection::InboxPut(uint32_t epoch, int /*inbox_of*/, const void* src, size_t bytes,
                             int signal_slot) {
  Queue(NetOp::kInbox, epoch, signal_slot, 0, src, bytes);
}

void NetConnection::Signal(int slot, uint32_t epoch) {
  Queue(NetOp::kSignal, epoch, slot, 0, nullptr, 0);
}

xcclResult_t NetConnection::Flush(const Deadline& deadline, PlatformFailure* failure) {
  return proxy_->Flush(peer(), deadline, failure);
}

}  // namespace xccl
