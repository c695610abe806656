#include "collectives/barrier/barrier.h"

#include "base/error.h"
#include "collectives/barrier/barrier_slots.h"
#include "collectives/device_engine.h"
#include "collectives/launch_gate.h"

namespace xccl {

namespace {

// `from`: the barrier's slots (barrier_slots.h).
xcclResult_t SignalsThenWaits(Communicator* comm, const SlotRange& from, uint32_t epoch,
                              const Deadline& deadline, PlatformFailure* failure) {
  Transport* transport = comm->transport();
  const int rank = comm->rank(), nranks = comm->nranks();
  for (int step = 1; step < nranks; ++step)
    transport->connection((rank + step) % nranks).Signal(from.at(rank), epoch);
  for (int step = 1; step < nranks; ++step) {
    const int peer = (rank - step + nranks) % nranks;
    XCCL_TRY(
        transport->WaitSlot(from.at(peer), epoch, peer, "barrier", deadline, nullptr, failure));
  }
  // Signals to other nodes are queued on the proxy: out before the call returns.
  return transport->Flush(deadline, failure);
}

}  // namespace

xcclResult_t Barrier(Communicator* comm, xcclStream_t stream) {
  DeviceEngine* engine = comm->device_engine();
  SlotRange from;
  if (engine == nullptr) XCCL_TRY(kBarrierSlots.Find(comm->slots(), &from));
  LaunchGate gate(comm, "xcclBarrier");
  XCCL_TRY(gate.Enter(stream));
  const uint32_t epoch = comm->NextEpoch();
  const Deadline deadline(comm->timeout_ms());
  Transport* transport = comm->transport();
  PlatformFailure failure;
  xcclResult_t result = transport->BeginOperation(stream, /*queued=*/false, &failure);
  if (result == xcclSuccess) {
    result = engine != nullptr
                 ? engine->barrier->Run(*transport, /*advance_epoch=*/true, stream, &failure)
                 : SignalsThenWaits(comm, from, epoch, deadline, &failure);
  }
  if (result != xcclSuccess) return comm->RecordFailure("xcclBarrier", failure);
  return gate.Leave();
}

}  // namespace xccl
