/*===- MockCudaDriver.c - a libcuda.so.1 that runs no kernel ---------------===
 *
 * The CUDA driver entry points that attnfuse's CudaDriver loads, over host
 * memory: allocations are zeroed host buffers, copies are memcpy, module
 * loads accept any image, and launches only print what they were asked to do
 * ("mock-cuda: launch NAME grid=X,Y,Z block=X,Y,Z shared=N") on stderr;
 * with MOCK_CUDA_LOG_COPIES set, so do the copies to the device
 * ("mock-cuda: copy to device N bytes, first word 0xW"). Tensor maps
 * print what they encode ("mock-cuda: tensor map ..."). The
 * lit tests put it first on LD_LIBRARY_PATH to run the host side of
 * `attnfuse-run --target=cuda` (plans, buffers, launch configurations,
 * argument marshalling, the comparison) and of test/GPU/launch_kernel.py
 * (the compute-sanitizer harness) on a machine without a GPU.
 *
 *===----------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

int cuInit(unsigned flags) { return 0; }
int cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}
int cuDevicePrimaryCtxRetain(void **context, int device) {
  *context = (void *)1;
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device) { return 0; }
int cuCtxSetCurrent(void *context) { return 0; }
int cuCtxGetCurrent(void **context) {
  *context = (void *)0x1000;
  return 0;
}
int cuCtxSynchronize(void) { return 0; }
int cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  *ptr = (CUdeviceptr)calloc(1, bytes ? bytes : 1);
  return *ptr ? 0 : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
int cuMemFree_v2(CUdeviceptr ptr) {
  free((void *)ptr);
  return 0;
}
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  memcpy((void *)dst, src, bytes);
  if (getenv("MOCK_CUDA_LOG_COPIES")) {
    unsigned word = 0;
    memcpy(&word, src, bytes < sizeof(word) ? bytes : sizeof(word));
    fprintf(stderr, "mock-cuda: copy to device %zu bytes, first word 0x%08x\n",
            bytes, word);
  }
  return 0;
}
int cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t bytes) {
  memset((void *)dst, value, bytes);
  return 0;
}
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, (const void *)src, bytes);
  return 0;
}
int cuModuleLoadData(void **module, const void *image) {
  *module = (void *)1;
  return 0;
}
int cuModuleUnload(void *module) { return 0; }
int cuModuleGetFunction(void **function, void *module, const char *name) {
  *function = strdup(name);
  return 0;
}
int cuFuncSetAttribute(void *function, int attribute, int value) { return 0; }
int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                   void *stream, void **params, void **extra) {
  fprintf(stderr,
          "mock-cuda: launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u\n",
          (const char *)function, gx, gy, gz, bx, by, bz, shared);
  return 0;
}
int cuGetErrorString(int error, const char **text) {
  *text = "mock-cuda error";
  return 0;
}
/* Prints what it was asked to encode (arrays innermost first, as passed)
 * and writes a map whose first word is the global address. */
int cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *address,
                           const unsigned long long *dims,
                           const unsigned long long *strides,
                           const unsigned *box, const unsigned *elementStrides,
                           int interleave, int swizzle, int l2Promotion,
                           int oobFill) {
  unsigned i;
  memset(map, 0, 128);
  memcpy(map, &address, sizeof(address));
  fprintf(stderr, "mock-cuda: tensor map dtype=%d rank=%u dims=", type, rank);
  for (i = 0; i < rank; ++i)
    fprintf(stderr, "%s%llu", i ? "," : "", dims[i]);
  fprintf(stderr, " strides=");
  for (i = 0; i + 1 < rank; ++i)
    fprintf(stderr, "%s%llu", i ? "," : "", strides[i]);
  fprintf(stderr, " box=");
  for (i = 0; i < rank; ++i)
    fprintf(stderr, "%s%u", i ? "," : "", box[i]);
  fprintf(stderr, " swizzle=%d l2=%d\n", swizzle, l2Promotion);
  return 0;
}
