//===- Rewrite.cpp - the IR written for a matched chain ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace attnfuse::attn::raise {

namespace {
class Rewriter {
public:
  Rewriter(Matcher &m, Chain &c, RewriterBase &b)
      : m(m), c(c), b(b), loc(c.c2.getLoc()), ctx(b.getContext()) {}

  Value run();

private:
  /// Canonical dim -> position in [B, H, Nq, X] (X = the last operand dim).
  std::optional<unsigned> role(unsigned d, unsigned last) {
    if (c.bDim && d == *c.bDim)
      return 0;
    if (c.hDim && d == *c.hDim)
      return 1;
    if (c.qDim && d == *c.qDim)
      return 2;
    if (d == last)
      return 3;
    return std::nullopt;
  }
  /// The size of canonical dim `d` (1 for an absent role): an index
  /// attribute, or for a runtime size its value, read off c2's loop ranges
  /// (runtime dims are c2's own; the dims the matcher adds are static).
  OpFoldResult sizeOf(std::optional<unsigned> d);
  int64_t staticSizeOf(std::optional<unsigned> d) {
    return d ? m.size(*d) : 1;
  }

  /// A [4]-d tensor `T4[i0..i3] = convert(src[map(i)])`, where `map` is the
  /// canonical access with dims renamed to their role positions.
  Value layout(Value src, AffineMap access, ArrayRef<OpFoldResult> shape,
               Type elem, ArrayRef<std::optional<AffineExpr>> dimToLoop);
  Value buildRegionTerm(Term *t, OpBuilder &rb, ArrayRef<Value> coords,
                        Value score, IRMapping &memo);
  /// The coordinate `e` (in canonical dims) from the region's (b, h, q, k).
  Value expandCoordinate(AffineExpr e, OpBuilder &rb, ArrayRef<Value> coords);
  /// `v` (an op result over the canonical dims `coords`) in the graph's
  /// layout `resType`, whose dim p holds the canonical dim resDims[p]
  /// (nullopt: a unit dim), converted to its element type.
  Value toGraph(Value v, ArrayRef<std::optional<unsigned>> coords,
                RankedTensorType resType,
                ArrayRef<std::optional<unsigned>> resDims);

  Matcher &m;
  Chain &c;
  RewriterBase &b;
  Location loc;
  MLIRContext *ctx;
  Operation *attnOp = nullptr;
  SmallVector<OpFoldResult> loopSizes; // c2's, built on first use
};

} // namespace

static Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(b, loc, to, v);
  // Same width (f16 <-> bf16): through f32.
  Value w = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, to, w);
}

OpFoldResult Rewriter::sizeOf(std::optional<unsigned> d) {
  if (!d)
    return b.getIndexAttr(1);
  if (!ShapedType::isDynamic(m.size(*d)))
    return b.getIndexAttr(m.size(*d));
  if (loopSizes.empty()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(c.c2);
    for (Range r : cast<linalg::LinalgOp>(c.c2.getOperation())
                       .createLoopRanges(b, loc))
      loopSizes.push_back(r.size);
  }
  assert(*d < loopSizes.size() && "a runtime dim is one of c2's loops");
  return loopSizes[*d];
}

Value Rewriter::layout(Value src, AffineMap access,
                       ArrayRef<OpFoldResult> shapeSizes, Type elem,
                       ArrayRef<std::optional<AffineExpr>> dimToLoop) {
  SmallVector<int64_t> shape = decomposeMixedValues(shapeSizes).first;
  SmallVector<AffineExpr> repl;
  for (unsigned d = 0; d < kMaxDims; ++d)
    repl.push_back(dimToLoop[d] ? *dimToLoop[d] : getAffineConstantExpr(0, ctx));
  SmallVector<AffineExpr> exprs;
  for (AffineExpr e : access.getResults())
    exprs.push_back(simplifyAffineExpr(e.replaceDims(repl), shape.size(), 0));
  AffineMap inMap = AffineMap::get(shape.size(), 0, exprs, ctx);
  auto srcType = cast<RankedTensorType>(src.getType());
  if (inMap.isIdentity() && srcType.getShape() == ArrayRef<int64_t>(shape) &&
      srcType.getElementType() == elem)
    return src;
  Value init = tensor::EmptyOp::create(b, loc, shapeSizes, elem);
  SmallVector<utils::IteratorType> iters(shape.size(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{src},
             ValueRange{init},
             ArrayRef<AffineMap>{inMap, b.getMultiDimIdentityMap(shape.size())},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value x = a[0];
               if (x.getType() != elem)
                 x = convertScalar(nb, l, x, elem);
               linalg::YieldOp::create(nb, l, ValueRange{x});
             })
      .getResult(0);
}

