//===- KernelCost.h - what a kernel computes and moves ---------*- C++ -*-===//
//
// The cost report of convert-attn-to-gpu (report-cost=true): per kernel,
// its FLOPs, the HBM bytes it moves as planned, its arithmetic intensity
// and its roofline time on the target, from the KernelPlan (the key blocks
// each query block visits, getKeyBlockRange, and the query blocks each key
// block visits, getQueryBlockRange: the kernels' own block arithmetic).
// Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H

#include "KernelPlan.h"

#include <string>

namespace attnfuse::gpu_kernels {

struct KernelCost {
  /// What the kernel computes: for the kinds that walk (query, key) tiles,
  /// the products' FLOPs per (query, key) pair the structural mask shows
  /// and per pair of the tiles as planned (whole blocks); for the
  /// element-wise kinds (the backward's pre-pass and dQ conversion) their
  /// arithmetic, equal in both.
  double flops = 0, tiledFlops = 0;
  bool pairs = true;
  /// HBM traffic as planned (no reuse through L2: a CTA reads its tiles,
  /// re-reads of K/V by every query block, or of Q, dO by every key block,
  /// counted each time), by operand in the report's order, and the total if
  /// every operand were read (written) once.
  SmallVector<std::pair<std::string, double>> planned;
  double onceBytes = 0;
  double plannedBytes() const;
  /// The target's peaks (0: unknown) and the roofline time of the tiled
  /// FLOPs and the bytes read once: max(FLOPs / peak, bytes / bandwidth)
  /// (the planned bytes bound the time only where L2 serves no re-read).
  double peakFlopsPerSecond = 0, peakBytesPerSecond = 0;
  double rooflineSeconds() const;
};

/// The cost of the kernel of `plan` (options resolved), of any kind but the
/// split forward's combine: the forward, and the backward's pre-pass,
/// backward, dQ conversion and deterministic dQ kernel. The peaks come from
/// `peakTflops` / `peakGbps` when positive, else from the chip
/// (getChipPeaks), for the family's arithmetic (tensor cores, or f32 FMAs
/// for simt and the element-wise kinds).
KernelCost getKernelCost(const KernelPlan &plan, double peakTflops,
                         double peakGbps);

/// The report's text for kernel `name`.
std::string describeKernelCost(const KernelCost &cost, StringRef name,
                               StringRef family);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H
