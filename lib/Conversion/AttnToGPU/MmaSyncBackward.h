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
/// (empty when it can): bf16/f16, head dims multiples of 16 up to 128, no
/// bias, keep mask, dropout or score_mod (those take simt's).
std::string getMmaSyncBackwardUnsupportedReason(const KernelPlan &plan);

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
