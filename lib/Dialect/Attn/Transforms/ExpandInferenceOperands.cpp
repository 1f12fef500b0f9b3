//===- ExpandInferenceOperands.cpp - key lengths, pages, packing as tensors ===//
//
// attn.attention's inference operands (per-batch key lengths, a block table
// over paged K/V, packed sequences) expressed through the operands every
// lowering takes: a keep mask that hides what they hide, and K/V gathered
// from their pages. The result is the same attention (docs/Semantics.md:
// a hidden key contributes nothing, whatever hides it), for a target
// without native support for them (today the GPU kernels): correct, but
// without block skipping by length or sequence.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNEXPANDINFERENCEOPERANDS
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

bool attnfuse::attn::hasInferenceOperands(AttentionOpInterface op) {
  return op.getKeyLengthsValue() || op.isPaged() || op.isPacked();
}

namespace {
/// A [d0, d1, d2, d3] tensor computed element by element by `body(b, indices)`
/// (a linalg.generic with no inputs: the body reads what it needs).
Value buildTensor(RewriterBase &rw, Location loc, ArrayRef<OpFoldResult> shape,
                  Type elementType,
                  function_ref<Value(OpBuilder &, ValueRange)> body) {
  Value init = tensor::EmptyOp::create(rw, loc, shape, elementType);
  MLIRContext *ctx = rw.getContext();
  auto map = AffineMap::getMultiDimIdentityMap(4, ctx);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rw, loc, init.getType(), ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{map}, iterators,
      [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value, 4> idx;
        for (int64_t d = 0; d < 4; ++d)
          idx.push_back(linalg::IndexOp::create(b, l, d));
        linalg::YieldOp::create(b, l, body(b, idx));
      });
  return generic.getResult(0);
}

/// K or V (`source`: [pages, Hkv, pageSize, D]) gathered into [B, Hkv, Nk, D]
/// at the logical key positions; a position on a page id out of range reads
/// page 0 (the keep mask hides it).
Value gatherPages(RewriterBase &rw, Location loc, AttentionOpInterface op,
                  const SizeValues &sizes, Value source) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> shape = {
      sizes.batch, rw.getIndexAttr(type.getDimSize(1)), sizes.keyLength,
      rw.getIndexAttr(type.getDimSize(3))};
  return buildTensor(rw, loc, shape, type.getElementType(),
                     [&](OpBuilder &b, ValueRange i) -> Value {
                       PagedPosition at =
                           buildPagedPosition(b, loc, op, i[0], i[2]);
                       return tensor::ExtractOp::create(
                           b, loc, source,
                           ValueRange{at.page, i[1], at.slot, i[3]});
                     });
}

