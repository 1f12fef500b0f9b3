//===- AttnToSCF.cpp - the tiled FlashAttention lowering ------------------===//
//
// FlashAttention's algorithms (Dao et al. 2022; loop order of
// FlashAttention-2), target-independent, in scf + linalg on tensors.
//
// Forward, for one (b, h, query block) of bq rows:
//
//   m = -inf, l = 0, acc = 0                           (bq, bq, bq x Dv)
//   for each key block that can be visible:
//     T     = mask(score_mod(scale * Q_blk K_blk^T) + bias)   (bq x bk)
//     m'    = max(m, rowmax(T))        m'' = (m' == -inf) ? 0 : m'
//     P     = exp(T - m'')             alpha = exp(m - m'')
//     l     = alpha * l + rowsum(P)
//     acc   = alpha * acc + (P * Z) V_blk          (Z: dropout factor; a
//             hidden key, T = -inf, adds nothing whatever V holds)
//     m     = m'
//   O   = (l != 0) ? acc / l : 0       lse = m'' + log(l)
//
// which equals the reference lowering's exp(T - max) / sum in real
// arithmetic; only the order of the f32 accumulation differs.
//
// Backward, recomputing P = exp(T - lse) block by block, in two loop nests
// so that every gradient block has one writer (deterministic, no atomics):
//
//   Di = rowsum(dO * O)
//   per (b, kv head, key block):  for each query head of the group and each
//     query block that can see it:  dV += (P Z)^T dO,  dK += dS^T Q
//   per (b, h, query block):      for each visible key block: dQ += dS K
//   with dS = P * ((dO V^T) * Z - Di) * J, J = dT/dS (score_mod' * scale);
//   every sum skips the hidden (query, key) pairs (T = -inf).
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToSCF/AttnToSCF.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOSCF
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

namespace {
using utils::IteratorType;
constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// The facts of one op's tiled lowering: its sizes (AttentionSizes), their
/// values at the op (SizeValues: B, Nq, Nk and the block counts static or
/// runtime) and the block sizes.
struct TilingPlan {
  TilingPlan(OpBuilder &b, AttentionOpInterface op, Value query, Value key,
             Value value, Value bias, Value keep,
             const AttentionTilingOptions &options)
      : op(op), query(query), key(key), value(value), bias(bias), keep(keep) {
    AttentionSizes s = op.getSizes();
    Hq = s.queryHeads;
    D = s.headDimQK;
    Hkv = s.kvHeads;
    Dv = s.headDimV;
    G = s.groupSize();
    Nq = s.queryLength;
    Nk = s.keyLength;
    // A runtime length takes the full block; its tail is clamped per block.
    BQ = ShapedType::isDynamic(Nq) ? options.blockQ
                                   : std::min(options.blockQ, Nq);
    BK = ShapedType::isDynamic(Nk) ? options.blockK
                                   : std::min(options.blockK, Nk);
    Location loc = op->getLoc();
    sizes = materializeSizes(b, loc, op);
    buildRuntimeSizeChecks(b, loc, op, sizes);
    auto blocks = [&](OpFoldResult n, int64_t block) -> OpFoldResult {
      if (std::optional<int64_t> c = getConstantIntValue(n))
        return b.getIndexAttr(llvm::divideCeil(*c, block));
      Value v = getValueOrCreateConstantIndexOp(b, loc, n);
      return arith::CeilDivUIOp::create(
                 b, loc, v, arith::ConstantIndexOp::create(b, loc, block))
          .getResult();
    };
    numQB = blocks(sizes.queryLength, BQ);
    numKB = blocks(sizes.keyLength, BK);
    elementType = cast<RankedTensorType>(query.getType()).getElementType();
    window = op.getMaskWindow();
    keyLengths = static_cast<bool>(op.getKeyLengthsValue());
    // Packed sequences apply the window per sequence (buildMaskedScore does,
    // in every tile); their blocks are skipped by sequence (keyBlockRange).
    leftBounded = !op.isPacked() && isWindowSideBounded(window.left, Nq, Nk);
    rightBounded = !op.isPacked() && isWindowSideBounded(window.right, Nq, Nk);
  }
  /// Whether some element of a tile can be hidden by the structural mask or
  /// a key length (buildStructuralMaskVisible).
  bool hasStructuralMask() const {
    return leftBounded || rightBounded || hasKeyLengths();
  }
  bool hasKeyLengths() const { return keyLengths; }
  bool hasDropout() { return static_cast<bool>(op.getDropoutSeed()); }

  AttentionOpInterface op;
  Value query, key, value, bias, keep;
  int64_t Hq, Hkv, D, Dv, G, BQ, BK;
  int64_t Nq, Nk; // static, or ShapedType::kDynamic (values: sizes)
  SizeValues sizes; // of the whole op: see TileBuilder::sizes
  OpFoldResult numQB, numKB;
  Type elementType;
  MaskWindow window;
  bool leftBounded, rightBounded, keyLengths;
};

/// The coordinates of one (query block, key block) pair of tiles.
struct TileCoords {
  Value bi, hi;     // batch, query head
  Value q0, bq;     // first query row and row count
  Value k0, bk;     // first key and key count
};

/// Builds index arithmetic, slices and linalg ops on tiles at one insertion
/// point.
struct TileBuilder {
  OpBuilder &b;
  Location loc;
  TilingPlan &plan;
  Type f32;
  /// The sizes at the batch of the tiles being built (sizesAtBatch): the
  /// plan's, or inside a batch with key lengths that batch's.
  const SizeValues *sizes;

