//===- KernelCost.cpp - what a kernel computes and moves ------------------===//
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

/// How many of n elements (keys, or query rows) blocks [begin, end) of
/// `block` hold: [i * block, min(n, (i + 1) * block)) each.
int64_t elementsOfBlocks(int64_t begin, int64_t end, int64_t block,
                         int64_t n) {
  int64_t count = 0;
  for (int64_t i = std::max<int64_t>(begin, 0); i < end; ++i)
    count += std::min(block, n - i * block);
  return count;
}

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

int64_t numElements(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}
} // namespace

double KernelCost::plannedBytes() const {
  double total = 0;
  for (const auto &entry : planned)
    total += entry.second;
  return total;
}

double KernelCost::rooflineSeconds() const {
  if (peakFlopsPerSecond <= 0 || peakBytesPerSecond <= 0)
    return 0;
  return std::max(tiledFlops / peakFlopsPerSecond,
                  onceBytes / peakBytesPerSecond);
}

namespace {
/// The pairs the structural mask shows: -left <= k - (q + off) <= right.
double visiblePairs(const KernelPlan &plan) {
  const attn::MaskWindow w = plan.fullLengthWindow();
  double pairs = 0;
  for (int64_t row = 0; row < plan.Nq; ++row) {
    int64_t q = plan.queryPeriod ? row % plan.queryPeriod : row;
    int64_t lo = plan.leftBounded ? std::max<int64_t>(0, q + w.offset - w.left)
                                  : 0;
    int64_t hi = plan.rightBounded
                     ? std::min(plan.Nk - 1, q + w.offset + w.right)
                     : plan.Nk - 1;
    pairs += std::max<int64_t>(0, hi - lo + 1);
  }
  return pairs;
}

/// The (query, key) pairs of the tiles a head's kernel visits and the keys
/// (rows) it reads in all: walking query blocks, each over its key blocks
/// (the forward, the deterministic dQ kernel), or key blocks, each over its
/// query blocks (the backward).
struct Tiles {
  double pairs = 0, keys = 0, rows = 0;
};
Tiles queryBlockTiles(const KernelPlan &plan) {
  const AttentionKernelOptions &cfg = plan.cfg;
  Tiles t;
  for (int64_t q0 = 0; q0 < plan.Nq; q0 += cfg.blockQ) {
    int64_t rows = std::min(cfg.blockQ, plan.Nq - q0);
    auto [first, count] = plan.queryPositions(q0, rows);
    auto [begin, end] =
        attn::getKeyBlockRange(plan.fullLengthWindow(), plan.maskQueryLength(),
                               plan.Nk,
                               first, count, cfg.blockK);
    int64_t keys = elementsOfBlocks(begin, end, cfg.blockK, plan.Nk);
    t.pairs += static_cast<double>(rows) * keys;
    t.keys += keys;
  }
  return t;
}
Tiles keyBlockTiles(const KernelPlan &plan) {
  const AttentionKernelOptions &cfg = plan.cfg;
  Tiles t;
  for (int64_t k0 = 0; k0 < plan.Nk; k0 += cfg.blockK) {
    int64_t keys = std::min(cfg.blockK, plan.Nk - k0);
    auto [begin, end] = attn::getQueryBlockRange(plan.window, plan.Nq, plan.Nk,
                                                 k0, cfg.blockK, cfg.blockQ);
    int64_t rows = elementsOfBlocks(begin, end, cfg.blockQ, plan.Nq);
    t.pairs += static_cast<double>(rows) * keys;
    t.rows += rows;
  }
  return t;
}

/// The bias and keep mask read per pair of the tiles, and once.
void addScoreOperands(const KernelPlan &plan, double heads, double tiledPairs,
                      KernelCost &cost) {
  double tiled = 0;
  for (Value operand : {plan.bias, plan.keepMask}) {
    if (!operand)
      continue;
    int64_t bytes =
        elementBytes(cast<ShapedType>(operand.getType()).getElementType());
    tiled += heads * tiledPairs * bytes;
    cost.onceBytes += static_cast<double>(numElements(operand)) * bytes;
  }
  if (tiled > 0)
    cost.planned.push_back({"bias/keep", tiled});
}
} // namespace

