// A test-only verbs provider: exports the ibv_* entry points xccl's loader resolves and fills
// ibv_context's ops (post_send, post_recv, poll_cq), all in this process. One fabric: every
// device, PD, MR, CQ and QP lives in a global registry under one mutex, so threads playing
// ranks on different "nodes" reach each other's QPs. It checks what real verbs check -- the QP
// state machine and each transition's attribute mask, memory keys, bounds and access flags on
// every access, queue depths -- executes RDMA writes at post time (a memcpy into the remote MR)
// and write-with-immediate by consuming the remote QP's oldest posted receive, and completes
// in order. It does not model timing, PCIe ordering, RNR waits (no receive posted fails at once
// with IBV_WC_RNR_RETRY_EXC_ERR), MTU segmentation or congestion. Faults: fake_verbs_control.h.
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ib_fake/fake_verbs_control.h"

// verbs.h turns these names into macros over its inline wrappers; the fake defines the
// exported functions themselves.
#undef ibv_get_device_list
#undef ibv_reg_mr
#undef ibv_query_port

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct FakeQp;

struct Port {
  ibv_port_state state = IBV_PORT_ACTIVE;
  uint16_t lid = 0;
  uint8_t link_layer = IBV_LINK_LAYER_INFINIBAND;
};

struct FakeDevice {
  ibv_device device;  // first: the pointer handed out is the FakeDevice's
  int index = 0;
  std::vector<Port> ports;  // [0] is port 1
};

struct FakeContext {
  ibv_context context;
  FakeDevice* device;
};

struct FakePd {
  ibv_pd pd;
  int users = 0;
};

struct FakeMr {
  ibv_mr mr;
  int access = 0;
};

struct Cqe {
  ibv_wc wc;
  bool send = false;
};

struct FakeCq {
  ibv_cq cq;
  size_t capacity = 0;
  std::deque<Cqe> entries;
  bool overflow = false;
  int users = 0;
};

struct FakeQp {
  ibv_qp qp;
  ibv_qp_cap cap{};
  int port = 0;
  unsigned access = 0;
  uint32_t dest_qpn = 0;
  uint16_t dlid = 0;
  bool is_global = false;
  uint8_t dgid[16] = {};
  uint32_t sq_psn = 0, rq_psn = 0;
  uint32_t sq_used = 0;
  std::deque<uint64_t> recvs;  // posted receives' wr_ids
};

enum class FaultKind { kNone, kRetry, kRemAccess, kFlush, kPortDown };

struct Fabric {
  std::mutex mu;
  bool configured = false;
  std::vector<std::unique_ptr<FakeDevice>> devices;
  std::map<uint32_t, FakeQp*> qps;
  std::map<uint32_t, FakeMr*> by_lkey, by_rkey;
  uint32_t next_qpn = 0x40;
  uint32_t next_key = 0x1000;
  int live = 0;
  long writes = 0;
  std::string last_error;
  FaultKind fault = FaultKind::kNone;
  bool fault_imm_only = false;
  long fault_countdown = 0;
};

Fabric& F() {
  static Fabric* fabric = new Fabric;  // never destroyed: threads may outlive static teardown
  return *fabric;
}

// Records why a verb was refused; returns `err` (also in errno) for the verb to return.
int Refuse(int err, const std::string& why) {
  F().last_error = why;
  errno = err;
  return err;
}

uint16_t LidOf(int device, int port) { return static_cast<uint16_t>(0x10 * (device + 1) + port); }

void GidOf(int device, int port, uint8_t out[16]) {
  memset(out, 0, 16);
  out[0] = 0xfe;
  out[1] = 0x80;
  out[14] = static_cast<uint8_t>(device);
  out[15] = static_cast<uint8_t>(port);
}

