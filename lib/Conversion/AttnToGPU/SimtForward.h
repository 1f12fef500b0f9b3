//===- SimtForward.h - the forward kernel of the SIMT family -*- C++ -*-===//
//
// What the simt family (SimtFamily.cpp) needs of its forward kernel
// (SimtForward.cpp): its workgroup buffers and the body; and of the split
// forward's combine kernel (SimtCombine.cpp), which every family's split
// forward takes. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTFORWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTFORWARD_H

#include "KernelFamily.h"

namespace attnfuse::gpu_kernels {

/// The f32 K and V blocks, [BK, Dqk] and [BK, Dv] (static shared memory).
SmallVector<Type> getSimtForwardWorkgroupBuffers(const KernelPlan &plan,
                                                 MLIRContext *ctx);

/// Emits the forward kernel's body into `func` (its workgroup buffers:
/// getSimtForwardWorkgroupBuffers).
void emitSimtForward(KernelPlan &plan, gpu::GPUFuncOp func);

/// Warps (query rows) per CTA of the combine kernel.
constexpr int64_t kCombineWarps = 4;
/// The combine kernel (ForwardCombine): one warp per query row,
/// kCombineWarps rows per CTA, a one-dimensional grid.
LaunchShape getSimtCombineLaunchShape(const KernelPlan &plan);
/// Emits the combine kernel's body into `func`.
void emitSimtForwardCombine(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTFORWARD_H
