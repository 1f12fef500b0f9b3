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

/// Makes the fp64 evaluation of `module` keep one rounding of the real
/// pipelines: every float tensor result of an attn.attention or
/// attn.attention_backward op is rounded to its element type (f16, bf16 or
/// f32) before its uses. Call it before lowering the attn ops; the roundings
/// are identities until promoteFloatsToF64 makes them f64 -> type -> f64.
/// The difference between this evaluation and the plain fp64 one is the
/// error that storing the attention ops' results in their declared types
/// causes by itself, in exact arithmetic (attnfuse-run's storage floor,
/// docs/attnfuse-run.md).
void roundAttentionResults(mlir::ModuleOp module);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_PROMOTE_H
