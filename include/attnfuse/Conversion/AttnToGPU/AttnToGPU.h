//===- AttnToGPU.h - fused CUDA attention kernels ---------------*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H
#define ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace attnfuse {
namespace attn {
class AttentionOp;
} // namespace attn

/// The instruction family of the two products (S = Q K^T, O += P V).
enum class InstructionFamily {
  /// f32 FMAs on CUDA cores (any element type, every feature of the op).
  Simt,
  /// Warp-level tensor-core mma.sync m16n8k16 (sm_80+), bf16/f16 operands
  /// and f32 accumulators, FlashAttention-2's structure: 4 or 8 warps of one
  /// or two m16 tiles of query rows, K/V blocks streamed through a multi-stage
  /// cp.async pipeline in shared memory, ldmatrix fragments, P kept in
  /// registers; every feature of the op. Ops it does not cover (f32, head
  /// dims not multiples of 16 or above 256) fall back to Simt with a remark.
  MmaSync,
};

/// The configuration of one generated forward kernel. A value of 0 picks the
/// default for the op's head dimension (see resolveKernelConfig).
struct AttentionKernelOptions {
  /// Query rows per CTA.
  int64_t blockQ = 0;
  /// Keys per shared-memory K/V block.
  int64_t blockK = 0;
  /// Threads cooperating on one query row (each owns Dqk/T elements of Q
  /// and Dv/T of the output accumulator; partial dot products are combined
  /// with warp shuffles). A power of two, at most 32.
  int64_t threadsPerRow = 0;
  /// Keys whose scores are held in registers between two online-softmax
  /// rescalings of the accumulator (mma_sync: a multiple of 16 dividing
  /// blockK; 0: blockK).
  int64_t chunk = 0;
  /// CTAs per SM that ptxas must make room for (`.minnctapersm`); 1 lets a
  /// thread use up to 255 registers. Negative: leave it to ptxas.
  int64_t minCtasPerSM = 1;
  /// mma_sync: rescale the O accumulators by exp2(m_old - m_new) only when
  /// a row max of the warp changed (a warp vote), not after every block.
  bool lazyRescale = true;
  /// mma_sync: warps per CTA (4 or 8; blockQ = 16 x warps x m16 tiles per
  /// warp) and K/V shared-memory stages of the cp.async pipeline (2-4).
  int64_t warps = 0;
  int64_t stages = 0;
  /// mma_sync: dynamic shared memory a CTA may use, in bytes (0: 227 KB,
  /// sm_90's); the defaults shrink to fit it, explicit options beyond it
  /// are an error. See sharedMemoryLimitForChip.
  int64_t sharedMemoryLimit = 0;
  /// The products' instruction family. With MmaSync, blockQ is 16 x warps x
  /// (1 or 2), blockK 32 or 64, and threadsPerRow is unused.
  InstructionFamily family = InstructionFamily::MmaSync;
};

/// The opt-in dynamic shared memory per CTA of an NVIDIA chip ("sm_80",
/// "sm_90a", ...): 163 KB on sm_80/87, 99 KB on sm_86/89, 227 KB on sm_90
/// and later (and for names it does not know).
int64_t sharedMemoryLimitForChip(llvm::StringRef chip);

/// Defaults per head dimension, filled into the zero fields of `options`:
/// 32 elements of Q and of the accumulator per thread (T = max(1, D / 32)),
/// 128 query rows per CTA for D <= 64 and 64 above (at most 255
/// registers per thread, no spills), 64 keys per block for D <= 64 and 32 above (so
/// that the f32 K and V blocks stay within 32 KB of static shared memory),
/// chunks of 16 keys.
AttentionKernelOptions resolveKernelConfig(int64_t headDimQK, int64_t headDimV,
                                           AttentionKernelOptions options);

/// Replaces `op` (static shapes, f16/bf16/f32) by a launch of a fused
/// FlashAttention forward kernel: a `gpu.func` named `kernelName`, added to
/// `gpuModule`, and a `gpu.launch_func` at `op`'s position between
/// `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
/// of the results. The kernel's arguments are, in order,
/// Q, K, V, [bias], [keep_mask], [seed], O, lse (memrefs with identity
/// layouts, the seed an i64); lse is always written.
mlir::LogicalResult convertAttentionToGPU(attn::AttentionOp op,
                                    mlir::Operation *gpuModule,
                                    llvm::StringRef kernelName,
                                    const AttentionKernelOptions &options);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H
