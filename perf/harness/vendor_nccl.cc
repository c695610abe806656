#include "harness/vendor_nccl.h"

#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace xccl_perf {

// NCCL's ABI as far as the benchmarks use it. Enums cross the C ABI as int; ncclUniqueId is a
// 128-byte struct passed by value; ncclComm_t and cudaStream_t are opaque pointers.
namespace nccl {
using Result = int;
using Comm = void*;
using Stream = void*;
constexpr Result kSuccess = 0;
constexpr int kInt8 = 0;
static_assert(sizeof(VendorId) == 128, "ncclUniqueId is 128 bytes");
}  // namespace nccl

struct VendorLibrary::Api {
  nccl::Result (*get_unique_id)(VendorId*);
  nccl::Result (*comm_init_rank)(nccl::Comm*, int, VendorId, int);
  nccl::Result (*all_gather)(const void*, void*, size_t, int, nccl::Comm, nccl::Stream);
  nccl::Result (*all_reduce)(const void*, void*, size_t, int, int, nccl::Comm, nccl::Stream);
  nccl::Result (*reduce_scatter)(const void*, void*, size_t, int, int, nccl::Comm, nccl::Stream);
  nccl::Result (*broadcast)(const void*, void*, size_t, int, int, nccl::Comm, nccl::Stream);
  nccl::Result (*comm_destroy)(nccl::Comm);
  const char* (*get_error_string)(nccl::Result);
  nccl::Result (*get_version)(int*);
  // Optional (NCCL 2.13 and later): the text behind the last failure.
  const char* (*get_last_error)(nccl::Comm);
};

namespace {

// Resolves `name` into *fn; false with *why set if the library lacks it.
template <typename Fn>
bool Resolve(void* handle, const std::string& path, const char* name, Fn* fn, std::string* why) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    *why = path + " has no " + name;
    return false;
  }
  *fn = reinterpret_cast<Fn>(symbol);
  return true;
}

void Report(int rank, const std::string& message) {
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  fprintf(stderr, "%s: %s pid %d rank %d: vendor %s\n", program_invocation_short_name, host,
          static_cast<int>(getpid()), rank, message.c_str());
}

}  // namespace

VendorLibrary::VendorLibrary() = default;
VendorLibrary::~VendorLibrary() = default;

const VendorLibrary* VendorLibrary::Get(std::string* why) {
  // Loaded once per process and never closed: the vendor's own threads may outlive any owner.
  static std::once_flag once;
  static VendorLibrary* loaded = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    const char* env = getenv("XCCL_VENDOR_LIB");
    std::string path = env != nullptr && *env != '\0' ? env : "libnccl.so.2";
    // RTLD_LOCAL: its symbols must not interpose on anything else in the process, xccl's own
    // included.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      failure = "cannot load " + path + ": " + (error != nullptr ? error : "unknown error");
      return;
    }
    auto api = std::make_unique<Api>();
    api->get_last_error = nullptr;
    bool ok = Resolve(handle, path, "ncclGetUniqueId", &api->get_unique_id, &failure) &&
              Resolve(handle, path, "ncclCommInitRank", &api->comm_init_rank, &failure) &&
              Resolve(handle, path, "ncclAllGather", &api->all_gather, &failure) &&
              Resolve(handle, path, "ncclAllReduce", &api->all_reduce, &failure) &&
              Resolve(handle, path, "ncclReduceScatter", &api->reduce_scatter, &failure) &&
              Resolve(handle, path, "ncclBroadcast", &api->broadcast, &failure) &&
              Resolve(handle, path, "ncclCommDestroy", &api->comm_destroy, &failure) &&
              Resolve(handle, path, "ncclGetErrorString", &api->get_error_string, &failure) &&
              Resolve(handle, path, "ncclGetVersion", &api->get_version, &failure);
    if (!ok) return;
    std::string ignored;
    Resolve(handle, path, "ncclGetLastError", &api->get_last_error, &ignored);
    int version = 0;
    nccl::Result result = api->get_version(&version);
    if (result != nccl::kSuccess) {
      failure = path + ": ncclGetVersion failed: " + api->get_error_string(result);
      return;
    }
    auto* library = new VendorLibrary;
    library->path_ = path;
    library->version_ = version;
    library->api_ = std::move(api);
    loaded = library;
  });
  if (loaded == nullptr && why != nullptr) *why = failure;
  return loaded;
}

