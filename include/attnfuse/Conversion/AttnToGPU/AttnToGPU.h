//===- AttnToGPU.h - fused CUDA attention kernels ---------------*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H
#define ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/CommandLine.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir {
class Pass;
} // namespace mlir

namespace attnfuse {
namespace attn {
class AttentionOp;
class AttentionBackwardOp;
} // namespace attn

/// The configuration of one generated forward kernel: the fields of
/// KernelOptions.def (its list has each option's meaning). The instruction
/// families (`mma`) are described in lib/Conversion/AttnToGPU/KernelFamily.h
/// and docs/GPU.md.
struct AttentionKernelOptions {
#define ATTN_KERNEL_OPTION(TYPE, FIELD, ARG, DEFAULT, DESC) TYPE FIELD = DEFAULT;
#include "attnfuse/Conversion/AttnToGPU/KernelOptions.def"
};

/// The command-line options of AttentionKernelOptions, declared on `Base`: a
/// pass (convert-attn-to-gpu) or a pass pipeline's options
/// (attn-lower-to-nvvm-pipeline), so that both spell, document and default
/// them as KernelOptions.def does, and forward them as one value.
template <typename Base>
class AttentionKernelCommandLine : public Base {
public:
  using Base::Base;
  /// Options are registered with their owner: a copy starts with fresh ones
  /// (the pass manager copies the values, Pass::copyOptionValuesFrom).
  AttentionKernelCommandLine(const AttentionKernelCommandLine &other)
      : Base(other) {}

#define ATTN_KERNEL_OPTION(TYPE, FIELD, ARG, DEFAULT, DESC)                    \
  typename Base::template Option<TYPE> FIELD{*this, ARG, llvm::cl::desc(DESC), \
                                             llvm::cl::init(DEFAULT)};
#include "attnfuse/Conversion/AttnToGPU/KernelOptions.def"

  AttentionKernelOptions getKernelOptions() const {
    AttentionKernelOptions options;
#define ATTN_KERNEL_OPTION(TYPE, FIELD, ARG, DEFAULT, DESC)                    \
  options.FIELD = FIELD;
#include "attnfuse/Conversion/AttnToGPU/KernelOptions.def"
    return options;
  }
  void setKernelOptions(const AttentionKernelOptions &options) {
#define ATTN_KERNEL_OPTION(TYPE, FIELD, ARG, DEFAULT, DESC)                    \
  FIELD = options.FIELD;
#include "attnfuse/Conversion/AttnToGPU/KernelOptions.def"
  }
};

/// An NVIDIA GPU architecture as ptxas names it: sm_<major><minor>, with
/// the arch-specific suffix `a` (sm_90a: wgmma, setmaxnreg) or the family
/// suffix `f`, or none.
struct GpuChip {
  unsigned major = 0, minor = 0;
  char suffix = 0;
  /// 10 * major + minor: 75, 80, 90, ...
  unsigned getNumber() const { return 10 * major + minor; }
};

/// The oldest chip attnfuse compiles for: sm_75, the oldest target of the
/// CUDA 13 toolkit's ptxas.
inline constexpr unsigned kOldestGpuChip = 75;

/// Parses `chip` ("sm_80", "sm_90a"); none when it is not such a name.
std::optional<GpuChip> parseGpuChip(llvm::StringRef chip);

/// Why attnfuse cannot compile for `chip` with the PTX features `features`
/// (e.g. "+ptx80"): not a chip name, older than kOldestGpuChip, a chip the
/// NVPTX backend does not know, or a PTX ISA version older than the chip
/// needs (sm_100a: 8.6); empty when it can.
std::string getUnsupportedChipReason(llvm::StringRef chip,
                                     llvm::StringRef features = "");

/// The opt-in dynamic shared memory per CTA of an NVIDIA chip ("sm_80",
/// "sm_90a", ...): 163 KB on sm_80/87, 99 KB on sm_86/89, 227 KB on sm_90
/// and later (and for names it does not know).
int64_t sharedMemoryLimitForChip(llvm::StringRef chip);

/// The SMs of the data-center part of an NVIDIA chip, which grid sizes
/// (the wgmma family's persistent grid, the mma_sync forward's key splits)
/// are planned for: 108 on sm_80 (A100), 84 on sm_86 (A40), 142 on sm_89
/// (L40), 132 on sm_90 (H100 SXM, H200) and for names it does not know. On
/// a part with fewer (H100 PCIe: 114) the CTAs past its count run as a
/// second wave: correct, slower.
int64_t multiprocessorCountForChip(llvm::StringRef chip);

/// Replaces `op` (static shapes, f16/bf16/f32) by a launch of a fused
/// FlashAttention forward kernel of the instruction family `options.mma`
/// (or the family it falls back to, with a remark): a `gpu.func` named
/// `kernelName`, added to `gpuModule`, and a `gpu.launch_func` at `op`'s
/// position between `bufferization.to_buffer` of the operands and
/// `bufferization.to_tensor` of the results. The kernel's arguments are, in
/// order, Q, K, V, [bias], [keep_mask], [seed], O, lse (memrefs with
/// identity layouts, the seed an i64); lse is always written. Options the
/// family cannot take are a located error.
mlir::LogicalResult convertAttentionToGPU(attn::AttentionOp op,
                                          mlir::Operation *gpuModule,
                                          llvm::StringRef kernelName,
                                          const AttentionKernelOptions &options);

/// Replaces `op` (static shapes, f16/bf16/f32) by the launches, in order,
/// of the backward kernels of the family `options.mma` (the fallback chain
/// to simt, with remarks, while a family has no backward kinds): the
/// pre-pass `<kernelName>_bwd_pre` (Di = rowsum(dO * O), the f32 dQ
/// accumulator zeroed), the backward `<kernelName>_bwd` (dK, dV per key
/// block, dQ by f32 atomics) and, where dQ is not f32, its conversion
/// `<kernelName>_bwd_dq`. What the kernels cannot compute (a score_mod using
/// values from above other than constants) is a located error.
mlir::LogicalResult convertAttentionBackwardToGPU(
    attn::AttentionBackwardOp op, mlir::Operation *gpuModule,
    llvm::StringRef kernelName, const AttentionKernelOptions &options);

/// convert-attn-to-gpu with the kernel options `options` (the pass's
/// generated create function takes its textual options only).
std::unique_ptr<mlir::Pass>
createConvertAttnToGPUPass(const AttentionKernelOptions &options);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOGPU_ATTNTOGPU_H
