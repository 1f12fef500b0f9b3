//===- SimtFamily.cpp - the SIMT instruction family -----------------------===//
//
// The simt family (KernelFamily.h): f32 FMAs on CUDA cores, f16, bf16 and
// f32 operands, every feature of the op; the last fallback of the
// tensor-core families, and the reference GPU backward. Its options and
// their defaults, and its kernel kinds:
//
//   forward                                   SimtForward.cpp
//   the split forward's combine               SimtCombine.cpp
//   backward pre-pass, backward, conversion   SimtBackward.cpp
//
//===----------------------------------------------------------------------===//
#include "KernelFamily.h"
#include "SimtBackward.h"
#include "SimtForward.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
class SimtFamily final : public KernelFamily {
public:
  StringRef getName() const override { return "simt"; }
  std::string getUnsupportedReason(const KernelPlan &,
                                   StringRef) const override {
    return "";
  }
  LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const override;
  int64_t getDynamicSharedBytes(const KernelPlan &) const override { return 0; }
  SmallVector<Type> getWorkgroupBuffers(const KernelPlan &plan,
                                        MLIRContext *ctx) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return getSimtForwardWorkgroupBuffers(plan, ctx);
    case KernelKind::ForwardCombine:
    case KernelKind::BackwardPre:
    case KernelKind::Backward:
    case KernelKind::BackwardConvert:
    case KernelKind::BackwardDQ:
      return {};
    }
    llvm_unreachable("unknown kernel kind");
  }
  LaunchShape getLaunchShape(const KernelPlan &plan) const override {
    if (isBackwardKind(plan.kind))
      return getSimtBackwardLaunchShape(plan);
    if (plan.kind == KernelKind::ForwardCombine)
      return getSimtCombineLaunchShape(plan);
    return KernelFamily::getLaunchShape(plan);
  }
  void emit(KernelPlan &plan, gpu::GPUFuncOp func) const override {
    switch (plan.kind) {
    case KernelKind::Forward:
      return emitSimtForward(plan, func);
    case KernelKind::ForwardCombine:
      return emitSimtForwardCombine(plan, func);
    case KernelKind::BackwardPre:
    case KernelKind::Backward:
    case KernelKind::BackwardConvert:
    case KernelKind::BackwardDQ:
      return emitSimtBackward(plan, func);
    }
  }

private:
  /// The backward kinds' options (resolveOptions).
  LogicalResult
  resolveBackwardOptions(KernelPlan &plan,
                         const AttentionKernelOptions &requested) const;
};

/// The static shared memory of a CTA.
constexpr int64_t kStaticShared = 48 * 1024;
/// Bytes of the f32 K and V blocks of `blockK` keys in shared memory.
static int64_t kvBlockBytes(const KernelPlan &plan, int64_t blockK) {
  return 4 * blockK * (plan.D + plan.Dv);
}

