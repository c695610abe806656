// Where a rank's send and receive buffers live. The host build allocates aligned host memory; a
// GPU build adds an implementation (cudaMalloc / hipMalloc, a stream, copies) behind the same
// interface, so the benchmarks never name a GPU runtime.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "xccl.h"

namespace xccl_perf {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;

  // Binds the calling thread to `device` (a GPU build selects it, so that a later
  // xcclCommInitRank in this thread picks it up) and returns the backend for it; nullptr with a
  // message on stderr if that fails.
  static std::unique_ptr<DeviceBuffers> Create(int device);

  // Memory the collective reads and writes; nullptr on failure. Pages are touched here so that
  // first-touch faults do not land inside a timed loop.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Release(void* buffer) = 0;

  // True when the CPU can read and write buffers directly: the checks then work in place
  // instead of through staging copies.
  virtual bool HostAccessible() const = 0;
  virtual bool CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual bool CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;

  // The stream collectives are issued on (NULL on the host platform), and a wait for it, which
  // a timed loop needs before it reads the clock.
  virtual xcclStream_t Stream() = 0;
  virtual bool Synchronize() = 0;

  // The device this rank runs on (a GPU build may wrap the requested number around the devices
  // present, since xccl lets ranks share one), shown in "# Using devices".
  virtual int Device() const = 0;
  // The "[0x..] name" tail of a "# Using devices" line.
  virtual std::string Describe() const = 0;
};

}  // namespace xccl_perf
