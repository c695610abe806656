// Device memory a communicator holds per rank, after init, after a first all_gather and after a
// reduce_scatter of the same bytes (the gathered output reduced back into blocks), with thread
// ranks sharing one GPU: the drop in the device's free memory divided by the ranks, the buffers
// allocated beforehand and a warm-up init at the same world first (the runtime's one-time costs,
// kernel modules and pools, are not the communicator's). --compare vendor measures NCCL (or RCCL,
// opened with dlopen) the same way at world 1, beside xccl's.
// Usage: device_memory [-w 1,2,8] [-b bytes received per rank by the all_gather, 1G]
//                      [-d device] [--compare vendor]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu_runtime_settings.h"
#include "harness/options.h"
#include "harness/vendor_nccl.h"
#include "platform/gpu.h"
#include "xccl.h"

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool Ok(gpuError_t err, const char* what) {
  if (err == gpuSuccess) return true;
  fprintf(stderr, "device_memory: %s failed: %s\n", what, gpuGetErrorString(err));
  return false;
}

bool XcclOk(xcclResult_t result, const char* what) {
  if (result == xcclSuccess) return true;
  fprintf(stderr, "device_memory: %s failed: %s\n", what, xcclGetLastError(nullptr));
  return false;
}

size_t FreeBytes() {
  size_t free_bytes = 0, total = 0;
  return Ok(gpuMemGetInfo(&free_bytes, &total), "cudaMemGetInfo") ? free_bytes : 0;
}

double HeldMiB(size_t before, size_t after, int ranks) {
  return before > after ? static_cast<double>(before - after) / kMiB / ranks : 0.0;
}

// One rank's buffers: the block it sends and the whole gathered output.
struct RankBuffers {
  void* send = nullptr;
  void* recv = nullptr;
  gpuStream_t stream = nullptr;
};

bool AllocateRanks(int world, size_t recv_bytes, std::vector<RankBuffers>* ranks) {
  ranks->assign(world, RankBuffers{});
  for (RankBuffers& r : *ranks) {
    if (!Ok(gpuMalloc(&r.send, recv_bytes / world), "cudaMalloc (send)") ||
        !Ok(gpuMalloc(&r.recv, recv_bytes), "cudaMalloc (recv)") ||
        !Ok(gpuMemset(r.send, 0x5a, recv_bytes / world), "cudaMemset") ||
        !Ok(gpuStreamCreateWithFlags(&r.stream, gpuStreamNonBlocking), "cudaStreamCreate"))
      return false;
  }
  return Ok(gpuDeviceSynchronize(), "cudaDeviceSynchronize");
}

void FreeRanks(std::vector<RankBuffers>* ranks) {
  for (RankBuffers& r : *ranks) {
    if (r.send != nullptr) (void)gpuFree(r.send);
    if (r.recv != nullptr) (void)gpuFree(r.recv);
    if (r.stream != nullptr) (void)gpuStreamDestroy(r.stream);
  }
  ranks->clear();
}

// Every rank's call from a thread of its own (a rank's call may wait for its peers'): the
// all_gather of `block` bytes per rank, or the reduce_scatter of the gathered output back into
// `block` bytes per rank.
bool CallOnce(const std::vector<xcclComm_t>& comms, const std::vector<RankBuffers>& ranks,
              int device, size_t block, bool reduce_scatter) {
  std::vector<int> ok(comms.size(), 0);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      const RankBuffers& b = ranks[r];
      ok[r] = Ok(gpuSetDevice(device), "cudaSetDevice") &&
              (reduce_scatter
                   ? XcclOk(xcclReduceScatter(b.recv, b.send, block, xcclUint8, xcclSum, comms[r],
                                              b.stream),
                            "xcclReduceScatter")
                   : XcclOk(xcclAllGather(b.send, b.recv, block, xcclUint8, comms[r], b.stream),
                            "xcclAllGather")) &&
              Ok(gpuStreamSynchronize(b.stream), "cudaStreamSynchronize");
    });
  }
  for (std::thread& t : threads) t.join();
  for (int v : ok)
    if (!v) return false;
  return true;
}

