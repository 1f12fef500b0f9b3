//===- MmaSyncBackward.h - the mma_sync backward kernel -*- C++ -*-===//
//
// What the mma_sync family (MmaSyncFamily.cpp) needs of its backward kind
// (MmaSyncBackward.cpp): what it computes, its shared memory and the body.
// The pre-pass and the dQ conversion are the simt family's
// (SimtBackward.h), shared. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBACKWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBACKWARD_H

#include "KernelBuilder.h"

#include <string>

namespace attnfuse::gpu_kernels {

/// Why the mma_sync backward cannot compute the backward kinds of `plan`
/// (empty when it can): bf16/f16, head dims that are multiples of 16 up to
/// 128 or of 32 up to 256, atomics for dQ (deterministic=true takes simt's).
std::string getMmaSyncBackwardUnsupportedReason(const KernelPlan &plan);

/// The warps that share one 16-key slice of the backward's key block, each
/// accumulating its 1/parts of the columns of the slice's dK and dV: 1 up
/// to head dims of 128, 2 above (the accumulators of 16 keys x 256 columns
/// of dK and of dV would take 256 registers a thread). The warps of a slice
/// both compute its S^T and dP^T.
inline int64_t getBackwardColumnParts(const KernelPlan &plan) {
  return plan.D > 128 || plan.Dv > 128 ? 2 : 1;
}

/// Bytes of dynamic shared memory of the backward: the K and V blocks, the
/// stages of the Q and dO blocks, dS^T, the stages of lse and Di (f32);
/// bf16/f16 rows padded by kPad elements.
struct MmaSyncBackwardLayout {
  int64_t k, v, q, dO, ds, lse, di;
  explicit MmaSyncBackwardLayout(const KernelPlan &plan);
  int64_t total() const { return k + v + q + dO + ds + lse + di; }
};

/// Emits the backward kernel's body into `func`.
void emitMmaSyncBackward(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBACKWARD_H
