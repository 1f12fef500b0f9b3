//===- LowerDynamicExpandShapes.cpp - expand_shape of runtime sizes -------===//
//
// attn-lower-dynamic-expand-shapes: a memref.expand_shape that splits one
// dimension into two or more runtime sizes as extract_strided_metadata and
// reinterpret_cast, before expand-strided-metadata (which crashes on it in
// MLIR 22).
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNLOWERDYNAMICEXPANDSHAPES
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;

namespace {
struct LowerDynamicExpandShape : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType type = op.getResultType();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    if (llvm::none_of(groups, [&](const ReassociationIndices &group) {
          return llvm::count_if(group, [&](int64_t d) {
                   return type.isDynamicDim(d);
                 }) >= 2;
        }))
      return failure();
    Location loc = op.getLoc();
    auto source =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sourceStrides =
        source.getConstifiedMixedStrides();
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(type.getRank());
    AffineExpr s0, s1;
    bindSymbols(rewriter.getContext(), s0, s1);
    // Inside a split dimension, the innermost keeps its stride and each
    // outer one's is the next one's times its size.
    for (auto [dim, group] : llvm::enumerate(groups)) {
      OpFoldResult stride = sourceStrides[dim];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = affine::makeComposedFoldedAffineApply(rewriter, loc, s0 * s1,
                                                       {stride, sizes[d]});
      }
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, type, source.getBaseBuffer(), source.getConstifiedMixedOffset(),
        sizes, strides);
    return success();
  }
};

struct AttnLowerDynamicExpandShapesPass
    : attnfuse::attn::impl::AttnLowerDynamicExpandShapesBase<
          AttnLowerDynamicExpandShapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    attnfuse::attn::populateLowerDynamicExpandShapePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnfuse::attn::populateLowerDynamicExpandShapePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerDynamicExpandShape>(patterns.getContext());
}