std::string VendorLibrary::VersionText() const {
  // NCCL numbers versions major*10000 + minor*100 + patch since 2.9, major*1000 + ... before.
  int major = version_ >= 10000 ? version_ / 10000 : version_ / 1000;
  int minor = version_ >= 10000 ? version_ % 10000 / 100 : version_ % 1000 / 100;
  int patch = version_ % 100;
  char text[32];
  snprintf(text, sizeof(text), "%d.%d.%d", major, minor, patch);
  return text;
}

std::string VendorLibrary::CannotReduce(xcclDataType_t type, xcclRedOp_t op) const {
  // ncclAvg and ncclBfloat16 came with NCCL 2.10 (nccl-tests enables both from
  // NCCL_VERSION(2,10,0), src/common.cu); ncclFloat8e4m3 and ncclFloat8e5m2 with 2.24.3
  // (NVIDIA/nccl commit 6aae379, src/nccl.h.in), whose fp8 reductions need sm_90 (src/enqueue.cc:
  // "FP8 reduction support begins with sm90 capable devices"; an older GPU fails the call).
  const bool fp8 = type == xcclFloat8e4m3 || type == xcclFloat8e5m2;
  if (fp8 && version_ < 22403) return "fp8 reductions need NCCL 2.24.3 or later";
  if ((type == xcclBfloat16 || op == xcclAvg) && version_ < 21000) {
    return "bfloat16 and avg need NCCL 2.10 or later";
  }
  return "";
}

bool VendorLibrary::GetUniqueId(VendorId* id, int rank) const {
  nccl::Result result = api_->get_unique_id(id);
  if (result == nccl::kSuccess) return true;
  Report(rank, std::string("ncclGetUniqueId failed: ") + api_->get_error_string(result));
  return false;
}

std::unique_ptr<VendorComm> VendorComm::Init(const VendorLibrary& library, int nranks,
                                             const VendorId& id, int rank) {
  nccl::Comm comm = nullptr;
  nccl::Result result = library.api().comm_init_rank(&comm, nranks, id, rank);
  if (result != nccl::kSuccess) {
    std::string message =
        std::string("ncclCommInitRank failed: ") + library.api().get_error_string(result);
    if (library.api().get_last_error != nullptr) {
      message += std::string(": ") + library.api().get_last_error(nullptr);
    }
    Report(rank, message);
    return nullptr;
  }
  return std::unique_ptr<VendorComm>(new VendorComm(library, comm, rank));
}

VendorComm::~VendorComm() {
  if (comm_ != nullptr) library_.api().comm_destroy(comm_);
}

bool VendorComm::Ok(int result, const char* call) const {
  if (result == nccl::kSuccess) return true;
  std::string message = std::string(call) + " failed: " + library_.api().get_error_string(result);
  if (library_.api().get_last_error != nullptr) {
    message += std::string(": ") + library_.api().get_last_error(comm_);
  }
  Report(rank_, message);
  return false;
}

bool VendorComm::AllGather(const void* send, void* recv, size_t bytes, xcclStream_t stream) {
  return Ok(library_.api().all_gather(send, recv, bytes, nccl::kInt8, comm_, stream),
            "ncclAllGather");
}

bool VendorComm::AllReduceFloatSum(const void* send, void* recv, size_t count,
                                   xcclStream_t stream) {
  return AllReduce(send, recv, count, xcclFloat32, xcclSum, stream);
}

bool VendorComm::ReduceScatter(const void* send, void* recv, size_t count, xcclDataType_t type,
                               xcclRedOp_t op, xcclStream_t stream) {
  return Ok(library_.api().reduce_scatter(send, recv, count, static_cast<int>(type),
                                          static_cast<int>(op), comm_, stream),
            "ncclReduceScatter");
}

bool VendorComm::AllReduce(const void* send, void* recv, size_t count, xcclDataType_t type,
                           xcclRedOp_t op, xcclStream_t stream) {
  return Ok(library_.api().all_reduce(send, recv, count, static_cast<int>(type),
                                      static_cast<int>(op), comm_, stream),
            "ncclAllReduce");
}

bool VendorComm::Broadcast(const void* send, void* recv, size_t bytes, int root,
                           xcclStream_t stream) {
  return Ok(library_.api().broadcast(send, recv, bytes, nccl::kInt8, root, comm_, stream),
            "ncclBroadcast");
}

}  // namespace xccl_perf
