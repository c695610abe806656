#include "collectives/region/inboxes.h"

#include <algorithm>

namespace xccl {

Inboxes PlanInboxes(Communicator* comm) {
  const Transport* transport = comm->transport();
  Inboxes inboxes;
  inboxes.slice = transport->slice_bytes();
  // Operations close with a barrier exactly where a device engine runs them
  // (EndQueuedOperation).
  inboxes.by_parity = comm->device_engine() == nullptr;
  const size_t piece = inboxes.by_parity ? inboxes.slice / 2 : inboxes.slice;
  inboxes.piece_limit = std::max<size_t>(std::min(piece, transport->region_put_limit()), 1);
  return inboxes;
}

}  // namespace xccl
