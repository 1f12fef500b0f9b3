//===- AttnToLinalg.cpp - reference lowering of attn.attention ------------===//
//
// The naive computation, one linalg.generic per step of the definition in
// AttnOps.td, every intermediate in f32 and materialized. Loop dimensions:
// d0 = b, d1 = h (query head), d2 = q, d3 = k, d4 = the contracted dimension.
// Key/value heads are indexed by h floordiv G.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOLINALG
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

namespace {
using utils::IteratorType;

/// A shape whose sizes are static (index attributes) or runtime values.
using Shape = SmallVector<OpFoldResult>;

/// Builds the linalg.generic ops and constants of one lowering.
struct GenericBuilder {
  OpBuilder &b;
  Location loc;
  Type f32;

  /// The tensor type of `shape` (its runtime sizes '?').
  RankedTensorType typeOf(ArrayRef<OpFoldResult> shape, Type elementType) {
    return RankedTensorType::get(decomposeMixedValues(shape).first,
                                 elementType);
  }

  Value constF32(float v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value filled(ArrayRef<OpFoldResult> shape, float v) {
    Value empty = tensor::EmptyOp::create(b, loc, shape, f32);
    return linalg::FillOp::create(b, loc, constF32(v), empty).getResult(0);
  }
  Value toF32(Value v) {
    if (v.getType() == f32)
      return v;
    if (v.getType().getIntOrFloatBitWidth() < 32)
      return arith::ExtFOp::create(b, loc, f32, v);
    return arith::TruncFOp::create(b, loc, f32, v);
  }
  /// Rounds an f32 tensor to `elementType` (identity for f32).
  Value castTo(Value x, Type elementType) {
    return buildRoundedTensor(b, loc, x, elementType);
  }
  /// linalg.index 0 .. n-1 of the enclosing generic.
  SmallVector<Value> indices(int64_t n) {
    SmallVector<Value> result;
    for (int64_t i = 0; i < n; ++i)
      result.push_back(linalg::IndexOp::create(b, loc, i));
    return result;
  }
  Value empty(ArrayRef<OpFoldResult> shape, Type type) {
    return tensor::EmptyOp::create(b, loc, shape, type);
  }
  /// A contraction `out[par...] += f32(x) * f32(y)` over the last loop.
  Value contract(ArrayRef<OpFoldResult> outShape, Value x, AffineMap xMap,
                 Value y, AffineMap yMap, AffineMap outMap) {
    SmallVector<IteratorType> iters(outShape.size(), IteratorType::parallel);
    iters.push_back(IteratorType::reduction);
    return generic(typeOf(outShape, f32), {x, y},
                   filled(outShape, 0.0f), {xMap, yMap, outMap}, iters,
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     GenericBuilder n{nb, l, f32};
                     Value prod = arith::MulFOp::create(nb, l, n.toF32(a[0]),
                                                        n.toF32(a[1]));
                     linalg::YieldOp::create(
                         nb, l,
                         ValueRange{arith::AddFOp::create(nb, l, a[2], prod)});
                   })
        .getResult(0);
  }
  /// The contraction `out[par...] += x * f32(y)` over the last loop of the
  /// terms whose key is not hidden: `t` (the masked scores, read with
  /// `xMap`) is -inf where it is (buildVisibleProduct).
  Value contractVisible(ArrayRef<OpFoldResult> outShape, Value t, Value x,
                        AffineMap xMap, Value y, AffineMap yMap,
                        AffineMap outMap) {
    SmallVector<IteratorType> iters(outShape.size(), IteratorType::parallel);
    iters.push_back(IteratorType::reduction);
    return generic(typeOf(outShape, f32), {t, x, y},
                   filled(outShape, 0.0f), {xMap, xMap, yMap, outMap}, iters,
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     GenericBuilder n{nb, l, f32};
                     Value term =
                         buildVisibleProduct(nb, l, a[0], n.toF32(a[1]), a[2]);
                     linalg::YieldOp::create(
                         nb, l,
                         ValueRange{arith::AddFOp::create(nb, l, a[3], term)});
                   })
        .getResult(0);
  }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  /// The map of a tensor broadcast to [B, Hq, Nq, Nk] (numpy rules).
  AffineMap broadcastMap(RankedTensorType type) {
    SmallVector<AffineExpr> exprs;
    int64_t rank = type.getRank();
    for (int64_t i = 0; i < rank; ++i) {
      unsigned target = 4 - rank + i;
      exprs.push_back(type.getDimSize(i) == 1
                          ? getAffineConstantExpr(0, b.getContext())
                          : getAffineDimExpr(target, b.getContext()));
    }
    return map(4, exprs);
  }
  linalg::GenericOp generic(Type resultType, ValueRange ins, Value init,
                            ArrayRef<AffineMap> maps,
                            ArrayRef<IteratorType> iters,
                            function_ref<void(OpBuilder &, Location,
                                              ValueRange)>
                                body) {
    return linalg::GenericOp::create(b, loc, TypeRange{resultType}, ins,
                                     ValueRange{init}, maps, iters, body);
  }
};
} // namespace

