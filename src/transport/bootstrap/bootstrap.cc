// The public entry points of the bootstrap: Bootstrap::CreateUniqueId, which starts the root,
// and Bootstrap::Init, which joins the rendezvous (bootstrap_join.cc).
#include "transport/bootstrap/bootstrap.h"

#include <sys/socket.h>

#include <exception>
#include <string>
#include <utility>

#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap_join.h"
#include "transport/bootstrap/bootstrap_root.h"
#include "transport/bootstrap/bootstrap_secret.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace xccl {

using bootstrap_internal::InitImpl;
using bootstrap_internal::RandomBytes;
using bootstrap_internal::StartRoot;
using bootstrap_internal::ToSecret;

xcclResult_t Bootstrap::CreateUniqueId(xcclUniqueId* id, const Params& params) {
  if (id == nullptr) return Fail(xcclInvalidArgument, "xcclGetUniqueId: null id");
  try {
    UniqueIdContents contents{};
    XCCL_TRY(RandomBytes(contents.secret, sizeof(contents.secret)));
    if (!params.comm_id.empty()) {
      if (ParseHostPort(params.comm_id, &contents.root_addr) != xcclSuccess) {
        return Fail(xcclInvalidArgument, "XCCL_COMM_ID=%s: %s", params.comm_id.c_str(),
                    ThreadLastError().c_str());
      }
      contents.rank0_is_root = true;
      EncodeUniqueId(contents, id);
      return xcclSuccess;
    }
    sockaddr_storage addr{};
    std::string ifname;
    XCCL_TRY(FindInterfaceAddress(params.socket_ifname, &addr, &ifname));
    Socket listener;
    XCCL_TRY(Socket::Listen(addr, &listener));
    XCCL_TRY(listener.LocalAddress(&contents.root_addr));
    XCCL_INFO(kLogBootstrap, "bootstrap: unique id with root at %s (interface %s)",
              FormatAddress(contents.root_addr).c_str(), ifname.c_str());
    // Until the first rank arrives, the root can only wait as long as any rank would.
    XCCL_TRY(
        StartRoot(std::move(listener), ToSecret(contents.secret), Deadline(params.timeout_ms)));
    EncodeUniqueId(contents, id);
    return xcclSuccess;
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "xcclGetUniqueId: %s", e.what());
  }
}

xcclResult_t Bootstrap::Init(const xcclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                             std::unique_ptr<Bootstrap>* out, const std::string& socket_ifname) {
  try {
    return InitImpl(id, rank, nranks, timeout_ms, socket_ifname, out);
  } catch (const std::exception& e) {
    return Fail(xcclSystemError, "bootstrap: rank %d: %s", rank, e.what());
  }
}

}  // namespace xccl
