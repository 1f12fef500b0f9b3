//===- ScoreUtils.cpp - scalar pieces of attention's score pipeline -------===//
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace attnfuse::attn {

Value buildStructuralMaskVisible(OpBuilder &b, Location loc, AttentionOpInterface op,
                                 Value q, Value k) {
  MaskWindow w = op.getMaskWindow();
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  if (w.left == kUnbounded && w.right == kUnbounded)
    return Value();
  // rel = k - (q + offset); visible iff -left <= rel <= right.
  Value shifted = arith::AddIOp::create(
      b, loc, q, arith::ConstantIndexOp::create(b, loc, w.offset));
  Value rel = arith::SubIOp::create(b, loc, k, shifted);
  Value visible;
  if (w.right != kUnbounded)
    visible = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sle, rel,
        arith::ConstantIndexOp::create(b, loc, w.right));
  if (w.left != kUnbounded) {
    Value ok = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sge, rel,
        arith::ConstantIndexOp::create(b, loc, -w.left));
    visible = visible ? arith::AndIOp::create(b, loc, visible, ok) : ok;
  }
  return visible;
}

bool isWindowSideBounded(int64_t side, int64_t queryLength,
                         int64_t keyLength) {
  return side < queryLength + keyLength; // unbounded sides are INT64_MAX
}

std::pair<Value, Value> buildKeyBlockRange(OpBuilder &b, Location loc,
                                           const MaskWindow &w, int64_t nq,
                                           int64_t nk, Value q0, Value rows,
                                           int64_t blockK) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto floorDiv = [&](Value x) -> Value {
    return arith::FloorDivSIOp::create(b, loc, x, idx(blockK));
  };
  Value begin = idx(0), end = idx(llvm::divideCeil(nk, blockK));
  if (isWindowSideBounded(w.left, nq, nk))
    begin = arith::MaxSIOp::create(
        b, loc, begin,
        floorDiv(arith::SubIOp::create(b, loc, add(q0, idx(w.offset)),
                                       idx(w.left))));
  if (isWindowSideBounded(w.right, nq, nk))
    end = arith::MinSIOp::create(
        b, loc, end,
        add(floorDiv(add(add(q0, rows), idx(w.offset - 1 + w.right))),
            idx(1)));
  return {begin, end};
}

Value buildScoreMod(OpBuilder &b, Location loc, AttentionOpInterface op, Value score,
                    ValueRange coords, const IRMapping *captures) {
  if (!op.hasScoreMod())
    return score;
  IRMapping mapping = captures ? *captures : IRMapping();
  return cloneScoreMod(b, op.getScoreModRegion(), score, coords, mapping);
}

Value buildMaskedScore(OpBuilder &b, Location loc, AttentionOpInterface op, Value s,
                       ValueRange bhqk, Value bias, Value keep,
                       bool applyStructuralMask, Value *derivative,
                       const IRMapping *captures) {
  Type f32 = b.getF32Type();
  Value scale =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(op.getScaleOrDefault()));
  Value t = arith::MulFOp::create(b, loc, s, scale);
  if (derivative) {
    // The verifier of the backward op guarantees differentiability.
    auto [value, dvalue] = *buildScoreModWithDerivative(
        b, loc, op.getScoreModRegion(), t, bhqk);
    t = value;
    *derivative = arith::MulFOp::create(b, loc, dvalue, scale);
  } else {
    t = buildScoreMod(b, loc, op, t, bhqk, captures);
  }
  if (bias) {
    if (bias.getType() != f32)
      bias = bias.getType().getIntOrFloatBitWidth() < 32
                 ? Value(arith::ExtFOp::create(b, loc, f32, bias))
                 : Value(arith::TruncFOp::create(b, loc, f32, bias));
    t = arith::AddFOp::create(b, loc, t, bias);
  }
  Value visible;
  if (applyStructuralMask)
    visible = buildStructuralMaskVisible(b, loc, op, bhqk[2], bhqk[3]);
  if (keep)
    visible = visible ? arith::AndIOp::create(b, loc, visible, keep) : keep;
  if (!visible)
    return t;
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  return arith::SelectOp::create(b, loc, visible, t, negInf);
}

