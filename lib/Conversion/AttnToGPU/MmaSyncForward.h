//===- MmaSyncForward.h - the mma_sync forward kernel -*- C++ -*-===//
//
// What the mma_sync family (MmaSyncFamily.cpp) needs of its forward kernel
// (MmaSyncForward.cpp): the kernel's shared memory and the body. Internal
// to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCFORWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCFORWARD_H

#include "KernelBuilder.h"

namespace attnfuse::gpu_kernels {

/// Bytes of dynamic shared memory: the K stages, then the V stages, then Q
/// (when in shared memory); bf16/f16 rows padded by kPad elements.
struct MmaSyncForwardLayout {
  int64_t k, v, q;
  explicit MmaSyncForwardLayout(const KernelPlan &plan);
  int64_t total() const { return k + v + q; }
};

/// Emits the forward kernel's body into `func`.
void emitMmaSyncForward(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCFORWARD_H
