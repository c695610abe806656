// The launch gate every collective passes at its start and once its kernels are enqueued
// (Transport::PassLaunchGate; docs/ARCHITECTURE.md, "Ranks sharing a GPU").
#pragma once

#include "core/communicator.h"
#include "core/failure.h"
#include "xccl.h"

namespace xccl {

inline xcclResult_t PassLaunchGate(Communicator* comm, const char* op, xcclStream_t stream) {
  PlatformFailure failure;
  if (comm->transport()->PassLaunchGate(stream, &failure) == xcclSuccess) return xcclSuccess;
  return comm->RecordFailure(op, failure);
}

}  // namespace xccl