/// T = mask(score_mod(scale * S, b, h, q, k) + bias) over [B, Hq, Nq, Nk]
/// from the f32 dot products `scores`; with `withJacobian` also
/// J = dT/dS = score_mod'(scale * S) * scale.
static SmallVector<Value> buildMaskedScores(GenericBuilder &h,
                                            AttentionOpInterface op,
                                            const SizeValues &sizes,
                                            Value scores, Value bias,
                                            Value keep, bool withJacobian) {
  auto scoreType = cast<RankedTensorType>(scores.getType());
  AffineMap id = h.b.getMultiDimIdentityMap(4);
  SmallVector<Value> ins = {scores};
  SmallVector<AffineMap> maps = {id};
  for (Value operand : {bias, keep}) {
    if (!operand)
      continue;
    ins.push_back(operand);
    maps.push_back(h.broadcastMap(cast<RankedTensorType>(operand.getType())));
  }
  Shape shape = tensor::getMixedSizes(h.b, h.loc, scores);
  SmallVector<Value> inits = {h.empty(shape, h.f32)};
  if (withJacobian)
    inits.push_back(h.empty(shape, h.f32));
  maps.append(inits.size(), id);
  SmallVector<Type> types(inits.size(), scoreType);
  auto generic = linalg::GenericOp::create(
      h.b, h.loc, types, ins, inits, maps,
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        SmallVector<Value> bhqk = GenericBuilder{nb, l, h.f32}.indices(4);
        unsigned next = 1;
        Value biasElem = bias ? a[next++] : Value();
        Value keepElem = keep ? a[next++] : Value();
        Value jacobian;
        SizeValues atBatch = sizesAtBatch(nb, l, op, sizes, bhqk[0]);
        Value t = buildMaskedScore(nb, l, op, a[0], bhqk, biasElem, keepElem,
                                   /*applyStructuralMask=*/true,
                                   withJacobian ? &jacobian : nullptr,
                                   /*captures=*/nullptr, &atBatch);
        SmallVector<Value> yields = {t};
        if (withJacobian)
          yields.push_back(jacobian);
        linalg::YieldOp::create(nb, l, yields);
      });
  return SmallVector<Value>(generic.getResults());
}

