//===- PackGroupedQueries.cpp - GQA decode over the K/V heads -------------===//
//
// Decode attention with grouped query heads (one query row per head, G
// query heads per K/V head) computes, per K/V head, G rows against the same
// keys: the same function as attention over the K/V heads whose G rows are
// the group's query vectors, when nothing else tells the rows apart (no
// dropout; a bias or keep mask the same for every head and row; a score_mod
// that does not read the head or query index; a mask that shows the row
// every key, so that dropping it changes nothing). Q [B, Hq, 1, D] is then
// a view [B, Hkv, G, D] (query head kvh * G + g is row g of K/V head kvh,
// as the contiguous layout has it), and O, lse views back: no copy.
// convert-attn-to-gpu packs in its kernels instead (pack-gqa), keeping a
// mask per query position.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNPACKGROUPEDQUERIES
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse::attn;

/// Whether `side` (a bias or keep mask, broadcast to [B, Hq, Nq, Nk] from
/// its trailing dimensions) has a head or query dimension other than 1.
static bool variesOverHeadsOrQueries(Value side) {
  auto type = cast<ShapedType>(side.getType());
  for (int64_t i = 0, r = type.getRank(); i < r; ++i) {
    int64_t dim = 4 - r + i;
    if ((dim == 1 || dim == 2) && type.getDimSize(i) != 1)
      return true;
  }
  return false;
}

std::string attnfuse::attn::getGroupedQueryPackingBlocker(
    AttentionOp op, bool keepsStructuralMask) {
  AttentionSizes sizes = op.getSizes();
  if (!sizes.isStatic())
    return "runtime sizes";
  if (sizes.groupSize() == 1)
    return "no grouped query heads";
  if (!keepsStructuralMask && sizes.queryLength != 1)
    return "more than one query row per head";
  if (op.getSeed() || op.getDropoutP().convertToFloat() != 0.0f)
    return "dropout (its random numbers tell the query heads apart)";
  for (Value side : {op.getBias(), op.getKeepMask()})
    if (side && variesOverHeadsOrQueries(side))
      return "a bias or keep mask that varies over the query heads or rows";
  // Key lengths and pages are per batch, the same for a K/V head's rows:
  // they pack where the structural mask (whose offset may follow the
  // lengths) stays, and the kernel reads K/V through the table.
  if (op.isPacked() || (!keepsStructuralMask && hasInferenceOperands(op)))
    return "key lengths, a block table or packed sequences";
  if (!keepsStructuralMask) {
    MaskWindow w = op.getMaskWindow();
    int64_t nk = sizes.keyLength;
    bool allLeft = !isWindowSideBounded(w.left, 1, nk) ||
                   (w.hasStaticOffset() && w.offset - w.left <= 0);
    bool allRight = !isWindowSideBounded(w.right, 1, nk) ||
                    (w.hasStaticOffset() && w.offset + w.right >= nk - 1);
    if (!allLeft || !allRight)
      return "a structural mask that hides keys from the row";
  }
  if (op.hasScoreMod()) {
    Block &body = op.getScoreMod().front();
    // (score, batch, head, query, key): the head and query index differ
    // between the packed rows.
    if (!body.getArgument(2).use_empty() || !body.getArgument(3).use_empty())
      return "a score_mod that reads the head or query index";
  }
  return "";
}

AttentionOp attnfuse::attn::packGroupedQueries(RewriterBase &rewriter,
                                               AttentionOp op) {
  AttentionSizes sizes = op.getSizes();
  const int64_t B = sizes.batch, Hkv = sizes.kvHeads, G = sizes.groupSize();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // [B, Hq, 1, X...] <-> [B, Hkv, G, X...] through [B, Hq, X...]: both
  // reshapes group dims {1, 2} of the rank-4 (or 3, lse) side.
  auto reassociation = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
    for (int64_t d = 3; d < rank; ++d)
      groups.push_back({d});
    return groups;
  };
  auto reshape = [&](Value v, RankedTensorType to) {
    auto groups = reassociation(to.getRank());
    Value flat = tensor::CollapseShapeOp::create(rewriter, loc, v, groups);
    return tensor::ExpandShapeOp::create(rewriter, loc, to, flat, groups)
        .getResult();
  };
  auto packedType = [&](Type t) {
    auto type = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape = {B, Hkv, G};
    shape.append(type.getShape().begin() + 3, type.getShape().end());
    return RankedTensorType::get(shape, type.getElementType());
  };
  Value query = reshape(op.getQuery(), packedType(op.getQuery().getType()));
  auto packed = cast<AttentionOp>(rewriter.clone(*op));
  rewriter.modifyOpInPlace(packed, [&] {
    packed.getQueryMutable().assign(query);
    for (OpResult result : packed->getResults())
      result.setType(packedType(result.getType()));
    // The row saw every key: no mask (a structural mask of the packed
    // rows would tell them apart by position).
    packed.setMask(MaskKind::none);
    packed.setAlignment(MaskAlignment::top_left);
    packed.removeWindowLeftAttr();
    packed.removeWindowRightAttr();
  });
  SmallVector<Value> results;
  for (auto [from, to] : llvm::zip(op->getResults(), packed->getResults()))
    results.push_back(reshape(to, cast<RankedTensorType>(from.getType())));
  rewriter.replaceOp(op, results);
  return packed;
}

namespace {
struct AttnPackGroupedQueriesPass
    : attnfuse::attn::impl::AttnPackGroupedQueriesBase<
          AttnPackGroupedQueriesPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (getGroupedQueryPackingBlocker(op).empty())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops)
      packGroupedQueries(rewriter, op);
  }
};
} // namespace
