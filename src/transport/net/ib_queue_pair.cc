#include "transport/net/ib_queue_pair.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "transport/net/wire_word.h"

namespace xccl {

namespace {

constexpr uint64_t kInfoMagic = 0x3150454242494358ull;  // "XCIBBEP1"

// The verbs' recommended values: a local ACK timeout of 4.096 us * 2^14 (67 ms), 7 retries
// (the most), RNR retries 7 (infinite), a 12 (0.64 ms) RNR NAK timer.
constexpr uint8_t kAckTimeout = 14;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;

}  // namespace

void PackEndpointInfo(const IbEndpointInfo& info, uint8_t out[kIbInfoBytes]) {
  memset(out, 0, kIbInfoBytes);
  PutWire(out, kInfoMagic, 8);
  PutWire(out + 8, info.qpn, 4);
  PutWire(out + 12, info.psn, 4);
  PutWire(out + 16, info.lid, 2);
  out[18] = info.link_layer;
  out[19] = info.mtu;
  memcpy(out + 20, info.gid, 16);
  PutWire(out + 36, info.fifo_addr, 8);
  PutWire(out + 44, info.fifo_rkey, 4);
  PutWire(out + 48, info.max_requests, 4);
}

bool UnpackEndpointInfo(const uint8_t in[kIbInfoBytes], IbEndpointInfo* out) {
  if (GetWire(in, 8) != kInfoMagic) return false;
  IbEndpointInfo info;
  info.qpn = static_cast<uint32_t>(GetWire(in + 8, 4));
  info.psn = static_cast<uint32_t>(GetWire(in + 12, 4));
  info.lid = static_cast<uint16_t>(GetWire(in + 16, 2));
  info.link_layer = in[18];
  info.mtu = in[19];
  memcpy(info.gid, in + 20, 16);
  info.fifo_addr = GetWire(in + 36, 8);
  info.fifo_rkey = static_cast<uint32_t>(GetWire(in + 44, 4));
  info.max_requests = static_cast<uint32_t>(GetWire(in + 48, 4));
  *out = info;
  return true;
}

IbQueuePair::IbQueuePair(std::shared_ptr<IbPort> port, ibv_cq* cq, ibv_qp* qp, uint32_t psn,
                         const ibv_gid& gid)
    : port_(std::move(port)), cq_(cq), qp_(qp), psn_(psn), gid_(gid) {}

IbQueuePair::~IbQueuePair() {
  verbs().destroy_qp(qp_);
  verbs().destroy_cq(cq_);
}

xcclResult_t IbQueuePair::Create(std::shared_ptr<IbPort> port, int send_depth, int recv_depth,
                                 int max_inline, std::unique_ptr<IbQueuePair>* out) {
  const IbVerbs& verbs = port->verbs();
  ibv_cq* cq = verbs.create_cq(port->context(), send_depth + recv_depth, nullptr, nullptr, 0);
  if (cq == nullptr)
    return Fail(xcclSystemError, "net ib: %s: ibv_create_cq of %d entries: %s",
                port->Describe().c_str(), send_depth + recv_depth, strerror(errno));
  ibv_qp_init_attr init;
  memset(&init, 0, sizeof(init));
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;  // every post says whether it is signalled
  init.cap.max_send_wr = static_cast<uint32_t>(send_depth);
  init.cap.max_recv_wr = static_cast<uint32_t>(recv_depth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = static_cast<uint32_t>(max_inline);
  ibv_qp* qp = verbs.create_qp(port->pd(), &init);
  if (qp == nullptr) {
    const int err = errno;
    verbs.destroy_cq(cq);
    return Fail(xcclSystemError, "net ib: %s: ibv_create_qp (RC, %d sends, %d receives): %s",
                port->Describe().c_str(), send_depth, recv_depth, strerror(err));
  }
  uint32_t psn = 0;
  if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn)) psn = 0x5eed;
  ibv_gid gid;
  memset(&gid, 0, sizeof(gid));
  // The GID XCCL_IB_GID_INDEX names (0: the port's default); InfiniBand routes by LID and
  // needs none, Ethernet (RoCE) goes by it.
  if (verbs.query_gid(port->context(), static_cast<uint8_t>(port->port()), port->gid_index(),
                      &gid) != 0)
    memset(&gid, 0, sizeof(gid));
  out->reset(new IbQueuePair(std::move(port), cq, qp, psn & 0xffffff, gid));
  return xcclSuccess;
}

IbEndpointInfo IbQueuePair::LocalInfo() const {
  IbEndpointInfo info;
  info.qpn = qp_->qp_num;
  info.psn = psn_;
  info.lid = port_->attr().lid;
  info.link_layer = port_->attr().link_layer;
  info.mtu = static_cast<uint8_t>(port_->attr().active_mtu);
  memcpy(info.gid, gid_.raw, 16);
  return info;
}

std::string IbQueuePair::Describe() const {
  char qpn[16];
  snprintf(qpn, sizeof(qpn), "0x%x", qp_->qp_num);
  return port_->Describe() + " QP " + qpn;
}

xcclResult_t IbQueuePair::Modify(ibv_qp_attr* attr, int mask, const char* step) {
  const int rc = verbs().modify_qp(qp_, attr, mask);
  if (rc != 0)
    return Fail(xcclSystemError, "net ib: %s: ibv_modify_qp to %s: %s", Describe().c_str(), step,
                strerror(rc > 0 ? rc : errno));
  return xcclSuccess;
}

xcclResult_t IbQueuePair::ToInit(int remote_access) {
  ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port_->port());
  attr.qp_access_flags = static_cast<unsigned>(remote_access);
  return Modify(&attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                "INIT");
}

xcclResult_t IbQueuePair::Connect(const IbEndpointInfo& remote) {
  ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu =
      static_cast<ibv_mtu>(std::min<int>(remote.mtu, static_cast<int>(port_->attr().active_mtu)));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = kMinRnrTimer;
  attr.ah_attr.port_num = static_cast<uint8_t>(port_->port());
  // InfiniBand routes by LID; Ethernet (RoCE) has none and goes by GID.
  if (remote.link_layer == IBV_LINK_LAYER_ETHERNET || remote.lid == 0) {
    attr.ah_attr.is_global = 1;
    memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(port_->gid_index());
    attr.ah_attr.grh.hop_limit = 255;
  } else {
    attr.ah_attr.dlid = remote.lid;
  }
  XCCL_TRY(Modify(&attr,
                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                  "RTR"));
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = kAckTimeout;
  attr.retry_cnt = kRetryCount;
  attr.rnr_retry = kRnrRetry;
  attr.sq_psn = psn_;
  attr.max_rd_atomic = 1;
  return Modify(&attr,
                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                "RTS");
}

void IbQueuePair::ToError() {
  ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_ERR;
  verbs().modify_qp(qp_, &attr, IBV_QP_STATE);
}

}  // namespace xccl
