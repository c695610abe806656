#include "transport/peer_imports.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "base/logging.h"
#include "base/repeat_limiter.h"
#include "base/topology.h"
#include "platform/shareable_memory.h"
#include "transport/allocation_imports.h"
#include "transport/bootstrap/socket.h"

namespace xccl {

namespace {

constexpr uint32_t kMagic = 0x78696d70;  // "ximp"
enum Op : uint32_t { kImport = 1, kRelease = 2 };

struct ImportRequest {
  uint32_t magic;
  uint32_t op;
  uint64_t exporter_token;
  uint64_t serial;
  int32_t device;  // the serving process's device to map on
  int32_t pad;
  ShareableExport exported;
};

struct ImportReply {
  int32_t ok;
  int32_t pad;
  uint64_t base;
};

sockaddr_storage ServiceAddress(uint64_t token) {
  char name[64];
  snprintf(name, sizeof(name), "xccl-imports-%016llx", static_cast<unsigned long long>(token));
  return AbstractUnixAddress(name);
}

void Serve(Socket connection) {
  const Deadline deadline(2000);
  ImportRequest request;
  if (!connection.RecvAll(&request, sizeof(request), deadline).ok() || request.magic != kMagic)
    return;
  ImportReply reply{0, 0, 0};
  if (request.op == kImport) {
    void* base = nullptr;
    if (ImportShareable(request.exporter_token, request.serial, request.exported, request.device,
                        &base) == xcclSuccess) {
      reply.ok = 1;
      reply.base = reinterpret_cast<uintptr_t>(base);
    }
  } else if (request.op == kRelease) {
    ReleaseImported(request.exporter_token, request.serial, request.device);
    reply.ok = 1;
  }
  (void)connection.SendAll(&reply, sizeof(reply), deadline);
}

void ServiceLoop(Socket listener) {
  while (true) {
    Socket connection;
    sockaddr_storage from;
    const IoStatus st = listener.Accept(Deadline(1000), &connection, &from);
    if (st.ok()) Serve(std::move(connection));  // requests are rare and short: one at a time
  }
}

enum class Answer { kMapped, kRefused, kSilent };

// One round trip to the service of process `token`: kRefused where it answered no (it says why
// in its own log), kSilent where it could not be reached or did not answer in time.
Answer Ask(uint64_t token, const ImportRequest& request, const Deadline& deadline,
           ImportReply* reply) {
  Socket s;
  if (!Socket::Connect(ServiceAddress(token), deadline, &s).ok() ||
      !s.SendAll(&request, sizeof(request), deadline).ok() ||
      !s.RecvAll(reply, sizeof(*reply), deadline).ok())
    return Answer::kSilent;
  return reply->ok == 1 ? Answer::kMapped : Answer::kRefused;
}

using PeerKey = std::tuple<uint64_t, uint64_t, int>;  // serial, peer token, peer device

struct Cache {
  std::mutex mutex;
  std::map<PeerKey, char*> at;  // nullptr: the peer does not map it
  pid_t service_pid = 0;
};

Cache& TheCache() {
  static Cache* cache = new Cache();  // never destroyed: frees may come at exit
  return *cache;
}

}  // namespace

xcclResult_t StartImportService() {
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.service_pid == getpid()) return xcclSuccess;
  if (c.service_pid != 0) c.at.clear();  // a forked child: its parent's maps are not its own
  Socket listener;
  const IoStatus st = Socket::TryListen(ServiceAddress(ProcessToken()), &listener);
  if (!st.ok())
    return Fail(xcclSystemError, "cannot start the zero-copy import service: %s",
                st.Describe().c_str());
  std::thread(ServiceLoop, std::move(listener)).detach();
  c.service_pid = getpid();
  return xcclSuccess;
}

char* PeerAddressOf(const UserAllocation& allocation, uint64_t peer_token, int peer_device,
                    int64_t timeout_ms) {
  Cache& c = TheCache();
  const PeerKey key(allocation.serial, peer_token, peer_device);
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.at.find(key);
    if (it != c.at.end()) return it->second;
  }
  ImportRequest request;
  memset(&request, 0, sizeof(request));
  request.magic = kMagic;
  request.op = kImport;
  request.exporter_token = ProcessToken();
  request.serial = allocation.serial;
  request.device = peer_device;
  ImportReply reply{0, 0, 0};
  char* base = nullptr;
  const Answer answer = ExportShareable(allocation.base, &request.exported) == xcclSuccess
                            ? Ask(peer_token, request, Deadline(timeout_ms), &reply)
                            : Answer::kRefused;
  if (answer == Answer::kMapped) {
    base = reinterpret_cast<char*>(static_cast<uintptr_t>(reply.base));
  } else {
    static RepeatLimiter refusals;
    uint64_t dropped = 0;
    if (refusals.Admit(&dropped))
      XCCL_WARN(kLogAll,
                "zero-copy: a peer process (token %016llx) did not map allocation %llu: %s (%llu "
                "more such since the last line)",
                static_cast<unsigned long long>(peer_token),
                static_cast<unsigned long long>(allocation.serial),
                answer == Answer::kSilent ? "no answer in time" : "it refused, its log says why",
                static_cast<unsigned long long>(dropped));
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  c.at[key] = base;
  return base;
}

void ReleasePeerImports(uint64_t serial) {
  Cache& c = TheCache();
  std::vector<PeerKey> mapped;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.at.lower_bound(PeerKey(serial, 0, INT32_MIN));
         it != c.at.end() && std::get<0>(it->first) == serial;) {
      if (it->second != nullptr) mapped.push_back(it->first);
      it = c.at.erase(it);
    }
  }
  for (const PeerKey& key : mapped) {
    ImportRequest request;
    memset(&request, 0, sizeof(request));
    request.magic = kMagic;
    request.op = kRelease;
    request.exporter_token = ProcessToken();
    request.serial = serial;
    request.device = std::get<2>(key);
    ImportReply reply{0, 0, 0};
    (void)Ask(std::get<1>(key), request, Deadline(1000), &reply);  // a peer gone has no map
  }
}

}  // namespace xccl
