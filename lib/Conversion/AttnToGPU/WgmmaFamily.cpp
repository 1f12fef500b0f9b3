//===- WgmmaFamily.cpp - the sm_90a wgmma instruction family --------------===//
//
// The wgmma family (KernelFamily.h): sm_90a, warpgroup-wide asynchronous
// MMAs, FlashAttention-3's structure. Its options and their defaults, and
// its kernel kinds, assembled from its building blocks (WgmmaBlocks.h) and
// the tile scheduler (TileScheduler.h):
//
//   forward                 WgmmaForward.cpp
//   backward                WgmmaBackward.cpp
//   backward pre-pass, dQ conversion: the simt family's (SimtBackward.cpp)
//
//===----------------------------------------------------------------------===//
#include "Fragments.h"
#include "KernelFamily.h"
#include "SimtBackward.h"
#include "TileScheduler.h"
#include "WgmmaBackward.h"
#include "WgmmaForward.h"

#include "llvm/Support/ErrorHandling.h"

#include <limits>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
class WgmmaFamily final : public KernelFamily {
public:
  StringRef getName() const override { return "wgmma"; }
  const KernelFamily *getFallback() const override {
    return &getMmaSyncFamily();
  }
  std::string getUnsupportedReason(const KernelPlan &plan,
                                   StringRef chip) const override {
    if (!isWgmmaChip(chip))
      return ("wgmma needs sm_90a, the target is " + chip).str();
    if (isBackwardKind(plan.kind))
      return getWgmmaBackwardUnsupportedReason(plan);
    if (plan.cfg.kvSplits > 1)
      return "kv-splits > 1: the mma_sync forward splits the keys";
    return getTensorCoreUnsupportedReason(plan);
  }
  LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const override;
  int64_t getDynamicSharedBytes(const KernelPlan &plan) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return WgmmaForwardLayout(plan).total();
    case KernelKind::Backward:
      return WgmmaBackwardLayout(plan).total();
    case KernelKind::ForwardCombine:
    case KernelKind::BackwardPre:
    case KernelKind::BackwardConvert:
    case KernelKind::BackwardDQ:
      return 0;
    }
    llvm_unreachable("unknown kernel kind");
  }
  SmallVector<TensorMapSpec>
  getTensorMaps(const KernelPlan &plan) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return getWgmmaForwardTensorMaps(plan);
    case KernelKind::ForwardCombine:
    case KernelKind::BackwardPre:
    case KernelKind::Backward:
    case KernelKind::BackwardConvert:
    case KernelKind::BackwardDQ:
      return {};
    }
    llvm_unreachable("unknown kernel kind");
  }
  /// A persistent grid (TileScheduler); the backward kinds: one CTA per
  /// (key block, batch * KV head), and the pre-pass and conversion
  /// element-wise.
  LaunchShape getLaunchShape(const KernelPlan &plan) const override {
    if (isBackwardKind(plan.kind))
      return getSimtBackwardLaunchShape(plan);
    return TileScheduler::getLaunchShape(plan);
  }
  void emit(KernelPlan &plan, gpu::GPUFuncOp func) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return emitWgmmaForward(plan, func);
    case KernelKind::Backward:
      return emitWgmmaBackward(plan, func);
    case KernelKind::BackwardPre:
    case KernelKind::BackwardConvert:
      return emitSimtBackward(plan, func);
    case KernelKind::BackwardDQ:
    case KernelKind::ForwardCombine:
      break;
    }
    llvm_unreachable("no deterministic dQ kernel (getUnsupportedReason: simt "
                     "computes it) and no combine kernel (simt's)");
  }

private:
  /// The backward kinds' options (resolveOptions).
  LogicalResult
  resolveBackwardOptions(KernelPlan &plan,
                         const AttentionKernelOptions &requested) const;
};

