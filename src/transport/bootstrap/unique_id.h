// The 128 bytes of xcclUniqueId: magic, format version, the root's socket address, a random
// secret, whether rank 0 serves the root (XCCL_COMM_ID), and a checksum over all of it.
#pragma once

#include <sys/socket.h>

#include <cstdint>

#include "xccl.h"

namespace xccl {

struct UniqueIdContents {
  sockaddr_storage root_addr;  // AF_INET or AF_INET6, port set
  uint8_t secret[16];          // random; every bootstrap message carries it
  bool rank0_is_root;          // XCCL_COMM_ID mode: rank 0 serves the rendezvous
};

void EncodeUniqueId(const UniqueIdContents& contents, xcclUniqueId* id);
// xcclInvalidArgument (with a message) for a wrong magic, version, family or checksum.
xcclResult_t DecodeUniqueId(const xcclUniqueId& id, UniqueIdContents* contents);

}  // namespace xccl
