//===- AttnCanonicalize.cpp - canonical forms of attn.attention -----------===//
//
// Canonical forms keep the attributes minimal, so that every later pass
// (and the kernel generator's choice of code path) sees one spelling of
// each semantic case.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace attnfuse::attn;

namespace {
constexpr int64_t kUnbounded = MaskWindow::kUnbounded;

/// Replaces a mask that hides nothing by `none` and a window that is causal by
/// `causal`; aligns bottom-right to top-left when Nq == Nk (they coincide).
struct SimplifyStructuralMask : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getMask() == MaskKind::none)
      return failure();
    MaskWindow w = op.getMaskWindow();
    int64_t nq = op.getQueryLength(), nk = op.getKeyLength();
    // Visible iff -left <= k - q - off <= right, over 0 <= q < nq, 0 <= k < nk.
    // With a runtime length only an unbounded side is known to hide nothing.
    bool lengthsStatic = !ShapedType::isDynamic(nq) &&
                         !ShapedType::isDynamic(nk) && w.hasStaticOffset();
    bool rightOpen = w.right == kUnbounded ||
                     (lengthsStatic && w.right >= nk - 1 - w.offset);
    bool leftOpen = w.left == kUnbounded ||
                    (lengthsStatic && w.left >= nq - 1 + w.offset);
    MLIRContext *ctx = op.getContext();
    auto setMask = [&](MaskKind kind) {
      rewriter.modifyOpInPlace(op, [&] {
        op.setMaskAttr(MaskKindAttr::get(ctx, kind));
        op.removeWindowLeftAttr();
        op.removeWindowRightAttr();
        if (kind == MaskKind::none)
          op.setAlignmentAttr(
              MaskAlignmentAttr::get(ctx, MaskAlignment::top_left));
      });
      return success();
    };
    if (leftOpen && rightOpen)
      return setMask(MaskKind::none);
    if (op.getMask() == MaskKind::sliding_window && leftOpen && w.right == 0)
      return setMask(MaskKind::causal);
    if (op.getAlignment() == MaskAlignment::bottom_right && lengthsStatic &&
        nq == nk) {
      rewriter.modifyOpInPlace(op, [&] {
        op.setAlignmentAttr(
            MaskAlignmentAttr::get(ctx, MaskAlignment::top_left));
      });
      return success();
    }
    return failure();
  }
};

/// Drops a keep mask that is a constant all-true tensor and a bias that is a
/// constant all-zero tensor: neither changes a score.
struct DropTrivialMaskAndBias : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (Value keep = op.getKeepMask(); keep && matchPattern(keep, m_One())) {
      rewriter.modifyOpInPlace(op, [&] { op.getKeepMaskMutable().clear(); });
      return success();
    }
    if (Value bias = op.getBias();
        bias && matchPattern(bias, m_AnyZeroFloat())) {
      rewriter.modifyOpInPlace(op, [&] { op.getBiasMutable().clear(); });
      return success();
    }
    return failure();
  }
};

/// Removes a score_mod region that returns its score unchanged.
struct DropIdentityScoreMod : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasScoreMod())
      return failure();
    Block &block = op.getScoreMod().front();
    auto yield = cast<YieldOp>(block.getTerminator());
    if (yield.getValues().front() != block.getArgument(0))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      // Ops left in the block are unused by the yield; drop them all.
      op.getScoreMod().getBlocks().clear();
    });
    return success();
  }
};

/// Drops the log-sum-exp result when nothing uses it.
struct DropUnusedLse : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value lse = op.getLse();
    if (!lse || !lse.use_empty())
      return failure();
    OperationState state(op.getLoc(), op->getName());
    state.addOperands(op->getOperands());
    state.addTypes(op.getOutput().getType());
    state.useProperties(op.getProperties());
    state.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
    state.addRegion();
    auto newOp = cast<AttentionOp>(rewriter.create(state));
    rewriter.inlineRegionBefore(op.getScoreMod(), newOp.getScoreMod(),
                                newOp.getScoreMod().end());
    rewriter.replaceAllUsesWith(op.getOutput(), newOp.getOutput());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<SimplifyStructuralMask, DropTrivialMaskAndBias,
              DropIdentityScoreMod, DropUnusedLse>(context);
}
