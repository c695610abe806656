#include "core/communicator.h"

#include "collectives/device_engine.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/params.h"
#include "core/shared_settings.h"
#include "platform/runtime.h"
#include "transport/peer_imports.h"

namespace xccl {

xcclResult_t Communicator::Create(const xcclUniqueId& id, int nranks, int rank, int device,
                                  const CommConfig& config, std::unique_ptr<Communicator>* out,
                                  const Params* given) {
  std::unique_ptr<Communicator> comm(new Communicator());
  comm->config_ = config;
  comm->device_ = device;
  // The parameters are read here, once, and handed down.
  comm->params_ = given != nullptr ? *given : GetParams();
  const Params& params = comm->params_;
  comm->epoch_ = params.epoch_base;
  comm->net_chunk_bytes_ = static_cast<size_t>(params.net_chunk_bytes);
  XCCL_TRY(Bootstrap::Init(id, rank, nranks, config.timeout_ms, &comm->bootstrap_,
                           params.socket_ifname));
  // The shared settings first: the grouping into nodes depends on one of them.
  XCCL_TRY(RequireSharedSettings(comm->bootstrap_.get(), params));
  XCCL_TRY(ExchangeTopology(comm->bootstrap_.get(), device, params, &comm->topology_));
  // Peers of other processes on this node may ask this process to map their xcclMemAlloc
  // memory (zero-copy all_gather); GPU builds only, where such a map can exist.
  if (comm->topology_.AnyPeerInOtherProcess() && std::string(PlatformName()) != "host")
    XCCL_TRY(StartImportService());
  // The collectives say what they carve of a device window, the transport maps it, and the device
  // engine (GPU builds) runs its kernels over it.
  WindowGeometry geometry;
  XCCL_TRY(PlanDeviceWindow(params, comm->topology_, &geometry));
  XCCL_TRY(CreateNodeTransport(comm->bootstrap_.get(), comm->topology_, params, geometry,
                               config.timeout_ms, &comm->transport_));
  XCCL_TRY(CreateDeviceEngine(params, comm->topology_, geometry, *comm->transport_,
                              &comm->device_engine_));
  XCCL_INFO(kLogInit,
            "comm %s rank %d nranks %d device %d platform %s transport %s queues %d - Init "
            "COMPLETE",
            config.name.empty() ? "-" : config.name.c_str(), rank, nranks, device, PlatformName(),
            comm->transport_->name(), comm->transport_->queue_count());
  *out = std::move(comm);
  return xcclSuccess;
}

Communicator::~Communicator() { ReleaseDeferred(); }

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