bool ConfigureLocked(const std::string& spec) {
  Fabric& f = F();
  if (f.live != 0) return false;
  f.devices.clear();
  size_t at = 0;
  while (at < spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    auto d = std::make_unique<FakeDevice>();
    memset(&d->device, 0, sizeof(d->device));
    const size_t c1 = item.find(':');
    const std::string name = item.substr(0, c1);
    int ports = 1;
    bool eth = false;
    if (c1 != std::string::npos) {
      ports = atoi(item.c_str() + c1 + 1);
      eth = item.find(":eth", c1 + 1) != std::string::npos;
    }
    if (ports < 1 || ports > 8 || name.empty() || name.size() >= sizeof(d->device.name))
      return false;
    d->index = static_cast<int>(f.devices.size());
    snprintf(d->device.name, sizeof(d->device.name), "%s", name.c_str());
    snprintf(d->device.dev_name, sizeof(d->device.dev_name), "uverbs%d", d->index);
    d->device.node_type = IBV_NODE_CA;
    d->device.transport_type = IBV_TRANSPORT_IB;
    d->ports.resize(ports);
    for (int p = 0; p < ports; ++p) {
      d->ports[p].link_layer = eth ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
      d->ports[p].lid = eth ? 0 : LidOf(d->index, p + 1);
    }
    f.devices.push_back(std::move(d));
  }
  f.configured = true;
  return true;
}

bool ParseFault(const std::string& spec) {
  Fabric& f = F();
  f.fault = FaultKind::kNone;
  if (spec.empty()) return true;
  const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos) return false;
  const std::string ops = spec.substr(0, c1), kind = spec.substr(c2 + 1);
  const long n = atol(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
  if ((ops != "write" && ops != "imm") || n < 1) return false;
  FaultKind k;
  if (kind == "retry")
    k = FaultKind::kRetry;
  else if (kind == "rem_access")
    k = FaultKind::kRemAccess;
  else if (kind == "flush")
    k = FaultKind::kFlush;
  else if (kind == "port_down")
    k = FaultKind::kPortDown;
  else
    return false;
  f.fault = k;
  f.fault_imm_only = ops == "imm";
  f.fault_countdown = n;
  return true;
}

void EnsureConfiguredLocked() {
  Fabric& f = F();
  if (f.configured) return;
  const char* devices = getenv("FAKE_IBV_DEVICES");
  if (devices == nullptr || !ConfigureLocked(devices)) ConfigureLocked("fakeib0:1,fakeib1:2");
  const char* fault = getenv("FAKE_IBV_FAULT");
  if (fault != nullptr) ParseFault(fault);
}

FakeDevice* DeviceOf(ibv_context* context) {
  return reinterpret_cast<FakeContext*>(context)->device;
}

Port* PortOf(FakeQp* qp) {
  FakeDevice* d = DeviceOf(qp->qp.context);
  return qp->port >= 1 && qp->port <= static_cast<int>(d->ports.size()) ? &d->ports[qp->port - 1]
                                                                        : nullptr;
}

void Push(FakeCq* cq, const Cqe& e) {
  if (cq->entries.size() >= cq->capacity) {
    cq->overflow = true;  // as a real CQ overrun: the CQ is broken from here on
    return;
  }
  cq->entries.push_back(e);
}

void Complete(FakeQp* qp, bool send, uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode opcode,
              uint32_t byte_len = 0, uint32_t imm = 0, bool with_imm = false) {
  Cqe e;
  memset(&e.wc, 0, sizeof(e.wc));
  e.wc.wr_id = wr_id;
  e.wc.status = status;
  e.wc.opcode = opcode;
  e.wc.byte_len = byte_len;
  e.wc.imm_data = imm;
  e.wc.wc_flags = with_imm ? IBV_WC_WITH_IMM : 0;
  e.wc.qp_num = qp->qp.qp_num;
  e.send = send;
  Push(reinterpret_cast<FakeCq*>(send ? qp->qp.send_cq : qp->qp.recv_cq), e);
}

