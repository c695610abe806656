// A DMA queue of the host platform: one worker thread per peer that runs puts in the order they
// were enqueued, as a copy engine would. The caller enqueues without blocking and later drains;
// the first failure since the last drain is kept and returned by Drain.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/deadline.h"
#include "base/failure.h"

namespace xccl {

class DmaQueue {
 public:
  using Task = std::function<xcclResult_t(PlatformFailure*)>;

  explicit DmaQueue(std::string name);
  ~DmaQueue();
  DmaQueue(const DmaQueue&) = delete;
  DmaQueue& operator=(const DmaQueue&) = delete;

  void Enqueue(Task task);
  // Waits until every enqueued task has run. Once a task fails, the ones after it are skipped
  // (their data would be stale) until the queue is drained.
  xcclResult_t Drain(const Deadline& deadline, PlatformFailure* failure);

 private:
  void Run();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Task> tasks_;
  int running_ = 0;
  bool stopping_ = false;
  PlatformFailure first_failure_;
  std::thread worker_;
};

}  // namespace xccl
