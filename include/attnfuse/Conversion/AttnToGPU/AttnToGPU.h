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
  /// and f32 accumulators, FlashAttention-2's structure: 4 warps of 32 query
  /// rows (two m16 tiles, Q in shared memory; block-q=64: 16 rows, Q in
  /// registers), K/V blocks of 64 keys double-buffered in shared memory through
  /// cp.async, ldmatrix fragments, P kept in registers. Ops it does not cover
  /// (f32, bias, keep mask, score_mod, dropout, head dims not multiples of
  /// 32 or above 128) fall back to Simt with a remark.
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
  /// rescalings of the accumulator.
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
  /// The products' instruction family. With MmaSync, blockQ is 128
  /// (default) or 64, blockK is 64 and threadsPerRow/chunk are unused.
  InstructionFamily family = InstructionFamily::MmaSync;
};

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