Value Rewriter::expandCoordinate(AffineExpr e, OpBuilder &rb,
                                 ArrayRef<Value> coords) {
  SmallVector<Value> dims(kMaxDims);
  for (unsigned d = 0; d < kMaxDims; ++d)
    if (std::optional<unsigned> r = role(d, c.kDim))
      dims[d] = coords[*r];
  for (unsigned d = 0; d < kMaxDims; ++d)
    if (!dims[d])
      dims[d] = coords[0]; // unused (checkScoreCoordinates proved it)
  return affine::expandAffineExpr(rb, loc, e, dims, {});
}

Value Rewriter::buildRegionTerm(Term *t, OpBuilder &rb, ArrayRef<Value> coords,
                                Value score, IRMapping &memo) {
  switch (t->kind) {
  case Term::Leaf: {
    if (t->tensor == m.getScores())
      return convertScalar(rb, loc, score, t->type);
    if (TypedAttr splat = getSplatLeaf(t))
      return arith::ConstantOp::create(rb, loc, splat);
    if (isScalarLeaf(t)) {
      // A tensor read at a constant position: extract it before the op.
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(attnOp);
      SmallVector<Value> idx;
      for (AffineExpr e : t->access.getResults())
        idx.push_back(arith::ConstantIndexOp::create(
            b, loc, cast<AffineConstantExpr>(e).getValue()));
      return tensor::ExtractOp::create(b, loc, t->tensor, idx);
    }
    // A tensor read at the score's coordinates, in the region.
    SmallVector<Value> idx;
    for (AffineExpr e : t->access.getResults())
      idx.push_back(expandCoordinate(e, rb, coords));
    return tensor::ExtractOp::create(rb, loc, t->tensor, idx);
  }
  case Term::Scalar:
    return t->scalar;
  case Term::Index:
    return expandCoordinate(t->index, rb, coords);
  case Term::Op: {
    IRMapping map;
    for (auto [operand, arg] : llvm::zip(t->op->getOperands(), t->args))
      map.map(operand, buildRegionTerm(arg, rb, coords, score, memo));
    return rb.clone(*t->op, map)->getResult(0);
  }
  case Term::Reduce:
  case Term::Softmax:
    break;
  }
  llvm_unreachable("checked by checkRegion");
}

/// The runtime size `dim` of `t` (or, with `isShape`, element `dim` of the
/// shape tensor `t`) as an index, read without keeping the chain alive:
/// through getRuntimeSize where the IR states it.
static Value buildRuntimeSize(OpBuilder &b, Location loc, Value t, int64_t dim,
                              bool isShape) {
  Type index = b.getIndexType();
  Value v;
  if (isShape) {
    v = tensor::ExtractOp::create(
        b, loc, t, ValueRange{arith::ConstantIndexOp::create(b, loc, dim)});
  } else {
    v = getRuntimeSize(t, dim);
    if (!v)
      v = tensor::DimOp::create(b, loc, t, dim);
  }
  if (v.getType() != index)
    v = arith::IndexCastOp::create(b, loc, index, v);
  return v;
}

