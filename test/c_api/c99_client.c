/* A C99 client of xccl.h, compiled with -std=c99 -pedantic -Werror: proves that the public
 * header needs no C++ and no GPU header, and that a one-rank communicator gathers correctly
 * through the C ABI (random data, poisoned output, every element compared). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xccl.h"
#include "xccl_gemm.h" /* only compiled: the plugin ABI header must be C99-clean too */

#define CHECK(call)                                                         \
  do {                                                                      \
    xcclResult_t r_ = (call);                                               \
    if (r_ != xcclSuccess) {                                                \
      fprintf(stderr, "%s failed: %s: %s\n", #call, xcclGetErrorString(r_), \
              xcclGetLastError(NULL));                                      \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main(void) {
  xcclUniqueId id;
  xcclComm_t comm = XCCL_COMM_NULL;
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  int version = 0, nranks = 0, rank = -1;
  size_t i, count = 1000 + (size_t)(time(NULL) % 1000);
  float* send = (float*)malloc(count * sizeof(float));
  float* recv = (float*)malloc(count * sizeof(float));
  srand((unsigned)time(NULL));
  for (i = 0; i < count; ++i) send[i] = (float)rand() / (float)RAND_MAX;
  memset(recv, 0xA5, count * sizeof(float));

  CHECK(xcclGetVersion(&version));
  if (version != XCCL_VERSION_CODE) return 2;
  config.timeoutMs = 30000;
  CHECK(xcclGetUniqueId(&id));
  CHECK(xcclCommInitRankConfig(&comm, 1, id, 0, &config));
  CHECK(xcclCommCount(comm, &nranks));
  CHECK(xcclCommUserRank(comm, &rank));
  if (nranks != 1 || rank != 0) return 3;
  CHECK(xcclAllGather(send, recv, count, xcclFloat32, comm, NULL));
  if (memcmp(send, recv, count * sizeof(float)) != 0) {
    fprintf(stderr, "all_gather result differs from the send buffer\n");
    return 4;
  }
  CHECK(xcclBarrier(comm, NULL));
  if (xcclAllGather(send, recv, count, (xcclDataType_t)42, comm, NULL) != xcclInvalidArgument)
    return 5;
  CHECK(xcclCommDestroy(comm));
  free(send);
  free(recv);
  printf("c99 client: OK (%zu floats)\n", count);
  return 0;
}
