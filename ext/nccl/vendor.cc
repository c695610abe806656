// Finding and loading the vendor library (the real NCCL or RCCL) and creating its
// communicators lazily from the shim's ranks.
#include <dlfcn.h>
#include <elf.h>
#include <glob.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "device_memory.h"
#include "shim_internal.h"

namespace xccl_shim {
namespace {

#if defined(XCCL_SHIM_PLATFORM_HIP)
constexpr const char* kVendorName = "librccl.so.1";
#else
constexpr const char* kVendorName = "libnccl.so.2";
#endif

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The shim's own file, so that a search by name never loads the shim again as its vendor.
std::string SelfPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) && info.dli_fname)
    return RealPath(info.dli_fname);
  return std::string();
}

void SplitPathList(const char* list, std::vector<std::string>* out) {
  if (!list) return;
  std::stringstream ss(list);
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty()) out->push_back(dir);
}

std::string ExpandOrigin(std::string path, const std::string& origin) {
  for (const char* token : {"${ORIGIN}", "$ORIGIN"}) {
    size_t pos;
    while ((pos = path.find(token)) != std::string::npos) path.replace(pos, strlen(token), origin);
  }
  return path;
}

// DT_RUNPATH/DT_RPATH of every loaded object: a pip-installed PyTorch finds its NCCL through
// its own RPATH (site-packages/nvidia/nccl/lib), which neither LD_LIBRARY_PATH nor
// ld.so.conf names.
int CollectRunPaths(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  if (name.rfind("linux-vdso", 0) == 0 || name.rfind("linux-gate", 0) == 0) return 0;
  std::string origin = name.empty() ? DirName(RealPath("/proc/self/exe")) : DirName(name);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
    auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    uintptr_t strtab = 0;
    std::vector<uintptr_t> offsets;
    for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
      if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
      if (d->d_tag == DT_RUNPATH || d->d_tag == DT_RPATH) offsets.push_back(d->d_un.d_val);
    }
    if (!strtab || offsets.empty()) continue;
    // glibc relocates DT_STRTAB in place on most targets; where it has not, add the base.
    if (strtab < info->dlpi_addr) strtab += info->dlpi_addr;
    for (uintptr_t off : offsets) {
      std::vector<std::string> dirs;
      SplitPathList(reinterpret_cast<const char*>(strtab + off), &dirs);
      for (auto& dir : dirs) out->push_back(ExpandOrigin(dir, origin));
    }
  }
  return 0;
}

void ParseLdSoConf(const std::string& file, int depth, std::vector<std::string>* out) {
  if (depth > 4) return;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::stringstream ss(line);
    std::string word;
    if (!(ss >> word)) continue;
    if (word == "include") {
      std::string pattern;
      while (ss >> pattern) {
        if (pattern[0] != '/') pattern = DirName(file) + "/" + pattern;
        glob_t g{};
        if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
          for (size_t i = 0; i < g.gl_pathc; ++i) ParseLdSoConf(g.gl_pathv[i], depth + 1, out);
        globfree(&g);
      }
    } else if (word[0] == '/') {
      out->push_back(word);
    }
  }
}

// The directories the dynamic linker would search for the vendor's name, in its order:
// LD_LIBRARY_PATH, the RUNPATHs of what is loaded, ld.so.conf, then the system directories
// (libc's own and the classic ones).
std::vector<std::string> SearchDirs() {
  std::vector<std::string> dirs;
  SplitPathList(getenv("LD_LIBRARY_PATH"), &dirs);
  dl_iterate_phdr(CollectRunPaths, &dirs);
  ParseLdSoConf("/etc/ld.so.conf", 0, &dirs);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&fprintf), &info) && info.dli_fname) {
    std::string libc_dir = DirName(RealPath(info.dli_fname));
    dirs.push_back(libc_dir);
    if (libc_dir.rfind("/usr/", 0) != 0) dirs.push_back("/usr" + libc_dir);
  }
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) dirs.push_back(d);
  return dirs;
}