/// Defaults per head dimension d = max(Dqk, Dv): 32 elements of Q and of
/// the accumulator per thread (T = max(1, d / 32), halved until groups of 4
/// elements of T threads split both Dqk and Dv), 128 query rows per CTA
/// for d <= 64 and 64 above (at most 255 registers per thread, no spills),
/// 64 keys per block for d <= 64 and 32 above (so that the f32 K and V
/// blocks stay within 32 KB of static shared memory; halved until they fit
/// in 48 KB), chunks of 16 keys.
LogicalResult
SimtFamily::resolveOptions(KernelPlan &plan,
                           const AttentionKernelOptions &requested) const {
  if (isBackwardKind(plan.kind))
    return resolveBackwardOptions(plan, requested);
  AttentionOpInterface op = plan.op;
  AttentionKernelOptions &cfg = plan.cfg;
  cfg = requested;
  cfg.mma = getName();
  if (plan.kind == KernelKind::ForwardCombine) {
    plan.threads = 32 * kCombineWarps;
    return success();
  }
  if (requested.kvSplits > 1)
    return op.emitOpError() << "convert-attn-to-gpu: kv-splits = "
                            << requested.kvSplits
                            << ": the simt forward does not split the keys "
                               "(the mma_sync forward does)";
  cfg.kvSplits = plan.kvSplits = 1;
  int64_t d = std::max(plan.D, plan.Dv);
  // Each thread of a row takes groups of 4 elements of both head dims.
  auto splits = [&](int64_t t) {
    return plan.D % (4 * t) == 0 && plan.Dv % (4 * t) == 0;
  };
  if (plan.D % 4 != 0 || plan.Dv % 4 != 0)
    return op.emitOpError()
           << "convert-attn-to-gpu: the simt family needs head dimensions "
              "that are multiples of 4 (Dqk = "
           << plan.D << ", Dv = " << plan.Dv << ")";
  if (cfg.threadsPerRow <= 0) {
    cfg.threadsPerRow = std::clamp<int64_t>(d / 32, 1, 8);
    while (!splits(cfg.threadsPerRow))
      cfg.threadsPerRow /= 2;
  }
  if (cfg.blockQ <= 0)
    cfg.blockQ = d <= 64 ? 128 : 64;
  if (cfg.blockK <= 0) {
    cfg.blockK = d <= 64 ? 64 : 32;
    while (cfg.blockK > 8 && kvBlockBytes(plan, cfg.blockK) > kStaticShared)
      cfg.blockK /= 2;
  }
  if (cfg.chunk <= 0)
    cfg.chunk = std::min<int64_t>(16, cfg.blockK);
  int64_t T = cfg.threadsPerRow;
  if (T > 32 || !llvm::isPowerOf2_64(T))
    return op.emitOpError() << "convert-attn-to-gpu: threads-per-row (" << T
                            << ") must be a power of two <= 32";
  if (!splits(T))
    return op.emitOpError()
           << "convert-attn-to-gpu: threads-per-row (" << T
           << ") must split both head dimensions into groups of 4 elements "
              "per thread: Dqk = "
           << plan.D << " and Dv = " << plan.Dv << " must be multiples of "
           << 4 * T;
  if (cfg.blockK % cfg.chunk != 0 || (cfg.blockQ * T) % 32 != 0 ||
      cfg.blockQ * T > 1024)
    return op.emitOpError()
           << "convert-attn-to-gpu: block-k must be a multiple of chunk and "
              "block-q * threads-per-row a multiple of 32, at most 1024";
  if (kvBlockBytes(plan, cfg.blockK) > kStaticShared)
    return op.emitOpError()
           << "convert-attn-to-gpu: the f32 K and V blocks ("
           << kvBlockBytes(plan, cfg.blockK)
           << " bytes) exceed 48 KB of static shared memory; lower block-k";
  plan.threads = cfg.blockQ * T;
  plan.foldedScale = !op.hasScoreMod() && !plan.bias;
  return success();
}
/// The backward (SimtBackward.cpp): T threads per key row, the smallest
/// power of two with d / T <= 16 (d = max(Dqk, Dv); 192 / 128 spilled with
/// T = 8) among those that split both head dims into groups of 4, so that a
/// thread holds at most 16 elements of each of k, v, dK, dV, q and dO; BK = min(64, 512 / T) key rows per CTA (at most 512
/// threads: ptxas then has 128 registers per thread), min(64, 256 / T) with
/// dropout (its Philox rounds spilled at d = 128 under 128 registers). The
/// query rows are skipped one by one (chunk does not apply). The
/// deterministic dQ kernel: T threads per query row, block-q rows per CTA
/// (default as BK). The pre-pass and the conversion take no options.
LogicalResult SimtFamily::resolveBackwardOptions(
    KernelPlan &plan, const AttentionKernelOptions &requested) const {
  AttentionOpInterface op = plan.op;
  AttentionKernelOptions &cfg = plan.cfg;
  cfg = requested;
  cfg.mma = getName();
  int64_t d = std::max(plan.D, plan.Dv);
  if (cfg.threadsPerRow <= 0) {
    cfg.threadsPerRow = 1;
    for (int64_t T = 2; T <= 32 && d > 16 * (T / 2) &&
                        plan.D % (4 * T) == 0 && plan.Dv % (4 * T) == 0;
         T *= 2)
      cfg.threadsPerRow = T;
  }
  int64_t T = cfg.threadsPerRow;
  int64_t rows = std::min<int64_t>(64, (plan.seed ? 256 : 512) / T);
  if (cfg.blockK <= 0)
    cfg.blockK = rows;
  // block-q: the query rows per CTA of the deterministic dQ kernel.
  cfg.blockQ = plan.kind == KernelKind::BackwardDQ
                   ? (cfg.blockQ > 0 ? cfg.blockQ : rows)
                   : 1;
  cfg.chunk = 1;
  if (T > 32 || !llvm::isPowerOf2_64(T) || plan.D % (4 * T) != 0 ||
      plan.Dv % (4 * T) != 0)
    return op.emitOpError()
           << "convert-attn-to-gpu: threads-per-row (" << T
           << ") must be a power of two <= 32 dividing the head dimensions "
              "into groups of 4";
  if ((cfg.blockK * T) % 32 != 0 || cfg.blockK * T > 1024)
    return op.emitOpError()
           << "convert-attn-to-gpu: the backward's block-k * threads-per-row ("
           << cfg.blockK << " * " << T
           << ") must be a multiple of 32, at most 1024";
  if (plan.kind == KernelKind::BackwardDQ &&
      ((cfg.blockQ * T) % 32 != 0 || cfg.blockQ * T > 1024))
    return op.emitOpError()
           << "convert-attn-to-gpu: the deterministic dQ kernel's block-q * "
              "threads-per-row ("
           << cfg.blockQ << " * " << T
           << ") must be a multiple of 32, at most 1024";
  switch (plan.kind) {
  case KernelKind::Backward:
    plan.threads = cfg.blockK * T;
    break;
  case KernelKind::BackwardDQ:
    plan.threads = cfg.blockQ * T;
    break;
  default:
    plan.threads = kSimtBackwardElementwiseThreads;
  }
  return success();
}
} // namespace

const KernelFamily &attnfuse::gpu_kernels::getSimtFamily() {
  static const SimtFamily family;
  return family;
}