KernelCost attnfuse::gpu_kernels::getKernelCost(const KernelPlan &plan,
                                                double peakTflops,
                                                double peakGbps) {
  KernelCost cost;
  const double heads = static_cast<double>(plan.B) * plan.Hq,
               kvHeads = static_cast<double>(plan.B) * plan.Hkv;
  const double e = elementBytes(plan.elementType);
  const double D = plan.D, Dv = plan.Dv, Nq = plan.Nq, Nk = plan.Nk;
  const bool deterministic = plan.cfg.deterministic;
  // Bytes of a query row's Q (or dQ), dO (or O), and K/V rows.
  const double qRow = D * e, oRow = Dv * e, kvRow = (D + Dv) * e;
  auto add = [&](const char *what, double planned, double once) {
    cost.planned.push_back({what, planned});
    cost.onceBytes += once;
  };
  bool tensorCores = plan.cfg.mma != "simt";
  switch (plan.kind) {
  case KernelKind::Forward:
  case KernelKind::ForwardCombine: {
    // (The combine kernel reports as its forward.)
    Tiles t = queryBlockTiles(plan);
    double pairFlops = 2.0 * (D + Dv);
    cost.flops = heads * visiblePairs(plan) * pairFlops;
    cost.tiledFlops = heads * t.pairs * pairFlops;
    add("Q", heads * Nq * qRow, heads * Nq * qRow);
    add("K/V", heads * t.keys * kvRow, kvHeads * Nk * kvRow);
    addScoreOperands(plan, heads, t.pairs, cost);
    add("O and lse", heads * Nq * (oRow + 4), heads * Nq * (oRow + 4));
    break;
  }
  case KernelKind::BackwardPre: {
    // Di = rowsum(dO * O); the dQ accumulator zeroed (not in deterministic
    // mode).
    cost.pairs = false;
    tensorCores = false;
    cost.flops = cost.tiledFlops = heads * Nq * 2 * Dv;
    add("dO and O", heads * Nq * 2 * oRow, heads * Nq * 2 * oRow);
    add("Di", heads * Nq * 4, heads * Nq * 4);
    if (!deterministic)
      add("dQ accumulator", heads * Nq * D * 4, heads * Nq * D * 4);
    break;
  }
  case KernelKind::Backward: {
    // Per pair: S and dP (2 (Dqk + Dv)), dV (2 Dv), dK (2 Dqk), dQ by
    // atomics (2 Dqk; deterministic mode: the dQ kernel's).
    Tiles t = keyBlockTiles(plan);
    double pairFlops = 2.0 * (D + Dv) + 2.0 * Dv + 2.0 * D +
                       (deterministic ? 0.0 : 2.0 * D);
    cost.flops = heads * visiblePairs(plan) * pairFlops;
    cost.tiledFlops = heads * t.pairs * pairFlops;
    add("K/V", kvHeads * Nk * kvRow, kvHeads * Nk * kvRow);
    // Every key block reads the Q, dO, lse and Di rows of the query blocks
    // it visits, of each query head of its group.
    double rowBytes = qRow + oRow + 8;
    add("Q, dO, lse, Di", heads * t.rows * rowBytes, heads * Nq * rowBytes);
    addScoreOperands(plan, heads, t.pairs, cost);
    if (!deterministic)
      add("dQ f32 reductions", heads * t.rows * D * 4, heads * Nq * D * 4);
    add("dK/dV", kvHeads * Nk * kvRow, kvHeads * Nk * kvRow);
    break;
  }
  case KernelKind::BackwardDQ: {
    // Deterministic dQ: per pair S, dP (2 (Dqk + Dv)) and dQ (2 Dqk), each
    // query block over the key blocks it sees, in order.
    Tiles t = queryBlockTiles(plan);
    double pairFlops = 2.0 * (D + Dv) + 2.0 * D;
    cost.flops = heads * visiblePairs(plan) * pairFlops;
    cost.tiledFlops = heads * t.pairs * pairFlops;
    double rowBytes = qRow + oRow + 8;
    add("Q, dO, lse, Di", heads * Nq * rowBytes, heads * Nq * rowBytes);
    add("K/V", heads * t.keys * kvRow, kvHeads * Nk * kvRow);
    addScoreOperands(plan, heads, t.pairs, cost);
    add("dQ", heads * Nq * qRow, heads * Nq * qRow);
    break;
  }
  case KernelKind::BackwardConvert: {
    // dQ = the f32 accumulator in dQ's element type.
    cost.pairs = false;
    tensorCores = false;
    add("dQ accumulator", heads * Nq * D * 4, heads * Nq * D * 4);
    add("dQ", heads * Nq * qRow, heads * Nq * qRow);
    break;
  }
  }

  const ChipPeaks *peaks = getChipPeaks(plan.cfg.chip);
  double tflops = peakTflops > 0 ? peakTflops
                  : peaks        ? (tensorCores ? peaks->tensorTflops
                                                : peaks->fp32Tflops)
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
     << "): " << giga(c.flops) << " GFLOP";
  if (c.pairs)
    os << " (the visible pairs; " << giga(c.tiledFlops) << " in the tiles)";
  os << "; HBM " << mega(bytes) << " MB as planned (";
  llvm::interleaveComma(c.planned, os, [&](const auto &entry) {
    os << entry.first << " " << mega(entry.second);
  });
  os << "), " << mega(c.onceBytes) << " MB reading each operand once; "
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
