//===- Runner.h - compile and execute a function on the CPU -----*- C++ -*-===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_RUNNER_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_RUNNER_H

#include "HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Error.h"

#include <string>

namespace attnfuse_run {

/// Lowers `module` in place to the LLVM dialect with attn-lower-to-cpu-pipeline
/// (`naive` selects the reference lowering; `pipelineOptions` are further
/// options of the pipeline, e.g. "block-q=16 block-k=32"), after marking the
/// function `entry` with `llvm.emit_c_interface`. Emits the pipeline's
/// diagnostics.
mlir::LogicalResult lowerToLLVM(mlir::ModuleOp module, llvm::StringRef entry,
                                bool naive, llvm::StringRef pipelineOptions);

/// How the host JIT compiles a lowered module.
struct JitSettings {
  /// The CPU (attnfuse::HostJitOptions::cpu; empty: $ATTNFUSE_JIT_CPU, else
  /// the host's).
  std::string cpu;
  /// Where to write the compiled object after the runs (empty: nowhere).
  std::string objectFile;
};

/// JIT-compiles the lowered `module` at O2 as `jit` says and calls `entry`,
/// whose tensor-level signature is `signature` (ranked tensors and scalars
/// in, ranked tensors out), on copies of `inputs`. Returns its results.
llvm::Expected<llvm::SmallVector<HostTensor>>
execute(mlir::ModuleOp module, llvm::StringRef entry,
        mlir::FunctionType signature, llvm::ArrayRef<HostTensor> inputs,
        const JitSettings &jit = {});

/// Like execute, once per input set, with one JIT compilation; `consume`
/// receives the results of each set in order and may stop the runs with an
/// error.
llvm::Error executeEach(
    mlir::ModuleOp module, llvm::StringRef entry, mlir::FunctionType signature,
    const JitSettings &jit, size_t numSets,
    llvm::function_ref<llvm::SmallVector<HostTensor>(size_t)> inputSet,
    llvm::function_ref<llvm::Error(size_t, llvm::SmallVector<HostTensor>)>
        consume);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_RUNNER_H
