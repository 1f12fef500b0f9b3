//===- KernelCost.cpp - what a forward kernel computes and moves ----------===//
//
// See KernelCost.h.
//
//===----------------------------------------------------------------------===//
#include "KernelCost.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
/// Dense peaks from the vendors' data sheets: tensor-core f16/bf16 with f32
/// accumulation, f32 FMAs, HBM bandwidth.
struct ChipPeaks {
  const char *chip;
  double tensorTflops, fp32Tflops, gbps;
  const char *part;
};
constexpr ChipPeaks kPeaks[] = {
    {"sm_90a", 989.4, 66.9, 4800, "H200 (H100 SXM: 3350 GB/s)"},
    {"sm_90", 989.4, 66.9, 4800, "H200 (H100 SXM: 3350 GB/s)"},
    {"sm_80", 312.0, 19.5, 2039, "A100 SXM 80 GB"},
};

const ChipPeaks *getChipPeaks(StringRef chip) {
  for (const ChipPeaks &p : kPeaks)
    if (chip == p.chip)
      return &p;
  return nullptr;
}

/// The keys [kb * BK, min(Nk, (kb + 1) * BK)) of key blocks [begin, end).
int64_t keysOfBlocks(int64_t begin, int64_t end, int64_t blockK, int64_t nk) {
  int64_t keys = 0;
  for (int64_t kb = std::max<int64_t>(begin, 0); kb < end; ++kb)
    keys += std::min(blockK, nk - kb * blockK);
  return keys;
}

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

int64_t numElements(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}
} // namespace

double KernelCost::rooflineSeconds() const {
  if (peakFlopsPerSecond <= 0 || peakBytesPerSecond <= 0)
    return 0;
  return std::max(tiledFlops / peakFlopsPerSecond,
                  onceBytes / peakBytesPerSecond);
}

KernelCost attnfuse::gpu_kernels::getForwardKernelCost(const KernelPlan &plan,
                                                       double peakTflops,
                                                       double peakGbps) {
  const AttentionKernelOptions &cfg = plan.cfg;
  const attn::MaskWindow &w = plan.window;
  KernelCost cost;
  int64_t heads = plan.B * plan.Hq;
  double pairFlops = 2.0 * (plan.D + plan.Dv);
  int64_t e = elementBytes(plan.elementType);

  // The tiles as planned: per query block, the key blocks it visits.
  double tiledPairs = 0, visitedKeys = 0;
  for (int64_t q0 = 0; q0 < plan.Nq; q0 += cfg.blockQ) {
    int64_t rows = std::min(cfg.blockQ, plan.Nq - q0);
    auto [begin, end] = attn::getKeyBlockRange(w, plan.Nq, plan.Nk, q0, rows,
                                               cfg.blockK);
    int64_t keys = keysOfBlocks(begin, end, cfg.blockK, plan.Nk);
    tiledPairs += static_cast<double>(rows) * keys;
    visitedKeys += keys;
  }
  // The pairs the structural mask shows: -left <= k - (q + off) <= right.
  double visiblePairs = 0;
  bool left = attn::isWindowSideBounded(w.left, plan.Nq, plan.Nk);
  bool right = attn::isWindowSideBounded(w.right, plan.Nq, plan.Nk);
  for (int64_t q = 0; q < plan.Nq; ++q) {
    int64_t lo = left ? std::max<int64_t>(0, q + w.offset - w.left) : 0;
    int64_t hi = right ? std::min(plan.Nk - 1, q + w.offset + w.right)
                       : plan.Nk - 1;
    visiblePairs += std::max<int64_t>(0, hi - lo + 1);
  }
  cost.flops = heads * visiblePairs * pairFlops;
  cost.tiledFlops = heads * tiledPairs * pairFlops;

  cost.qBytes = static_cast<double>(heads) * plan.Nq * plan.D * e;
  cost.kvBytes = heads * visitedKeys * (plan.D + plan.Dv) * e;
  cost.outBytes = static_cast<double>(heads) * plan.Nq * (plan.Dv * e + 4);
  double onceScoreOperands = 0;
  for (Value operand : {plan.bias, plan.keepMask}) {
    if (!operand)
      continue;
    int64_t bytes = elementBytes(
        cast<ShapedType>(operand.getType()).getElementType());
    cost.scoreOperandBytes += heads * tiledPairs * bytes;
    onceScoreOperands += static_cast<double>(numElements(operand)) * bytes;
  }
  cost.onceBytes = cost.qBytes +
                   static_cast<double>(plan.B) * plan.Hkv * plan.Nk *
                       (plan.D + plan.Dv) * e +
                   onceScoreOperands + cost.outBytes;

  const ChipPeaks *peaks = getChipPeaks(cfg.chip);
  bool simt = cfg.mma == "simt";
  double tflops = peakTflops > 0 ? peakTflops
                  : peaks        ? (simt ? peaks->fp32Tflops
                                         : peaks->tensorTflops)
                                 : 0;
  double gbps = peakGbps > 0 ? peakGbps : peaks ? peaks->gbps : 0;
  cost.peakFlopsPerSecond = tflops * 1e12;
  cost.peakBytesPerSecond = gbps * 1e9;
  return cost;
}

std::string attnfuse::gpu_kernels::describeKernelCost(const KernelCost &c,
                                                      StringRef name,
                                                      StringRef family) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto giga = [](double v) { return llvm::format("%.4g", v / 1e9); };
  auto mega = [](double v) { return llvm::format("%.4g", v / 1e6); };
  double bytes = c.plannedBytes();
  os << "convert-attn-to-gpu: cost of " << name << " (" << family
     << "): " << giga(c.flops) << " GFLOP (the visible pairs; "
     << giga(c.tiledFlops) << " in the tiles); HBM " << mega(bytes)
     << " MB as planned (Q " << mega(c.qBytes) << ", K/V " << mega(c.kvBytes);
  if (c.scoreOperandBytes > 0)
    os << ", bias/keep " << mega(c.scoreOperandBytes);
  os << ", O and lse " << mega(c.outBytes) << "), " << mega(c.onceBytes)
     << " MB reading each operand once; "
     << llvm::format("%.4g", c.tiledFlops / bytes) << " FLOP/byte";
  double t = c.rooflineSeconds();
  if (t <= 0) {
    os << "; no roofline: the chip's peaks are unknown (give peak-tflops and "
          "peak-gbps)";
    return text;
  }
  double compute = c.tiledFlops / c.peakFlopsPerSecond;
  os << "; roofline " << llvm::format("%.4g", t * 1e6) << " us ("
     << (compute >= t ? "compute" : "memory") << "-bound at "
     << llvm::format("%.4g", c.peakFlopsPerSecond / 1e12) << " TFLOP/s, "
     << llvm::format("%.4g", c.peakBytesPerSecond / 1e9)
     << " GB/s, each operand read once; "
     << llvm::format("%.4g", bytes / c.peakBytesPerSecond * 1e6)
     << " us to move the planned bytes without reuse in L2)";
  return text;
}