// Moving to ERR flushes every posted receive (sends complete at their post here).
void ToErrorLocked(FakeQp* qp) {
  qp->qp.state = IBV_QPS_ERR;
  while (!qp->recvs.empty()) {
    Complete(qp, false, qp->recvs.front(), IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
    qp->recvs.pop_front();
  }
}

FakeMr* FindMr(const std::map<uint32_t, FakeMr*>& keys, uint32_t key) {
  auto it = keys.find(key);
  return it == keys.end() ? nullptr : it->second;
}

bool Inside(const FakeMr* mr, uint64_t addr, uint64_t length) {
  const auto begin = reinterpret_cast<uint64_t>(mr->mr.addr);
  return addr >= begin && addr + length <= begin + mr->mr.length && addr + length >= addr;
}

// The responder a write from `qp` reaches: connected back to it, ready to receive, its port up,
// addressed by the LID (InfiniBand) or GID (Ethernet) of its port.
FakeQp* Responder(FakeQp* qp) {
  auto it = F().qps.find(qp->dest_qpn);
  if (it == F().qps.end()) return nullptr;
  FakeQp* r = it->second;
  if ((r->qp.state != IBV_QPS_RTR && r->qp.state != IBV_QPS_RTS) || r->dest_qpn != qp->qp.qp_num)
    return nullptr;
  Port* port = PortOf(r);
  if (port == nullptr || port->state != IBV_PORT_ACTIVE) return nullptr;
  const FakeDevice* d = DeviceOf(r->qp.context);
  if (qp->is_global) {
    uint8_t gid[16];
    GidOf(d->index, r->port, gid);
    if (memcmp(gid, qp->dgid, 16) != 0) return nullptr;
  } else if (port->lid == 0 || port->lid != qp->dlid) {
    return nullptr;
  }
  return r;
}

// One RDMA write (with immediate or not) from `qp`: the status its requester sees.
ibv_wc_status ExecuteWrite(FakeQp* qp, const ibv_send_wr* wr) {
  Fabric& f = F();
  ++f.writes;
  const bool imm = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
  if (f.fault != FaultKind::kNone && (imm || !f.fault_imm_only) && --f.fault_countdown == 0) {
    const FaultKind kind = f.fault;
    f.fault = FaultKind::kNone;
    FakeQp* r = Responder(qp);
    switch (kind) {
      case FaultKind::kRetry:
        return IBV_WC_RETRY_EXC_ERR;
      case FaultKind::kRemAccess:
        if (r != nullptr) ToErrorLocked(r);
        return IBV_WC_REM_ACCESS_ERR;
      case FaultKind::kFlush:
        ToErrorLocked(qp);
        return IBV_WC_WR_FLUSH_ERR;
      case FaultKind::kPortDown:
        PortOf(qp)->state = IBV_PORT_DOWN;
        return IBV_WC_RETRY_EXC_ERR;
      case FaultKind::kNone:
        break;
    }
  }
  Port* port = PortOf(qp);
  if (port == nullptr || port->state != IBV_PORT_ACTIVE) return IBV_WC_RETRY_EXC_ERR;
  FakeQp* r = Responder(qp);
  if (r == nullptr || r->rq_psn != qp->sq_psn) return IBV_WC_RETRY_EXC_ERR;  // no ACK ever comes
  uint64_t length = 0;
  const bool inline_data = (wr->send_flags & IBV_SEND_INLINE) != 0;
  for (int i = 0; i < wr->num_sge; ++i) {
    const ibv_sge& sge = wr->sg_list[i];
    length += sge.length;
    if (inline_data || sge.length == 0) continue;
    FakeMr* mr = FindMr(f.by_lkey, sge.lkey);
    if (mr == nullptr || mr->mr.pd != qp->qp.pd || !Inside(mr, sge.addr, sge.length)) {
      Refuse(EINVAL, "a write's local buffer is outside its lkey's MR");
      return IBV_WC_LOC_PROT_ERR;
    }
  }
  if (inline_data && length > qp->cap.max_inline_data) return IBV_WC_LOC_LEN_ERR;
  // Zero bytes touch no memory: the rkey is not checked (as the IB spec says).
  if (length > 0) {
    FakeMr* mr = FindMr(f.by_rkey, wr->wr.rdma.rkey);
    if (mr == nullptr || mr->mr.pd != r->qp.pd || !Inside(mr, wr->wr.rdma.remote_addr, length) ||
        !(mr->access & IBV_ACCESS_REMOTE_WRITE) || !(r->access & IBV_ACCESS_REMOTE_WRITE)) {
      Refuse(EINVAL, "a write's remote range is outside its rkey's MR or not remote-writable");
      ToErrorLocked(r);  // a responder access error moves the responder to ERR
      return IBV_WC_REM_ACCESS_ERR;
    }
  }
  if (imm && r->recvs.empty()) return IBV_WC_RNR_RETRY_EXC_ERR;
  char* to = reinterpret_cast<char*>(wr->wr.rdma.remote_addr);
  for (int i = 0; i < wr->num_sge; ++i) {
    memcpy(to, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
    to += wr->sg_list[i].length;
  }
  qp->sq_psn = (qp->sq_psn + 1) & 0xffffff;
  r->rq_psn = (r->rq_psn + 1) & 0xffffff;
  if (imm) {
    const uint64_t wr_id = r->recvs.front();
    r->recvs.pop_front();
    Complete(r, false, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
             static_cast<uint32_t>(length), wr->imm_data, true);
  }
  return IBV_WC_SUCCESS;
}

int PostSend(ibv_qp* base, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::lock_guard<std::mutex> lock(F().mu);
  FakeQp* qp = reinterpret_cast<FakeQp*>(base);
  for (; wr != nullptr; wr = wr->next) {
    *bad = wr;
    if (qp->qp.state != IBV_QPS_RTS && qp->qp.state != IBV_QPS_ERR)
      return Refuse(EINVAL, "post_send on a QP not in RTS");
    if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
      return Refuse(EINVAL, "the fake does RDMA writes only");
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge)
      return Refuse(EINVAL, "more SGEs than the QP's max_send_sge");
    if (qp->sq_used >= qp->cap.max_send_wr) return Refuse(ENOMEM, "the send queue is full");
    if (qp->qp.state == IBV_QPS_ERR) {
      ++qp->sq_used;
      Complete(qp, true, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
      continue;
    }
    const ibv_wc_status status = ExecuteWrite(qp, wr);
    if (status != IBV_WC_SUCCESS) {
      ++qp->sq_used;
      Complete(qp, true, wr->wr_id, status, IBV_WC_RDMA_WRITE);  // errors always complete
      ToErrorLocked(qp);
      continue;
    }
    // An unsignalled success frees its slot at once (real queues free it at a later
    // signalled completion).
    if (wr->send_flags & IBV_SEND_SIGNALED) {
      ++qp->sq_used;
      Complete(qp, true, wr->wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, static_cast<uint32_t>(0));
    }
  }
  *bad = nullptr;
  return 0;
}

int PostRecv(ibv_qp* base, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard<std::mutex> lock(F().mu);
  FakeQp* qp = reinterpret_cast<FakeQp*>(base);
  for (; wr != nullptr; wr = wr->next) {
    *bad = wr;
    if (qp->qp.state == IBV_QPS_RESET) return Refuse(EINVAL, "post_recv on a QP in RESET");
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->cap.max_recv_sge)
      return Refuse(EINVAL, "more SGEs than the QP's max_recv_sge");
    if (qp->recvs.size() >= qp->cap.max_recv_wr) return Refuse(ENOMEM, "the receive queue is full");
    if (qp->qp.state == IBV_QPS_ERR) {
      Complete(qp, false, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
      continue;
    }
    qp->recvs.push_back(wr->wr_id);
  }
  *bad = nullptr;
  return 0;
}

int PollCq(ibv_cq* base, int n, ibv_wc* out) {
  std::lock_guard<std::mutex> lock(F().mu);
  FakeCq* cq = reinterpret_cast<FakeCq*>(base);
  if (cq->overflow) return -1;
  int got = 0;
  while (got < n && !cq->entries.empty()) {
    const Cqe& e = cq->entries.front();
    out[got++] = e.wc;
    if (e.send) {
      auto it = F().qps.find(e.wc.qp_num);
      if (it != F().qps.end() && it->second->sq_used > 0) --it->second->sq_used;
    }
    cq->entries.pop_front();
  }
  return got;
}

// The attribute masks real verbs require (and allow) for each RC transition.
struct Transition {
  ibv_qp_state from, to;
  int required, optional;
};
const Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT,
     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH |
         IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH |
         IBV_QP_PATH_MIG_STATE},
};

