//===- AttnToSCF.cpp - the tiled FlashAttention lowering ------------------===//
//
// FlashAttention's forward algorithm (Dao et al. 2022, Algorithm 1 with the
// FlashAttention-2 loop order), target-independent, in scf + linalg on
// tensors. For one (b, h, query block) of bq rows:
//
//   m = -inf, l = 0, acc = 0                           (bq, bq, bq x Dv)
//   for each key block that can be visible:
//     S     = mask(score_mod(scale * Q_blk K_blk^T) + bias)   (bq x bk)
//     m'    = max(m, rowmax(S))        m'' = (m' == -inf) ? 0 : m'
//     P     = exp(S - m'')             alpha = exp(m - m'')
//     l     = alpha * l + rowsum(P)
//     acc   = alpha * acc + dropout(P) V_blk
//     m     = m'
//   O   = (l > 0) ? acc / l : 0        lse = m'' + log(l)
//
// which equals the reference lowering's exp(T - max) / sum exactly in real
// arithmetic; only the order of the f32 accumulation differs.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToSCF/AttnToSCF.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
#include <limits>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOSCF
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

namespace {
using utils::IteratorType;
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Builds the index arithmetic and linalg ops on tiles of one lowering.
struct TileBuilder {
  OpBuilder &b;
  Location loc;
  AttentionOp op;
  Type f32;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value floorDiv(Value x, int64_t d) {
    return arith::FloorDivSIOp::create(b, loc, x, idx(d));
  }
  Value sle(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  Value toF32(OpBuilder &nb, Location l, Value v) {
    return v.getType() == f32 ? v : arith::ExtFOp::create(nb, l, f32, v);
  }
  Value cstF32(OpBuilder &nb, Location l, float v) {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
  }

  /// An f32 tensor of the given (possibly dynamic) sizes filled with `v`.
  Value filled(ArrayRef<OpFoldResult> sizes, float v) {
    Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
    return linalg::FillOp::create(b, loc, cstF32(b, loc, v), empty)
        .getResult(0);
  }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iters,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, body(nb, l, args));
               })
        .getResult(0);
  }

  /// The 2-D slice of a [B, Hq, Nq, Nk]-broadcastable tensor (bias, keep mask)
  /// covering query rows [q0, q0 + bq) and keys [k0, k0 + bk) of (bi, hi),
  /// with the map from tile loops (i, j) into it.
  std::pair<Value, AffineMap> scoreTile(Value t, Value bi, Value hi, Value q0,
                                        Value bq, Value k0, Value bk) {
    auto type = cast<RankedTensorType>(t.getType());
    int64_t rank = type.getRank();
    MLIRContext *ctx = b.getContext();
    if (rank == 0)
      return {t, map(2, {})};
    SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
    SmallVector<int64_t> tileShape;
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t target = 4 - rank + i;
      bool full = type.getDimSize(i) != 1;
      OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
      Value start[] = {bi, hi, q0, k0};
      Value extent[] = {nullptr, nullptr, bq, bk};
      offsets.push_back(full ? OpFoldResult(start[target]) : zero);
      sizes.push_back(full && target >= 2 ? OpFoldResult(extent[target]) : one);
      if (target >= 2) {
        tileShape.push_back(full ? kDyn : 1);
        exprs.push_back(full ? getAffineDimExpr(target - 2, ctx)
                             : getAffineConstantExpr(0, ctx));
      }
    }
    auto tileType = RankedTensorType::get(tileShape, type.getElementType());
    Value tile = tensor::ExtractSliceOp::create(b, loc, tileType, t, offsets,
                                                sizes, strides);
    return {tile, map(2, exprs)};
  }
};
} // namespace

