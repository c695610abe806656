// Secrets, random bytes and the registry of the unique ids used in this process.
#include "transport/bootstrap/bootstrap_secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "base/error.h"

namespace xccl {
namespace bootstrap_internal {

Secret ToSecret(const uint8_t* p) {
  Secret s;
  memcpy(s.data(), p, s.size());
  return s;
}

bool SecretEquals(const Secret& a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

xcclResult_t RandomBytes(void* out, size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(xcclSystemError, "getrandom: %s", strerror(errno));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return xcclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Ids used in this process: a second Init of one (id, rank) must fail at once rather than
// confuse a rendezvous, and an id whose root has finished can never complete again.

namespace {

struct IdRegistry {
  std::mutex mu;
  std::set<std::pair<Secret, int>> claimed;
  std::set<Secret> consumed;
};

// Leaked on purpose: detached root threads may still touch it while the process exits.
IdRegistry& Registry() {
  static IdRegistry* registry = new IdRegistry();
  return *registry;
}

}  // namespace

xcclResult_t ClaimId(const Secret& secret, int rank) {
  IdRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.consumed.count(secret) != 0) {
    return Fail(
        xcclInvalidUsage,
        "bootstrap: unique id already used (its rendezvous root in this process has finished or "
        "given up); every "
        "communicator needs a fresh id from xcclGetUniqueId");
  }
  if (!r.claimed.insert({secret, rank}).second) {
    return Fail(xcclInvalidUsage,
                "bootstrap: unique id already used by rank %d in this process; every "
                "communicator needs a fresh id from xcclGetUniqueId",
                rank);
  }
  return xcclSuccess;
}

void MarkConsumed(const Secret& secret) {
  IdRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.consumed.insert(secret);
}

}  // namespace bootstrap_internal
}  // namespace xccl