/// Paged K or V ([pages, Hkv, page size, W]) gathered into [B, Hkv, Nk, W]:
/// element (b, h, k, d) from slot k % page size of page block_table[b, k /
/// page size], a page id out of range read as page 0 (its keys are hidden:
/// buildMaskedScore).
static Value gatherPages(GenericBuilder &h, AttentionOp op,
                         const SizeValues &n, Value paged) {
  auto type = cast<RankedTensorType>(paged.getType());
  Shape shape = {n.batch, h.b.getIndexAttr(type.getDimSize(1)), n.keyLength,
                 h.b.getIndexAttr(type.getDimSize(3))};
  AffineMap id = h.b.getMultiDimIdentityMap(4);
  return h
      .generic(h.typeOf(shape, type.getElementType()), {},
               h.empty(shape, type.getElementType()), {id},
               SmallVector<IteratorType>(4, IteratorType::parallel),
               [&](OpBuilder &nb, Location l, ValueRange) {
                 SmallVector<Value> bhkd =
                     GenericBuilder{nb, l, h.f32}.indices(4);
                 PagedPosition at =
                     buildPagedPosition(nb, l, op, bhkd[0], bhkd[2]);
                 Value x = tensor::ExtractOp::create(
                     nb, l, paged, ValueRange{at.page, bhkd[1], at.slot, bhkd[3]});
                 linalg::YieldOp::create(nb, l, ValueRange{x});
               })
      .getResult(0);
}

FailureOr<SmallVector<Value>>
attnfuse::lowerAttentionToLinalg(OpBuilder &b, AttentionOp op) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  GenericBuilder h{b, loc, b.getF32Type()};
  MLIRContext *ctx = b.getContext();

  AttentionSizes sizes = op.getSizes();
  SizeValues n = materializeSizes(b, loc, op);
  buildRuntimeSizeChecks(b, loc, op, n);
  OpFoldResult Hq = b.getIndexAttr(sizes.queryHeads),
               Dv = b.getIndexAttr(sizes.headDimV);
  int64_t G = sizes.groupSize();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineExpr kvHead = d1.floorDiv(G);
  Shape scoreShape = {n.batch, Hq, n.queryLength, n.keyLength};
  Shape rowShape = {n.batch, Hq, n.queryLength};
  auto scoreType = h.typeOf(scoreShape, h.f32);
  auto rowType = h.typeOf(rowShape, h.f32);
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  float negInf = -std::numeric_limits<float>::infinity();

  // Paged K and V are read through the block table.
  Value key = op.getKey(), value = op.getValue();
  if (op.isPaged()) {
    key = gatherPages(h, op, n, key);
    value = gatherPages(h, op, n, value);
  }

  // S[b,h,q,k] = sum_d f32(Q[b,h,q,d]) * f32(K[b,h/G,k,d]).
  AffineMap id5 = h.map(5, {d0, d1, d2, d3});
  Value scores = h.contract(scoreShape, op.getQuery(), h.map(5, {d0, d1, d2, d4}),
                            key, h.map(5, {d0, kvHead, d3, d4}), id5);

  // T = mask(score_mod(scale * S, b, h, q, k) + bias).
  Value masked = buildMaskedScores(h, op, n, scores, op.getBias(),
                                   op.getKeepMask(), /*withJacobian=*/false)[0];

  AffineMap scoreMap = h.map(4, {d0, d1, d2, d3}), rowMap = h.map(4, {d0, d1, d2});
  // m = max_k T; m' = (m == -inf) ? 0 : m.
  Value rowMax =
      h.generic(rowType, {masked}, h.filled(rowShape, negInf),
                {scoreMap, rowMap}, {par, par, par, red},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  linalg::YieldOp::create(
                      nb, l,
                      ValueRange{arith::MaximumFOp::create(nb, l, a[0], a[1])});
                })
          .getResult(0);
  AffineMap row3 = h.map(3, {d0, d1, d2});
  Value safeMax =
      h.generic(rowType, {rowMax}, tensor::EmptyOp::create(b, loc, rowShape, h.f32),
                {row3, row3}, {par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, h.f32};
                  Value isEmpty = arith::CmpFOp::create(
                      nb, l, arith::CmpFPredicate::OEQ, a[0], n.constF32(negInf));
                  linalg::YieldOp::create(
                      nb, l,
                      ValueRange{arith::SelectOp::create(nb, l, isEmpty,
                                                         n.constF32(0.0f), a[0])});
                })
          .getResult(0);
  // E = exp(T - m').
  Value exps =
      h.generic(scoreType, {masked, safeMax},
                tensor::EmptyOp::create(b, loc, scoreShape, h.f32),
                {scoreMap, rowMap, scoreMap}, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value diff = arith::SubFOp::create(nb, l, a[0], a[1]);
                  linalg::YieldOp::create(
                      nb, l, ValueRange{math::ExpOp::create(nb, l, diff)});
                })
          .getResult(0);
  // l = sum_k E.
  Value rowSum =
      h.generic(rowType, {exps}, h.filled(rowShape, 0.0f), {scoreMap, rowMap},
                {par, par, par, red},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  linalg::YieldOp::create(
                      nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
                })
          .getResult(0);
  // P = (l != 0) ? E / l : 0 (0 only for a row that sees no key; NaN
  // propagates), then dropout: P = P * (keep ? 1/(1-p) : 0).
  bool hasDropout = static_cast<bool>(op.getSeed());
  Value probs =
      h.generic(scoreType, {exps, rowSum},
                tensor::EmptyOp::create(b, loc, scoreShape, h.f32),
                {scoreMap, rowMap, scoreMap}, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, h.f32};
                  Value pr = buildNormalize(nb, l, a[0], a[1]);
                  if (hasDropout)
                    pr = arith::MulFOp::create(
                        nb, l, pr, buildDropoutFactor(nb, l, op, n.indices(4)));
                  linalg::YieldOp::create(nb, l, ValueRange{pr});
                })
          .getResult(0);
  // O[b,h,q,e] = sum_k P[b,h,q,k] * f32(V[b,h/G,k,e]) over the keys that
  // are not hidden (T > -inf): a hidden key adds nothing, whatever V holds.
  Shape outShape = {n.batch, Hq, n.queryLength, Dv};
  Value out = h.contractVisible(outShape, masked, probs,
                                h.map(5, {d0, d1, d2, d4}), value,
                                h.map(5, {d0, kvHead, d4, d3}), id5);
  out = h.castTo(out, op.getQueryType().getElementType());
  SmallVector<Value> results = {out};
  if (op.getLse()) {
    // lse = m' + log(l).
    Value lse =
        h.generic(rowType, {safeMax, rowSum},
                  tensor::EmptyOp::create(b, loc, rowShape, h.f32),
                  {row3, row3, row3}, {par, par, par},
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    Value logSum = math::LogOp::create(nb, l, a[1]);
                    linalg::YieldOp::create(
                        nb, l,
                        ValueRange{arith::AddFOp::create(nb, l, a[0], logSum)});
                  })
            .getResult(0);
    results.push_back(lse);
  }
  return results;
}