  TileBuilder(OpBuilder &b, Location loc, TilingPlan &plan)
      : b(b), loc(loc), plan(plan), f32(b.getF32Type()), sizes(&plan.sizes) {}
  TileBuilder at(OpBuilder &nb, Location nl) {
    TileBuilder t(nb, nl, plan);
    t.sizes = sizes;
    return t;
  }
  /// Builds the tiles of batch `bi` from here on (`batchSizes` receives its
  /// sizes and must outlive this builder and those it makes).
  void enterBatch(Value bi, SizeValues &batchSizes) {
    batchSizes = sizesAtBatch(b, loc, plan.op, plan.sizes, bi);
    sizes = &batchSizes;
  }

  // Index arithmetic.
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
  /// A size as an index value (a constant when static).
  Value value(OpFoldResult size) {
    return getValueOrCreateConstantIndexOp(b, loc, size);
  }
  /// offset + c, and c - offset, of the structural mask (MaskWindow).
  Value offsetPlus(int64_t c) {
    const MaskWindow &w = plan.window;
    return w.hasStaticOffset() ? idx(w.offset + c)
                               : add(value(sizes->maskOffset), idx(c));
  }
  Value minusOffset(int64_t c) {
    const MaskWindow &w = plan.window;
    return w.hasStaticOffset() ? idx(c - w.offset)
                               : sub(idx(c), value(sizes->maskOffset));
  }
  /// The start and extent of block `blockIdx` of `blockSize` over `length`.
  std::pair<Value, Value> block(Value blockIdx, int64_t blockSize,
                                OpFoldResult length) {
    Value start = mul(blockIdx, idx(blockSize));
    return {start, min(idx(blockSize), sub(value(length), start))};
  }

  // Scalars and tensors.
  Value cstF32(float v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value toF32(Value v) {
    return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type type) {
    return tensor::EmptyOp::create(b, loc, sizes, type);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, float v) {
    return linalg::FillOp::create(b, loc, cstF32(v), empty(sizes, f32))
        .getResult(0);
  }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  /// A linalg.generic with one init whose body is `body(builder, args)`.
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters,
                function_ref<Value(TileBuilder &, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 TileBuilder inner = at(nb, nl);
                 linalg::YieldOp::create(nb, nl, body(inner, args));
               })
        .getResult(0);
  }
  /// Global (b, h, q, k) of the current element of a generic over a
  /// (query, key) tile.
  SmallVector<Value> elementCoords(const TileCoords &c) {
    return {c.bi, c.hi, add(c.q0, linalg::IndexOp::create(b, loc, 0)),
            add(c.k0, linalg::IndexOp::create(b, loc, 1))};
  }

