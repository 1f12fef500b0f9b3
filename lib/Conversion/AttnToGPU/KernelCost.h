//===- KernelCost.h - what a forward kernel computes and moves -*- C++ -*-===//
//
// The cost report of convert-attn-to-gpu (report-cost=true): per forward
// kernel, its FLOPs, the HBM bytes it moves as planned, its arithmetic
// intensity and its roofline time on the target, from the KernelPlan (the
// key blocks each query block visits: getKeyBlockRange, the kernels' own
// block arithmetic). Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H

#include "KernelPlan.h"

#include <string>

namespace attnfuse::gpu_kernels {

struct KernelCost {
  /// 2 (Dqk + Dv) per (query, key) pair the structural mask shows, and per
  /// pair of the tiles the kernel computes (whole key blocks).
  double flops = 0, tiledFlops = 0;
  /// HBM traffic as planned (every CTA reads Q once and its visited K/V
  /// blocks, bias and keep-mask tiles, no reuse through L2; O and lse
  /// written once), by operand, and the total if every operand were read
  /// once.
  double qBytes = 0, kvBytes = 0, scoreOperandBytes = 0, outBytes = 0;
  double onceBytes = 0;
  double plannedBytes() const {
    return qBytes + kvBytes + scoreOperandBytes + outBytes;
  }
  /// The target's peaks (0: unknown) and the roofline time of the tiled
  /// FLOPs and the bytes read once: max(FLOPs / peak, bytes / bandwidth)
  /// (the planned bytes bound the time only where L2 serves no re-read).
  double peakFlopsPerSecond = 0, peakBytesPerSecond = 0;
  double rooflineSeconds() const;
};

/// The cost of the forward kernel of `plan` (options resolved). The peaks
/// come from `peakTflops` / `peakGbps` when positive, else from the chip
/// (getChipPeaks), for the family's arithmetic (tensor cores, or f32 FMAs
/// for simt).
KernelCost getForwardKernelCost(const KernelPlan &plan, double peakTflops,
                                double peakGbps);

/// The report's text for kernel `name`.
std::string describeKernelCost(const KernelCost &cost, StringRef name,
                               StringRef family);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELCOST_H
