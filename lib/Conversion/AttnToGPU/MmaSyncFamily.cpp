//===- MmaSyncFamily.cpp - the mma.sync instruction family ----------------===//
//
// The mma_sync family (KernelFamily.h): sm_80+ warp-level mma.sync
// m16n8k16, FlashAttention-2's structure. Its options and their defaults,
// and its kernel kinds, assembled from its building blocks
// (MmaSyncBlocks.h):
//
//   forward                 MmaSyncForward.cpp
//   backward                MmaSyncBackward.cpp
//   backward pre-pass, dQ conversion: the simt family's (SimtBackward.cpp)
//
//===----------------------------------------------------------------------===//
#include "Fragments.h"
#include "KernelFamily.h"
#include "MmaSyncBackward.h"
#include "MmaSyncForward.h"
#include "SimtBackward.h"
#include "TileScheduler.h"

#include "llvm/Support/ErrorHandling.h"

#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
class MmaSyncFamily final : public KernelFamily {
public:
  StringRef getName() const override { return "mma_sync"; }
  const KernelFamily *getFallback() const override { return &getSimtFamily(); }
  std::string getUnsupportedReason(const KernelPlan &plan,
                                   StringRef chip) const override {
    if (!isMmaSyncChip(chip))
      return ("mma_sync needs sm_80 or newer (cp.async, bf16 mma.sync), the "
              "target is " + chip).str();
    if (isBackwardKind(plan.kind))
      return getMmaSyncBackwardUnsupportedReason(plan);
    return getTensorCoreUnsupportedReason(plan);
  }
  LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const override;
  int64_t getDynamicSharedBytes(const KernelPlan &plan) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return MmaSyncForwardLayout(plan).total();
    case KernelKind::Backward:
      return MmaSyncBackwardLayout(plan).total();
    case KernelKind::ForwardCombine:
    case KernelKind::BackwardPre:
    case KernelKind::BackwardConvert:
    case KernelKind::BackwardDQ:
      return 0;
    }
    llvm_unreachable("unknown kernel kind");
  }
  /// The backward kinds: one CTA per (key block, batch * KV head), and the
  /// simt family's pre-pass and conversion grids.
  LaunchShape getLaunchShape(const KernelPlan &plan) const override {
    if (isBackwardKind(plan.kind))
      return getSimtBackwardLaunchShape(plan);
    return KernelFamily::getLaunchShape(plan);
  }
  void emit(KernelPlan &plan, gpu::GPUFuncOp func) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return emitMmaSyncForward(plan, func);
    case KernelKind::Backward:
      return emitMmaSyncBackward(plan, func);
    case KernelKind::BackwardPre:
    case KernelKind::BackwardConvert:
      return emitSimtBackward(plan, func);
    case KernelKind::BackwardDQ:
      break; // deterministic mode: getUnsupportedReason hands it to simt
    case KernelKind::ForwardCombine:
      break; // the host takes simt's

    }
    llvm_unreachable("unknown kernel kind");
  }

private:
  /// The backward kinds' options (resolveOptions).
  LogicalResult
  resolveBackwardOptions(KernelPlan &plan,
                         const AttentionKernelOptions &requested) const;
};