const char* StateName(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "?";
  }
}

int ModifyLocked(FakeQp* qp, ibv_qp_attr* attr, int mask) {
  if (!(mask & IBV_QP_STATE)) return Refuse(EINVAL, "modify_qp without IBV_QP_STATE");
  const ibv_qp_state from = qp->qp.state, to = attr->qp_state;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
    if (mask != IBV_QP_STATE) return Refuse(EINVAL, "to RESET or ERR takes IBV_QP_STATE alone");
    if (to == IBV_QPS_ERR) {
      ToErrorLocked(qp);
    } else {
      qp->qp.state = IBV_QPS_RESET;
      qp->recvs.clear();
      qp->sq_used = 0;
    }
    return 0;
  }
  const Transition* t = nullptr;
  for (const Transition& c : kTransitions)
    if (c.from == from && c.to == to) t = &c;
  const std::string step = std::string(StateName(from)) + "->" + StateName(to);
  if (t == nullptr) return Refuse(EINVAL, "no transition " + step);
  if ((mask & t->required) != t->required)
    return Refuse(EINVAL, step + ": a required attribute is missing from the mask");
  if (mask & ~(t->required | t->optional))
    return Refuse(EINVAL, step + ": the mask has an attribute this transition does not take");
  const FakeDevice* d = DeviceOf(qp->qp.context);
  if (mask & IBV_QP_PORT) {
    if (attr->port_num < 1 || attr->port_num > d->ports.size())
      return Refuse(EINVAL, step + ": no such port");
    qp->port = attr->port_num;
  }
  if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
    return Refuse(EINVAL, step + ": pkey index out of the table (one entry)");
  if (mask & IBV_QP_ACCESS_FLAGS) qp->access = attr->qp_access_flags;
  if (to == IBV_QPS_RTR) {
    const Port& port = d->ports[qp->port - 1];
    if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)
      return Refuse(EINVAL, step + ": bad path MTU");
    if (attr->ah_attr.port_num != 0 && attr->ah_attr.port_num != qp->port)
      return Refuse(EINVAL, step + ": the address's port is not the QP's");
    if (attr->ah_attr.is_global) {
      if (attr->ah_attr.grh.sgid_index != 0) return Refuse(EINVAL, step + ": no such GID index");
    } else if (port.link_layer == IBV_LINK_LAYER_ETHERNET || attr->ah_attr.dlid == 0) {
      return Refuse(EINVAL, step + ": Ethernet ports need a global route (GRH), IB a LID");
    }
    if (attr->rq_psn > 0xffffff) return Refuse(EINVAL, step + ": PSN over 24 bits");
    qp->dest_qpn = attr->dest_qp_num;
    qp->dlid = attr->ah_attr.dlid;
    qp->is_global = attr->ah_attr.is_global != 0;
    memcpy(qp->dgid, attr->ah_attr.grh.dgid.raw, 16);
    qp->rq_psn = attr->rq_psn;
  }
  if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
    if (attr->retry_cnt > 7 || attr->rnr_retry > 7 || attr->timeout > 31)
      return Refuse(EINVAL, step + ": retry count, RNR retry or timeout out of range");
    if (attr->sq_psn > 0xffffff) return Refuse(EINVAL, step + ": PSN over 24 bits");
    qp->sq_psn = attr->sq_psn;
  }
  qp->qp.state = to;
  return 0;
}

}  // namespace

