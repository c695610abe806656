// The RDMA ports the ib backend may use: XCCL_IB_HCA in NCCL_IB_HCA's syntax (comma-separated
// device-name prefixes, each optionally ":port"; a leading '^' excludes the listed ones, then a
// leading '=' makes the names exact) over every ACTIVE port of every device the library lists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/net/ib_verbs_loader.h"

namespace xccl {

struct HcaSpec {
  struct Entry {
    std::string name;
    int port = -1;  // -1: any port
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;  // empty: every device

  bool Matches(const std::string& device, int port) const;
};

// False with *why on a malformed spec ("mlx5_0:x": a port is a number from 1).
bool ParseHcaSpec(const std::string& text, HcaSpec* out, std::string* why);

// One opened port: the device's context and protection domain, shared by every comm on it.
class IbPort {
 public:
  IbPort(std::shared_ptr<const IbVerbs> verbs, ibv_context* context, ibv_pd* pd, std::string name,
         int port, const ibv_port_attr& attr, int gid_index);
  ~IbPort();
  IbPort(const IbPort&) = delete;
  IbPort& operator=(const IbPort&) = delete;

  const IbVerbs& verbs() const { return *verbs_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  int port() const { return port_; }
  const ibv_port_attr& attr() const { return attr_; }
  // The GID this port addresses peers by where they route by GID (XCCL_IB_GID_INDEX).
  int gid_index() const { return gid_index_; }
  // "fakeib0 port 1", for messages.
  std::string Describe() const;
  // Asks the device again: false with *state_name ("DOWN") when the port is no longer ACTIVE.
  bool StillActive(std::string* state_name) const;

 private:
  std::shared_ptr<const IbVerbs> verbs_;
  ibv_context* context_;
  ibv_pd* pd_;
  std::string name_;
  int port_;
  ibv_port_attr attr_;
  int gid_index_;
};

// Opens every device and keeps each ACTIVE port that `hca` (XCCL_IB_HCA) allows and whose GID
// table holds `gid_index` (XCCL_IB_GID_INDEX), in the library's order. False with *why naming
// what was missing: no device at all, or no port that qualifies (listing what was found).
bool OpenIbPorts(const std::shared_ptr<const IbVerbs>& verbs, const std::string& hca, int gid_index,
                 std::vector<std::shared_ptr<IbPort>>* out, std::string* why);

const char* PortStateName(ibv_port_state state);

}  // namespace xccl
