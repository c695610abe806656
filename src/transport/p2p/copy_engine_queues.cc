#include "transport/p2p/copy_engine_queues.h"

#include "platform/gpu/gpu_call.h"

namespace xccl {

void CopyEngineQueues::Destroy() {
  for (gpuStream_t queue : streams_) {
    if (queue == nullptr) continue;
    (void)gpuStreamSynchronize(queue);
    (void)gpuStreamDestroy(queue);
  }
  for (gpuEvent_t event : join_events_)
    if (event != nullptr) (void)gpuEventDestroy(event);
  if (fork_event_ != nullptr) (void)gpuEventDestroy(fork_event_);
  streams_.clear();
  join_events_.clear();
  fork_event_ = nullptr;
}

xcclResult_t CopyEngineQueues::Create(const Topology& topology, int count) {
  const int nranks = topology.nranks;
  streams_.assign(count, nullptr);
  join_events_.assign(count, nullptr);
  for (int q = 0; q < count; ++q) {
    XCCL_GPU_TRY(gpuStreamCreateWithFlags(&streams_[q], gpuStreamNonBlocking));
    XCCL_GPU_TRY(gpuEventCreateWithFlags(&join_events_[q], gpuEventDisableTiming));
  }
  queue_of_peer_.assign(nranks, 0);
  for (int step = 1; step < nranks && count > 0; ++step)
    queue_of_peer_[(topology.rank + step) % nranks] = (step - 1) % count;
  XCCL_GPU_TRY(gpuEventCreateWithFlags(&fork_event_, gpuEventDisableTiming));
  used_.assign(count, false);
  return xcclSuccess;
}

void CopyEngineQueues::Begin(gpuStream_t stream) {
  stream_ = stream;
  used_.assign(streams_.size(), false);
}

gpuError_t CopyEngineQueues::MarkFork() { return gpuEventRecord(fork_event_, stream_); }

gpuError_t CopyEngineQueues::StreamFor(int peer, gpuStream_t* stream) {
  if (streams_.empty()) {
    *stream = stream_;
    return gpuSuccess;
  }
  const int q = queue_of_peer_[peer];
  *stream = streams_[q];
  if (used_[q]) return gpuSuccess;
  used_[q] = true;
  return gpuStreamWaitEvent(streams_[q], fork_event_, 0);
}

gpuError_t CopyEngineQueues::Join() {
  gpuError_t first = gpuSuccess;
  for (size_t q = 0; q < streams_.size(); ++q) {
    const gpuError_t err = JoinQueue(static_cast<int>(q));
    if (err != gpuSuccess && first == gpuSuccess) first = err;  // the other queues still join
  }
  return first;
}

gpuError_t CopyEngineQueues::JoinQueueOf(int peer) {
  return streams_.empty() ? gpuSuccess : JoinQueue(queue_of_peer_[peer]);
}

gpuError_t CopyEngineQueues::JoinQueue(int q) {
  if (!used_[q]) return gpuSuccess;
  const gpuError_t err = gpuEventRecord(join_events_[q], streams_[q]);
  return err == gpuSuccess ? gpuStreamWaitEvent(stream_, join_events_[q], 0) : err;
}

}  // namespace xccl