Value Rewriter::run() {
  b.setInsertionPoint(c.c2);
  // What the match took as equal at run time (Matcher::sizeChecks): a
  // graph run with other sizes stops here instead of computing something
  // else (docs/Raising.md, "Runtime sizes").
  SmallVector<std::tuple<Value, int64_t, Value, int64_t, bool>> emitted;
  for (const Matcher::SizeCheck &check : m.sizeChecks) {
    auto key = std::make_tuple(check.a, check.aDim, check.b, check.bDim,
                               check.bIsShape);
    if (llvm::is_contained(emitted, key))
      continue;
    emitted.push_back(key);
    Value a = buildRuntimeSize(b, loc, check.a, check.aDim, false);
    Value other = buildRuntimeSize(b, loc, check.b, check.bDim, check.bIsShape);
    Value same =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, other);
    cf::AssertOp::create(
        b, loc, same,
        check.bIsShape
            ? "attn-raise-attention: a tensor.reshape of the fused chain "
              "changes a runtime dimension"
            : "attn-raise-attention: a runtime broadcast of a size-1 "
              "dimension in the fused chain");
  }
  Type et = c.elementType;
  OpFoldResult B = sizeOf(c.bDim), Nq = sizeOf(c.qDim), Nk = sizeOf(c.kDim);
  int64_t H = staticSizeOf(c.hDim), D = m.size(c.dDim), Dv = m.size(c.eDim);
  int64_t G = c.groupSize, Hkv = H / G;
  OpFoldResult HA = b.getIndexAttr(H), HkvA = b.getIndexAttr(Hkv),
               DA = b.getIndexAttr(D), DvA = b.getIndexAttr(Dv);
  auto dimsFor = [&](unsigned last, bool kv) {
    SmallVector<std::optional<AffineExpr>> map(kMaxDims);
    if (c.bDim)
      map[*c.bDim] = getAffineDimExpr(0, ctx);
    if (c.hDim)
      map[*c.hDim] = kv ? getAffineDimExpr(1, ctx) * G : getAffineDimExpr(1, ctx);
    if (c.qDim)
      map[*c.qDim] = getAffineDimExpr(2, ctx);
    map[kv ? c.kDim : last] = getAffineDimExpr(kv ? 2 : 3, ctx);
    map[last] = getAffineDimExpr(3, ctx);
    return map;
  };
  // Q4[b,h,q,d], K4[b,hkv,k,d], V4[b,hkv,k,e].
  Value q4 = layout(c.q, c.qMap, {B, HA, Nq, DA}, et, dimsFor(c.dDim, false));
  Value k4 = layout(c.k, c.kMap, {B, HkvA, Nk, DA}, et, dimsFor(c.dDim, true));
  Value v4 = layout(c.v, c.vMap, {B, HkvA, Nk, DvA}, et, dimsFor(c.eDim, true));
  // Bias / keep: [B|1, H|1, Nq|1, Nk|1], read through their broadcast maps.
  auto sideOperand = [&](Term *leaf) -> Value {
    // A tensor that already broadcasts to [B, H, Nq, Nk] by numpy's rules
    // (its dims the trailing roles, in order, or unit dims read at 0) is the
    // operand as it is: no copy of an N x N input.
    auto type = cast<RankedTensorType>(leaf->tensor.getType());
    int64_t rank = type.getRank();
    bool asIs = rank <= 4 && leaf->access.getNumResults() == rank;
    for (int64_t i = 0; asIs && i < rank; ++i) {
      AffineExpr e = leaf->access.getResult(i);
      // (A static dim against a runtime size would not verify: copied.)
      if (auto d = dyn_cast<AffineDimExpr>(e))
        asIs = role(d.getPosition(), c.kDim) == 4 - rank + i &&
               type.isDynamicDim(i) ==
                   ShapedType::isDynamic(m.size(d.getPosition()));
      else if (auto k = dyn_cast<AffineConstantExpr>(e))
        asIs = k.getValue() == 0 && type.getDimSize(i) == 1;
      else
        asIs = false;
    }
    if (asIs)
      return leaf->tensor;
    SmallVector<OpFoldResult> shape(4, b.getIndexAttr(1));
    SmallVector<std::optional<AffineExpr>> map(kMaxDims);
    for (AffineExpr e : leaf->access.getResults())
      for (unsigned d = 0; d < kMaxDims; ++d)
        if (usesDim(e, d)) {
          std::optional<unsigned> r = role(d, c.kDim);
          shape[*r] = sizeOf(d);
          map[d] = getAffineDimExpr(*r, ctx);
        }
    return layout(leaf->tensor, leaf->access, shape,
                  cast<ShapedType>(leaf->tensor.getType()).getElementType(),
                  map);
  };
  Value bias = c.bias ? sideOperand(c.bias) : Value();
  Value keep = c.keep ? sideOperand(c.keep) : Value();
  // Key lengths: the per-batch term L[b] of the padding mask, as i64 [B].
  Value keyLengths;
  if (c.keyLengths) {
    Type i64 = b.getI64Type();
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{B}, i64);
    keyLengths =
        linalg::GenericOp::create(
            b, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
            ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
            SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange) {
              Value bi = linalg::IndexOp::create(nb, l, 0);
              Value zero = arith::ConstantIndexOp::create(nb, l, 0);
              IRMapping memo;
              Value y = buildRegionTerm(c.keyLengths, nb,
                                        {bi, zero, zero, zero}, Value(), memo);
              if (y.getType().isIndex())
                y = arith::IndexCastOp::create(nb, l, i64, y);
              else if (y.getType().getIntOrFloatBitWidth() < 64)
                y = arith::ExtSIOp::create(nb, l, i64, y);
              else if (y.getType().getIntOrFloatBitWidth() > 64)
                y = arith::TruncIOp::create(nb, l, i64, y);
              linalg::YieldOp::create(nb, l, ValueRange{y});
            })
            .getResult(0);
  }

  auto outType =
      RankedTensorType::get(decomposeMixedValues({B, HA, Nq, DvA}).first, et);
  SmallVector<Type> resultTypes{outType};
  if (c.lse)
    resultTypes.push_back(RankedTensorType::get(
        decomposeMixedValues({B, HA, Nq}).first, b.getF32Type()));
  auto op = AttentionOp::create(
      b, loc, resultTypes, q4, k4, v4, bias, keep, /*seed=*/Value(),
      keyLengths, /*block_table=*/Value(),
      /*query_offsets=*/Value(), /*key_offsets=*/Value(),
      b.getF32FloatAttr(c.scale ? c.scale->convertToFloat() : 1.0f),
      MaskKindAttr::get(ctx, c.mask), MaskAlignmentAttr::get(ctx, c.alignment),
      c.mask == MaskKind::sliding_window ? b.getI64IntegerAttr(c.windowLeft)
                                         : IntegerAttr(),
      c.mask == MaskKind::sliding_window ? b.getI64IntegerAttr(c.windowRight)
                                         : IntegerAttr(),
      b.getF32FloatAttr(0.0f));
  attnOp = op;
  // score_mod: the region term with the scores as the block argument.
  bool trivialRegion = c.region->kind == Term::Leaf &&
                       c.region->tensor == m.getScores() &&
                       c.region->type.isF32();
  if (!trivialRegion) {
    Region &region = op.getScoreMod();
    Block *block = new Block();
    region.push_back(block);
    Type f32 = b.getF32Type(), index = b.getIndexType();
    for (Type t : {f32, index, index, index, index})
      block->addArgument(t, loc);
    OpBuilder rb = OpBuilder::atBlockEnd(block);
    IRMapping memo;
    SmallVector<Value> coords(block->getArguments().drop_front());
    Value y = buildRegionTerm(c.region, rb, coords, block->getArgument(0), memo);
    YieldOp::create(rb, loc, ValueRange{convertScalar(rb, loc, y, f32)});
  }
  // Back to the graph's layouts and types: O, and the LSE where the graph
  // returns it.
  auto oMap = c.c2.getIndexingMapMatchingResult(c.c2->getResult(0));
  SmallVector<std::optional<unsigned>> oDims;
  for (AffineExpr r : oMap.getResults())
    oDims.push_back(cast<AffineDimExpr>(r).getPosition());
  Value out = toGraph(
      op.getOutput(), {c.bDim, c.hDim, c.qDim, std::optional<unsigned>(c.eDim)},
      cast<RankedTensorType>(c.c2->getResult(0).getType()), oDims);
  if (c.lse) {
    Value lse =
        toGraph(op.getLse(), {c.bDim, c.hDim, c.qDim},
                cast<RankedTensorType>(c.lse->value.getType()), c.lse->dims);
    b.replaceAllUsesWith(c.lse->value, lse);
  }
  return out;
}

