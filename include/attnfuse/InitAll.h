//===- InitAll.h - register every attnfuse dialect and pass -----*- C++ -*-===//
//
// One call for an embedding compiler: attnfuse's dialects, passes and
// pipelines, plus the upstream dialects attnfuse's input and output use.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_INITALL_H
#define ATTNFUSE_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace attnfuse {

/// Registers the attn dialect.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers the attn dialect and the upstream dialects, interface
/// implementations and LLVM IR translations that attnfuse's inputs and
/// pipelines use (not all of MLIR): what a tool that only runs attnfuse needs.
void registerPipelineDialects(mlir::DialectRegistry &registry);

/// Registers attnfuse's passes and pipelines with the global registry.
void registerAllPasses();

} // namespace attnfuse

#endif // ATTNFUSE_INITALL_H