bool EnvFlag(const char* name, bool fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  return !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0);
}

// Loads one candidate, refusing the shim itself (same file, or any library that carries
// xccl, such as a copy of the shim).
bool TryLoad(const std::string& path, const std::string& self, Vendor* v, std::string* why) {
  std::string real = RealPath(path);
  if (!real.empty() && real == self) {
    *why = path + " is the xccl shim itself";
    return false;
  }
  // RTLD_DEEPBIND: the vendor's calls to its own exported nccl* functions must reach the
  // vendor, not the shim's same-named ones that the global scope would give them.
  int flags = RTLD_NOW | RTLD_LOCAL | (EnvFlag("XCCL_NCCL_DEEPBIND", true) ? RTLD_DEEPBIND : 0);
  void* h = dlopen(path.c_str(), flags);
  if (!h) {
    const char* err = dlerror();
    *why = std::string("dlopen(") + path + ") failed: " + (err ? err : "?");
    return false;
  }
  if (dlsym(h, "ncclGetVersion") == reinterpret_cast<void*>(&ncclGetVersion) ||
      dlsym(h, "xcclGetVersion") != nullptr) {
    dlclose(h);
    *why = path + " is an xccl shim, not a vendor library";
    return false;
  }
  if (!dlsym(h, "ncclCommInitRank") || !dlsym(h, "ncclGetUniqueId")) {
    dlclose(h);
    *why = path + " does not export ncclGetUniqueId/ncclCommInitRank";
    return false;
  }
  v->handle = h;
  v->path = path;
  return true;
}

Vendor LoadVendor() {
  Vendor v;
  std::string self = SelfPath();
  const char* env = getenv("XCCL_NCCL_FALLBACK");
  if (env && *env) {
    if (strcmp(env, "none") == 0) {
      v.why_none = "forwarding is off (XCCL_NCCL_FALLBACK=none)";
      return v;
    }
    std::string why;
    if (!TryLoad(env, self, &v, &why)) {
      v.why_none = "XCCL_NCCL_FALLBACK: " + why;
      fprintf(stderr, "xccl nccl shim: WARN %s\n", v.why_none.c_str());
    }
    return v;
  }
  std::string tried;
  for (const auto& dir : SearchDirs()) {
    std::string path = dir + "/" + kVendorName;
    if (access(path.c_str(), R_OK) != 0) continue;
    std::string why;
    if (TryLoad(path, self, &v, &why)) return v;
    tried += "; " + why;
  }
  v.why_none = std::string("no vendor ") + kVendorName +
               " found besides the shim (set XCCL_NCCL_FALLBACK to its path)" + tried;
  return v;
}

// Layout of each rank's block in the vendor id exchange.
struct VendorIdBlock {
  uint32_t magic;
  uint32_t valid;
  ncclUniqueId id;
};
constexpr uint32_t kVendorIdMagic = 0x78636e76;  // "xcnv"

}  // namespace

void* Vendor::Symbol(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }

const Vendor& GetVendor() {
  static const Vendor* vendor = new Vendor(LoadVendor());  // never freed: used until exit
  return *vendor;
}

ncclResult_t NoVendor(const char* function) {
  return Fail(ncclInvalidUsage, function,
              std::string("xccl has no native path for it and there is no vendor library to "
                          "forward to: ") +
                  GetVendor().why_none);
}

