//===- AttnToSCF.h - the tiled FlashAttention lowering ----------*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOSCF_ATTNTOSCF_H
#define ATTNFUSE_CONVERSION_ATTNTOSCF_ATTNTOSCF_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"

namespace attnfuse {
namespace attn {
class AttentionOp;
class AttentionBackwardOp;
} // namespace attn

/// Block sizes of the tiled lowering (clamped to the sequence lengths).
struct AttentionTilingOptions {
  int64_t blockQ = 64;
  int64_t blockK = 64;
};

/// Builds the tiled, online-softmax computation of `op` (FlashAttention's
/// forward algorithm) at `op`'s position: an scf.forall over (batch, query
/// head, query block) holding an scf.for over the key blocks that can be
/// visible, with linalg on [blockQ, blockK] tiles. Returns the values that
/// replace `op`'s results. No value has a [Nq, Nk]-sized shape.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
tileAttention(mlir::OpBuilder &builder, attn::AttentionOp op,
              const AttentionTilingOptions &options);

/// Builds FlashAttention's backward algorithm for `op`: Di = rowsum(dO * O),
/// then an scf.forall over (batch, kv head, key block) accumulating dK and dV
/// over the group's query heads and the query blocks that can see the keys,
/// and an scf.forall over (batch, query head, query block) accumulating dQ
/// over the visible key blocks. P is recomputed from Q, K and lse; every
/// gradient block has a single writer. Returns (dQ, dK, dV).
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
tileAttentionBackward(mlir::OpBuilder &builder, attn::AttentionBackwardOp op,
                      const AttentionTilingOptions &options);

/// Adds the patterns rewriting attn.attention and attn.attention_backward
/// with tileAttention and tileAttentionBackward.
void populateAttnToSCFConversionPatterns(mlir::RewritePatternSet &patterns,
                                         const AttentionTilingOptions &options);

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOSCF_ATTNTOSCF_H