/// The backward (WgmmaBackward.cpp): two consumer warpgroups of 64 keys
/// (block-k 128, warps 8), block-q 64 (the M of dQ's wgmma), 2 to 4 stages
/// of Q and dO (default 2). The pre-pass and the conversion (simt's kinds)
/// take no options.
LogicalResult WgmmaFamily::resolveBackwardOptions(
    KernelPlan &plan, const AttentionKernelOptions &requested) const {
  AttentionOpInterface op = plan.op;
  AttentionKernelOptions &cfg = plan.cfg;
  cfg = requested;
  cfg.mma = getName();
  if (plan.kind != KernelKind::Backward) {
    plan.threads = kSimtBackwardElementwiseThreads;
    return success();
  }
  auto error = [&]() {
    return op.emitOpError() << "convert-attn-to-gpu: the wgmma backward ";
  };
  if (cfg.warps == 0)
    cfg.warps = 8;
  if (cfg.warps != 8)
    return error() << "takes warps 8 (2 consumer warpgroups of 64 keys), not "
                   << cfg.warps;
  if (cfg.blockK == 0)
    cfg.blockK = 16 * cfg.warps;
  if (cfg.blockK != 16 * cfg.warps)
    return error() << "takes block-k " << 16 * cfg.warps
                   << " (64 keys per consumer warpgroup), not " << cfg.blockK;
  if (cfg.blockQ == 0)
    cfg.blockQ = 64;
  if (cfg.blockQ != 64)
    return error() << "takes block-q 64, not " << cfg.blockQ;
  if (cfg.stages == 0)
    cfg.stages = 2;
  if (cfg.stages < 2 || cfg.stages > 4)
    return error() << "takes 2 to 4 stages, not " << cfg.stages;
  cfg.threadsPerRow = 1;
  cfg.chunk = cfg.blockQ;
  plan.threads = 32 * cfg.warps + kProducerThreads;
  if (getDynamicSharedBytes(plan) > plan.sharedLimit)
    return error() << "needs " << getDynamicSharedBytes(plan)
                   << " bytes of shared memory (K, V, the Q and dO stages, "
                      "dS^T), more than the "
                   << plan.sharedLimit
                   << " a CTA can have on the target; lower stages";
  if (plan.Nq + plan.Nk + cfg.blockQ + cfg.blockK >
      std::numeric_limits<int32_t>::max())
    return error() << "needs Nq + Nk below 2^31";
  return success();
}

