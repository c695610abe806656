#include "harness/node_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace xccl_perf {

bool ParseNamespaces(const char* text, std::vector<std::string>* names) {
  names->clear();
  std::string current;
  for (const char* c = text;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (current.empty() || current.find('/') != std::string::npos) return false;
      names->push_back(current);
      current.clear();
      if (*c == '\0') return true;
    } else {
      current += *c;
    }
  }
}

bool EnterNodeNamespace(const std::vector<std::string>& names, int proc, int procs) {
  if (names.empty()) return true;
  const std::string& name = names[static_cast<size_t>(proc) * names.size() / procs];
  const std::string path = "/var/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "--netns: cannot open %s (made by `ip netns add %s`?): %s\n", path.c_str(),
            name.c_str(), strerror(errno));
    return false;
  }
  const bool entered = setns(fd, CLONE_NEWNET) == 0;
  const int setns_errno = errno;
  close(fd);
  if (!entered) {
    fprintf(stderr, "--netns: cannot enter %s (root needed): %s\n", name.c_str(),
            strerror(setns_errno));
    return false;
  }
  // xccl tells nodes apart by hostname and boot id: a UTS namespace gives this one its own name.
  if (unshare(CLONE_NEWUTS) != 0 || sethostname(name.c_str(), name.size()) != 0) {
    fprintf(stderr, "--netns: cannot name the host of %s: %s\n", name.c_str(), strerror(errno));
    return false;
  }
  return true;
}

}  // namespace xccl_perf
