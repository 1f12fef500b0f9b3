//===- AttnToLinalg.h - reference lowering of attn to linalg ----*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"

namespace attnfuse {
namespace attn {
class AttentionOp;
} // namespace attn

/// Builds the naive, materializing computation of `op` in linalg on tensors
/// at `op`'s position and returns the values replacing its results (output,
/// then lse when present). Does not erase `op`.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
lowerAttentionToLinalg(mlir::OpBuilder &builder, attn::AttentionOp op);

/// Adds the pattern that rewrites attn.attention with lowerAttentionToLinalg.
void populateAttnToLinalgConversionPatterns(mlir::RewritePatternSet &patterns);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
