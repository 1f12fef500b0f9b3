//===- CudaRunner.h - run a function's attention kernels on a GPU -*- C++ -*-===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_CUDARUNNER_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_CUDARUNNER_H

#include "HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace attnfuse_run {

/// Compiles `entry` of `module` with attn-lower-to-nvvm-pipeline (options
/// `pipelineOptions`, with `naive=true` when `naive`: the reference lowering
/// as upstream-made kernels) and runs it on the GPU: inputs are copied to
/// device buffers, the kernels are launched in order through the CUDA driver
/// API (intermediate buffers on the device), and the results are copied back.
/// Unfused chains are raised first; the function's body must then consist of
/// attention ops between its arguments and results (what the GPU lowering
/// turns into kernel launches); anything else is reported, not run.
llvm::Expected<llvm::SmallVector<HostTensor>>
executeOnCuda(mlir::ModuleOp module, llvm::StringRef entry,
              llvm::StringRef pipelineOptions, bool naive,
              llvm::ArrayRef<HostTensor> inputs);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_CUDARUNNER_H
