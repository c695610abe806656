// Functions of headers shared by host code and kernels: __host__ __device__ where a GPU compiler
// reads them, plain functions elsewhere (the host platform includes no GPU header).
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define XCCL_HOST_DEVICE __host__ __device__
#else
#define XCCL_HOST_DEVICE
#endif
