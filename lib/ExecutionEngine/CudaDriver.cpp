//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -----------===//
#include "attnfuse/ExecutionEngine/CudaDriver.h"
#include "attnfuse/Conversion/AttnToGPU/TensorMapCodes.h"

#include "llvm/ADT/Twine.h"

#include <dlfcn.h>
#include <mutex>
#include <string>

using namespace attnfuse;

namespace {
// Driver-API types and constants used here (cuda.h's values).
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUdeviceptr = unsigned long long;
constexpr int kMaxDynamicSharedSizeBytes = 8; // CU_FUNC_ATTRIBUTE_...
} // namespace

struct CudaDriver::Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *,
                                     const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int,
                                     int, int, int);
};

llvm::Expected<CudaDriver *> CudaDriver::get() {
  static CudaDriver driver;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      failure = "cannot load the CUDA driver (libcuda.so.1): no NVIDIA driver "
                "on this machine?";
      return;
    }
    static Api api;
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, name));
      if (!fn && failure.empty())
        failure = std::string("libcuda.so.1 lacks ") + name;
    };
    bind(api.cuInit, "cuInit");
    bind(api.cuDeviceGet, "cuDeviceGet");
    bind(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(api.cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(api.cuCtxSynchronize, "cuCtxSynchronize");
    bind(api.cuMemAlloc, "cuMemAlloc_v2");
    bind(api.cuMemFree, "cuMemFree_v2");
    bind(api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    bind(api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    bind(api.cuModuleLoadData, "cuModuleLoadData");
    bind(api.cuModuleGetFunction, "cuModuleGetFunction");
    bind(api.cuFuncSetAttribute, "cuFuncSetAttribute");
    bind(api.cuLaunchKernel, "cuLaunchKernel");
    bind(api.cuGetErrorString, "cuGetErrorString");
    bind(api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
    if (!failure.empty())
      return;
    driver.api = &api;
    CUdevice device;
    CUcontext context;
    if (llvm::Error e = driver.check(api.cuInit(0), "cuInit"))
      failure = llvm::toString(std::move(e));
    else if (llvm::Error e =
                 driver.check(api.cuDeviceGet(&device, 0), "cuDeviceGet"))
      failure = llvm::toString(std::move(e));
    else if (llvm::Error e = driver.check(
                 api.cuDevicePrimaryCtxRetain(&context, device),
                 "cuDevicePrimaryCtxRetain"))
      failure = llvm::toString(std::move(e));
    else if (llvm::Error e =
                 driver.check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent"))
      failure = llvm::toString(std::move(e));
  });
  if (!failure.empty())
    return llvm::createStringError(failure);
  return &driver;
}

llvm::Error CudaDriver::check(int status, llvm::StringRef what) {
  if (status == 0)
    return llvm::Error::success();
  const char *message = nullptr;
  if (api && api->cuGetErrorString)
    api->cuGetErrorString(status, &message);
  return llvm::createStringError(llvm::Twine(what) + " failed: " +
                                 (message ? message : "unknown error") +
                                 " (" + llvm::Twine(status) + ")");
}

llvm::Expected<uint64_t> CudaDriver::allocate(size_t bytes) {
  CUdeviceptr ptr = 0;
  if (llvm::Error e = check(api->cuMemAlloc(&ptr, bytes ? bytes : 1),
                            "cuMemAlloc"))
    return std::move(e);
  return ptr;
}

llvm::Error CudaDriver::free(uint64_t devicePtr) {
  return check(api->cuMemFree(devicePtr), "cuMemFree");
}

llvm::Error CudaDriver::copyToDevice(uint64_t devicePtr, const void *host,
                                     size_t bytes) {
  return check(api->cuMemcpyHtoD(devicePtr, host, bytes), "cuMemcpyHtoD");
}

llvm::Error CudaDriver::copyToHost(void *host, uint64_t devicePtr,
                                   size_t bytes) {
  return check(api->cuMemcpyDtoH(host, devicePtr, bytes), "cuMemcpyDtoH");
}

llvm::Expected<void *>
CudaDriver::loadFunction(llvm::StringRef cubin, llvm::StringRef name,
                         int64_t dynamicSharedMemoryBytes) {
  CUmodule module = nullptr;
  std::string image = cubin.str(); // NUL-terminated for cuModuleLoadData
  if (llvm::Error e =
          check(api->cuModuleLoadData(&module, image.c_str()),
                "cuModuleLoadData"))
    return std::move(e);
  CUfunction function = nullptr;
  if (llvm::Error e =
          check(api->cuModuleGetFunction(&function, module, name.str().c_str()),
                "cuModuleGetFunction(" + name.str() + ")"))
    return std::move(e);
  if (dynamicSharedMemoryBytes > 48 * 1024)
    if (llvm::Error e = check(
            api->cuFuncSetAttribute(function, kMaxDynamicSharedSizeBytes,
                                    static_cast<int>(dynamicSharedMemoryBytes)),
            "cuFuncSetAttribute"))
      return std::move(e);
  return function;
}

llvm::Expected<CudaDriver::TensorMap>
CudaDriver::encodeTensorMap(const TensorMapArgument &map, uint64_t source) {
  // CUtensorMapDataType, and the element's bytes.
  int type;
  uint64_t bytes;
  if (map.elementType == "bf16")
    type = 9, bytes = 2;
  else if (map.elementType == "f16")
    type = 6, bytes = 2;
  else if (map.elementType == "f32")
    type = 7, bytes = 4;
  else
    return llvm::createStringError("a tensor map of " + map.elementType +
                                   " elements");
  // Innermost dimension first; the strides (bytes) of the source's outer
  // dimensions: the view's, else the contiguous buffer's.
  unsigned rank = map.dims.size();
  std::vector<uint64_t> dims(map.dims.rbegin(), map.dims.rend()), strides;
  std::vector<unsigned> box(map.box.rbegin(), map.box.rend()),
      elementStrides(rank, 1);
  uint64_t stride = bytes;
  for (unsigned i = 1; i < rank; ++i)
    strides.push_back(map.strides.empty()
                          ? stride *= dims[i - 1]
                          : bytes * map.strides[rank - 1 - i]);
  TensorMap result;
  if (llvm::Error e = check(
          api->cuTensorMapEncodeTiled(
              &result, type, rank, reinterpret_cast<void *>(source),
              dims.data(), strides.data(), box.data(), elementStrides.data(),
              /*interleave=*/0, tensorMapSwizzleCode(map.swizzle),
              tensorMapL2PromotionCode(map.l2Promotion), /*oobFill=*/0),
          "cuTensorMapEncodeTiled"))
    return std::move(e);
  return result;
}

llvm::Error CudaDriver::launch(void *function, const int64_t grid[3],
                               const int64_t block[3],
                               int64_t dynamicSharedMemoryBytes,
                               llvm::ArrayRef<void *> arguments) {
  std::vector<void *> params(arguments.begin(), arguments.end());
  if (llvm::Error e = check(
          api->cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0],
                              block[1], block[2], dynamicSharedMemoryBytes,
                              nullptr, params.data(), nullptr),
          "cuLaunchKernel"))
    return e;
  return check(api->cuCtxSynchronize(), "cuCtxSynchronize");
}
