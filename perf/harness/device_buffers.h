// The device a rank runs on, as the benchmarks see it: its memory, the stream collectives are
// issued on, the timer around a timed loop and graph capture of that loop. The host build
// allocates aligned host memory and times with the CPU clock; a GPU build implements the same
// interface with the runtime (device_buffers_cuda.cc, device_buffers_hip.cc), so the benchmarks
// never name a GPU runtime and every vendor call stays in one file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "xccl.h"

namespace xccl_perf {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;

  // Binds the calling thread to device `device` modulo the devices present (a GPU build selects
  // it, so that a later xcclCommInitRank in this thread picks it up; ranks share GPUs when there
  // are fewer GPUs than ranks) and returns the backend for it; nullptr with a message on stderr
  // if that fails. On a GPU platform this is the first runtime call of the process, which is why
  // it runs in the rank's thread after fork(), never before.
  static std::unique_ptr<DeviceBuffers> Create(int device);

  // "host", "cuda" or "hip": the platform this binary was built for.
  static const char* Platform();
  // Whether Begin/EndCapture work here (-G); the host platform has no graphs.
  static bool SupportsGraphs();

  // Memory the collective reads and writes; nullptr on failure. Pages are touched here so that
  // first-touch faults do not land inside a timed loop.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Release(void* buffer) = 0;
  // Makes host copies of up to `bytes` possible for memory allocated elsewhere (xcclMemAlloc).
  virtual bool ReserveHostCopies(size_t bytes) = 0;

  // True when the CPU can read and write buffers directly: the checks then work in place
  // instead of through staging copies.
  virtual bool HostAccessible() const = 0;
  // Both return once the copy is complete, so that a peer may write next to it at once.
  virtual bool CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual bool CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;

  // The stream collectives are issued on (NULL on the host platform), and a wait for it.
  virtual xcclStream_t Stream() = 0;
  virtual bool Synchronize() = 0;
  // A second stream, of the device's highest priority, for work that runs beside Stream()'s (GPU
  // platforms): ForkSide makes it wait for Stream()'s work so far,
  // JoinSide makes Stream() wait for its work so far. The host platform: NULL, and calls run in
  // turn.
  virtual xcclStream_t SideStream() = 0;
  virtual bool ForkSide() = 0;
  virtual bool JoinSide() = 0;

  // Marks the start of a timed loop on the stream, and its end: StopTimer waits for everything
  // issued in between and gives the seconds it took where the work runs (GPU time on a GPU, so
  // host-side launch overhead only counts where it starves the device).
  virtual bool StartTimer() = 0;
  virtual bool StopTimer(double* seconds) = 0;

  // Graph capture of what is issued on Stream() between BeginCapture and EndCapture (nothing
  // runs then); LaunchCaptured replays it on the stream. One graph at a time; EndCapture
  // replaces the previous one. AbortCapture ends a capture that failed half-way, so that the
  // stream is usable again.
  virtual bool BeginCapture() = 0;
  virtual bool EndCapture() = 0;
  virtual void AbortCapture() = 0;
  virtual bool LaunchCaptured() = 0;
  virtual void DropCaptured() = 0;

  // The device this rank runs on, shown in "# Using devices".
  virtual int Device() const = 0;
  // The "[bus id] name" tail of a "# Using devices" line.
  virtual std::string Describe() const = 0;
  // The device's name ("NVIDIA H200", "host") and a key unique per physical device on this node
  // (the PCI bus id), which tells whether ranks share a GPU.
  virtual std::string Name() const = 0;
  virtual std::string BusId() const = 0;
};

}  // namespace xccl_perf
