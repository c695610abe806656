// One round of verdicts over the bootstrap, for the steps of a collective setup (mapping
// windows, probing peers): every rank says whether its part succeeded and learns the lowest
// rank whose part failed. Every rank calls it whatever happened locally, so that no rank waits
// in the round for one that gave up, and all of them fail together.
#pragma once

#include "transport/bootstrap/bootstrap.h"
#include "xccl.h"

namespace xccl {

// *first_failed: the lowest rank whose `mine_ok` was false, or -1 when every part succeeded.
// Fails only when the round itself does (a peer gone, the deadline).
xcclResult_t ExchangeVerdicts(Bootstrap* bootstrap, bool mine_ok, int* first_failed);

}  // namespace xccl