Value Rewriter::toGraph(Value v, ArrayRef<std::optional<unsigned>> coords,
                        RankedTensorType resType,
                        ArrayRef<std::optional<unsigned>> resDims) {
  // For each coordinate of `v`, the result dim that holds it.
  SmallVector<AffineExpr> exprs;
  for (std::optional<unsigned> d : coords) {
    AffineExpr e = getAffineConstantExpr(0, ctx);
    for (auto [p, pos] : llvm::enumerate(resDims)) {
      if (!pos)
        continue;
      AffineExpr at = getAffineDimExpr(p, ctx);
      if (d && *pos == *d)
        e = at;
      // The graph's row that folds two of the op's coordinates.
      else if (d && c.split && *pos == c.split->row && *d == c.split->outer)
        e = at.floorDiv(c.split->factor);
      else if (d && c.split && *pos == c.split->row && *d == c.split->inner)
        e = at % c.split->factor;
    }
    exprs.push_back(e);
  }
  AffineMap read = AffineMap::get(resType.getRank(), 0, exprs, ctx);
  if (read.isIdentity() && resType == v.getType())
    return v;
  // A runtime dim of the result is one of the canonical dims (a split row
  // is static: the matcher splits only static rows).
  SmallVector<OpFoldResult> sizes;
  for (auto [p, pos] : llvm::enumerate(resDims))
    sizes.push_back(resType.isDynamicDim(p)
                        ? sizeOf(pos)
                        : OpFoldResult(b.getIndexAttr(resType.getDimSize(p))));
  Value init =
      tensor::EmptyOp::create(b, loc, sizes, resType.getElementType());
  SmallVector<utils::IteratorType> iters(resType.getRank(),
                                         utils::IteratorType::parallel);
  Type resElem = resType.getElementType();
  return linalg::GenericOp::create(
             b, loc, TypeRange{resType}, ValueRange{v}, ValueRange{init},
             ArrayRef<AffineMap>{read,
                                 b.getMultiDimIdentityMap(resType.getRank())},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{convertScalar(nb, l, a[0], resElem)});
             })
      .getResult(0);
}


Value buildAttention(RewriterBase &rewriter, Matcher &m, Chain &c) {
  return Rewriter(m, c, rewriter).run();
}

} // namespace attnfuse::attn::raise