/// The keep mask [B, H', Nq', Nk] of the expanded op: the op's keep mask
/// (H' and Nq' are its dims where they are not 1), and'ed with k <
/// key_lengths[b] (`structural` false) or with everything the op's
/// structural mask and inference operands show (`structural` true), and
/// with the page ids being in range.
Value buildExpandedKeep(RewriterBase &rw, Location loc,
                        AttentionOpInterface op, const SizeValues &sizes,
                        Value keep, bool structural) {
  AttentionSizes s = op.getSizes();
  OpFoldResult one = rw.getIndexAttr(1);
  SmallVector<OpFoldResult> shape = {sizes.batch, one,
                                     structural ? sizes.queryLength : one,
                                     sizes.keyLength};
  // The old keep mask's dims, aligned on the right with [B, Hq, Nq, Nk].
  int64_t keepRank = 0;
  if (keep) {
    auto type = cast<RankedTensorType>(keep.getType());
    keepRank = type.getRank();
    for (int64_t i = 0; i < keepRank; ++i) {
      int64_t dim = 4 - keepRank + i;
      if (type.getDimSize(i) == 1 || dim == 0 || dim == 3)
        continue;
      shape[dim] = dim == 1 ? rw.getIndexAttr(s.queryHeads)
                            : sizes.queryLength;
    }
  }
  return buildTensor(
      rw, loc, shape, rw.getI1Type(), [&](OpBuilder &b, ValueRange i) -> Value {
        Value shown;
        auto conj = [&](Value v) {
          shown = !v ? shown
                  : shown ? arith::AndIOp::create(b, loc, shown, v).getResult()
                          : v;
        };
        if (keep) {
          auto type = cast<RankedTensorType>(keep.getType());
          SmallVector<Value> at;
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          for (int64_t d = 0; d < keepRank; ++d)
            at.push_back(type.getDimSize(d) == 1 ? zero
                                                 : i[4 - keepRank + d]);
          conj(tensor::ExtractOp::create(b, loc, keep, at));
        }
        SizeValues atBatch = sizesAtBatch(b, loc, op, sizes, i[0]);
        if (structural)
          conj(buildStructuralMaskVisible(b, loc, op, i[2], i[3], &atBatch));
        else if (op.getKeyLengthsValue())
          conj(arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::slt, i[3],
              getValueOrCreateConstantIndexOp(b, loc, atBatch.validKeys)));
        if (op.isPaged())
          conj(buildPagedPosition(b, loc, op, i[0], i[3]).valid);
        return shown ? shown
                     : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
      });
}

template <typename OpTy>
void expand(RewriterBase &rw, OpTy op) {
  auto iface = cast<AttentionOpInterface>(op.getOperation());
  Location loc = op.getLoc();
  rw.setInsertionPoint(op);
  SizeValues sizes = materializeSizes(rw, loc, iface);
  // The structural mask moves into the keep mask where its positions depend
  // on the new operands: per sequence, or (bottom-right) per batch length.
  bool structural =
      iface.isPacked() ||
      (iface.getKeyLengthsValue() &&
       op.getAlignment() == MaskAlignment::bottom_right &&
       op.getMask() != MaskKind::none);
  Value keep = buildExpandedKeep(rw, loc, iface, sizes, op.getKeepMask(),
                                 structural);
  Value key, value;
  if (iface.isPaged()) {
    key = gatherPages(rw, loc, iface, sizes, op.getKey());
    value = gatherPages(rw, loc, iface, sizes, op.getValue());
  }
  rw.modifyOpInPlace(op, [&] {
    op.getKeepMaskMutable().assign(keep);
    op.getKeyLengthsMutable().clear();
    op.getQueryOffsetsMutable().clear();
    op.getKeyOffsetsMutable().clear();
    if constexpr (std::is_same_v<OpTy, AttentionOp>) {
      op.getBlockTableMutable().clear();
      if (key) {
        op.getKeyMutable().assign(key);
        op.getValueMutable().assign(value);
      }
    }
    if (structural) {
      op.setMask(MaskKind::none);
      op.setAlignment(MaskAlignment::top_left);
      op.removeWindowLeftAttr();
      op.removeWindowRightAttr();
    }
  });
}
} // namespace

void attnfuse::attn::expandInferenceOperands(RewriterBase &rewriter,
                                             AttentionOpInterface op) {
  if (!hasInferenceOperands(op))
    return;
  if (auto fwd = dyn_cast<AttentionOp>(op.getOperation()))
    return expand(rewriter, fwd);
  expand(rewriter, cast<AttentionBackwardOp>(op.getOperation()));
}

namespace {
struct AttnExpandInferenceOperandsPass
    : attnfuse::attn::impl::AttnExpandInferenceOperandsBase<
          AttnExpandInferenceOperandsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<AttentionOpInterface> ops;
    getOperation()->walk([&](AttentionOpInterface op) {
      bool kept = keepForwardCacheOperands &&
                  isa<AttentionOp>(op.getOperation()) && !op.isPacked();
      if (hasInferenceOperands(op) && !kept)
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (AttentionOpInterface op : ops)
      expandInferenceOperands(rewriter, op);
  }
};
} // namespace
