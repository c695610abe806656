#include "transport/shm/peer_copy.h"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/failure.h"

namespace xccl {

namespace {

xcclResult_t Describe(int err, int peer, const char* op, PlatformFailure* failure) {
  if (err == ESRCH)
    return SetFailure(failure, xcclRemoteError, peer, "rank %d has exited (%s: no such process)",
                      peer, op);
  if (err == EPERM)
    return SetFailure(failure, xcclSystemError, peer,
                      "%s into rank %d is not permitted (EPERM): ranks that are processes need "
                      "cross-memory attach; allow ptrace between them or run ranks as threads "
                      "(xcclCommInitAll)",
                      op, peer);
  return SetFailure(failure, xcclRemoteError, peer, "%s with rank %d failed: %s%s", op, peer,
                    strerror(err),
                    err == EFAULT ? " (a send or receive buffer is not valid memory)" : "");
}

}  // namespace

xcclResult_t CopyToProcess(pid_t pid, int peer, void* remote_dst, const void* src, size_t bytes,
                           const std::function<xcclResult_t(PlatformFailure*)>& stop,
                           PlatformFailure* failure) {
  // Pieces also keep the kernel's page pinning bounded and report a failure without first
  // walking gigabytes.
  size_t done = 0;
  while (done < bytes) {
    if (done > 0) XCCL_TRY(stop(failure));
    size_t chunk = std::min(bytes - done, kCopyPieceBytes);
    if (pid == 0) {
      memcpy(static_cast<char*>(remote_dst) + done, static_cast<const char*>(src) + done, chunk);
      done += chunk;
      continue;
    }
    iovec local{const_cast<char*>(static_cast<const char*>(src)) + done, chunk};
    iovec remote{static_cast<char*>(remote_dst) + done, chunk};
    ssize_t written = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (written < 0) {
      if (errno == EINTR) continue;
      return Describe(errno, peer, "process_vm_writev", failure);
    }
    if (written == 0) return Describe(EFAULT, peer, "process_vm_writev", failure);
    done += static_cast<size_t>(written);
  }
  return xcclSuccess;
}

xcclResult_t ProbeCrossProcessCopy(pid_t pid, int peer, const void* remote_src,
                                   const void* expected, size_t bytes, PlatformFailure* failure) {
  std::vector<char> seen(bytes);
  iovec local{seen.data(), bytes};
  iovec remote{const_cast<void*>(remote_src), bytes};
  ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got < 0) return Describe(errno, peer, "process_vm_readv", failure);
  if (static_cast<size_t>(got) != bytes || memcmp(seen.data(), expected, bytes) != 0) {
    return SetFailure(failure, xcclSystemError, peer,
                      "cross-process copy probe with rank %d read the wrong bytes: the ranks do "
                      "not share a process namespace",
                      peer);
  }
  return xcclSuccess;
}

void AllowCrossProcessCopies() {
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  // EINVAL without Yama: harmless
#endif
}

}  // namespace xccl