// ---- the verbs ----

FAKE_EXPORT ibv_device** ibv_get_device_list(int* count) {
  std::lock_guard<std::mutex> lock(F().mu);
  EnsureConfiguredLocked();
  const size_t n = F().devices.size();
  auto** list = static_cast<ibv_device**>(calloc(n + 1, sizeof(ibv_device*)));
  for (size_t i = 0; i < n; ++i) list[i] = &F().devices[i]->device;
  if (count != nullptr) *count = static_cast<int>(n);
  return list;
}

FAKE_EXPORT void ibv_free_device_list(ibv_device** list) { free(list); }

FAKE_EXPORT const char* ibv_get_device_name(ibv_device* device) { return device->name; }

FAKE_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* c = new FakeContext;
  memset(&c->context, 0, sizeof(c->context));
  c->device = reinterpret_cast<FakeDevice*>(device);
  c->context.device = device;
  c->context.cmd_fd = -1;
  c->context.async_fd = -1;
  c->context.num_comp_vectors = 1;
  c->context.abi_compat = nullptr;  // no extended (verbs_context) ops
  c->context.ops.post_send = PostSend;
  c->context.ops.post_recv = PostRecv;
  c->context.ops.poll_cq = PollCq;
  pthread_mutex_init(&c->context.mutex, nullptr);
  ++F().live;
  return &c->context;
}

