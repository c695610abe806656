#include "transport/shm/dma_queue.h"

#include <pthread.h>

#include <chrono>

#include "base/failure.h"

namespace xccl {

DmaQueue::DmaQueue(std::string name) : name_(std::move(name)), worker_([this] { Run(); }) {
  pthread_setname_np(worker_.native_handle(), name_.substr(0, 15).c_str());
}

DmaQueue::~DmaQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  worker_.join();
}

void DmaQueue::Enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  work_ready_.notify_one();
}

void DmaQueue::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    bool skip = first_failure_.result != xcclSuccess;
    ++running_;
    lock.unlock();
    PlatformFailure failure;
    xcclResult_t result = skip ? xcclSuccess : task(&failure);
    lock.lock();
    --running_;
    if (result != xcclSuccess && first_failure_.result == xcclSuccess) {
      first_failure_ = failure;
      first_failure_.result = result;
    }
    if (tasks_.empty() && running_ == 0) work_done_.notify_all();
  }
}

xcclResult_t DmaQueue::Drain(const Deadline& deadline, PlatformFailure* failure) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool done = work_done_.wait_for(lock, std::chrono::milliseconds(deadline.RemainingMs()),
                                  [this] { return tasks_.empty() && running_ == 0; });
  if (!done) {
    // No peer, as before: the communicator then announces this rank as the one that failed.
    return SetFailure(failure, xcclTimeout, kNoPeer,
                      "DMA queue %s did not finish its puts within %lld ms", name_.c_str(),
                      static_cast<long long>(deadline.timeout_ms()));
  }
  if (first_failure_.result != xcclSuccess) {
    *failure = first_failure_;
    first_failure_ = PlatformFailure{};
    return failure->result;
  }
  return xcclSuccess;
}

}  // namespace xccl