ncclResult_t ExchangeVendorId(ncclComm_t comm) {
  VendorIdBlock mine{};
  mine.magic = kVendorIdMagic;
  if (comm->rank == 0 && GetVendor().handle) {
    auto get_id = VendorFunction<decltype(&ncclGetUniqueId)>("ncclGetUniqueId");
    ncclResult_t r = get_id(&mine.id);
    if (r == ncclSuccess) {
      mine.valid = 1;
    } else {
      fprintf(stderr,
              "xccl nccl shim: WARN the vendor's ncclGetUniqueId failed (%d); calls that need "
              "the vendor will fail on this communicator\n",
              static_cast<int>(r));
    }
  }
  const size_t bytes = sizeof(VendorIdBlock);
  std::vector<VendorIdBlock> all(comm->nranks);
  // xccl gathers between device buffers on GPU platforms, so the blocks go through device
  // memory there (on the host platform these are plain copies), on a private stream (see
  // device::CreateStream: never the legacy one, which threads sharing a GPU share).
  const char* fn = "ncclCommInitRank (vendor id exchange)";
  std::string error;
  void* dev = nullptr;
  void* stream = nullptr;
  if (int e = device::Alloc(&dev, bytes * (comm->nranks + 1), &error))
    return Fail(static_cast<ncclResult_t>(e), fn, error);
  if (int e = device::CreateStream(&stream, &error)) {
    device::Free(dev, &error);
    return Fail(static_cast<ncclResult_t>(e), fn, error);
  }
  char* dsend = static_cast<char*>(dev) + bytes * comm->nranks;
  ncclResult_t r =
      static_cast<ncclResult_t>(device::ToDeviceAsync(dsend, &mine, bytes, stream, &error));
  if (r != ncclSuccess) {
    r = Fail(r, fn, error);
  } else {
    r = CheckXccl(xcclAllGather(dsend, dev, bytes, xcclUint8, comm->xccl, stream), fn, comm->xccl);
    if (r == ncclSuccess) {
      r = static_cast<ncclResult_t>(
          device::ToHostAsync(all.data(), dev, bytes * comm->nranks, stream, &error));
      if (r == ncclSuccess) r = static_cast<ncclResult_t>(device::Synchronize(stream, &error));
      if (r != ncclSuccess) r = Fail(r, fn, error);
    }
  }
  // Nothing may still use the buffer or the stream when they go (also after a failure).
  std::string cleanup_error;
  device::Synchronize(stream, &cleanup_error);
  device::DestroyStream(stream, &cleanup_error);
  device::Free(dev, &cleanup_error);
  if (r != ncclSuccess) return r;
  if (all[0].magic != kVendorIdMagic)
    return Fail(ncclInternalError, "ncclCommInitRank", "vendor id exchange returned garbage");
  comm->have_vendor_id = all[0].valid != 0;
  comm->vendor_id = all[0].id;
  return ncclSuccess;
}

namespace {

ncclResult_t InitCliqueVendor(ncclComm_t comm, const char* function) {
  Clique& c = *comm->clique;
  if (!c.vendor_tried) {
    c.vendor_tried = true;
    auto init_all = VendorFunction<decltype(&ncclCommInitAll)>("ncclCommInitAll");
    if (!init_all) {
      c.vendor_result = Fail(ncclInvalidUsage, function,
                             "the vendor library lacks ncclCommInitAll, needed for "
                             "communicators made by ncclCommInitAll");
    } else {
      std::vector<ncclComm_t> vcomms(c.comms.size());
      c.vendor_result = init_all(vcomms.data(), static_cast<int>(c.comms.size()),
                                 c.devices.empty() ? nullptr : c.devices.data());
      if (c.vendor_result == ncclSuccess) {
        for (size_t i = 0; i < c.comms.size(); ++i) {
          NoteVendorHandle(vcomms[i]);
          c.comms[i]->vendor = vcomms[i];
        }
      }
    }
    for (ncclComm_t m : c.comms) {
      m->vendor_tried = true;
      m->vendor_result = c.vendor_result;
    }
  }
  if (c.vendor_result != ncclSuccess)
    return Fail(c.vendor_result, function, "creating the vendor communicators failed earlier");
  return ncclSuccess;
}

}  // namespace

