#include "collectives/region/inboxes.h"

#include <algorithm>

namespace xccl {

Inboxes PlanInboxes(Communicator* comm) {
  Inboxes inboxes;
  inboxes.slice = comm->transport()->slice_bytes();
  // Operations close with a barrier exactly where a device engine runs them
  // (EndQueuedOperation).
  inboxes.by_parity = comm->device_engine() == nullptr;
  inboxes.piece_limit = PieceLimit(*comm->transport(), inboxes.by_parity);
  return inboxes;
}

size_t PieceLimit(const Transport& transport, bool by_parity) {
  const size_t slice = transport.slice_cap_bytes();
  if (slice == 0) return 0;  // a GPU communicator without inboxes (every call in place)
  const size_t piece = by_parity ? slice / 2 : slice;
  return std::max<size_t>(std::min(piece, transport.region_put_limit()), 1);
}

size_t RegionBytesFor(Communicator* comm, size_t bytes) {
  const Inboxes inboxes = PlanInboxes(comm);
  const size_t piece = std::min(inboxes.piece_limit, bytes);
  return inboxes.by_parity ? 2 * piece : piece;
}

}  // namespace xccl
