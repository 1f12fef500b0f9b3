//===- WgmmaBackward.h - the backward kernel of the wgmma family -*- C++ -*-===//
//
// What the wgmma family (WgmmaFamily.cpp) needs of its backward kind
// (WgmmaBackward.cpp): what it computes, its shared memory and the body.
// The pre-pass and the dQ conversion are the simt family's
// (SimtBackward.h), shared. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABACKWARD_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABACKWARD_H

#include "WgmmaBlocks.h"

#include <string>

namespace attnfuse::gpu_kernels {

/// Why the wgmma backward cannot compute the backward kinds of `plan`
/// (empty when it can): bf16/f16, head dims that are multiples of 16 up to
/// 128 (the dK and dV accumulators of a consumer thread), atomics for dQ
/// (deterministic=true: simt's dQ kernel).
std::string getWgmmaBackwardUnsupportedReason(const KernelPlan &plan);

/// The backward's dynamic shared memory: 1024 bytes of slack to align the
/// tiles, the K and V tiles of the key block, the stages of the Q and dO
/// tiles, each consumer warpgroup's dS^T tile, the stages' lse and Di rows
/// (f32, the query block's), then the mbarriers.
struct WgmmaBackwardLayout {
  TileLayout k, v, q, dO, ds;
  int64_t stages, consumers;
  explicit WgmmaBackwardLayout(const KernelPlan &plan);
  static int64_t aligned(const TileLayout &t) {
    return llvm::alignTo(t.bytes(), 1024);
  }
  int64_t vOffset() const { return aligned(k); }
  int64_t qOffset() const { return vOffset() + aligned(v); }
  int64_t dOOffset() const { return qOffset() + stages * aligned(q); }
  int64_t dsOffset() const { return dOOffset() + stages * aligned(dO); }
  /// Stage s's lse (then Di) of the query block's rows: f32, BQ each.
  int64_t rowsOffset() const { return dsOffset() + consumers * aligned(ds); }
  int64_t rowsBytes() const { return 2 * 4 * q.lines; }
  /// The mbarriers (8 bytes each), by index: K/V full, then the full and
  /// the empty barrier of each Q/dO stage.
  int64_t barrierOffset() const { return rowsOffset() + stages * rowsBytes(); }
  int64_t kvFull() const { return 0; }
  int64_t full() const { return 1; }
  int64_t empty() const { return 1 + stages; }
  int64_t total() const { return 1024 + barrierOffset() + 8 * (1 + 2 * stages); }
};

/// Emits the backward kernel's body into `func`.
void emitWgmmaBackward(KernelPlan &plan, gpu::GPUFuncOp func);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABACKWARD_H