FAKE_EXPORT int ibv_close_device(ibv_context* context) {
  std::lock_guard<std::mutex> lock(F().mu);
  pthread_mutex_destroy(&context->mutex);
  delete reinterpret_cast<FakeContext*>(context);
  --F().live;
  return 0;
}

FAKE_EXPORT int ibv_query_port(ibv_context* context, uint8_t port_num,
                               struct _compat_ibv_port_attr* out) {
  std::lock_guard<std::mutex> lock(F().mu);
  FakeDevice* d = DeviceOf(context);
  if (port_num < 1 || port_num > d->ports.size()) return Refuse(EINVAL, "no such port");
  // The caller passes a whole ibv_port_attr (xccl's loader does, as verbs.h's wrapper).
  auto* attr = reinterpret_cast<ibv_port_attr*>(out);
  const Port& p = d->ports[port_num - 1];
  attr->state = p.state;
  attr->max_mtu = IBV_MTU_4096;
  attr->active_mtu = IBV_MTU_4096;
  attr->gid_tbl_len = 1;
  attr->pkey_tbl_len = 1;
  attr->max_msg_sz = 1u << 30;
  attr->lid = p.lid;
  attr->link_layer = p.link_layer;
  attr->active_width = 2;   // 4x
  attr->active_speed = 64;  // HDR
  attr->phys_state = p.state == IBV_PORT_ACTIVE ? 5 : 3;
  return 0;
}

FAKE_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  std::lock_guard<std::mutex> lock(F().mu);
  FakeDevice* d = DeviceOf(context);
  if (port_num < 1 || port_num > d->ports.size() || index != 0)
    return Refuse(EINVAL, "no such GID");
  GidOf(d->index, port_num, gid->raw);
  return 0;
}

FAKE_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* pd = new FakePd;
  pd->pd.context = context;
  pd->pd.handle = F().next_key++;
  ++F().live;
  return &pd->pd;
}

FAKE_EXPORT int ibv_dealloc_pd(ibv_pd* base) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* pd = reinterpret_cast<FakePd*>(base);
  if (pd->users > 0) return Refuse(EBUSY, "dealloc_pd with MRs or QPs still on it");
  delete pd;
  --F().live;
  return 0;
}

FAKE_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* base, void* addr, size_t length, int access) {
  std::lock_guard<std::mutex> lock(F().mu);
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE)) {
    Refuse(EINVAL, "reg_mr: remote write needs local write");
    return nullptr;
  }
  if (addr == nullptr || length == 0) {
    Refuse(EINVAL, "reg_mr of no memory");
    return nullptr;
  }
  auto* mr = new FakeMr;
  memset(&mr->mr, 0, sizeof(mr->mr));
  mr->mr.context = base->context;
  mr->mr.pd = base;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.lkey = F().next_key++;
  mr->mr.rkey = F().next_key++ | 0x80000000u;
  mr->access = access;
  F().by_lkey[mr->mr.lkey] = mr;
  F().by_rkey[mr->mr.rkey] = mr;
  ++reinterpret_cast<FakePd*>(base)->users;
  ++F().live;
  return &mr->mr;
}

FAKE_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  std::lock_guard<std::mutex> lock(F().mu);
  Refuse(EOPNOTSUPP, "the fake does not model dma-buf");
  return nullptr;
}

FAKE_EXPORT int ibv_dereg_mr(ibv_mr* base) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* mr = reinterpret_cast<FakeMr*>(base);
  F().by_lkey.erase(mr->mr.lkey);
  F().by_rkey.erase(mr->mr.rkey);
  --reinterpret_cast<FakePd*>(mr->mr.pd)->users;
  delete mr;
  --F().live;
  return 0;
}

FAKE_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                  ibv_comp_channel* channel, int) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (cqe < 1 || cqe > 65536) {
    Refuse(EINVAL, "create_cq: bad size");
    return nullptr;
  }
  auto* cq = new FakeCq;
  memset(&cq->cq, 0, sizeof(cq->cq));
  cq->cq.context = context;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  cq->capacity = static_cast<size_t>(cqe);
  ++F().live;
  return &cq->cq;
}

