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
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

/// Builds the linalg.generic ops and constants of one lowering.
struct GenericBuilder {
  OpBuilder &b;
  Location loc;
  AttentionOp op;
  Type f32;

  Value constF32(float v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value filled(ArrayRef<int64_t> shape, float v) {
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

FailureOr<SmallVector<Value>>
attnfuse::lowerAttentionToLinalg(OpBuilder &b, AttentionOp op) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  GenericBuilder h{b, loc, op, b.getF32Type()};
  MLIRContext *ctx = b.getContext();

  int64_t B = op.getBatchSize(), Hq = op.getNumQueryHeads(),
          Nq = op.getQueryLength(), Nk = op.getKeyLength(),
          Dv = op.getHeadDimV(), G = op.getGroupSize();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineExpr kvHead = d1.floorDiv(G);
  SmallVector<int64_t> scoreShape = {B, Hq, Nq, Nk};
  SmallVector<int64_t> rowShape = {B, Hq, Nq};
  auto scoreType = RankedTensorType::get(scoreShape, h.f32);
  auto rowType = RankedTensorType::get(rowShape, h.f32);
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  float negInf = -std::numeric_limits<float>::infinity();

  // S[b,h,q,k] = sum_d f32(Q[b,h,q,d]) * f32(K[b,h/G,k,d]).
  Value scores =
      h.generic(scoreType, {op.getQuery(), op.getKey()},
                h.filled(scoreShape, 0.0f),
                {h.map(5, {d0, d1, d2, d4}), h.map(5, {d0, kvHead, d3, d4}),
                 h.map(5, {d0, d1, d2, d3})},
                {par, par, par, par, red},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, op, h.f32};
                  Value prod = arith::MulFOp::create(nb, l, n.toF32(a[0]),
                                                     n.toF32(a[1]));
                  linalg::YieldOp::create(
                      nb, l, ValueRange{arith::AddFOp::create(nb, l, a[2], prod)});
                })
          .getResult(0);

  // T = mask(score_mod(scale * S, b, h, q, k) + bias).
  SmallVector<Value> ins = {scores};
  SmallVector<AffineMap> maps = {h.map(4, {d0, d1, d2, d3})};
  if (Value bias = op.getBias()) {
    ins.push_back(bias);
    maps.push_back(h.broadcastMap(cast<RankedTensorType>(bias.getType())));
  }
  if (Value keep = op.getKeepMask()) {
    ins.push_back(keep);
    maps.push_back(h.broadcastMap(cast<RankedTensorType>(keep.getType())));
  }
  maps.push_back(h.map(4, {d0, d1, d2, d3}));
  bool hasBias = static_cast<bool>(op.getBias());
  bool hasKeep = static_cast<bool>(op.getKeepMask());
  Value masked =
      h.generic(scoreType, ins, tensor::EmptyOp::create(b, loc, scoreShape, h.f32),
                maps, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  SmallVector<Value> bhqk;
                  for (int64_t i = 0; i < 4; ++i)
                    bhqk.push_back(linalg::IndexOp::create(nb, l, i));
                  unsigned next = 1;
                  Value biasElem = hasBias ? a[next++] : Value();
                  Value keepElem = hasKeep ? a[next++] : Value();
                  Value t = buildMaskedScore(nb, l, op, a[0], bhqk, biasElem,
                                             keepElem,
                                             /*applyStructuralMask=*/true);
                  linalg::YieldOp::create(nb, l, ValueRange{t});
                })
          .getResult(0);

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
                  GenericBuilder n{nb, l, op, h.f32};
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
  // P = (l > 0) ? E / l : 0, then dropout: P = keep ? P * (1/(1-p)) : 0.
  double p = op.getDropoutP().convertToDouble();
  Value seed = op.getSeed();
  float keepScale = static_cast<float>(1.0 / (1.0 - p));
  Value probs =
      h.generic(scoreType, {exps, rowSum},
                tensor::EmptyOp::create(b, loc, scoreShape, h.f32),
                {scoreMap, rowMap, scoreMap}, {par, par, par, par},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, op, h.f32};
                  Value zero = n.constF32(0.0f);
                  Value positive = arith::CmpFOp::create(
                      nb, l, arith::CmpFPredicate::OGT, a[1], zero);
                  Value pr = arith::SelectOp::create(
                      nb, l, positive, arith::DivFOp::create(nb, l, a[0], a[1]),
                      zero);
                  if (seed) {
                    SmallVector<Value> bhqk;
                    for (int64_t i = 0; i < 4; ++i)
                      bhqk.push_back(linalg::IndexOp::create(nb, l, i));
                    Value keep = buildDropoutKeep(nb, l, op, seed, bhqk);
                    Value kept =
                        arith::MulFOp::create(nb, l, pr, n.constF32(keepScale));
                    pr = arith::SelectOp::create(nb, l, keep, kept, zero);
                  }
                  linalg::YieldOp::create(nb, l, ValueRange{pr});
                })
          .getResult(0);
  // O[b,h,q,e] = sum_k P[b,h,q,k] * f32(V[b,h/G,k,e]).
  SmallVector<int64_t> outShape = {B, Hq, Nq, Dv};
  auto outF32Type = RankedTensorType::get(outShape, h.f32);
  Value out =
      h.generic(outF32Type, {probs, op.getValue()}, h.filled(outShape, 0.0f),
                {h.map(5, {d0, d1, d2, d4}), h.map(5, {d0, kvHead, d4, d3}),
                 h.map(5, {d0, d1, d2, d3})},
                {par, par, par, par, red},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  GenericBuilder n{nb, l, op, h.f32};
                  Value prod =
                      arith::MulFOp::create(nb, l, a[0], n.toF32(a[1]));
                  linalg::YieldOp::create(
                      nb, l, ValueRange{arith::AddFOp::create(nb, l, a[2], prod)});
                })
          .getResult(0);
  Type elementType = op.getQueryType().getElementType();
  if (elementType != h.f32) {
    AffineMap id = h.map(4, {d0, d1, d2, d3});
    out = h.generic(RankedTensorType::get(outShape, elementType), {out},
                    tensor::EmptyOp::create(b, loc, outShape, elementType),
                    {id, id}, {par, par, par, par},
                    [&](OpBuilder &nb, Location l, ValueRange a) {
                      linalg::YieldOp::create(
                          nb, l,
                          ValueRange{arith::TruncFOp::create(nb, l, elementType,
                                                             a[0])});
                    })
              .getResult(0);
  }
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

namespace {
struct AttentionToLinalgPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> results = lowerAttentionToLinalg(rewriter, op);
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
    target.addIllegalOp<AttentionOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnfuse::populateAttnToLinalgConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToLinalgPattern>(patterns.getContext());
}
