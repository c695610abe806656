#include "transport/net/ib_devices.h"

#include <cstdlib>

namespace xccl {

const char* PortStateName(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

bool HcaSpec::Matches(const std::string& device, int port) const {
  bool listed = entries.empty();
  for (const Entry& e : entries) {
    const bool name_ok = exact ? device == e.name : device.compare(0, e.name.size(), e.name) == 0;
    if (name_ok && (e.port < 0 || e.port == port)) listed = true;
  }
  if (entries.empty()) return true;
  return exclude ? !listed : listed;
}

bool ParseHcaSpec(const std::string& text, HcaSpec* out, std::string* why) {
  HcaSpec spec;
  size_t at = 0;
  if (at < text.size() && text[at] == '^') spec.exclude = true, ++at;
  if (at < text.size() && text[at] == '=') spec.exact = true, ++at;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    HcaSpec::Entry entry;
    const size_t colon = item.find(':');
    entry.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      char* tail = nullptr;
      const long port = strtol(item.c_str() + colon + 1, &tail, 10);
      if (colon + 1 == item.size() || *tail != '\0' || port < 1 || port > 255) {
        *why = "XCCL_IB_HCA=" + text + ": \"" + item + "\" has no port number from 1 to 255";
        return false;
      }
      entry.port = static_cast<int>(port);
    }
    if (entry.name.empty()) {
      *why = "XCCL_IB_HCA=" + text + ": \"" + item + "\" names no device";
      return false;
    }
    spec.entries.push_back(entry);
  }
  *out = spec;
  return true;
}

IbPort::IbPort(std::shared_ptr<const IbVerbs> verbs, ibv_context* context, ibv_pd* pd,
               std::string name, int port, const ibv_port_attr& attr, int gid_index)
    : verbs_(std::move(verbs)),
      context_(context),
      pd_(pd),
      name_(std::move(name)),
      port_(port),
      attr_(attr),
      gid_index_(gid_index) {}

IbPort::~IbPort() {
  verbs_->dealloc_pd(pd_);
  verbs_->close_device(context_);
}

std::string IbPort::Describe() const { return name_ + " port " + std::to_string(port_); }

bool IbPort::StillActive(std::string* state_name) const {
  ibv_port_attr attr;
  if (verbs_->QueryPort(context_, static_cast<uint8_t>(port_), &attr) != 0) {
    *state_name = "unknown (ibv_query_port failed)";
    return false;
  }
  *state_name = PortStateName(attr.state);
  return attr.state == IBV_PORT_ACTIVE;
}

bool OpenIbPorts(const std::shared_ptr<const IbVerbs>& verbs, const std::string& hca, int gid_index,
                 std::vector<std::shared_ptr<IbPort>>* out, std::string* why) {
  HcaSpec spec;
  if (!ParseHcaSpec(hca, &spec, why)) return false;
  int count = 0;
  ibv_device** list = verbs->get_device_list(&count);
  if (list == nullptr || count == 0) {
    if (list != nullptr) verbs->free_device_list(list);
    *why = "no RDMA device (" + verbs->path + " lists none)";
    return false;
  }
  std::string seen;  // what was found and why it was not taken, for the message
  std::vector<std::shared_ptr<IbPort>> ports;
  for (int d = 0; d < count; ++d) {
    const char* raw_name = verbs->get_device_name(list[d]);
    const std::string name = raw_name != nullptr ? raw_name : "?";
    ibv_context* context = verbs->open_device(list[d]);
    if (context == nullptr) {
      seen += (seen.empty() ? "" : ", ") + name + " (cannot be opened)";
      continue;
    }
    // Ports are numbered from 1; a query past the last fails, which ends the scan.
    bool kept_context = false;
    for (int p = 1; p <= 255; ++p) {
      ibv_port_attr attr;
      if (verbs->QueryPort(context, static_cast<uint8_t>(p), &attr) != 0) break;
      const std::string label = name + " port " + std::to_string(p);
      if (!spec.Matches(name, p)) {
        seen += (seen.empty() ? "" : ", ") + label + " (not in XCCL_IB_HCA)";
        continue;
      }
      if (attr.state != IBV_PORT_ACTIVE) {
        seen += (seen.empty() ? "" : ", ") + label + " (" + PortStateName(attr.state) + ")";
        continue;
      }
      if (gid_index >= attr.gid_tbl_len) {
        seen += (seen.empty() ? "" : ", ") + label + " (" + std::to_string(attr.gid_tbl_len) +
                " GIDs, XCCL_IB_GID_INDEX=" + std::to_string(gid_index) + ")";
        continue;
      }
      // Each port gets a context of its own, so that a port's comms own everything they use.
      ibv_context* port_context = kept_context ? verbs->open_device(list[d]) : context;
      ibv_pd* pd = port_context != nullptr ? verbs->alloc_pd(port_context) : nullptr;
      if (pd == nullptr) {
        seen += (seen.empty() ? "" : ", ") + label + " (no protection domain)";
        if (port_context != nullptr && port_context != context) verbs->close_device(port_context);
        continue;
      }
      kept_context = kept_context || port_context == context;
      ports.push_back(std::make_shared<IbPort>(verbs, port_context, pd, name, p, attr, gid_index));
    }
    if (!kept_context) verbs->close_device(context);
  }
  verbs->free_device_list(list);
  if (ports.empty()) {
    *why = "no active RDMA port matching XCCL_IB_HCA=" + (hca.empty() ? "(any)" : hca) +
           " (found: " + seen + ")";
    return false;
  }
  *out = std::move(ports);
  return true;
}

}  // namespace xccl
