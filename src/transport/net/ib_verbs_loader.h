// libibverbs opened with dlopen (XCCL_IBVERBS_LIB): xccl never links it, so a build with the
// header runs on machines without the library, and tests load a fake provider by path. The
// header gives the types only; the entry points come from dlsym. ibv_post_send, ibv_post_recv
// and ibv_poll_cq are static inline in verbs.h and call through `context->ops`, so they need no
// symbol (a provider fills those ops).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "xccl.h"

namespace xccl {

struct IbVerbs {
  ibv_device** (*get_device_list)(int* count) = nullptr;
  void (*free_device_list)(ibv_device** list) = nullptr;
  const char* (*get_device_name)(ibv_device* device) = nullptr;
  ibv_context* (*open_device)(ibv_device* device) = nullptr;
  int (*close_device)(ibv_context* context) = nullptr;
  int (*query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*alloc_pd)(ibv_context* context) = nullptr;
  int (*dealloc_pd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  // Optional (rdma-core 34+): nullptr where the library has none.
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                           int access) = nullptr;
  int (*dereg_mr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                       int comp_vector) = nullptr;
  int (*destroy_cq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroy_qp)(ibv_qp* qp) = nullptr;
  const char* (*wc_status_str)(ibv_wc_status status) = nullptr;

  std::string path;  // as asked for (XCCL_IBVERBS_LIB)

  // The exported ibv_query_port fills the older (shorter) attribute struct, a prefix of
  // ibv_port_attr: verbs.h's inline wrapper does the same memset and cast.
  int QueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
  const char* StatusName(ibv_wc_status status) const;

  IbVerbs() = default;
  ~IbVerbs();
  IbVerbs(const IbVerbs&) = delete;
  IbVerbs& operator=(const IbVerbs&) = delete;

 private:
  friend bool LoadIbVerbs(const std::string&, std::shared_ptr<const IbVerbs>*, std::string*);
  int (*query_port_compat_)(ibv_context*, uint8_t, void*) = nullptr;
  void* handle_ = nullptr;
};

// Opens `path` and resolves every entry point. False with *why ("cannot open libibverbs.so.1:
// ...", "... has no ibv_modify_qp") where it cannot; records no error (the caller decides
// whether a missing library is a failure or a fallback).
bool LoadIbVerbs(const std::string& path, std::shared_ptr<const IbVerbs>* out, std::string* why);

}  // namespace xccl