ncclResult_t EnsureVendorComm(ncclComm_t comm, const char* function, void** vendor_comm) {
  if (!GetVendor().handle) return NoVendor(function);
  if (comm->clique) {
    // A clique is driven by one thread, so no lock beyond the clique's creator is needed;
    // take the first member's lock to serialise anyway.
    std::lock_guard<std::mutex> lock(comm->clique->comms[0]->vendor_mu);
    ncclResult_t r = InitCliqueVendor(comm, function);
    if (r != ncclSuccess) return r;
    *vendor_comm = comm->vendor;
    return ncclSuccess;
  }
  std::lock_guard<std::mutex> lock(comm->vendor_mu);
  if (!comm->vendor_tried) {
    if (VendorGroupDepth() > 0) {
      // A vendor init inside the vendor's open group would be deferred to its GroupEnd, so
      // the communicator could not carry the calls of this group.
      return Fail(ncclInvalidUsage, function,
                  "first forwarded call on this communicator inside a group that already holds "
                  "forwarded calls on another; make one forwarded call on it outside a group "
                  "first, or set XCCL_NCCL_VENDOR_INIT=eager");
    }
    comm->vendor_tried = true;
    if (!comm->have_vendor_id) {
      comm->vendor_result = ncclInvalidUsage;
      return Fail(ncclInvalidUsage, function,
                  "rank 0 had no usable vendor library when this communicator was created, so "
                  "there is no vendor communicator to forward to");
    }
    ncclComm_t vc = nullptr;
    if (comm->have_config) {
      auto init = VendorFunction<decltype(&ncclCommInitRankConfig)>("ncclCommInitRankConfig");
      if (!init) return NoVendor(function);
      comm->vendor_result = init(&vc, comm->nranks, comm->vendor_id, comm->rank,
                                 reinterpret_cast<ncclConfig_t*>(comm->config_bytes.data()));
    } else {
      auto init = VendorFunction<decltype(&ncclCommInitRank)>("ncclCommInitRank");
      comm->vendor_result = init(&vc, comm->nranks, comm->vendor_id, comm->rank);
    }
    if (comm->vendor_result == ncclSuccess) {
      NoteVendorHandle(vc);
      comm->vendor = vc;
    }
  }
  if (comm->vendor_result != ncclSuccess || !comm->vendor)
    return Fail(comm->vendor_result == ncclSuccess ? ncclInternalError : comm->vendor_result,
                function, "creating the vendor communicator failed");
  *vendor_comm = comm->vendor;
  return ncclSuccess;
}

ncclResult_t WrapVendorComm(void* vendor_comm, ncclComm_t* out, const char* function) {
  auto count = VendorFunction<decltype(&ncclCommCount)>("ncclCommCount");
  auto rank = VendorFunction<decltype(&ncclCommUserRank)>("ncclCommUserRank");
  auto device = VendorFunction<decltype(&ncclCommCuDevice)>("ncclCommCuDevice");
  NoteVendorHandle(vendor_comm);  // before the queries: they may call back into the shim
  auto* c = new ncclComm();
  c->vendor = vendor_comm;
  c->vendor_tried = true;
  ncclComm_t vc = static_cast<ncclComm_t>(vendor_comm);
  if ((count && count(vc, &c->nranks) != ncclSuccess) ||
      (rank && rank(vc, &c->rank) != ncclSuccess) ||
      (device && device(vc, &c->device) != ncclSuccess)) {
    // Unusable: give it back to the vendor rather than leak it.
    auto destroy = VendorFunction<decltype(&ncclCommDestroy)>("ncclCommDestroy");
    if (destroy) (void)destroy(vc);
    ForgetVendorHandle(vendor_comm);
    delete c;
    return Fail(ncclInternalError, function, "querying the vendor's new communicator failed");
  }
  RegisterComm(c);
  *out = c;
  return ncclSuccess;
}

ncclResult_t SyncVendorGroup() {
  auto start = VendorFunction<decltype(&ncclGroupStart)>("ncclGroupStart");
  while (VendorGroupDepth() < GroupDepth()) {
    if (!start) return NoVendor("ncclGroupStart");
    ncclResult_t r = start();
    if (r != ncclSuccess) return Fail(r, "ncclGroupStart", "the vendor's ncclGroupStart failed");
    ++VendorGroupDepth();
  }
  return ncclSuccess;
}

}  // namespace xccl_shim
