//===- GPUKernels.h - the kernels of a module lowered for CUDA --*- C++ -*-===//
#ifndef ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H
#define ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnfuse {

/// A kernel launched by a module lowered with attn-lower-to-nvvm-pipeline
/// (format=bin): its cubin and launch configuration. Sizes are -1 where they
/// are not compile-time constants.
struct GPUKernel {
  std::string name;
  std::string binary;
  int64_t grid[3];
  int64_t block[3];
  int64_t dynamicSharedMemoryBytes;
  /// LLVM types of the arguments in order ("ptr", "i64", "f32", ...).
  std::vector<std::string> argumentTypes;
};

/// The kernels of `module`'s gpu.launch_func ops, in walk order, with the
/// binary of the gpu.binary each names.
std::vector<GPUKernel> collectGPUKernels(mlir::ModuleOp module);

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H