/// Defaults per head dim d = max(dqk, dv) and features, measured on the
/// H200 (docs/GPU.md) and chosen so that ptxas needs no spills under 255
/// registers. 2 stages (3 were 5-15% slower at d = 128). Rows per warp:
/// two m16 tiles up to d = 128; one above (O alone needs 2 M dv / 4 f32
/// registers per thread), with dropout (Philox per element) and with
/// per-element scores (bias, keep mask, score_mod) above d = 64. Warps:
/// 4, and 8 above d = 128 (128 rows share each K/V block: +7-9% at
/// d = 256). Keys per block: 64, but 32 with dropout and with two tiles
/// above d = 64 when some blocks take the per-element mask (causal/window
/// edges, a key tail): O (128) + S (64) f32 registers per thread and the
/// masked loop body spill there.
LogicalResult
MmaSyncFamily::resolveOptions(KernelPlan &plan,
                              const AttentionKernelOptions &requested) const {
  if (isBackwardKind(plan.kind))
    return resolveBackwardOptions(plan, requested);
  AttentionOpInterface op = plan.op;
  const int64_t sharedLimit = plan.sharedLimit;
  AttentionKernelOptions &resolved = plan.cfg;
  resolved = requested;
  resolved.mma = getName();
  int64_t d = std::max(paddedHeadDim(plan.D), paddedHeadDim(plan.Dv));
  bool dropout = static_cast<bool>(plan.seed);
  bool elementwise = plan.bias || plan.keepMask || op.hasScoreMod();
  if (resolved.warps == 0)
    resolved.warps = d > 128 ? 8 : 4;
  if (resolved.stages == 0)
    resolved.stages = 2;
  if (resolved.warps != 4 && resolved.warps != 8)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "warps 4 or 8, not "
                            << resolved.warps;
  if (resolved.stages < 2 || resolved.stages > 4)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "2 to 4 stages, not "
                            << resolved.stages;
  int64_t warpRows = 16 * resolved.warps;
  // One m16 tile per warp where a second would hold no query row (decode).
  if (resolved.blockQ == 0)
    resolved.blockQ = d > 128 || dropout || (elementwise && d > 64) ||
                              plan.Nq <= warpRows
                          ? warpRows
                          : 2 * warpRows;
  if (resolved.blockQ != warpRows && resolved.blockQ != 2 * warpRows)
    return op.emitOpError()
           << "convert-attn-to-gpu: mma=mma_sync with " << resolved.warps
           << " warps takes block-q " << warpRows << " or " << 2 * warpRows
           << " (one or two m16 tiles per warp), not " << resolved.blockQ;
  bool twoTiles = resolved.blockQ == 2 * warpRows;
  bool maskedBlocks =
      plan.leftBounded || plan.rightBounded || plan.Nk % 64 != 0;
  if (resolved.blockK == 0)
    resolved.blockK = dropout || (twoTiles && d > 64 && maskedBlocks) ? 32 : 64;
  if (resolved.blockK != 32 && resolved.blockK != 64)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "block-k 32 or 64, not "
                            << resolved.blockK;
  // Defaults shrink to the target's shared memory: 32-key blocks, then
  // one m16 tile per warp, then 4 warps.
  auto sharedBytes = [&] { return getDynamicSharedBytes(plan); };
  if (requested.blockK == 0 && sharedBytes() > sharedLimit)
    resolved.blockK = 32;
  if (requested.blockQ == 0 && sharedBytes() > sharedLimit)
    resolved.blockQ = warpRows;
  if (requested.blockQ == 0 && requested.warps == 0 &&
      sharedBytes() > sharedLimit && resolved.warps == 8) {
    resolved.warps = 4;
    resolved.blockQ = 64;
  }
  resolved.threadsPerRow = 1;
  // Online-softmax steps of `chunk` keys within a block (m16n8k16: a
  // multiple of 16 dividing block-k); the whole block by default.
  if (resolved.chunk == 0)
    resolved.chunk = resolved.blockK;
  if (resolved.chunk <= 0 || resolved.chunk % 16 != 0 ||
      resolved.blockK % resolved.chunk != 0)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes a "
                               "chunk that is a multiple of 16 dividing "
                               "block-k, not "
                            << resolved.chunk;
  plan.threads = 32 * resolved.warps;
  if (sharedBytes() > sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync kernel needs " << sharedBytes()
           << " bytes of shared memory (K/V stages and Q), more than the "
           << sharedLimit << " a CTA can have on the target; lower stages, "
           << "block-k or block-q";
  // The mask is computed in i32 (key - row and Nk - key, emit()).
  if (plan.Nq + plan.Nk + resolved.blockQ + resolved.blockK >
      std::numeric_limits<int32_t>::max())
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync needs "
                               "Nq + Nk below 2^31";
  if (requested.kvSplits < 0)
    return op.emitOpError() << "convert-attn-to-gpu: kv-splits must be >= 0, "
                               "not "
                            << requested.kvSplits;
  resolved.kvSplits = plan.kvSplits =
      chooseKeySplits(plan, requested.kvSplits);
  return success();
}

/// The backward (MmaSyncBackward.cpp): W warps, P of them on each 16 keys
/// (block-k = 16 W / P; P = getBackwardColumnParts: 2 above head dims of
/// 128), block-q query rows per step (a multiple of 16 up to 128 whose
/// 16 x 16 tiles of dQ, block-q / 16 x Dqk / 16, split evenly over the
/// warps: each warp's tiles share one row of tiles, or whole rows), Q/dO in
/// 2 stages. Defaults, measured on the H200 (docs/GPU.md: 8 warps and
/// block-q 64 were 20-50% faster than 4 warps, block-q 32 at d = 128) and
/// without ptxas spills up to d = 128: 8 warps (128 keys), block-q 64
/// (doubled until the tiles of dQ split), halved to the target's shared
/// memory, then 4 warps; above head dims of 128, block-q 32 (the dK and dV
/// accumulators take 128 registers a thread). The pre-pass and the
/// conversion (simt's kinds) take no options.
LogicalResult MmaSyncFamily::resolveBackwardOptions(
    KernelPlan &plan, const AttentionKernelOptions &requested) const {
  AttentionOpInterface op = plan.op;
  AttentionKernelOptions &cfg = plan.cfg;
  cfg = requested;
  cfg.mma = getName();
  if (plan.kind != KernelKind::Backward) {
    plan.threads = kSimtBackwardElementwiseThreads;
    return success();
  }
  const bool defaultWarps = cfg.warps == 0 && cfg.blockK == 0;
  const bool defaultBlockQ = cfg.blockQ == 0;
  // P warps on each 16 keys: block-k = 16 x warps / P.
  const int64_t parts = getBackwardColumnParts(plan);
  const int64_t keysPerWarp = 16 / parts;
  const char *slice = parts > 1 ? "16 keys per 2 warps" : "16 keys per warp";
  if (cfg.warps == 0 && cfg.blockK > 0 && cfg.blockK != 4 * keysPerWarp &&
      cfg.blockK != 8 * keysPerWarp)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync backward takes block-k "
           << 4 * keysPerWarp << " or " << 8 * keysPerWarp << " (" << slice
           << ", 4 or 8 warps), not " << cfg.blockK;
  if (cfg.warps == 0)
    cfg.warps = cfg.blockK > 0 ? cfg.blockK / keysPerWarp : 8;
  if (cfg.warps != 4 && cfg.warps != 8)
    return op.emitOpError() << "convert-attn-to-gpu: the mma_sync backward "
                               "takes warps 4 or 8, not "
                            << cfg.warps;
  if (cfg.blockK == 0)
    cfg.blockK = keysPerWarp * cfg.warps;
  if (cfg.blockK != keysPerWarp * cfg.warps)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync backward takes block-k = "
           << keysPerWarp << " x warps (" << slice
           << "): " << keysPerWarp * cfg.warps << ", not " << cfg.blockK;
  if (cfg.stages == 0)
    cfg.stages = 2;
  if (cfg.stages != 2)
    return op.emitOpError() << "convert-attn-to-gpu: the mma_sync backward "
                               "takes 2 stages, not "
                            << cfg.stages;
  auto tilesSplit = [&] {
    int64_t nD = plan.D / 16, units = cfg.blockQ / 16 * nD;
    if (cfg.blockQ <= 0 || cfg.blockQ % 16 != 0 || units % cfg.warps != 0)
      return false;
    int64_t per = units / cfg.warps;
    return per % nD == 0 || nD % per == 0;
  };
  auto sharedBytes = [&] { return getDynamicSharedBytes(plan); };
  // block-q 64, doubled until the tiles of dQ split, halved (while they
  // do) to the shared memory.
  auto defaultBlockQFor = [&] {
    cfg.blockQ = parts > 1 ? 32 : 64;
    while (!tilesSplit() && cfg.blockQ < 128)
      cfg.blockQ *= 2;
    while (sharedBytes() > plan.sharedLimit && cfg.blockQ > 16) {
      cfg.blockQ /= 2;
      if (!tilesSplit()) {
        cfg.blockQ *= 2;
        break;
      }
    }
  };
  if (defaultBlockQ) {
    defaultBlockQFor();
    if (defaultWarps && sharedBytes() > plan.sharedLimit) {
      cfg.warps = 4;
      cfg.blockK = 4 * keysPerWarp;
      defaultBlockQFor();
    }
  }
  if (cfg.blockQ > 128 || !tilesSplit())
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync backward takes a block-q that "
              "is a multiple of 16 up to 128 whose 16 x 16 tiles of dQ ("
           << cfg.blockQ / 16 << " x " << plan.D / 16
           << ") split evenly over the " << cfg.warps << " warps, not "
           << cfg.blockQ;
  if (sharedBytes() > plan.sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync backward needs "
           << sharedBytes() << " bytes of shared memory (K, V, dS^T and 2 "
           << "stages of Q and dO), more than the " << plan.sharedLimit
           << " a CTA can have on the target; lower block-q or warps";
  cfg.threadsPerRow = 1;
  cfg.chunk = cfg.blockQ;
  plan.threads = 32 * cfg.warps;
  // The mask is computed in i32 (key - row, Nk - key, Nq - row).
  if (plan.Nq + plan.Nk + cfg.blockQ + cfg.blockK >
      std::numeric_limits<int32_t>::max())
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync needs "
                               "Nq + Nk below 2^31";
  return success();
}
} // namespace

const KernelFamily &attnfuse::gpu_kernels::getMmaSyncFamily() {
  static const MmaSyncFamily family;
  return family;
}