bool MeasureXccl(int world, int device, size_t recv_bytes) {
  const std::vector<int> devices(world, device);
  std::vector<xcclComm_t> comms(world, nullptr);
  // The warm-up: the runtime's costs of a first communicator at this world.
  if (!XcclOk(xcclCommInitAll(comms.data(), world, devices.data()), "xcclCommInitAll"))
    return false;
  for (xcclComm_t c : comms) xcclCommDestroy(c);
  std::vector<RankBuffers> ranks;
  const size_t block = recv_bytes / world;
  bool ok = AllocateRanks(world, block * world, &ranks);
  const size_t before = FreeBytes();
  ok = ok && XcclOk(xcclCommInitAll(comms.data(), world, devices.data()), "xcclCommInitAll");
  const size_t after_init = FreeBytes();
  ok = ok && CallOnce(comms, ranks, device, block, /*reduce_scatter=*/false);
  const size_t after_call = FreeBytes();
  ok = ok && CallOnce(comms, ranks, device, block, /*reduce_scatter=*/true);
  const size_t after_reduce = FreeBytes();
  if (ok)
    printf("%6s %6d %14.1f %22.1f %20.1f\n", "xccl", world, HeldMiB(before, after_init, world),
           HeldMiB(before, after_call, world), HeldMiB(before, after_reduce, world));
  for (xcclComm_t& c : comms)
    if (c != nullptr) xcclCommDestroy(c);
  FreeRanks(&ranks);
  return ok;
}

bool MeasureVendor(size_t recv_bytes) {
  std::string why;
  const xccl_perf::VendorLibrary* library = xccl_perf::VendorLibrary::Get(&why);
  if (library == nullptr) {
    printf("# vendor: not measured, %s\n", why.c_str());
    return true;
  }
  std::vector<RankBuffers> ranks;
  bool ok = AllocateRanks(1, recv_bytes, &ranks);
  xccl_perf::VendorId id;
  // The warm-up, as for xccl.
  ok = ok && library->GetUniqueId(&id, 0);
  ok = ok && xccl_perf::VendorComm::Init(*library, 1, id, 0) != nullptr;
  ok = ok && library->GetUniqueId(&id, 0);
  const size_t before = FreeBytes();
  std::unique_ptr<xccl_perf::VendorComm> comm;
  if (ok) comm = xccl_perf::VendorComm::Init(*library, 1, id, 0);
  ok = ok && comm != nullptr;
  const size_t after_init = FreeBytes();
  ok = ok && comm->AllGather(ranks[0].send, ranks[0].recv, recv_bytes, ranks[0].stream) &&
       Ok(gpuStreamSynchronize(ranks[0].stream), "cudaStreamSynchronize");
  const size_t after_call = FreeBytes();
  ok = ok &&
       comm->ReduceScatter(ranks[0].recv, ranks[0].send, recv_bytes, xcclUint8, xcclSum,
                           ranks[0].stream) &&
       Ok(gpuStreamSynchronize(ranks[0].stream), "cudaStreamSynchronize");
  const size_t after_reduce = FreeBytes();
  if (ok)
    printf("%6s %6d %14.1f %22.1f %20.1f   # %s %s\n", "vendor", 1, HeldMiB(before, after_init, 1),
           HeldMiB(before, after_call, 1), HeldMiB(before, after_reduce, 1),
           library->path().c_str(), library->VersionText().c_str());
  comm.reset();
  FreeRanks(&ranks);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
  std::vector<int> worlds = {1, 2, 8};
  size_t recv_bytes = size_t(1) << 30;
  int device = 0;
  bool vendor = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!strcmp(argv[i], "-w") && has_value) {
      worlds.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) worlds.push_back(atoi(item.c_str()));
    } else if (!strcmp(argv[i], "-b") && has_value &&
               xccl_perf::ParseSize(argv[i + 1], &recv_bytes)) {
      ++i;
    } else if (!strcmp(argv[i], "-d") && has_value) {
      device = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--compare") && has_value && !strcmp(argv[i + 1], "vendor")) {
      vendor = true;
      ++i;
    } else {
      fprintf(stderr,
              "usage: device_memory [-w 1,2,8] [-b bytes received per rank] [-d device] "
              "[--compare vendor]\n");
      return 2;
    }
  }
  for (int world : worlds) {
    if (world < 1 || recv_bytes / world == 0) {
      fprintf(stderr, "device_memory: world %d with %zu bytes per rank is not a run\n", world,
              recv_bytes);
      return 2;
    }
  }
  if (!Ok(gpuSetDevice(device), "cudaSetDevice")) return 1;
  printf(
      "# device memory held per rank (MiB; free-memory drop / ranks), thread ranks on device %d;"
      " the all_gather receives %zu bytes per rank\n",
      device, recv_bytes);
  printf("%6s %6s %14s %22s %20s\n", "lib", "world", "after init", "after first all_gather",
         "after reduce_scatter");
  bool ok = true;
  for (int world : worlds) ok = MeasureXccl(world, device, recv_bytes) && ok;
  if (vendor) ok = MeasureVendor(recv_bytes) && ok;
  return ok ? 0 : 1;
}