/// Defaults, measured on the H200 (docs/GPU.md), within the consumers'
/// registers (232 with two consumer warpgroups, 160 with three; no spills at
/// the benchmark's shapes): three consumer warpgroups (192 query rows) up to
/// d = 96 without per-element features (bias, keep mask, score_mod,
/// dropout) unless causal with Nq <= 1024, two otherwise; 2 stages; keys per
/// block 128 up to d = 64 and with two warpgroups up to d = 128, 64 between 64
/// and 128 with three or with computed features (score_mod, dropout: 128 was
/// 6-12% slower; a bias 16% faster), and above d = 128 64, 32 with features; a
/// persistent grid up to d = 128.
LogicalResult
WgmmaFamily::resolveOptions(KernelPlan &plan,
                            const AttentionKernelOptions &requested) const {
  AttentionOpInterface op = plan.op;
  if (isBackwardKind(plan.kind))
    return resolveBackwardOptions(plan, requested);
  const int64_t sharedLimit = plan.sharedLimit;
  AttentionKernelOptions &resolved = plan.cfg;
  resolved = requested;
  resolved.mma = getName();
  int64_t d = std::max(paddedHeadDim(plan.D), paddedHeadDim(plan.Dv));
  auto error = [&]() {
    return op.emitOpError() << "convert-attn-to-gpu: mma=wgmma ";
  };
  // Per-element work: computed (dropout, score_mod) or loaded (bias, keep
  // mask, issued ahead of the wait for S).
  bool computed = plan.seed || op.hasScoreMod();
  bool features = computed || plan.bias || plan.keepMask;
  // Two consumer warpgroups (128-row tiles) also for short causal-like
  // sequences: less of each tile on the diagonal, more tiles to spread
  // (d = 64, 1k, causal: +5 to +13%; at 16k three were 15% faster).
  bool shortCausal = plan.rightBounded && !plan.leftBounded && plan.Nq <= 1024;
  if (resolved.warps == 0)
    resolved.warps = d <= 96 && !features && !shortCausal ? 12 : 8;
  if (resolved.warps != 8 && resolved.warps != 12)
    return error() << "takes warps 8 or 12 (2 or 3 warpgroups), not "
                   << resolved.warps;
  if (resolved.stages == 0)
    resolved.stages = 2;
  if (resolved.stages < 2 || resolved.stages > 4)
    return error() << "takes 2 to 4 stages, not " << resolved.stages;
  if (resolved.blockQ == 0)
    resolved.blockQ = 16 * resolved.warps;
  if (resolved.blockQ != 16 * resolved.warps)
    return error() << "with " << resolved.warps << " warps takes block-q "
                   << 16 * resolved.warps << " (64 rows per warpgroup), not "
                   << resolved.blockQ;
  if (resolved.blockK == 0)
    resolved.blockK = d > 128 ? (features ? 32 : 64)
                      : d > 64 && (computed || resolved.warps == 12) ? 64
                                                                     : 128;
  if (resolved.blockK % 16 != 0 || resolved.blockK < 16 ||
      resolved.blockK > 256)
    return error() << "takes a block-k that is a multiple of 16 up to 256, "
                      "not "
                   << resolved.blockK;
  if (resolved.chunk == 0)
    resolved.chunk = resolved.blockK;
  if (resolved.chunk != resolved.blockK)
    return error() << "takes chunk = block-k, not " << resolved.chunk;
  if (resolved.persistentCtas < -1)
    return error() << "takes persistent-ctas > 0, or -1 (one CTA per tile), "
                      "not "
                   << resolved.persistentCtas;
  if (resolved.qBuffers < 0 || resolved.qBuffers > 2)
    return error() << "takes q-buffers 1 or 2, not " << resolved.qBuffers;
  // One Q buffer until the other tiles have their room.
  if (resolved.qBuffers == 0)
    resolved.qBuffers = 1;
  resolved.threadsPerRow = 1;
  // The consumer warpgroups and the producer warpgroup.
  plan.threads = 32 * resolved.warps + kProducerThreads;
  auto sharedBytes = [&] { return getDynamicSharedBytes(plan); };
  // O's staging tile only where it fits (decided after the other tiles;
  // with one CTA per tile it is the Q buffer's).
  resolved.tmaStore = false;
  while (requested.blockK == 0 && sharedBytes() > sharedLimit &&
         resolved.blockK > 32) {
    resolved.blockK /= 2;
    resolved.chunk = resolved.blockK;
  }
  // Persistent with at least 3 key blocks and no key tail (ptxas spills the
  // consumers' registers in the tile loop with a key tail, e.g. 76 bytes at
  // d = 128, Nq = Nk = 1000, and with one or two blocks, 224 bytes at 256
  // keys, where one CTA per tile does not); up to d = 128, and above it for
  // short causal-like masks, whose tiles differ in length (d = 256, 1k,
  // timed alternately: one CTA per tile 20% slower causal; not causal
  // level, and 7.7% faster than the grid before O's staging slot; from 4k
  // -0.5 to -2.8% with one Q buffer: two do not fit).
  if (resolved.persistentCtas == 0)
    resolved.persistentCtas = (d <= 128 || shortCausal) &&
                                      plan.Nk % resolved.blockK == 0 &&
                                      plan.Nk / resolved.blockK >= 3
                                  ? plan.multiprocessors
                                  : -1;
  // Rows narrower than 64 elements: the staging costs more than it saves
  // (d = 40, Stable Diffusion's: -4% against stores from registers,
  // timed alternately; +1 to +6% from d = 64 to 128).
  resolved.tmaStore = requested.tmaStore && paddedHeadDim(plan.Dv) >= 64;
  if (storesByTma(plan) && sharedBytes() > sharedLimit)
    resolved.tmaStore = false;
  // A second Q buffer on a persistent grid, where it fits (+2 to +4% at
  // 1k and 4k keys, timed alternately; level at 16k) and leaves the
  // consumers their registers: with a bias and another per-element feature
  // (keep mask, dropout; score_mod alike) ptxas spilled 4-12 bytes at
  // d = 128.
  bool crowded = plan.bias && (plan.keepMask || computed);
  if (requested.qBuffers == 0 && resolved.persistentCtas > 0 && !crowded) {
    resolved.qBuffers = 2;
    if (sharedBytes() > sharedLimit)
      resolved.qBuffers = 1;
  }
  if (sharedBytes() > sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the wgmma kernel needs " << sharedBytes()
           << " bytes of shared memory (Q, K/V stages), more than the "
           << sharedLimit << " a CTA can have on the target; lower stages "
           << "or block-k";
  if (plan.Nq + plan.Nk + resolved.blockQ + resolved.blockK >
      std::numeric_limits<int32_t>::max())
    return error() << "needs Nq + Nk below 2^31";
  return success();
}
} // namespace

const KernelFamily &attnfuse::gpu_kernels::getWgmmaFamily() {
  static const WgmmaFamily family;
  return family;
}