Value buildVisibleProduct(OpBuilder &b, Location loc, Value t, Value p,
                          Value x) {
  Type f32 = b.getF32Type();
  if (x.getType() != f32)
    x = x.getType().getIntOrFloatBitWidth() < 32
            ? Value(arith::ExtFOp::create(b, loc, f32, x))
            : Value(arith::TruncFOp::create(b, loc, f32, x));
  Value hidden = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, t,
      arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity())));
  return arith::SelectOp::create(
      b, loc, hidden, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)),
      arith::MulFOp::create(b, loc, p, x));
}

Value buildNormalize(OpBuilder &b, Location loc, Value x, Value l) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  // UNE: true for l != 0 and for a NaN l.
  Value seesAKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, l, zero);
  return arith::SelectOp::create(b, loc, seesAKey,
                                 arith::DivFOp::create(b, loc, x, l), zero);
}

Value buildPhilox(OpBuilder &b, Location loc, Value seed, ValueRange bhqk) {
  // Philox4x32-10 (Salmon et al., SC'11) in 64-bit integer arithmetic, every
  // value an unsigned 32-bit number held in an i64.
  Type i64 = b.getI64Type();
  auto cst = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  Value mask32 = cst(0xFFFFFFFFull), sh32 = cst(32);
  auto lo32 = [&](Value v) -> Value {
    return arith::AndIOp::create(b, loc, v, mask32);
  };
  auto toU32 = [&](Value idx) -> Value {
    return lo32(arith::IndexCastUIOp::create(b, loc, i64, idx));
  };
  // counter = (k, q, h, b), key = (seed lo, seed hi).
  Value c0 = toU32(bhqk[3]), c1 = toU32(bhqk[2]), c2 = toU32(bhqk[1]),
        c3 = toU32(bhqk[0]);
  Value k0 = lo32(seed), k1 = arith::ShRUIOp::create(b, loc, seed, sh32);
  Value m0 = cst(0xD2511F53ull), m1 = cst(0xCD9E8D57ull);
  Value w0 = cst(0x9E3779B9ull), w1 = cst(0xBB67AE85ull);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = lo32(arith::AddIOp::create(b, loc, k0, w0));
      k1 = lo32(arith::AddIOp::create(b, loc, k1, w1));
    }
    // (hi0, lo0) = M0 * c0, (hi1, lo1) = M1 * c2: 32x32 -> 64-bit products.
    Value p0 = arith::MulIOp::create(b, loc, m0, c0);
    Value p1 = arith::MulIOp::create(b, loc, m1, c2);
    Value hi0 = arith::ShRUIOp::create(b, loc, p0, sh32), lo0 = lo32(p0);
    Value hi1 = arith::ShRUIOp::create(b, loc, p1, sh32), lo1 = lo32(p1);
    // c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, hi1, c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, hi0, c3), k1);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return c0;
}

uint64_t getDropoutThreshold(double p) {
  return static_cast<uint64_t>(std::floor(p * 4294967296.0));
}

Value buildDropoutKeep(OpBuilder &b, Location loc, AttentionOpInterface op, Value seed,
                       ValueRange bhqk) {
  uint64_t threshold = getDropoutThreshold(op.getDropoutProbability());
  Value r = buildPhilox(b, loc, seed, bhqk);
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::uge, r,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                   static_cast<int64_t>(threshold)));
}

Value buildDropoutFactor(OpBuilder &b, Location loc, AttentionOpInterface op,
                         ValueRange bhqk) {
  auto cst = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getF32FloatAttr(static_cast<float>(v)));
  };
  Value seed = op.getDropoutSeed();
  if (!seed)
    return cst(1.0);
  Value keep = buildDropoutKeep(b, loc, op, seed, bhqk);
  return arith::SelectOp::create(
      b, loc, keep, cst(1.0 / (1.0 - op.getDropoutProbability())), cst(0.0));
}

} // namespace attnfuse::attn
