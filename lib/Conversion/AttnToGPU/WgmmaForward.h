//===- WgmmaForward.h - the forward kernel of the wgmma family -*- C++ -*-===//
//
// What the wgmma family (WgmmaFamily.cpp) needs of its forward kernel
// (WgmmaForward.cpp): the kernel's shared memory, its tensor maps and the
// body. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMAFORWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMAFORWARD_H

#include "WgmmaBlocks.h"

namespace attnfuse::gpu_kernels {

/// Whether the producer stages the bias tile of each key block by TMA (with
/// the block's V, in the tile layout of TileLayout: the consumers read
/// their pairs of keys from shared memory, a warp's 8 rows of 16 bytes from
/// 8 distinct bank groups, where from global memory each such load touched
/// 8 lines): TMA loads, a bias of the operands' element type of shape
/// [B or 1, H or 1, Nq, Nk], Nk a multiple of 8 (16-byte rows) and of
/// block-k (with a key tail ptxas spilled 200 bytes at d = 128).
bool stagesBias(const KernelPlan &plan);

/// Whether the consumers store O by TMA (resolveOptions turns tma-store off
/// where the staging tile does not fit).
bool storesByTma(const KernelPlan &plan);

/// The forward kernel's dynamic shared memory: 1024 bytes of slack to align
/// the tiles, the Q buffers, the K stages, the V stages, [the bias stages,]
/// [O's staging tile or slot unless it is the Q buffer's,] then the
/// mbarriers of the pipeline.
struct WgmmaForwardLayout {
  TileLayout q, k, v, o, bias;
  int64_t qBuffers, stages;
  /// Whether the bias goes through shared memory (stagesBias: a tile of
  /// block-q rows and block-k keys per stage, after the V stages).
  bool stagedBias;
  /// Whether O goes through shared memory (the tile `o`) to TMA stores.
  bool stagedOutput;
  /// Whether O's staging tile lies in the Q buffer: with one CTA per tile,
  /// Q is not loaded again, and a warpgroup's Q rows are dead once its last
  /// S is done; with panels of Q's width and no more of them, each
  /// warpgroup's O rows fall on its own Q rows. Else after the other tiles.
  bool outputInQ;
  /// Whether O's staging is a slot of one warpgroup's 64 rows, which the
  /// consumer warpgroups take in turns (waitTurn, passTurn): where the whole
  /// tile does not fit beside the others (a persistent grid at d = 256).
  bool outputSlot = false;
  explicit WgmmaForwardLayout(const KernelPlan &plan);
  int64_t qStride() const { return llvm::alignTo(q.bytes(), 1024); }
  int64_t kOffset() const { return qBuffers * qStride(); }
  int64_t kStage() const { return llvm::alignTo(k.bytes(), 1024); }
  int64_t vOffset() const { return kOffset() + stages * kStage(); }
  int64_t vStage() const { return llvm::alignTo(v.bytes(), 1024); }
  int64_t biasOffset() const { return vOffset() + stages * vStage(); }
  int64_t biasStage() const { return llvm::alignTo(bias.bytes(), 1024); }
  /// The end of the Q, K, V and bias tiles.
  int64_t inputsEnd() const {
    return biasOffset() + (stagedBias ? stages * biasStage() : 0);
  }
  int64_t oOffset() const { return outputInQ ? 0 : inputsEnd(); }
  /// The mbarriers (8 bytes each), by index: Q full of each Q buffer, then
  /// K full, V full, K empty and V empty of each stage, then Q empty of
  /// each Q buffer; the first index of each kind.
  int64_t barrierOffset() const {
    return inputsEnd() +
           (stagedOutput && !outputInQ ? llvm::alignTo(o.bytes(), 1024) : 0);
  }
  int64_t qFull() const { return 0; }
  int64_t kFull() const { return qBuffers; }
  int64_t vFull() const { return qBuffers + stages; }
  int64_t kEmpty() const { return qBuffers + 2 * stages; }
  int64_t vEmpty() const { return qBuffers + 3 * stages; }
  int64_t qEmpty() const { return qBuffers + 4 * stages; }
  int64_t total() const {
    return 1024 + barrierOffset() + 8 * (2 * qBuffers + 4 * stages);
  }
};

/// With TMA loads (loadsByTma): one map per operand whose box is a panel
/// of its tile (TileLayout), in the tile's swizzle: Q, K, V, [the bias
/// (stagesBias),] [O (TMA stores)].
SmallVector<TensorMapSpec> getWgmmaForwardTensorMaps(const KernelPlan &plan);

/// Emits the forward kernel's body into `func`.
void emitWgmmaForward(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMAFORWARD_H