FAKE_EXPORT int ibv_destroy_cq(ibv_cq* base) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* cq = reinterpret_cast<FakeCq*>(base);
  if (cq->users > 0) return Refuse(EBUSY, "destroy_cq with QPs still on it");
  delete cq;
  --F().live;
  return 0;
}

FAKE_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (init->qp_type != IBV_QPT_RC) {
    Refuse(EOPNOTSUPP, "the fake makes RC QPs only");
    return nullptr;
  }
  if (init->send_cq == nullptr || init->recv_cq == nullptr || init->srq != nullptr ||
      init->cap.max_send_wr > 4096 || init->cap.max_recv_wr > 4096 || init->cap.max_send_sge > 4 ||
      init->cap.max_recv_sge > 4 || init->cap.max_inline_data > 256) {
    Refuse(EINVAL, "create_qp: missing CQs, an SRQ, or capabilities over the device's");
    return nullptr;
  }
  auto* qp = new FakeQp;
  memset(&qp->qp, 0, sizeof(qp->qp));
  qp->qp.context = pd->context;
  qp->qp.qp_context = init->qp_context;
  qp->qp.pd = pd;
  qp->qp.send_cq = init->send_cq;
  qp->qp.recv_cq = init->recv_cq;
  qp->qp.qp_num = F().next_qpn++;
  qp->qp.state = IBV_QPS_RESET;
  qp->qp.qp_type = IBV_QPT_RC;
  qp->cap = init->cap;
  F().qps[qp->qp.qp_num] = qp;
  ++reinterpret_cast<FakePd*>(pd)->users;
  ++reinterpret_cast<FakeCq*>(init->send_cq)->users;
  ++reinterpret_cast<FakeCq*>(init->recv_cq)->users;
  ++F().live;
  return &qp->qp;
}

FAKE_EXPORT int ibv_modify_qp(ibv_qp* base, ibv_qp_attr* attr, int mask) {
  std::lock_guard<std::mutex> lock(F().mu);
  return ModifyLocked(reinterpret_cast<FakeQp*>(base), attr, mask);
}

FAKE_EXPORT int ibv_destroy_qp(ibv_qp* base) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto* qp = reinterpret_cast<FakeQp*>(base);
  F().qps.erase(qp->qp.qp_num);
  --reinterpret_cast<FakePd*>(qp->qp.pd)->users;
  --reinterpret_cast<FakeCq*>(qp->qp.send_cq)->users;
  --reinterpret_cast<FakeCq*>(qp->qp.recv_cq)->users;
  delete qp;
  --F().live;
  return 0;
}

FAKE_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return "success";
    case IBV_WC_LOC_LEN_ERR:
      return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:
      return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR:
      return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
      return "Work Request Flushed Error";
    case IBV_WC_REM_ACCESS_ERR:
      return "remote access error";
    case IBV_WC_RETRY_EXC_ERR:
      return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "RNR retry counter exceeded";
    default:
      return "unknown";
  }
}

// ---- test controls ----

FAKE_EXPORT int fake_ibv_configure(const char* devices) {
  std::lock_guard<std::mutex> lock(F().mu);
  return ConfigureLocked(devices != nullptr ? devices : "") ? 0 : -1;
}

FAKE_EXPORT int fake_ibv_set_port_state(const char* device, int port, int active) {
  std::lock_guard<std::mutex> lock(F().mu);
  EnsureConfiguredLocked();
  for (auto& d : F().devices) {
    if (strcmp(d->device.name, device) != 0) continue;
    if (port < 1 || port > static_cast<int>(d->ports.size())) return -1;
    d->ports[port - 1].state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    return 0;
  }
  return -1;
}

FAKE_EXPORT int fake_ibv_inject(const char* spec) {
  std::lock_guard<std::mutex> lock(F().mu);
  EnsureConfiguredLocked();
  return ParseFault(spec != nullptr ? spec : "") ? 0 : -1;
}

FAKE_EXPORT const char* fake_ibv_last_error(void) {
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(F().mu);
  copy = F().last_error;
  return copy.c_str();
}

FAKE_EXPORT int fake_ibv_live_objects(void) {
  std::lock_guard<std::mutex> lock(F().mu);
  return F().live;
}

FAKE_EXPORT long fake_ibv_writes(void) {
  std::lock_guard<std::mutex> lock(F().mu);
  return F().writes;
}
