// The runtime seam: memory, copies and streams of this build's platform (cuda, hip or host) for
// the layers above, which name no runtime. Device memory of `device` on GPU platforms, plain
// memory on the host. Copies are stream-ordered on GPUs (any direction between device and pinned
// memory) and immediate on the host, where the stream is ignored. Free functions, so that an op
// can free its buffers whatever became of its communicator.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// "cuda", "hip" or "host".
const char* PlatformName();

// The device of a rank that names none: for xcclCommInitRank (`index` -1) the calling thread's
// current device, for rank `index` of xcclCommInitAll without a devlist index % device count
// (several ranks may share one device). Host: always 0.
xcclResult_t DefaultDevice(int index, int* device);

xcclResult_t AllocateOpBuffer(int device, size_t bytes, void** ptr);  // zero-filled
void FreeOpBuffer(int device, void* ptr);
// Whether freeing memory can wait for the whole device (GPU platforms: gpuFree, gpuFreeHost), so
// that it must not run while a peer sharing the device may wait for this rank.
bool FreeingWaitsForDevice();
xcclResult_t AllocateStaging(size_t bytes, void** ptr);  // GPU: pinned host memory
void FreeStaging(void* ptr);
xcclResult_t CopyAsync(void* dst, const void* src, size_t bytes, xcclStream_t stream);
xcclResult_t ZeroAsync(void* dst, size_t bytes, xcclStream_t stream);
// `height` rows of `width` bytes, rows `dst_pitch` and `src_pitch` bytes apart (a column
// range of a row-major array).
xcclResult_t Copy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t height, xcclStream_t stream);
xcclResult_t Zero2DAsync(void* dst, size_t pitch, size_t width, size_t height, xcclStream_t stream);
xcclResult_t SyncStream(xcclStream_t stream);

}  // namespace xccl
