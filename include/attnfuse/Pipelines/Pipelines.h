//===- Pipelines.h - attnfuse's end-to-end pass pipelines -------*- C++ -*-===//
#ifndef ATTNFUSE_PIPELINES_PIPELINES_H
#define ATTNFUSE_PIPELINES_PIPELINES_H

#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace attnfuse {

/// Options of `attn-lower-to-cpu-pipeline`.
struct CPUPipelineOptions
    : public mlir::PassPipelineOptions<CPUPipelineOptions> {
  Option<bool> naive{
      *this, "naive",
      llvm::cl::desc("Lower attention ops through the reference lowering "
                     "(convert-attn-to-linalg) and everything else through "
                     "upstream passes only: the oracle of attnfuse-run"),
      llvm::cl::init(false)};
  Option<std::string> raiseReport{
      *this, "raise-report",
      llvm::cl::desc("How attn-raise-attention reports each candidate chain: "
                     "none, remarks, or errors (a chain left unfused fails "
                     "the pipeline)"),
      llvm::cl::init("none")};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per block of the tiled "
                                        "attention lowering"),
                         llvm::cl::init(64)};
  Option<int64_t> blockK{*this, "block-k",
                         llvm::cl::desc("Key rows per block of the tiled "
                                        "attention lowering"),
                         llvm::cl::init(64)};
};

/// Adds upstream's TOSA lowering to linalg, tensor and arith on tensors (each
/// func.func), with which every attnfuse pipeline starts: the raising and the
/// lowerings work on the linalg form.
void buildTosaToLinalgPipeline(mlir::OpPassManager &pm);

/// Adds the passes that take a module of attn + upstream tensor-level ops
/// (func, linalg, tensor, arith, math) to the LLVM dialect for execution on
/// the host CPU. Functions take and return memrefs with identity layouts.
void buildAttnLowerToCPUPipeline(mlir::OpPassManager &pm,
                                 const CPUPipelineOptions &options);

/// Registers `attn-lower-to-cpu-pipeline`.
void registerAttnFusePipelines();

/// Options of `attn-lower-to-nvvm-pipeline`: its own, and the kernel options
/// of convert-attn-to-gpu (KernelOptions.def), forwarded.
struct GPUPipelineOptions
    : public AttentionKernelCommandLine<
          mlir::PassPipelineOptions<GPUPipelineOptions>> {
  Option<bool> naive{
      *this, "naive",
      llvm::cl::desc("Lower attention ops through the reference lowering "
                     "(convert-attn-to-linalg) and upstream passes only "
                     "(linalg to parallel loops mapped to blocks and "
                     "threads): the GPU oracle of attnfuse-run"),
      llvm::cl::init(false)};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features: the PTX ISA version (sm_90a needs "
                     "+ptx81 or newer: its wgmma backward adds dQ by vector "
                     "reductions)"),
      llvm::cl::init("+ptx81")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX), bin (cubin), "
                     "fatbin"),
      llvm::cl::init("bin")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimization level"),
                            llvm::cl::init(3)};
  Option<std::string> raiseReport{
      *this, "raise-report",
      llvm::cl::desc("How attn-raise-attention reports each candidate chain: "
                     "none, remarks, or errors (a chain left unfused fails "
                     "the pipeline)"),
      llvm::cl::init("none")};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (libdevice, ptxas); default: $CUDA_HOME, "
                     "$CUDA_PATH, $CUDA_ROOT or /usr/local/cuda"),
      llvm::cl::init("")};
};

/// Adds the passes that turn attn.attention into fused CUDA kernels
/// (convert-attn-to-gpu; with `naive`, the reference lowering's linalg ops
/// as parallel loops), compile them to a gpu.binary and lower the host
/// function to the LLVM dialect: buildAttnGPUKernelsPipeline, then
/// buildAttnGPUBinaryPipeline.
void buildAttnLowerToNVVMPipeline(mlir::OpPassManager &pm,
                                  const GPUPipelineOptions &options);

/// The first half of attn-lower-to-nvvm-pipeline: raising, the kernels as
/// gpu.func ops in gpu.module ops, and the host functions bufferized (with
/// identity layouts at function boundaries). A function of attention ops
/// then is a sequence of memref.alloc, constants and gpu.launch_func ops
/// (the launch plan attnfuse-run --target=cuda reads).
void buildAttnGPUKernelsPipeline(mlir::OpPassManager &pm,
                                 const GPUPipelineOptions &options);

/// The second half of attn-lower-to-nvvm-pipeline: the device modules to
/// NVVM and binaries, the host code to the LLVM dialect.
void buildAttnGPUBinaryPipeline(mlir::OpPassManager &pm,
                                const GPUPipelineOptions &options);

/// Registers `attn-lower-to-nvvm-pipeline`.
void registerAttnFuseGPUPipeline();

} // namespace attnfuse

#endif // ATTNFUSE_PIPELINES_PIPELINES_H
