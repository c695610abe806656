#include "transport/shm/shm_window.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/logging.h"
#include "base/process_alive.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"

namespace xccl {

namespace {

constexpr size_t kNameBytes = 64;

struct WindowAnnounce {
  char name[kNameBytes];
  // The sizes asked for, before rounding to pages: every rank maps every window with its own
  // size and addresses its inboxes with its own data size, so both must agree exactly.
  uint64_t slot_count;
  uint64_t data_bytes;
  int32_t ok;
  int32_t pad;
};

std::string MakeName(int rank) {
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
    nonce = reinterpret_cast<uintptr_t>(&nonce);
  char name[kNameBytes];
  snprintf(name, sizeof(name), "/xccl-%d-%d-%016llx", static_cast<int>(getpid()), rank,
           static_cast<unsigned long long>(nonce));
  return name;
}

uint32_t* MapObject(const char* name, size_t bytes, bool create, int* err) {
  int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
  if (fd < 0) {
    *err = errno;
    return nullptr;
  }
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    *err = errno;
    close(fd);
    shm_unlink(name);
    return nullptr;
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  *err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    if (create) shm_unlink(name);
    return nullptr;
  }
  return static_cast<uint32_t*>(map);
}

}  // namespace

void RemoveStaleShmObjects() {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    int pid = 0;
    if (sscanf(entry->d_name, "xccl-%d-", &pid) == 1 && pid > 0 && !ProcessAlive(pid)) {
      std::string name = std::string("/") + entry->d_name;
      if (shm_unlink(name.c_str()) == 0)
        XCCL_INFO(kLogPlatform, "removed %s left by dead process %d", name.c_str(), pid);
    }
  }
  closedir(dir);
}

ShmWindows::~ShmWindows() {
  for (uint32_t* map : maps_)
    if (map != nullptr) munmap(map, bytes_);
}

xcclResult_t ShmWindows::Create(Bootstrap* bootstrap, const std::vector<int>& node,
                                size_t slot_count, size_t data_bytes, const char* sized_by,
                                void (*init_slots)(uint32_t*, size_t, void*), void* arg) {
  const int rank = bootstrap->rank();
  const int nranks = bootstrap->nranks();
  const long page = sysconf(_SC_PAGESIZE);
  slots_bytes_ = (slot_count * sizeof(uint32_t) + page - 1) / page * page;
  bytes_ = slots_bytes_ + (data_bytes + page - 1) / page * page;
  maps_.assign(nranks, nullptr);

  std::vector<WindowAnnounce> announce(nranks);
  memset(announce.data(), 0, announce.size() * sizeof(WindowAnnounce));
  std::string name = MakeName(rank);
  int err = 0;
  maps_[rank] = MapObject(name.c_str(), bytes_, /*create=*/true, &err);
  if (maps_[rank] != nullptr) {
    init_slots(maps_[rank], slot_count, arg);
    snprintf(announce[rank].name, kNameBytes, "%s", name.c_str());
    announce[rank].slot_count = slot_count;
    announce[rank].data_bytes = data_bytes;
    announce[rank].ok = 1;
  } else {
    XCCL_WARN(kLogPlatform, "shm_open/mmap of %s failed: %s", name.c_str(), strerror(err));
  }
  // Even a rank that failed takes part in both rounds, so that no peer waits for it.
  XCCL_TRY(bootstrap->AllGather(announce.data(), sizeof(WindowAnnounce)));
  // Every rank sees every size, so where two differ all of them refuse, before anyone maps
  // (still taking part in the verdict round below, as a rank that failed to create does).
  int odd = -1;
  for (int r = 0; r < nranks && odd < 0; ++r)
    if (announce[r].ok &&
        (announce[r].slot_count != slot_count || announce[r].data_bytes != data_bytes))
      odd = r;
  int mapped_all = odd < 0 ? 1 : 0;
  // One warning per rank, not one per failed mapping: at hundreds of ranks in one process the
  // mapping limit fails most of them, and a line each would bury the error that follows.
  int unmapped = 0, first_unmapped = -1, first_err = 0;
  for (int r : node) {
    if (odd >= 0) break;
    if (r == rank) continue;
    if (!announce[r].ok) {
      mapped_all = 0;
      continue;
    }
    maps_[r] = MapObject(announce[r].name, bytes_, /*create=*/false, &err);
    if (maps_[r] == nullptr) {
      if (unmapped++ == 0) {
        first_unmapped = r;
        first_err = err;
      }
      mapped_all = 0;
    }
  }
  if (unmapped > 0)
    XCCL_WARN(kLogPlatform, "mapping %d of %zu peers' windows failed, first rank %d's (%s): %s",
              unmapped, node.size() - 1, first_unmapped, announce[first_unmapped].name,
              strerror(first_err));
  int failed = -1;
  const xcclResult_t exchanged =
      ExchangeVerdicts(bootstrap, mapped_all && announce[rank].ok, &failed);
  if (announce[rank].ok) shm_unlink(name.c_str());  // every peer holds its mapping by now
  XCCL_TRY(exchanged);
  if (odd >= 0)
    return Fail(xcclInvalidUsage,
                "rank %d's shared-memory window holds %llu data bytes, this rank's (%d) %zu: %s "
                "must be the same on every rank",
                odd, static_cast<unsigned long long>(announce[odd].data_bytes), rank, data_bytes,
                sized_by);
  if (failed >= 0)
    return Fail(xcclSystemError,
                "rank %d could not create or map the shared-memory control windows (see its "
                "log: /dev/shm full or not writable, or, with many ranks in one process, each "
                "mapping every rank's window, the mapping limit vm.max_map_count reached)",
                failed);
  return xcclSuccess;
}

}  // namespace xccl
