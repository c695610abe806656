// The rendezvous secret (the random half of a unique id), random bytes, and the registry of
// the ids this process has used, which refuses an id's reuse.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "transport/bootstrap/bootstrap_wire.h"
#include "xccl.h"

namespace xccl {
namespace bootstrap_internal {

using Secret = std::array<uint8_t, wire::kSecretBytes>;

Secret ToSecret(const uint8_t* p);

// Compares without an early exit, so response timing says nothing about a guessed prefix.
bool SecretEquals(const Secret& a, const uint8_t* b);

xcclResult_t RandomBytes(void* out, size_t bytes);

// xcclInvalidUsage (with a message) when this process already claimed (secret, rank) or the
// id's root has finished.
xcclResult_t ClaimId(const Secret& secret, int rank);
// The id's rendezvous is over: every later ClaimId of it fails.
void MarkConsumed(const Secret& secret);

}  // namespace bootstrap_internal
}  // namespace xccl
