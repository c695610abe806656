// One reliable-connected queue pair and its completion queue on one port, and what its two
// ends tell each other to connect it (over the setup socket): QP number, first PSN, LID, GID,
// MTU, and the sender's clear-to-send FIFO. RESET -> INIT -> RTR -> RTS as the verbs require
// (the attribute masks of each step, below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/net/ib_devices.h"
#include "xccl.h"

namespace xccl {

struct IbEndpointInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // 24 bits
  uint16_t lid = 0;
  uint8_t link_layer = 0;  // IBV_LINK_LAYER_*
  uint8_t mtu = 0;         // ibv_mtu
  uint8_t gid[16] = {};
  uint64_t fifo_addr = 0;  // the sender's CTS FIFO (0 from the receiver)
  uint32_t fifo_rkey = 0;
  uint32_t max_requests = 0;  // both ends must agree (FIFO slots)
};
constexpr size_t kIbInfoBytes = 64;
void PackEndpointInfo(const IbEndpointInfo& info, uint8_t out[kIbInfoBytes]);
// False when the bytes are not an endpoint's (wrong magic).
bool UnpackEndpointInfo(const uint8_t in[kIbInfoBytes], IbEndpointInfo* out);

class IbQueuePair {
 public:
  // A QP in RESET with room for `send_depth` sends (inline up to `max_inline` bytes) and
  // `recv_depth` receives, both completing on one CQ.
  static xcclResult_t Create(std::shared_ptr<IbPort> port, int send_depth, int recv_depth,
                             int max_inline, std::unique_ptr<IbQueuePair>* out);
  ~IbQueuePair();
  IbQueuePair(const IbQueuePair&) = delete;
  IbQueuePair& operator=(const IbQueuePair&) = delete;

  IbEndpointInfo LocalInfo() const;
  // RESET -> INIT with the remote access the peer needs (IBV_ACCESS_REMOTE_WRITE).
  xcclResult_t ToInit(int remote_access);
  // INIT -> RTR -> RTS, connected to `remote`.
  xcclResult_t Connect(const IbEndpointInfo& remote);
  // To ERR (best effort): the peer's writes stop landing, posted requests flush.
  void ToError();

  ibv_qp* qp() const { return qp_; }
  ibv_cq* cq() const { return cq_; }
  const IbPort& port() const { return *port_; }
  const std::shared_ptr<IbPort>& shared_port() const { return port_; }
  const IbVerbs& verbs() const { return port_->verbs(); }
  // "fakeib0 port 1 QP 0x2a", for messages.
  std::string Describe() const;

 private:
  IbQueuePair(std::shared_ptr<IbPort> port, ibv_cq* cq, ibv_qp* qp, uint32_t psn,
              const ibv_gid& gid);
  xcclResult_t Modify(ibv_qp_attr* attr, int mask, const char* step);

  std::shared_ptr<IbPort> port_;
  ibv_cq* cq_;
  ibv_qp* qp_;
  uint32_t psn_;
  ibv_gid gid_;
};

}  // namespace xccl
