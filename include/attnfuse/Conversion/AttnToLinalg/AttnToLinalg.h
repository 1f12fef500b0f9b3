//===- AttnToLinalg.h - reference lowering of attn to linalg ----*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"

namespace attnfuse {
namespace attn {
class AttentionOp;
class AttentionBackwardOp;
} // namespace attn

/// Builds the naive, materializing computation of `op` in linalg on tensors
/// at `op`'s position and returns the values replacing its results (output,
/// then lse when present). Does not erase `op`.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
lowerAttentionToLinalg(mlir::OpBuilder &builder, attn::AttentionOp op);

/// Builds the naive, materializing gradients (dQ, dK, dV) of `op` in linalg
/// on tensors at `op`'s position. Does not erase `op`.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
lowerAttentionBackwardToLinalg(mlir::OpBuilder &builder,
                               attn::AttentionBackwardOp op);

/// Adds the patterns that rewrite attn.attention and attn.attention_backward
/// with lowerAttentionToLinalg and lowerAttentionBackwardToLinalg.
void populateAttnToLinalgConversionPatterns(mlir::RewritePatternSet &patterns);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
