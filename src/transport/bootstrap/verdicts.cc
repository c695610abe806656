#include "transport/bootstrap/verdicts.h"

#include <cstdint>
#include <vector>

#include "base/error.h"

namespace xccl {

xcclResult_t ExchangeVerdicts(Bootstrap* bootstrap, bool mine_ok, int* first_failed) {
  *first_failed = -1;
  std::vector<int32_t> verdicts(bootstrap->nranks(), 0);
  verdicts[bootstrap->rank()] = mine_ok ? 1 : 0;
  XCCL_TRY(bootstrap->AllGather(verdicts.data(), sizeof(int32_t)));
  for (int r = 0; r < bootstrap->nranks() && *first_failed < 0; ++r)
    if (!verdicts[r]) *first_failed = r;
  return xcclSuccess;
}

}  // namespace xccl