/// Sums a per-query-head gradient [B, Hq, N, D] (f32) over the query heads of
/// each group, giving [B, Hkv, N, D] in `elementType`.
static Value reduceGroups(GenericBuilder &h, Value perHead, int64_t groupSize,
                          Type elementType) {
  Shape shape = tensor::getMixedSizes(h.b, h.loc, perHead);
  shape[1] = h.b.getIndexAttr(*getConstantIntValue(shape[1]) / groupSize);
  // [B, Hq, N, D] -> [B, Hkv, G, N, D] (query head h = kv head * G + g).
  Shape grouped = {shape[0], shape[1], h.b.getIndexAttr(groupSize), shape[2],
                   shape[3]};
  Value split = tensor::ExpandShapeOp::create(
      h.b, h.loc, h.typeOf(grouped, h.f32), perHead,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}}, grouped);
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(h.b.getContext(), d0, d1, d2, d3, d4);
  IteratorType par = IteratorType::parallel;
  Value sum =
      h.generic(h.typeOf(shape, h.f32), {split},
                h.filled(shape, 0.0f),
                {h.map(5, {d0, d1, d4, d2, d3}), h.map(5, {d0, d1, d2, d3})},
                {par, par, par, par, IteratorType::reduction},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  linalg::YieldOp::create(
                      nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
                })
          .getResult(0);
  return h.castTo(sum, elementType);
}