  // Slices.
  OpFoldResult one() { return b.getIndexAttr(1); }
  OpFoldResult zero() { return b.getIndexAttr(0); }
  /// Keys (or values) [k0, k0 + size) of head `head` of batch `bi` of K or
  /// V as a [?, width] tensor: rows of src[bi, head], or with paged K/V
  /// gathered through the block table (buildPagedPosition).
  Value keyRows(Value src, Value bi, Value head, Value k0, Value size) {
    if (!plan.op.isPaged())
      return rows(src, bi, head, k0, size);
    auto type = cast<RankedTensorType>(src.getType());
    int64_t width = type.getDimSize(3);
    AffineMap id = b.getMultiDimIdentityMap(2);
    return generic({}, empty({size, b.getIndexAttr(width)}, type.getElementType()),
                   {id}, {kPar, kPar}, [&](TileBuilder &e, ValueRange) {
                     Value k = e.add(k0, linalg::IndexOp::create(e.b, e.loc, 0));
                     PagedPosition at =
                         buildPagedPosition(e.b, e.loc, plan.op, bi, k);
                     return Value(tensor::ExtractOp::create(
                         e.b, e.loc, src,
                         ValueRange{at.page, head, at.slot,
                                    linalg::IndexOp::create(e.b, e.loc, 1)}));
                   });
  }
  /// Rows [start, start + size) of src[bi, head] as a [?, width] tensor.
  Value rows(Value src, Value bi, Value head, Value start, Value size) {
    auto type = cast<RankedTensorType>(src.getType());
    int64_t width = type.getDimSize(3);
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({kDyn, width}, type.getElementType()),
        src, ArrayRef<OpFoldResult>{bi, head, start, zero()},
        ArrayRef<OpFoldResult>{one(), one(), size, b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{one(), one(), one(), one()});
  }
  /// Entries [start, start + size) of src[bi, head] (a [B, H, N] tensor).
  Value entries(Value src, Value bi, Value head, Value start, Value size) {
    auto type = cast<RankedTensorType>(src.getType());
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({kDyn}, type.getElementType()), src,
        ArrayRef<OpFoldResult>{bi, head, start},
        ArrayRef<OpFoldResult>{one(), one(), size},
        ArrayRef<OpFoldResult>{one(), one(), one()});
  }
  /// The tile of a [B, Hq, Nq, Nk]-broadcastable tensor (bias, keep mask)
  /// covering `c`, with the map from tile loops (i, j) into it.
  std::pair<Value, AffineMap> scoreOperandTile(Value t, const TileCoords &c) {
    auto type = cast<RankedTensorType>(t.getType());
    int64_t rank = type.getRank();
    MLIRContext *ctx = b.getContext();
    if (rank == 0)
      return {t, map(2, {})};
    SmallVector<OpFoldResult> offsets, sizes, strides(rank, one());
    SmallVector<int64_t> tileShape;
    SmallVector<AffineExpr> exprs;
    Value start[] = {c.bi, c.hi, c.q0, c.k0};
    Value extent[] = {nullptr, nullptr, c.bq, c.bk};
    for (int64_t i = 0; i < rank; ++i) {
      int64_t target = 4 - rank + i;
      bool full = type.getDimSize(i) != 1;
      offsets.push_back(full ? OpFoldResult(start[target]) : zero());
      sizes.push_back(full && target >= 2 ? OpFoldResult(extent[target])
                                          : one());
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

  // Block ranges of the structural mask: query q sees key k iff
  // -left <= k - (q + off) <= right.
  /// Key blocks that can be visible to rows [q0, q0 + bq):
  /// k >= q0 + off - left and k <= q0 + bq - 1 + off + right.
  /// With packed sequences: the key blocks of the sequences the rows meet.
  std::pair<Value, Value> keyBlockRange(Value q0, Value bq) {
    if (plan.op.isPacked())
      return sequenceBlockRange(/*fromQueries=*/true, q0, bq, plan.BK);
    return buildKeyBlockRange(b, loc, plan.window, plan.Nq, plan.Nk, q0, bq,
                              plan.BK, sizes);
  }
  /// The blocks of `block` positions that hold the other side's positions
  /// of the packed sequences meeting [p0, p0 + n) (buildSequenceRange).
  std::pair<Value, Value> sequenceBlockRange(bool fromQueries, Value p0,
                                             Value n, int64_t block) {
    auto [first, last] =
        buildSequenceRange(b, loc, plan.op, fromQueries, p0, add(p0, n));
    return {floorDiv(first, block), floorDiv(add(last, idx(block - 1)), block)};
  }
  /// Query blocks that can see keys [k0, k0 + bk):
  /// q >= k0 - off - right and q <= k0 + bk - 1 - off + left.
  std::pair<Value, Value> queryBlockRange(Value k0, Value bk) {
    if (plan.op.isPacked())
      return sequenceBlockRange(/*fromQueries=*/false, k0, bk, plan.BQ);
    const MaskWindow &w = plan.window;
    Value begin = idx(0), end = value(plan.numQB);
    if (plan.rightBounded)
      begin = max(begin, floorDiv(sub(k0, offsetPlus(w.right)), plan.BQ));
    if (plan.leftBounded)
      end = min(end, add(floorDiv(add(add(k0, bk), minusOffset(w.left - 1)),
                                  plan.BQ),
                         idx(1)));
    // Keys past the batch's length are seen by no query.
    if (sizes->validKeys)
      end = arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, k0,
                                value(sizes->validKeys)),
          end, begin);
    return {begin, end};
  }
  /// True iff the structural mask shows every element of the tile: its
  /// extreme corners (k0 + bk - 1) - (q0 + off) <= right and
  /// (q0 + bq - 1 + off) - k0 <= left, and with key lengths k0 + bk <=
  /// validKeys.
  Value tileFullyVisible(const TileCoords &c) {
    const MaskWindow &w = plan.window;
    Value visible;
    if (sizes->validKeys)
      visible = sle(add(c.k0, c.bk), value(sizes->validKeys));
    if (plan.rightBounded) {
      Value ok = sle(sub(add(c.k0, c.bk), add(c.q0, offsetPlus(1))),
                     idx(w.right));
      visible = visible ? arith::AndIOp::create(b, loc, visible, ok) : ok;
    }
    if (plan.leftBounded) {
      Value ok = sle(sub(add(c.q0, c.bq), add(c.k0, minusOffset(1))),
                     idx(w.left));
      visible = visible ? arith::AndIOp::create(b, loc, visible, ok) : ok;
    }
    return visible;
  }

  // Products of tiles, accumulated in f32.
  /// acc[i, j] += sum_r f32(a) * f32(x), `a` and `x` indexed by `aIdx` and
  /// `xIdx` over the loops (i, j, r).
  Value contract(Value acc, Value a, ArrayRef<AffineExpr> aIdx, Value x,
                 ArrayRef<AffineExpr> xIdx) {
    AffineExpr i, j;
    bindDims(b.getContext(), i, j);
    return generic({a, x}, acc, {map(3, aIdx), map(3, xIdx), map(3, {i, j})},
                   {kPar, kPar, kRed}, [](TileBuilder &t, ValueRange v) {
                     return t.fma(v[0], v[1], v[2]);
                   });
  }
  /// [m, n] = a [m, e] * bt [n, e]^T.
  Value matmulTransposed(Value a, Value bt, Value m, Value n) {
    AffineExpr i, j, r;
    bindDims(b.getContext(), i, j, r);
    return contract(filled({m, n}, 0.0f), a, {i, r}, bt, {j, r});
  }
  /// acc [m, d] += a [m, n] * x [n, d] (or, `transposed`, acc [n, d] +=
  /// a [m, n]^T * x [m, d]) over the (query, key) pairs that the masked
  /// scores `t` [m, n] do not hide (buildVisibleProduct).
  Value accumulateVisible(Value acc, Value t, Value a, Value x,
                          bool transposed = false) {
    AffineExpr i, d, r;
    bindDims(b.getContext(), i, d, r);
    AffineMap aMap = transposed ? map(3, {r, i}) : map(3, {i, r});
    return generic({t, a, x}, acc,
                   {aMap, aMap, map(3, {r, d}), map(3, {i, d})},
                   {kPar, kPar, kRed}, [](TileBuilder &e, ValueRange v) {
                     return Value(arith::AddFOp::create(
                         e.b, e.loc, v[3],
                         buildVisibleProduct(e.b, e.loc, v[0], v[1], v[2])));
                   });
  }
  /// acc + f32(x) * f32(y).
  Value fma(Value x, Value y, Value acc) {
    return arith::AddFOp::create(
        b, loc, acc, arith::MulFOp::create(b, loc, toF32(x), toF32(y)));
  }

  /// The masked scores T of the tile `c` from its dot products `s`
  /// (and, with `withJacobian`, J = dT/dS). Tiles that the structural mask
  /// shows entirely take a variant without the mask computation.
  std::pair<Value, Value> maskedScores(Value s, const TileCoords &c,
                                       bool withJacobian) {
    AffineExpr i, j;
    bindDims(b.getContext(), i, j);
    AffineMap ij = map(2, {i, j});
    SmallVector<Value> ins = {s};
    SmallVector<AffineMap> maps = {ij};
    for (Value operand : {plan.bias, plan.keep}) {
      if (!operand)
        continue;
      auto [tile, tileMap] = scoreOperandTile(operand, c);
      ins.push_back(tile);
      maps.push_back(tileMap);
    }
    maps.push_back(ij);
    SmallVector<Value> inits = {empty({c.bq, c.bk}, f32)};
    if (withJacobian) {
      maps.push_back(ij);
      inits.push_back(empty({c.bq, c.bk}, f32));
    }
    SmallVector<Type> types(inits.size(), inits.front().getType());
    auto build = [&](TileBuilder &t, bool structuralMask) {
      auto op = linalg::GenericOp::create(
          t.b, t.loc, types, ins, inits, maps, {kPar, kPar},
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            TileBuilder e = t.at(nb, nl);
            unsigned next = 1;
            Value biasElem = plan.bias ? a[next++] : Value();
            Value keepElem = plan.keep ? a[next++] : Value();
            Value jacobian;
            Value score = buildMaskedScore(
                nb, nl, plan.op, a[0], e.elementCoords(c), biasElem, keepElem,
                structuralMask, withJacobian ? &jacobian : nullptr,
                /*captures=*/nullptr, sizes);
            SmallVector<Value> yields = {score};
            if (withJacobian)
              yields.push_back(jacobian);
            linalg::YieldOp::create(nb, nl, yields);
          });
      return SmallVector<Value>(op.getResults());
    };
    SmallVector<Value> results;
    if (!plan.hasStructuralMask()) {
      results = build(*this, /*structuralMask=*/false);
    } else {
      auto ifOp = scf::IfOp::create(
          b, loc, tileFullyVisible(c),
          [&](OpBuilder &tb, Location tl) {
            TileBuilder t = at(tb, tl);
            scf::YieldOp::create(tb, tl, build(t, /*structuralMask=*/false));
          },
          [&](OpBuilder &eb, Location el) {
            TileBuilder t = at(eb, el);
            scf::YieldOp::create(eb, el, build(t, /*structuralMask=*/true));
          });
      results = ifOp.getResults();
    }
    return {results[0], withJacobian ? results[1] : Value()};
  }

  /// (x == -inf) ? 0 : x, the safe row maximum of empty rows.
  Value safeMax(Value x) {
    Value isEmpty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                          cstF32(kNegInf));
    return arith::SelectOp::create(b, loc, isEmpty, cstF32(0.0f), x);
  }
  /// x * Z(b, h, q, k) for the element of a (query, key) tile generic.
  Value applyDropout(Value x, const TileCoords &c) {
    if (!plan.hasDropout())
      return x;
    return arith::MulFOp::create(
        b, loc, x, buildDropoutFactor(b, loc, plan.op, elementCoords(c)));
  }
  /// Rounds an f32 [m, n] tile to the element type.
  Value roundTile(Value x, Value m, int64_t n) {
    AffineMap id = b.getMultiDimIdentityMap(2);
    Type elementType = plan.elementType;
    if (elementType == f32)
      return x;
    return generic({x}, empty({m, b.getIndexAttr(n)}, elementType), {id, id},
                   {kPar, kPar}, [&](TileBuilder &t, ValueRange a) -> Value {
                     return arith::TruncFOp::create(t.b, t.loc, elementType,
                                                    a[0]);
                   });
  }
};
} // namespace

