// A fused op's create is collective (docs/ARCHITECTURE.md, "Adding a fused op"): every rank's
// request (a plain struct: shape, types, mode) and whether its local steps succeeded are
// gathered, so that every rank fails together when one failed or asked for another op, instead
// of failing alone and leaving its peers to their deadline at the first call.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// `same(a, b)`: whether two requests ask for the same op; `describe(r)`: one request in words;
// `must_match`: what every rank must pass alike, for the message. Returns this rank's own
// failure (`mine`) unchanged: it speaks for itself.
template <typename Request, typename Same, typename Describe>
xcclResult_t AgreeOnCreate(Communicator* comm, const char* op, const Request& request,
                           xcclResult_t mine, Same same, Describe describe,
                           const char* must_match) {
  static_assert(std::is_trivially_copyable<Request>::value, "a request goes over the wire");
  struct Entry {
    int32_t ok;
    Request request;
  };
  const int rank = comm->rank();
  std::vector<Entry> entries(comm->nranks());
  std::memset(entries.data(), 0, entries.size() * sizeof(Entry));
  entries[rank].ok = mine == xcclSuccess ? 1 : 0;
  entries[rank].request = request;
  XCCL_TRY(comm->bootstrap()->AllGather(entries.data(), sizeof(Entry)));
  if (mine != xcclSuccess) return xcclSuccess;
  for (int r = 0; r < comm->nranks(); ++r)
    if (!entries[r].ok)
      return Fail(xcclRemoteError, "%s: rank %d could not create its part of the op", op, r);
  for (int r = 0; r < comm->nranks(); ++r)
    if (!same(entries[r].request, request))
      return Fail(xcclInvalidUsage,
                  "%s: the ranks disagree on the op: rank %d asked for %s, this rank (%d) for %s; "
                  "every rank must pass the same %s",
                  op, r, describe(entries[r].request).c_str(), rank, describe(request).c_str(),
                  must_match);
  return xcclSuccess;
}

}  // namespace xccl
