#include "comm/communicator.h"

#include "base/error.h"
#include "base/logging.h"

namespace xccl {

xcclResult_t Communicator::RecordFailure(const char* op, const PlatformFailure& failure) {
  std::string message =
      std::string(op) + " on rank " + std::to_string(rank()) + ": " + failure.message;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_result_ == xcclSuccess) {
      failure_result_ = failure.result;
      failure_message_ = message;
    }
  }
  if (transport_) transport_->Abort(failure.peer >= 0 ? failure.peer : rank());
  return Fail(failure.result, "%s", message.c_str());
}

void Communicator::AbsorbAsyncFailure() {
  PlatformFailure failure;
  if (!transport_ || transport_->PollAsyncFailure(&failure) == xcclSuccess) return;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (failure_result_ != xcclSuccess) return;
  failure_result_ = failure.result;
  failure_message_ = "on rank " + std::to_string(rank()) + ": " + failure.message;
}

xcclResult_t Communicator::CheckHealthy(const char* op) {
  AbsorbAsyncFailure();
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (failure_result_ == xcclSuccess) return xcclSuccess;
  return Fail(failure_result_, "%s: the communicator failed earlier (%s); destroy or abort it", op,
              failure_message_.c_str());
}

xcclResult_t Communicator::async_error() {
  AbsorbAsyncFailure();
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_result_;
}

std::string Communicator::failure_message() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_message_;
}

xcclResult_t Communicator::OperationGuard::Acquire(const char* op) {
  if (comm_->busy_.exchange(true))
    return Fail(xcclInvalidUsage,
                "%s on rank %d: another call is running on this communicator (from another "
                "thread); calls on one communicator must not overlap",
                op, comm_->rank());
  held_ = true;
  return xcclSuccess;
}

void Communicator::AbortTransport() {
  if (transport_) transport_->Abort(rank());
}

void Communicator::Abort() {
  AbortTransport();
  if (bootstrap_) bootstrap_->Abort();
}

}  // namespace xccl