static LogicalResult checkBlockSizes(Operation *op,
                                     const AttentionTilingOptions &options) {
  if (options.blockQ > 0 && options.blockK > 0)
    return success();
  return op->emitOpError() << "block sizes must be positive, got block-q = "
                           << options.blockQ << ", block-k = " << options.blockK;
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>>
attnfuse::tileAttention(OpBuilder &builder, AttentionOp op,
                        const AttentionTilingOptions &options) {
  if (failed(checkBlockSizes(op, options)))
    return failure();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  TilingPlan plan(builder, op, op.getQuery(), op.getKey(), op.getValue(),
                  op.getBias(), op.getKeepMask(), options);
  TileBuilder t(builder, op.getLoc(), plan);
  OpBuilder &b = builder;
  AffineExpr i, j;
  bindDims(b.getContext(), i, j);
  AffineMap ij = t.map(2, {i, j}), i2 = t.map(2, {i}), i1 = t.map(1, {i});

  auto forall = scf::ForallOp::create(
      b, t.loc,
      ArrayRef<OpFoldResult>{plan.sizes.batch, b.getIndexAttr(plan.Hq),
                             plan.numQB},
      ValueRange{t.empty({plan.sizes.batch, b.getIndexAttr(plan.Hq),
                          plan.sizes.queryLength, b.getIndexAttr(plan.Dv)},
                         plan.elementType),
                 t.empty({plan.sizes.batch, b.getIndexAttr(plan.Hq),
                          plan.sizes.queryLength},
                         t.f32)},
      std::nullopt);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVar(0), hi = forall.getInductionVar(1);
  SizeValues batchSizes;
  t.enterBatch(bi, batchSizes);
  Value q0, bq;
  std::tie(q0, bq) = t.block(forall.getInductionVar(2), plan.BQ, plan.sizes.queryLength);
  Value kvh = arith::DivUIOp::create(b, t.loc, hi, t.idx(plan.G));
  Value qTile = t.rows(op.getQuery(), bi, hi, q0, bq);
  OpFoldResult dv = b.getIndexAttr(plan.Dv);

  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = t.keyBlockRange(q0, bq);
  auto loop = scf::ForOp::create(
      b, t.loc, kbBegin, kbEnd, t.idx(1),
      ValueRange{t.filled({bq}, kNegInf), t.filled({bq}, 0.0f),
                 t.filled({bq, dv}, 0.0f)},
      [&](OpBuilder &lb, Location l, Value kb, ValueRange iter) {
        TileBuilder u = t.at(lb, l);
        Value m = iter[0], lsum = iter[1], acc = iter[2];
        auto [k0, bk] = u.block(kb, plan.BK, plan.sizes.keyLength);
        TileCoords c{bi, hi, q0, bq, k0, bk};
        Value kTile = u.keyRows(op.getKey(), bi, kvh, k0, bk);
        Value vTile = u.keyRows(op.getValue(), bi, kvh, k0, bk);

        // T = mask(score_mod(scale * Q K^T) + bias).
        Value s = u.matmulTransposed(qTile, kTile, bq, bk);
        Value masked = u.maskedScores(s, c, /*withJacobian=*/false).first;

        // m' = max(m, rowmax(T)); alpha = exp(m - m''); P = exp(T - m'').
        Value blockMax = u.generic(
            {masked}, u.filled({bq}, kNegInf), {ij, i2}, {kPar, kRed},
            [](TileBuilder &e, ValueRange a) -> Value {
              return arith::MaximumFOp::create(e.b, e.loc, a[0], a[1]);
            });
        Value mNew = u.generic(
            {m, blockMax}, u.empty({bq}, u.f32), {i1, i1, i1}, {kPar},
            [](TileBuilder &e, ValueRange a) -> Value {
              return arith::MaximumFOp::create(e.b, e.loc, a[0], a[1]);
            });
        Value alpha = u.generic(
            {m, mNew}, u.empty({bq}, u.f32), {i1, i1, i1}, {kPar},
            [](TileBuilder &e, ValueRange a) -> Value {
              return math::ExpOp::create(
                  e.b, e.loc,
                  arith::SubFOp::create(e.b, e.loc, a[0], e.safeMax(a[1])));
            });
        Value p = u.generic(
            {masked, mNew}, u.empty({bq, bk}, u.f32), {ij, i2, ij},
            {kPar, kPar}, [](TileBuilder &e, ValueRange a) -> Value {
              return math::ExpOp::create(
                  e.b, e.loc,
                  arith::SubFOp::create(e.b, e.loc, a[0], e.safeMax(a[1])));
            });
        // l' = alpha * l + rowsum(P).
        Value lScaled = u.generic(
            {lsum, alpha}, u.empty({bq}, u.f32), {i1, i1, i1}, {kPar},
            [](TileBuilder &e, ValueRange a) -> Value {
              return arith::MulFOp::create(e.b, e.loc, a[0], a[1]);
            });
        Value lNew = u.generic({p}, lScaled, {ij, i2}, {kPar, kRed},
                               [](TileBuilder &e, ValueRange a) -> Value {
                                 return arith::AddFOp::create(e.b, e.loc, a[0],
                                                              a[1]);
                               });
        // Dropout acts on the normalized probabilities: on P, not on l.
        if (plan.hasDropout())
          p = u.generic({p}, u.empty({bq, bk}, u.f32), {ij, ij}, {kPar, kPar},
                        [&](TileBuilder &e, ValueRange a) {
                          return e.applyDropout(a[0], c);
                        });
        // acc' = alpha * acc + P V.
        Value accScaled = u.generic(
            {acc, alpha}, u.empty({bq, dv}, u.f32), {ij, i2, ij},
            {kPar, kPar}, [](TileBuilder &e, ValueRange a) -> Value {
              return arith::MulFOp::create(e.b, e.loc, a[0], a[1]);
            });
        Value accNew = u.accumulateVisible(accScaled, masked, p, vTile);
        scf::YieldOp::create(lb, l, ValueRange{mNew, lNew, accNew});
      });
  Value m = loop.getResult(0), lsum = loop.getResult(1), acc = loop.getResult(2);

  // O = (l != 0) ? acc / l : 0, rounded once; lse = m'' + log(l).
  Value out = t.generic(
      {acc, lsum}, t.empty({bq, dv}, t.f32), {ij, i2, ij}, {kPar, kPar},
      [](TileBuilder &e, ValueRange a) -> Value {
        return buildNormalize(e.b, e.loc, a[0], a[1]);
      });
  out = t.roundTile(out, bq, plan.Dv);
  Value lse = t.generic({m, lsum}, t.empty({bq}, t.f32), {i1, i1, i1}, {kPar},
                        [](TileBuilder &e, ValueRange a) -> Value {
                          return arith::AddFOp::create(
                              e.b, e.loc, e.safeMax(a[0]),
                              math::LogOp::create(e.b, e.loc, a[1]));
                        });

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  Block::BlockArgListType shared = forall.getRegionIterArgs();
  OpFoldResult one = t.one(), zero = t.zero();
  tensor::ParallelInsertSliceOp::create(
      b, t.loc, out, shared[0], ArrayRef<OpFoldResult>{bi, hi, q0, zero},
      ArrayRef<OpFoldResult>{one, one, bq, dv},
      ArrayRef<OpFoldResult>{one, one, one, one});
  tensor::ParallelInsertSliceOp::create(
      b, t.loc, lse, shared[1], ArrayRef<OpFoldResult>{bi, hi, q0},
      ArrayRef<OpFoldResult>{one, one, bq},
      ArrayRef<OpFoldResult>{one, one, one});

  SmallVector<Value> results = {forall.getResult(0)};
  if (op.getLse())
    results.push_back(forall.getResult(1));
  return results;
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

namespace {
/// The probabilities P = (lse == -inf) ? 0 : exp(T - lse) and the score
/// gradients dT = P * ((dO V^T) * Z - Di) (0 where hidden) and dS = dT * J
/// of one tile.
struct TileGradients {
  Value masked, p, dt, ds;
};

TileGradients buildTileGradients(TileBuilder &u, AttentionBackwardOp op,
                                 const TileCoords &c, Value qTile,
                                 Value kTile, Value vTile, Value doTile,
                                 Value lseTile, Value diTile) {
  AffineExpr i, j;
  bindDims(u.b.getContext(), i, j);
  AffineMap ij = u.map(2, {i, j}), i2 = u.map(2, {i});
  Value s = u.matmulTransposed(qTile, kTile, c.bq, c.bk);
  auto [masked, jacobian] = u.maskedScores(s, c, /*withJacobian=*/true);
  Value p = u.generic(
      {masked, lseTile}, u.empty({c.bq, c.bk}, u.f32), {ij, i2, ij},
      {kPar, kPar}, [](TileBuilder &e, ValueRange a) -> Value {
        Value isEmpty = arith::CmpFOp::create(
            e.b, e.loc, arith::CmpFPredicate::OEQ, a[1], e.cstF32(kNegInf));
        Value p = math::ExpOp::create(
            e.b, e.loc, arith::SubFOp::create(e.b, e.loc, a[0], a[1]));
        return arith::SelectOp::create(e.b, e.loc, isEmpty, e.cstF32(0.0f), p);
      });
  // dPd = dO V^T; dT = P * (dPd * Z - Di); dS = dT * J.
  Value dpd = u.matmulTransposed(doTile, vTile, c.bq, c.bk);
  Value dt = u.generic(
      {masked, p, dpd, diTile}, u.empty({c.bq, c.bk}, u.f32),
      {ij, ij, ij, i2, ij}, {kPar, kPar}, [&](TileBuilder &e, ValueRange a) {
        return buildScoreGradient(e.b, e.loc, a[0], a[1],
                                  e.applyDropout(a[2], c), a[3]);
      });
  Value ds = u.generic({dt, jacobian}, u.empty({c.bq, c.bk}, u.f32),
                       {ij, ij, ij}, {kPar, kPar},
                       [&](TileBuilder &e, ValueRange a) -> Value {
                         return arith::MulFOp::create(e.b, e.loc, a[0], a[1]);
                       });
  return {masked, p, dt, ds};
}
} // namespace

FailureOr<SmallVector<Value>>
attnfuse::tileAttentionBackward(OpBuilder &builder, AttentionBackwardOp op,
                                const AttentionTilingOptions &options) {
  if (failed(checkBlockSizes(op, options)))
    return failure();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  TilingPlan plan(builder, op, op.getQuery(), op.getKey(), op.getValue(),
                  op.getBias(), op.getKeepMask(), options);
  TileBuilder t(builder, op.getLoc(), plan);
  OpBuilder &b = builder;
  MLIRContext *ctx = b.getContext();
  auto idxAttr = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  OpFoldResult one = t.one(), zero = t.zero();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  AffineMap ij = t.map(2, {i, j});

  // Di[b, h, q] = sum_e dO[b, h, q, e] O[b, h, q, e]: O(N) extra memory.
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  AffineMap id4 = t.map(4, {d0, d1, d2, d3}), row4 = t.map(4, {d0, d1, d2});
  Value di = t.generic(
      {op.getGradOutput(), op.getOutput()},
      t.filled({plan.sizes.batch, idxAttr(plan.Hq), plan.sizes.queryLength}, 0.0f),
      {id4, id4, row4}, {kPar, kPar, kPar, kRed},
      [](TileBuilder &e, ValueRange a) { return e.fma(a[0], a[1], a[2]); });

  // dK and dV: one writer per (b, kv head, key block).
  Value dkInit = t.empty({plan.sizes.batch, idxAttr(plan.Hkv),
                          plan.sizes.keyLength, idxAttr(plan.D)},
                         plan.elementType);
  Value dvInit = t.empty({plan.sizes.batch, idxAttr(plan.Hkv),
                          plan.sizes.keyLength, idxAttr(plan.Dv)},
                         plan.elementType);
  // With grad_bias, the f32 score gradients dT [B, Hq, Nq, Nk] (0 where no
  // block visits: those are hidden), summed to the bias's shape after.
  bool withBiasGrad = static_cast<bool>(op.getGradBias());
  SmallVector<Value> kvInits = {dkInit, dvInit};
  if (withBiasGrad)
    kvInits.push_back(t.filled({plan.sizes.batch, idxAttr(plan.Hq),
                                plan.sizes.queryLength, plan.sizes.keyLength},
                               0.0f));
  auto kvForall = scf::ForallOp::create(
      b, t.loc,
      ArrayRef<OpFoldResult>{plan.sizes.batch, idxAttr(plan.Hkv),
                             plan.numKB},
      kvInits, std::nullopt);
  Value dk, dv, dtFull;
  {
    OpBuilder::InsertionGuard bodyGuard(b);
    b.setInsertionPointToStart(kvForall.getBody());
    Value bi = kvForall.getInductionVar(0), kvh = kvForall.getInductionVar(1);
    TileBuilder kt = t.at(b, t.loc);
    SizeValues batchSizes;
    kt.enterBatch(bi, batchSizes);
    Value k0, bk;
    std::tie(k0, bk) = kt.block(kvForall.getInductionVar(2), plan.BK, plan.sizes.keyLength);
    Value kTile = kt.rows(op.getKey(), bi, kvh, k0, bk);
    Value vTile = kt.rows(op.getValue(), bi, kvh, k0, bk);
    Value qbBegin, qbEnd;
    std::tie(qbBegin, qbEnd) = kt.queryBlockRange(k0, bk);
    // The loops carry dK, dV and, with grad_bias, the key block's dT for
    // the group's heads ([G, Nq, bk]).
    SmallVector<Value> groupInits = {kt.filled({bk, idxAttr(plan.D)}, 0.0f),
                                     kt.filled({bk, idxAttr(plan.Dv)}, 0.0f)};
    if (withBiasGrad)
      groupInits.push_back(
          kt.filled({idxAttr(plan.G), plan.sizes.queryLength, bk}, 0.0f));
    auto groupLoop = scf::ForOp::create(
        b, kt.loc, kt.idx(0), kt.idx(plan.G), kt.idx(1), groupInits,
        [&](OpBuilder &gb, Location gl, Value g, ValueRange groupIter) {
          TileBuilder gt = kt.at(gb, gl);
          Value hi = gt.add(gt.mul(kvh, gt.idx(plan.G)), g);
          auto queryLoop = scf::ForOp::create(
              gb, gl, qbBegin, qbEnd, gt.idx(1), groupIter,
              [&](OpBuilder &lb, Location l, Value qb, ValueRange iter) {
                TileBuilder u = kt.at(lb, l);
                auto [q0, bq] = u.block(qb, plan.BQ, plan.sizes.queryLength);
                TileCoords c{bi, hi, q0, bq, k0, bk};
                Value qTile = u.rows(op.getQuery(), bi, hi, q0, bq);
                Value doTile = u.rows(op.getGradOutput(), bi, hi, q0, bq);
                Value lseTile = u.entries(op.getLse(), bi, hi, q0, bq);
                Value diTile = u.entries(di, bi, hi, q0, bq);
                TileGradients grads = buildTileGradients(
                    u, op, c, qTile, kTile, vTile, doTile, lseTile, diTile);
                // dV += (P * Z)^T dO, dK += dS^T Q.
                Value pd = grads.p;
                if (plan.hasDropout())
                  pd = u.generic({pd}, u.empty({bq, bk}, u.f32), {ij, ij},
                                 {kPar, kPar}, [&](TileBuilder &e, ValueRange a) {
                                   return e.applyDropout(a[0], c);
                                 });
                Value dvAcc = u.accumulateVisible(iter[1], grads.masked, pd,
                                                  doTile, /*transposed=*/true);
                Value dkAcc =
                    u.accumulateVisible(iter[0], grads.masked, grads.ds, qTile,
                                        /*transposed=*/true);
                SmallVector<Value> yields = {dkAcc, dvAcc};
                if (withBiasGrad)
                  yields.push_back(tensor::InsertSliceOp::create(
                      lb, l, grads.dt, iter[2],
                      ArrayRef<OpFoldResult>{g, q0, zero},
                      ArrayRef<OpFoldResult>{one, bq, bk},
                      ArrayRef<OpFoldResult>{one, one, one}));
                scf::YieldOp::create(lb, l, yields);
              });
          scf::YieldOp::create(gb, gl, queryLoop.getResults());
        });
    Value groupHead0 = kt.mul(kvh, kt.idx(plan.G));
    Value dkTile = kt.roundTile(groupLoop.getResult(0), bk, plan.D);
    Value dvTile = kt.roundTile(groupLoop.getResult(1), bk, plan.Dv);
    b.setInsertionPointToStart(kvForall.getTerminator().getBody());
    Block::BlockArgListType shared = kvForall.getRegionIterArgs();
    tensor::ParallelInsertSliceOp::create(
        b, kt.loc, dkTile, shared[0], ArrayRef<OpFoldResult>{bi, kvh, k0, zero},
        ArrayRef<OpFoldResult>{one, one, bk, idxAttr(plan.D)},
        ArrayRef<OpFoldResult>{one, one, one, one});
    tensor::ParallelInsertSliceOp::create(
        b, kt.loc, dvTile, shared[1], ArrayRef<OpFoldResult>{bi, kvh, k0, zero},
        ArrayRef<OpFoldResult>{one, one, bk, idxAttr(plan.Dv)},
        ArrayRef<OpFoldResult>{one, one, one, one});
    if (withBiasGrad)
      tensor::ParallelInsertSliceOp::create(
          b, kt.loc, groupLoop.getResult(2), shared[2],
          ArrayRef<OpFoldResult>{bi, groupHead0, zero, k0},
          ArrayRef<OpFoldResult>{one, idxAttr(plan.G), plan.sizes.queryLength,
                                 bk},
          ArrayRef<OpFoldResult>{one, one, one, one});
    dk = kvForall.getResult(0);
    dv = kvForall.getResult(1);
    if (withBiasGrad)
      dtFull = kvForall.getResult(2);
  }

  // dQ: one writer per (b, query head, query block).
  Value dqInit = t.empty({plan.sizes.batch, idxAttr(plan.Hq), plan.sizes.queryLength,
                          idxAttr(plan.D)},
                         plan.elementType);
  auto qForall = scf::ForallOp::create(
      b, t.loc,
      ArrayRef<OpFoldResult>{plan.sizes.batch, idxAttr(plan.Hq),
                             plan.numQB},
      ValueRange{dqInit}, std::nullopt);
  b.setInsertionPointToStart(qForall.getBody());
  Value bi = qForall.getInductionVar(0), hi = qForall.getInductionVar(1);
  SizeValues batchSizes;
  t.enterBatch(bi, batchSizes);
  Value q0, bq;
  std::tie(q0, bq) = t.block(qForall.getInductionVar(2), plan.BQ, plan.sizes.queryLength);
  Value kvh = arith::DivUIOp::create(b, t.loc, hi, t.idx(plan.G));
  Value qTile = t.rows(op.getQuery(), bi, hi, q0, bq);
  Value doTile = t.rows(op.getGradOutput(), bi, hi, q0, bq);
  Value lseTile = t.entries(op.getLse(), bi, hi, q0, bq);
  Value diTile = t.entries(di, bi, hi, q0, bq);
  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = t.keyBlockRange(q0, bq);
  auto keyLoop = scf::ForOp::create(
      b, t.loc, kbBegin, kbEnd, t.idx(1),
      ValueRange{t.filled({bq, idxAttr(plan.D)}, 0.0f)},
      [&](OpBuilder &lb, Location l, Value kb, ValueRange iter) {
        TileBuilder u = t.at(lb, l);
        auto [k0, bk] = u.block(kb, plan.BK, plan.sizes.keyLength);
        TileCoords c{bi, hi, q0, bq, k0, bk};
        Value kTile = u.rows(op.getKey(), bi, kvh, k0, bk);
        Value vTile = u.rows(op.getValue(), bi, kvh, k0, bk);
        TileGradients grads = buildTileGradients(u, op, c, qTile, kTile, vTile,
                                                 doTile, lseTile, diTile);
        // dQ += dS K.
        scf::YieldOp::create(
            lb, l, u.accumulateVisible(iter[0], grads.masked, grads.ds, kTile));
      });
  Value dqTile = t.roundTile(keyLoop.getResult(0), bq, plan.D);
  b.setInsertionPointToStart(qForall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, t.loc, dqTile, qForall.getRegionIterArgs()[0],
      ArrayRef<OpFoldResult>{bi, hi, q0, zero},
      ArrayRef<OpFoldResult>{one, one, bq, idxAttr(plan.D)},
      ArrayRef<OpFoldResult>{one, one, one, one});
  SmallVector<Value> results = {qForall.getResult(0), dk, dv};
  if (withBiasGrad) {
    b.setInsertionPointAfter(qForall);
    results.push_back(buildBiasGradient(
        b, t.loc, dtFull, cast<RankedTensorType>(op.getBias().getType())));
  }
  return results;
}

//===----------------------------------------------------------------------===//
// Patterns and pass
//===----------------------------------------------------------------------===//

namespace {
template <typename OpTy>
struct TileAttentionPattern : OpRewritePattern<OpTy> {
  TileAttentionPattern(MLIRContext *ctx, const AttentionTilingOptions &options)
      : OpRewritePattern<OpTy>(ctx), options(options) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> results;
    if constexpr (std::is_same_v<OpTy, AttentionOp>)
      results = tileAttention(rewriter, op, options);
    else
      results = tileAttentionBackward(rewriter, op, options);
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
    target.addIllegalOp<AttentionOp, AttentionBackwardOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnfuse::populateAttnToSCFConversionPatterns(
    RewritePatternSet &patterns, const AttentionTilingOptions &options) {
  patterns.add<TileAttentionPattern<AttentionOp>,
               TileAttentionPattern<AttentionBackwardOp>>(
      patterns.getContext(), options);
}
