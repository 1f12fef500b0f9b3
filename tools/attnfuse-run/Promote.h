//===- Promote.h - evaluate a module in fp64 --------------------*- C++ -*-===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_PROMOTE_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_PROMOTE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace attnfuse_run {

/// Rewrites `module` in place so that it computes in f64 what it computed in
/// f16, bf16 and f32: every such type becomes f64 wherever it occurs in value
/// types (function signatures, block arguments, op results, the element types
/// of tensors, memrefs and vectors, complex types), in type attributes and in
/// the values of arith.constant (exactly); arith.extf and arith.truncf that
/// become f64 -> f64 are replaced by their operand. Other attributes (op
/// parameters such as F32Attr) are left alone. Ops that restrict their float
/// types (attn.attention requires f16, bf16 or f32 operands) must be lowered
/// first. Emits a diagnostic and fails on what it cannot convert (bitcasts of
/// promoted floats, constants it cannot read) or when the promoted module
/// does not verify.
mlir::LogicalResult promoteFloatsToF64(mlir::ModuleOp module);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_PROMOTE_H
