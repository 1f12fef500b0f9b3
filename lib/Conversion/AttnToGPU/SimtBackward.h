//===- SimtBackward.h - the backward kernels of the SIMT family -*- C++ -*-===//
//
// What the simt family (SimtFamily.cpp) needs of its backward kinds
// (SimtBackward.cpp): the pre-pass, the backward and the dQ conversion, and
// their launch shapes. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTBACKWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTBACKWARD_H

#include "KernelBuilder.h"
#include "KernelFamily.h"

namespace attnfuse::gpu_kernels {

/// Threads per CTA of the pre-pass and the conversion (one per query row,
/// one per element of dQ).
constexpr int64_t kSimtBackwardElementwiseThreads = 256;

/// The pre-pass's threads per query row where its rows split into 16-byte
/// pieces (prePassInPieces): each reads pieces of dO and O and zeroes
/// pieces of the accumulator's row, the 8 summing Di by shuffles, so that a
/// warp's loads and stores are 4 whole rows (coalesced); otherwise one
/// thread per row.
constexpr int64_t kPrePassThreadsPerRow = 8;
/// Whether the pre-pass of `plan` reads its rows in 16-byte pieces: Dv
/// elements and Dqk f32 of the accumulator in whole pieces.
bool prePassInPieces(const KernelPlan &plan);
/// The elements of dO and O in a 16-byte piece.
int64_t prePassPiece(const KernelPlan &plan);

/// The launch of a backward kind: the backward one CTA per (key block,
/// batch * KV head), plan.threads threads; the pre-pass and the conversion
/// a one-dimensional grid of kSimtBackwardElementwiseThreads-thread CTAs.
LaunchShape getSimtBackwardLaunchShape(const KernelPlan &plan);

/// grad_bias in the backward kernels of every family: the term `dt` (f32,
/// 0 where hidden) of score element `bhqk` (in bounds), stored in dBias
/// (BiasGradient::Store) or added to the accumulator (Accumulate; zero terms
/// skipped). The pre-pass zeroed the target; with Accumulate the
/// conversion rounds it into dBias (convertsBiasGradient). A thread calls
/// it once per element it owns (none twice).
void writeBiasGradient(KB &k, const KernelPlan &plan, const KernelArgs &args,
                       ArrayRef<Value> bhqk, Value dt);

/// Emits the body of the backward kind plan.kind into `func` (no workgroup
/// buffers).
void emitSimtBackward(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_SIMTBACKWARD_H
