// Same node, GPU: this rank's DMA queues, non-blocking streams whose copies the copy engines run.
// Peers are dealt over the streams round robin from rank+1. An operation forks the queues it
// uses from its stream and joins them back, so a call stays one stream-ordered unit that a graph
// can capture.
#pragma once

#include <vector>

#include "base/topology.h"
#include "platform/gpu.h"
#include "xccl.h"

namespace xccl {

class CopyEngineQueues {
 public:
  CopyEngineQueues() = default;
  ~CopyEngineQueues() = default;  // the owner calls Destroy with the device current
  CopyEngineQueues(const CopyEngineQueues&) = delete;
  CopyEngineQueues& operator=(const CopyEngineQueues&) = delete;

  // `count` streams (0: none; every put then runs on the operation's stream) on the current
  // device.
  xcclResult_t Create(const Topology& topology, int count);
  int count() const { return static_cast<int>(streams_.size()); }

  // Starts an operation on `stream`: no queue is forked yet.
  void Begin(gpuStream_t stream);
  // Marks the point of the operation's stream the queues fork from (before the first put).
  gpuError_t MarkFork();
  // The stream that serves `peer` in this operation, forked from the mark on its first use (the
  // operation's stream itself where there are no queues).
  gpuError_t StreamFor(int peer, gpuStream_t* stream);
  // The operation's stream waits for every queue used since Begin.
  gpuError_t Join();
  // The operation's stream waits for the queue that serves `peer`, if it was used.
  gpuError_t JoinQueueOf(int peer);
  // Waits for the queues' work and destroys them (the device must be current).
  void Destroy();

 private:
  gpuError_t JoinQueue(int q);

  std::vector<gpuStream_t> streams_;
  std::vector<gpuEvent_t> join_events_;
  std::vector<int> queue_of_peer_;
  std::vector<bool> used_;
  gpuEvent_t fork_event_ = nullptr;
  gpuStream_t stream_ = nullptr;  // the operation's
};

}  // namespace xccl
