//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// attnfuse's GPU runtime on the host: the few driver-API entry points needed
// to load a cubin, move buffers and launch, resolved from libcuda.so.1 with
// dlopen when first used, so that everything builds and links on machines
// without a GPU or a CUDA driver.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_EXECUTIONENGINE_CUDADRIVER_H
#define ATTNFUSE_EXECUTIONENGINE_CUDADRIVER_H

#include "attnfuse/ExecutionEngine/GPUKernels.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace attnfuse {

/// The primary context of device 0, made current on construction.
class CudaDriver {
public:
  /// Loads libcuda.so.1 and initializes device 0; fails with the reason
  /// (no driver, no device, ...).
  static llvm::Expected<CudaDriver *> get();

  llvm::Expected<uint64_t> allocate(size_t bytes);
  llvm::Error free(uint64_t devicePtr);
  llvm::Error copyToDevice(uint64_t devicePtr, const void *host, size_t bytes);
  llvm::Error copyToHost(void *host, uint64_t devicePtr, size_t bytes);
  /// Loads `cubin` and returns the function `name` of it (the module stays
  /// loaded for the process).
  llvm::Expected<void *> loadFunction(llvm::StringRef cubin,
                                      llvm::StringRef name,
                                      int64_t dynamicSharedMemoryBytes);
  /// A CUtensorMap: 128 bytes, 64-byte aligned.
  struct alignas(64) TensorMap {
    std::array<uint64_t, 16> words;
  };
  /// Encodes the tensor map `map` of a source buffer at device address
  /// `source` (cuTensorMapEncodeTiled; zeros for out-of-bounds elements).
  llvm::Expected<TensorMap> encodeTensorMap(const TensorMapArgument &map,
                                            uint64_t source);
  /// Launches and waits for completion. `arguments[i]` points to the i-th
  /// kernel argument's value.
  llvm::Error launch(void *function, const int64_t grid[3],
                     const int64_t block[3], int64_t dynamicSharedMemoryBytes,
                     llvm::ArrayRef<void *> arguments);

private:
  CudaDriver() = default;
  llvm::Error check(int status, llvm::StringRef what);
  struct Api;
  Api *api = nullptr;
};

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_CUDADRIVER_H
