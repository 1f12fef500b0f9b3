//===- KernelFamily.h - the instruction families of convert-attn-to-gpu -*-===//
//
// Two axes make a kernel. An instruction family is one way of computing the
// two products of the fused kernel (S = Q K^T, O += P V) and everything that
// depends on it: which ops it covers, its option defaults and limits, its
// shared memory, its launch shape and its building blocks. A kernel kind
// (KernelKind, KernelPlan.h: the forward; the backward pre-pass, the
// backward and its dQ conversion) is what a kernel computes and which
// arguments it takes; a family emits each kind it has as a short assembly
// of its blocks, in a file named for the kind. convertAttentionToGPU
// (AttnToGPU.cpp) builds the KernelPlan of an op, asks the family named by
// the `mma` option (falling back, with a remark, while a family cannot
// compute the op), and writes the host side and the gpu.func around the
// family's body.
//
//   family    options, kinds     building blocks          forward kind
//   simt      SimtFamily.cpp     (scalar rows)            SimtForward.cpp
//   mma_sync  MmaSyncFamily.cpp  MmaSyncBlocks.h          MmaSyncForward.cpp
//   wgmma     WgmmaFamily.cpp    WgmmaBlocks.h            WgmmaForward.cpp
//
// The backward kinds: simt has all of them (SimtBackward.cpp); mma_sync and
// wgmma have the backward (MmaSyncBackward.cpp, WgmmaBackward.cpp) and take
// simt's pre-pass and dQ conversion; what wgmma's backward does not cover
// (head dims above 128, deterministic mode) goes to mma_sync, and what that
// does not cover to simt (getUnsupportedReason, a remark per fallback).
//
// simt: f32 FMAs on CUDA cores, any element type; mma_sync: sm_80+
// warp-level mma.sync m16n8k16; wgmma: sm_90a warpgroup-level
// wgmma.mma_async. Shared by the families: the tile order and the
// persistent walk (TileScheduler.h); by the tensor-core families, the
// online softmax on accumulator fragments (Fragments.h) and the CTA-level
// staging (Staging.h). Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H

#include "KernelBuilder.h"

#include <array>
#include <string>

namespace attnfuse::gpu_kernels {

/// Grid and CTA sizes of a kernel launch.
struct LaunchShape {
  std::array<int64_t, 3> grid, block;
};

class KernelFamily {
public:
  virtual ~KernelFamily() = default;
  /// The `mma` option value that selects the family.
  virtual StringRef getName() const = 0;
  /// The family to try when this one cannot compute an op (none: null).
  virtual const KernelFamily *getFallback() const { return nullptr; }
  /// Why the family cannot compute the kernel of `plan` (its kind, shapes
  /// and element type; options not resolved) for `chip` (empty when it
  /// can).
  virtual std::string getUnsupportedReason(const KernelPlan &plan,
                                           StringRef chip) const = 0;
  /// Sets plan.cfg from `requested` (zero fields take the family's defaults
  /// for the op, shrunk to plan.sharedLimit bytes of shared memory), and
  /// plan.threads; options the family cannot take are a located error.
  virtual LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const = 0;
  /// Bytes of dynamic shared memory the kernel of `plan` needs.
  virtual int64_t getDynamicSharedBytes(const KernelPlan &plan) const = 0;
  /// The statically sized workgroup buffers of the gpu.func (none by
  /// default).
  virtual SmallVector<Type> getWorkgroupBuffers(const KernelPlan &plan,
                                                MLIRContext *ctx) const {
    return {};
  }
  /// The tensor maps the kernel of `plan` (options resolved) takes (none by
  /// default); the host creates them (nvgpu.tma.create.descriptor).
  virtual SmallVector<TensorMapSpec>
  getTensorMaps(const KernelPlan &plan) const {
    return {};
  }
  /// One CTA per (query block, batch * head), plan.threads threads, by
  /// default (getTileGridShape, TileScheduler.h).
  virtual LaunchShape getLaunchShape(const KernelPlan &plan) const;
  /// Emits the body of the kernel of kind plan.kind into `func`
  /// (arguments: see KernelArgs).
  virtual void emit(KernelPlan &plan, gpu::GPUFuncOp func) const = 0;
};

/// The family an `mma` option value names (null for an unknown name; auto:
/// wgmma for sm_90a, mma_sync for other chips from sm_80, simt below), and the names, for diagnostics.
const KernelFamily *lookupKernelFamily(StringRef name, StringRef chip);
std::string getKernelFamilyNames();
/// The chips of the wgmma family (sm_90a: wgmma and setmaxnreg exist only
/// on the arch-specific target).
bool isWgmmaChip(StringRef chip);
/// The chips of the mma_sync family: sm_80 and newer (cp.async, mma.sync
/// with bf16).
bool isMmaSyncChip(StringRef chip);

const KernelFamily &getSimtFamily();
const KernelFamily &getMmaSyncFamily();
const KernelFamily &getWgmmaFamily();

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H
