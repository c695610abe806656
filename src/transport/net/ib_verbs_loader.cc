#include "transport/net/ib_verbs_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <type_traits>

namespace xccl {

IbVerbs::~IbVerbs() {
  if (handle_ != nullptr) dlclose(handle_);
}

int IbVerbs::QueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  memset(attr, 0, sizeof(*attr));
  return query_port_compat_(context, port, attr);
}

const char* IbVerbs::StatusName(ibv_wc_status status) const {
  const char* name = wc_status_str(status);
  return name != nullptr ? name : "unknown status";
}

bool LoadIbVerbs(const std::string& path, std::shared_ptr<const IbVerbs>* out, std::string* why) {
  // RTLD_LOCAL: the provider's symbols stay out of the global namespace.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    *why = "cannot open " + path + " (XCCL_IBVERBS_LIB): " + (error ? error : "unknown error");
    return false;
  }
  auto verbs = std::make_shared<IbVerbs>();
  verbs->handle_ = handle;
  verbs->path = path;
  bool complete = true;
  auto resolve = [&](auto* slot, const char* name, bool required) {
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr && required && complete) {
      *why = path + " (XCCL_IBVERBS_LIB) has no " + name + ": not a libibverbs";
      complete = false;
    }
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(symbol);
  };
  resolve(&verbs->get_device_list, "ibv_get_device_list", true);
  resolve(&verbs->free_device_list, "ibv_free_device_list", true);
  resolve(&verbs->get_device_name, "ibv_get_device_name", true);
  resolve(&verbs->open_device, "ibv_open_device", true);
  resolve(&verbs->close_device, "ibv_close_device", true);
  resolve(&verbs->query_port_compat_, "ibv_query_port", true);
  resolve(&verbs->query_gid, "ibv_query_gid", true);
  resolve(&verbs->alloc_pd, "ibv_alloc_pd", true);
  resolve(&verbs->dealloc_pd, "ibv_dealloc_pd", true);
  resolve(&verbs->reg_mr, "ibv_reg_mr", true);
  resolve(&verbs->reg_dmabuf_mr, "ibv_reg_dmabuf_mr", false);
  resolve(&verbs->dereg_mr, "ibv_dereg_mr", true);
  resolve(&verbs->create_cq, "ibv_create_cq", true);
  resolve(&verbs->destroy_cq, "ibv_destroy_cq", true);
  resolve(&verbs->create_qp, "ibv_create_qp", true);
  resolve(&verbs->modify_qp, "ibv_modify_qp", true);
  resolve(&verbs->destroy_qp, "ibv_destroy_qp", true);
  resolve(&verbs->wc_status_str, "ibv_wc_status_str", true);
  if (!complete) return false;  // the handle closes with `verbs`
  *out = std::move(verbs);
  return true;
}

}  // namespace xccl