FailureOr<SmallVector<Value>>
attnfuse::tileAttention(OpBuilder &builder, AttentionOp op,
                        const AttentionTilingOptions &options) {
  if (options.blockQ <= 0 || options.blockK <= 0)
    return op.emitOpError() << "block sizes must be positive, got block-q = "
                            << options.blockQ
                            << ", block-k = " << options.blockK;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  Location loc = op.getLoc();
  TileBuilder t{builder, loc, op, builder.getF32Type()};
  OpBuilder &b = builder;
  MLIRContext *ctx = b.getContext();

  int64_t B = op.getBatchSize(), Hq = op.getNumQueryHeads(),
          Nq = op.getQueryLength(), Nk = op.getKeyLength(),
          D = op.getHeadDimQK(), Dv = op.getHeadDimV(), G = op.getGroupSize();
  int64_t BQ = std::min(options.blockQ, Nq), BK = std::min(options.blockK, Nk);
  int64_t numQB = llvm::divideCeil(Nq, BQ), numKB = llvm::divideCeil(Nk, BK);
  Type elementType = op.getQueryType().getElementType();
  float negInf = -std::numeric_limits<float>::infinity();
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;

  // The structural mask as a window on k - (q + off); a side wider than the
  // sequences is unbounded (and clamping keeps the index arithmetic small).
  MaskWindow w = op.getMaskWindow();
  bool leftBounded = w.left != kUnbounded && w.left < Nq + Nk;
  bool rightBounded = w.right != kUnbounded && w.right < Nq + Nk;

  Value outInit = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{B, Hq, Nq, Dv}, elementType);
  Value lseInit =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{B, Hq, Nq}, t.f32);
  auto forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{b.getIndexAttr(B), b.getIndexAttr(Hq),
                             b.getIndexAttr(numQB)},
      ValueRange{outInit, lseInit}, std::nullopt);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVar(0), hi = forall.getInductionVar(1);
  Value qb = forall.getInductionVar(2);
  Value q0 = t.mul(qb, t.idx(BQ));
  Value bq = t.min(t.idx(BQ), t.sub(t.idx(Nq), q0));
  Value kvh = arith::DivUIOp::create(b, loc, hi, t.idx(G));
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);

  auto qTileType = RankedTensorType::get({kDyn, D}, elementType);
  Value qTile = tensor::ExtractSliceOp::create(
      b, loc, qTileType, op.getQuery(),
      ArrayRef<OpFoldResult>{bi, hi, q0, zero},
      ArrayRef<OpFoldResult>{one, one, bq, b.getIndexAttr(D)},
      ArrayRef<OpFoldResult>{one, one, one, one});

  Value mInit = t.filled({bq}, negInf);
  Value lInit = t.filled({bq}, 0.0f);
  Value accInit = t.filled({bq, b.getIndexAttr(Dv)}, 0.0f);

  // Key blocks that can be visible to query rows [q0, q0 + bq):
  // k >= q0 + off - left and k <= q0 + bq - 1 + off + right.
  Value kbBegin = t.idx(0), kbEnd = t.idx(numKB);
  if (leftBounded) {
    Value kMin = t.sub(t.add(q0, t.idx(w.offset)), t.idx(w.left));
    kbBegin = t.max(kbBegin, t.floorDiv(kMin, BK));
  }
  if (rightBounded) {
    Value kMax = t.add(t.add(q0, bq), t.idx(w.offset - 1 + w.right));
    kbEnd = t.min(kbEnd, t.add(t.floorDiv(kMax, BK), t.idx(1)));
  }

  AffineExpr i, j, e;
  bindDims(ctx, i, j, e);
  AffineMap ij = t.map(2, {i, j}), i2 = t.map(2, {i}), i1 = t.map(1, {i});
  bool hasDropout = static_cast<bool>(op.getSeed());
  float keepScale =
      static_cast<float>(1.0 / (1.0 - op.getDropoutP().convertToDouble()));

  auto loop = scf::ForOp::create(
      b, loc, kbBegin, kbEnd, t.idx(1), ValueRange{mInit, lInit, accInit},
      [&](OpBuilder &lb, Location l, Value kb, ValueRange iter) {
        TileBuilder u{lb, l, op, t.f32};
        Value m = iter[0], lsum = iter[1], acc = iter[2];
        Value k0 = u.mul(kb, u.idx(BK));
        Value bk = u.min(u.idx(BK), u.sub(u.idx(Nk), k0));
        auto kvTile = [&](Value src, int64_t dim) {
          return tensor::ExtractSliceOp::create(
              lb, l, RankedTensorType::get({kDyn, dim}, elementType), src,
              ArrayRef<OpFoldResult>{bi, kvh, k0, zero},
              ArrayRef<OpFoldResult>{one, one, bk, lb.getIndexAttr(dim)},
              ArrayRef<OpFoldResult>{one, one, one, one});
        };
        Value kTile = kvTile(op.getKey(), D), vTile = kvTile(op.getValue(), Dv);

        // S = Q_blk K_blk^T in f32.
        Value s = u.generic(
            {qTile, kTile}, u.filled({bq, bk}, 0.0f),
            {u.map(3, {i, e}), u.map(3, {j, e}), u.map(3, {i, j})},
            {par, par, red}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value x = u.toF32(nb, nl, a[0]), y = u.toF32(nb, nl, a[1]);
              return arith::AddFOp::create(
                  nb, nl, a[2], arith::MulFOp::create(nb, nl, x, y));
            });

        // T = mask(score_mod(scale * S) + bias), with global coordinates.
        SmallVector<Value> ins = {s};
        SmallVector<AffineMap> maps = {ij};
        Value bias = op.getBias(), keep = op.getKeepMask();
        if (bias) {
          auto [tile, tileMap] = u.scoreTile(bias, bi, hi, q0, bq, k0, bk);
          ins.push_back(tile);
          maps.push_back(tileMap);
        }
        if (keep) {
          auto [tile, tileMap] = u.scoreTile(keep, bi, hi, q0, bq, k0, bk);
          ins.push_back(tile);
          maps.push_back(tileMap);
        }
        maps.push_back(ij);
        auto scores = [&](OpBuilder &sb, Location sl, bool structuralMask) {
          TileBuilder v{sb, sl, op, t.f32};
          return v.generic(
              ins, tensor::EmptyOp::create(sb, sl, ArrayRef<OpFoldResult>{bq, bk}, t.f32),
              maps, {par, par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
                Value qi = arith::AddIOp::create(
                    nb, nl, q0, linalg::IndexOp::create(nb, nl, 0));
                Value kj = arith::AddIOp::create(
                    nb, nl, k0, linalg::IndexOp::create(nb, nl, 1));
                unsigned next = 1;
                Value biasElem = bias ? a[next++] : Value();
                Value keepElem = keep ? a[next++] : Value();
                return buildMaskedScore(nb, nl, op, a[0], {bi, hi, qi, kj},
                                        biasElem, keepElem, structuralMask);
              });
        };
        Value masked;
        if (!leftBounded && !rightBounded) {
          masked = scores(lb, l, /*structuralMask=*/false);
        } else {
          // The block is entirely visible iff its extreme corners are:
          // (k0 + bk - 1) - (q0 + off) <= right, (q0 + bq - 1 + off) - k0 <= left.
          Value allVisible;
          if (rightBounded)
            allVisible = u.sle(u.sub(u.add(k0, bk), u.add(q0, u.idx(w.offset + 1))),
                               u.idx(w.right));
          if (leftBounded) {
            Value ok = u.sle(u.sub(u.add(q0, bq), u.add(k0, u.idx(1 - w.offset))),
                             u.idx(w.left));
            allVisible =
                allVisible ? arith::AndIOp::create(lb, l, allVisible, ok) : ok;
          }
          auto ifOp = scf::IfOp::create(
              lb, l, allVisible,
              [&](OpBuilder &tb, Location tl) {
                scf::YieldOp::create(tb, tl, scores(tb, tl, false));
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, scores(eb, el, true));
              });
          masked = ifOp.getResult(0);
        }

        // m' = max(m, rowmax(T)).
        Value blockMax = u.generic(
            {masked}, u.filled({bq}, negInf), {ij, i2}, {par, red},
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
            });
        Value mNew = u.generic(
            {m, blockMax}, tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq}, t.f32),
            {i1, i1, i1}, {par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
            });
        auto safe = [&](OpBuilder &nb, Location nl, Value x) -> Value {
          Value isEmpty = arith::CmpFOp::create(
              nb, nl, arith::CmpFPredicate::OEQ, x, u.cstF32(nb, nl, negInf));
          return arith::SelectOp::create(nb, nl, isEmpty, u.cstF32(nb, nl, 0.0f),
                                         x);
        };
        // alpha = exp(m - m''), P = exp(T - m'').
        Value alpha = u.generic(
            {m, mNew}, tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq}, t.f32),
            {i1, i1, i1}, {par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return math::ExpOp::create(
                  nb, nl, arith::SubFOp::create(nb, nl, a[0], safe(nb, nl, a[1])));
            });
        Value p = u.generic(
            {masked, mNew},
            tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq, bk}, t.f32),
            {ij, i2, ij}, {par, par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return math::ExpOp::create(
                  nb, nl, arith::SubFOp::create(nb, nl, a[0], safe(nb, nl, a[1])));
            });
        // l' = alpha * l + rowsum(P).
        Value lScaled = u.generic(
            {lsum, alpha}, tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq}, t.f32),
            {i1, i1, i1}, {par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MulFOp::create(nb, nl, a[0], a[1]);
            });
        Value lNew = u.generic({p}, lScaled, {ij, i2}, {par, red},
                               [&](OpBuilder &nb, Location nl, ValueRange a) {
                                 return arith::AddFOp::create(nb, nl, a[0], a[1]);
                               });
        // Dropout acts on the normalized probabilities, so on P here and
        // not on l: P = keep(b, h, q, k) ? P * (1 / (1 - p)) : 0.
        if (hasDropout) {
          p = u.generic(
              {p}, tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq, bk}, t.f32),
              {ij, ij}, {par, par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
                Value qi = arith::AddIOp::create(
                    nb, nl, q0, linalg::IndexOp::create(nb, nl, 0));
                Value kj = arith::AddIOp::create(
                    nb, nl, k0, linalg::IndexOp::create(nb, nl, 1));
                Value kept = buildDropoutKeep(nb, nl, op, op.getSeed(),
                                              {bi, hi, qi, kj});
                Value scaled = arith::MulFOp::create(
                    nb, nl, a[0], u.cstF32(nb, nl, keepScale));
                return arith::SelectOp::create(nb, nl, kept, scaled,
                                               u.cstF32(nb, nl, 0.0f));
              });
        }
        // acc' = alpha * acc + P V_blk.
        Value accScaled = u.generic(
            {acc, alpha},
            tensor::EmptyOp::create(lb, l, ArrayRef<OpFoldResult>{bq, lb.getIndexAttr(Dv)}, t.f32),
            {ij, i2, ij}, {par, par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MulFOp::create(nb, nl, a[0], a[1]);
            });
        Value accNew = u.generic(
            {p, vTile}, accScaled,
            {u.map(3, {i, e}), u.map(3, {e, j}), u.map(3, {i, j})},
            {par, par, red}, [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value v = u.toF32(nb, nl, a[1]);
              return arith::AddFOp::create(
                  nb, nl, a[2], arith::MulFOp::create(nb, nl, a[0], v));
            });
        scf::YieldOp::create(lb, l, ValueRange{mNew, lNew, accNew});
      });
  Value m = loop.getResult(0), lsum = loop.getResult(1), acc = loop.getResult(2);

  // O = (l > 0) ? acc / l : 0, rounded once to the element type.
  Value outTile = t.generic(
      {acc, lsum},
      tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{bq, b.getIndexAttr(Dv)},
                              elementType),
      {ij, i2, ij}, {par, par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value zeroF = t.cstF32(nb, nl, 0.0f);
        Value positive =
            arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, a[1], zeroF);
        Value o = arith::SelectOp::create(
            nb, nl, positive, arith::DivFOp::create(nb, nl, a[0], a[1]), zeroF);
        if (elementType != t.f32)
          o = arith::TruncFOp::create(nb, nl, elementType, o);
        return o;
      });
  // lse = m'' + log(l).
  Value lseTile = t.generic(
      {m, lsum}, tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{bq}, t.f32),
      {i1, i1, i1}, {par}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value isEmpty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                              a[0], t.cstF32(nb, nl, negInf));
        Value safeMax = arith::SelectOp::create(nb, nl, isEmpty,
                                                t.cstF32(nb, nl, 0.0f), a[0]);
        return arith::AddFOp::create(nb, nl, safeMax,
                                     math::LogOp::create(nb, nl, a[1]));
      });

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  Block::BlockArgListType shared = forall.getRegionIterArgs();
  tensor::ParallelInsertSliceOp::create(
      b, loc, outTile, shared[0], ArrayRef<OpFoldResult>{bi, hi, q0, zero},
      ArrayRef<OpFoldResult>{one, one, bq, b.getIndexAttr(Dv)},
      ArrayRef<OpFoldResult>{one, one, one, one});
  tensor::ParallelInsertSliceOp::create(
      b, loc, lseTile, shared[1], ArrayRef<OpFoldResult>{bi, hi, q0},
      ArrayRef<OpFoldResult>{one, one, bq}, ArrayRef<OpFoldResult>{one, one, one});

  SmallVector<Value> results = {forall.getResult(0)};
  if (op.getLse())
    results.push_back(forall.getResult(1));
  return results;
}

namespace {
struct AttentionToSCFPattern : OpRewritePattern<AttentionOp> {
  AttentionToSCFPattern(MLIRContext *ctx, const AttentionTilingOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> results = tileAttention(rewriter, op, options);
    if (failed(results))
      return failure();
    rewriter.replaceOp(op, *results);
    return success();
  }
  AttentionTilingOptions options;
};

struct ConvertAttnToSCFPass
    : attnfuse::impl::ConvertAttnToSCFBase<ConvertAttnToSCFPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateAttnToSCFConversionPatterns(patterns, {blockQ, blockK});
    ConversionTarget target(getContext());
    target.addIllegalOp<AttentionOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnfuse::populateAttnToSCFConversionPatterns(
    RewritePatternSet &patterns, const AttentionTilingOptions &options) {
  patterns.add<AttentionToSCFPattern>(patterns.getContext(), options);
}
