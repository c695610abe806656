// Communicator's making and end (docs/ARCHITECTURE.md, "Communicator creation"): the API layer
// assembles the layers below it (bootstrap, topology, transport, device engine) into one, and
// is where the device engine's type is known for its end.
#include <chrono>
#include <string>

#include "base/error.h"
#include "base/logging.h"
#include "base/params.h"
#include "collectives/collective_slots.h"
#include "collectives/device_engine.h"
#include "comm/communicator.h"
#include "comm/shared_settings.h"
#include "comm/topology_exchange.h"
#include "fused/fused_slots.h"
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
  // Each phase's time, for XCCL_DEBUG=INFO's init line (what a large world spends where).
  const auto started = std::chrono::steady_clock::now();
  std::string phases;
  auto phase = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    phases += " " + std::string(name) + " " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count()) +
              " ms";
  };
  XCCL_TRY(Bootstrap::Init(id, rank, nranks, config.timeout_ms, &comm->bootstrap_,
                           params.socket_ifname));
  phase("bootstrap");
  // The shared settings first: the grouping into nodes depends on one of them.
  XCCL_TRY(RequireSharedSettings(comm->bootstrap_.get(), params));
  XCCL_TRY(ExchangeTopology(comm->bootstrap_.get(), device, params, &comm->topology_));
  phase("topology");
  // Peers of other processes on this node may ask this process to map their xcclMemAlloc
  // memory (zero-copy all_gather); GPU builds only, where such a map can exist.
  if (comm->topology_.AnyPeerInOtherProcess() && std::string(PlatformName()) != "host")
    XCCL_TRY(StartImportService());
  // Every op asks for its control slots and the collectives say what they carve of a device
  // window; the transport maps the windows, and the device engine (GPU builds) runs its kernels
  // over them (docs/ARCHITECTURE.md, "Control slots").
  WindowGeometry geometry;
  SlotMap& slots = comm->slots_;
  XCCL_TRY(ReserveCollectiveSlots(nranks, &slots));
  XCCL_TRY(ReserveFusedSlots(nranks, &slots));
  XCCL_TRY(PlanDeviceWindow(params, comm->topology_, &slots, &geometry));
  slots.Lay();
  geometry.slot_count = slots.end();
  geometry.signalled_slots = slots.signalled_end();
  XCCL_TRY(CreateTransports(comm->bootstrap_.get(), comm->topology_, params, geometry,
                            config.timeout_ms, &comm->transport_));
  phase("transports");
  XCCL_TRY(CreateDeviceEngine(params, comm->topology_, geometry, slots, *comm->transport_,
                              &comm->device_engine_));
  phase("engine");
  XCCL_INFO(kLogInit,
            "comm %s rank %d nranks %d device %d platform %s transport %s queues %d - Init "
            "COMPLETE (after:%s)",
            config.name.empty() ? "-" : config.name.c_str(), rank, nranks, device, PlatformName(),
            comm->transport_->name(), comm->transport_->queue_count(), phases.c_str());
  *out = std::move(comm);
  return xcclSuccess;
}

Communicator::~Communicator() { ReleaseDeferred(); }

}  // namespace xccl
