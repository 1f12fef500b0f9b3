//===- Pipelines.h - attnfuse's end-to-end pass pipelines -------*- C++ -*-===//
#ifndef ATTNFUSE_PIPELINES_PIPELINES_H
#define ATTNFUSE_PIPELINES_PIPELINES_H

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
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per block of the tiled "
                                        "attention lowering"),
                         llvm::cl::init(64)};
  Option<int64_t> blockK{*this, "block-k",
                         llvm::cl::desc("Key rows per block of the tiled "
                                        "attention lowering"),
                         llvm::cl::init(64)};
};

/// Adds the passes that take a module of attn + upstream tensor-level ops
/// (func, linalg, tensor, arith, math) to the LLVM dialect for execution on
/// the host CPU. Functions take and return memrefs with identity layouts.
void buildAttnLowerToCPUPipeline(mlir::OpPassManager &pm,
                                 const CPUPipelineOptions &options);

/// Registers `attn-lower-to-cpu-pipeline`.
void registerAttnFusePipelines();

} // namespace attnfuse

#endif // ATTNFUSE_PIPELINES_PIPELINES_H