FailureOr<SmallVector<Value>>
attnfuse::lowerAttentionBackwardToLinalg(OpBuilder &b, AttentionBackwardOp op) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  GenericBuilder h{b, loc, b.getF32Type()};
  MLIRContext *ctx = b.getContext();

  AttentionSizes sizes = op.getSizes();
  SizeValues n = materializeSizes(b, loc, op);
  buildRuntimeSizeChecks(b, loc, op, n);
  OpFoldResult Hq = b.getIndexAttr(sizes.queryHeads),
               D = b.getIndexAttr(sizes.headDimQK),
               Dv = b.getIndexAttr(sizes.headDimV);
  int64_t G = sizes.groupSize();
  Type elementType = op.getQueryType().getElementType();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineExpr kvHead = d1.floorDiv(G);
  Shape scoreShape = {n.batch, Hq, n.queryLength, n.keyLength},
        rowShape = {n.batch, Hq, n.queryLength};
  auto scoreType = h.typeOf(scoreShape, h.f32);
  IteratorType par = IteratorType::parallel;
  AffineMap id4 = h.map(4, {d0, d1, d2, d3}), row4 = h.map(4, {d0, d1, d2});
  AffineMap id5 = h.map(5, {d0, d1, d2, d3});

  // S = Q K^T; T = mask(score_mod(scale S) + bias); J = dT/dS.
  Value scores = h.contract(scoreShape, op.getQuery(), h.map(5, {d0, d1, d2, d4}),
                            op.getKey(), h.map(5, {d0, kvHead, d3, d4}), id5);
  SmallVector<Value> scoresAndJacobian = buildMaskedScores(
      h, op, n, scores, op.getBias(), op.getKeepMask(), /*withJacobian=*/true);
  Value masked = scoresAndJacobian[0], jacobian = scoresAndJacobian[1];

  // P = (lse == -inf) ? 0 : exp(T - lse).
  Value probs =
      h.generic(scoreType, {masked, op.getLse()}, h.empty(scoreShape, h.f32),
                {id4, row4, id4}, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, h.f32};
                  Value empty = arith::CmpFOp::create(
                      nb, l, arith::CmpFPredicate::OEQ, a[1],
                      n.constF32(-std::numeric_limits<float>::infinity()));
                  Value p = math::ExpOp::create(
                      nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                  linalg::YieldOp::create(
                      nb, l, ValueRange{arith::SelectOp::create(
                                 nb, l, empty, n.constF32(0.0f), p)});
                })
          .getResult(0);
  // Pd = P * Z with the dropout factor Z = keep ? 1/(1-p) : 0.
  bool hasDropout = static_cast<bool>(op.getSeed());
  Value dropped = probs;
  if (hasDropout)
    dropped =
        h.generic(scoreType, {probs}, h.empty(scoreShape, h.f32), {id4, id4},
                  {par, par, par, par},
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    SmallVector<Value> bhqk = GenericBuilder{nb, l, h.f32}.indices(4);
                    linalg::YieldOp::create(
                        nb, l,
                        ValueRange{arith::MulFOp::create(
                            nb, l, a[0], buildDropoutFactor(nb, l, op, bhqk))});
                  })
            .getResult(0);

  // dV_h[b,h,k,e] = sum_q Pd[b,h,q,k] dO[b,h,q,e]  (loops b, h, k, e, q).
  // Every sum over keys or queries below skips the hidden (q, k)
  // (buildVisibleProduct), whatever their P, dS, K, V or dO.
  Value dvPerHead = h.contractVisible(
      {n.batch, Hq, n.keyLength, Dv}, masked, dropped, h.map(5, {d0, d1, d4, d2}),
      op.getGradOutput(), h.map(5, {d0, d1, d4, d3}), id5);
  // dPd[b,h,q,k] = sum_e dO[b,h,q,e] V[b,h/G,k,e].
  Value dpd = h.contract(scoreShape, op.getGradOutput(), h.map(5, {d0, d1, d2, d4}),
                         op.getValue(), h.map(5, {d0, kvHead, d3, d4}), id5);
  // Di[b,h,q] = sum_e dO[b,h,q,e] O[b,h,q,e].
  Value di = h.contract(rowShape, op.getGradOutput(), id4, op.getOutput(), id4,
                        row4);
  // dT = P * (dPd * Z - Di) (0 where hidden), dS = dT * J.
  Value dt =
      h.generic(scoreType, {masked, probs, dpd, di}, h.empty(scoreShape, h.f32),
                {id4, id4, id4, row4, id4}, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value dp = a[2];
                  if (hasDropout) {
                    SmallVector<Value> bhqk = GenericBuilder{nb, l, h.f32}.indices(4);
                    dp = arith::MulFOp::create(
                        nb, l, dp, buildDropoutFactor(nb, l, op, bhqk));
                  }
                  linalg::YieldOp::create(
                      nb, l,
                      ValueRange{buildScoreGradient(nb, l, a[0], a[1], dp, a[3])});
                })
          .getResult(0);
  Value ds = h.generic(scoreType, {dt, jacobian}, h.empty(scoreShape, h.f32),
                       {id4, id4, id4}, {par, par, par, par},
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         linalg::YieldOp::create(
                             nb, l,
                             ValueRange{arith::MulFOp::create(nb, l, a[0], a[1])});
                       })
                 .getResult(0);
  // dQ[b,h,q,d] = sum_k dS[b,h,q,k] K[b,h/G,k,d].
  Value dq = h.contractVisible({n.batch, Hq, n.queryLength, D}, masked, ds,
                               h.map(5, {d0, d1, d2, d4}), op.getKey(),
                               h.map(5, {d0, kvHead, d4, d3}), id5);
  // dK_h[b,h,k,d] = sum_q dS[b,h,q,k] Q[b,h,q,d]  (loops b, h, k, d, q).
  Value dkPerHead = h.contractVisible(
      {n.batch, Hq, n.keyLength, D}, masked, ds, h.map(5, {d0, d1, d4, d2}),
      op.getQuery(),
      h.map(5, {d0, d1, d4, d3}), id5);
  SmallVector<Value> results = {h.castTo(dq, elementType),
                                reduceGroups(h, dkPerHead, G, elementType),
                                reduceGroups(h, dvPerHead, G, elementType)};
  if (op.getGradBias())
    results.push_back(buildBiasGradient(
        b, loc, dt, cast<RankedTensorType>(op.getBias().getType())));
  return results;
}

namespace {
/// Replaces an attention op (forward or backward) by its reference lowering.
template <typename OpTy>
struct AttentionToLinalgPattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> results;
    if constexpr (std::is_same_v<OpTy, AttentionOp>)
      results = lowerAttentionToLinalg(rewriter, op);
    else
      results = lowerAttentionBackwardToLinalg(rewriter, op);
    if (failed(results))
      return failure();
    rewriter.replaceOp(op, *results);
    return success();
  }
};

struct ConvertAttnToLinalgPass
    : attnfuse::impl::ConvertAttnToLinalgBase<ConvertAttnToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateAttnToLinalgConversionPatterns(patterns);
    ConversionTarget target(getContext());
    target.addIllegalOp<AttentionOp, AttentionBackwardOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnfuse::populateAttnToLinalgConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToLinalgPattern<AttentionOp>,
               AttentionToLinalgPattern<AttentionBackwardOp>>(
      patterns.getContext());
}
