//===- ScoreUtils.cpp - scalar pieces of attention's score pipeline -------===//
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace attnfuse::attn {

SizeValues materializeSizes(OpBuilder &b, Location loc,
                            AttentionOpInterface op) {
  AttentionSizes s = op.getSizes();
  auto size = [&](int64_t n, Value tensor, int64_t dim) -> OpFoldResult {
    if (!ShapedType::isDynamic(n))
      return b.getIndexAttr(n);
    return tensor::DimOp::create(b, loc, tensor, dim).getResult();
  };
  SizeValues v;
  v.batch = size(s.batch, op.getQueryValue(), 0);
  v.queryLength = size(s.queryLength, op.getQueryValue(), 2);
  if (Value table = op.getBlockTableValue();
      table && ShapedType::isDynamic(s.keyLength))
    v.keyLength = arith::MulIOp::create(
                      b, loc, tensor::DimOp::create(b, loc, table, 1),
                      arith::ConstantIndexOp::create(b, loc, s.pageSize))
                      .getResult();
  else
    v.keyLength = size(s.keyLength, op.getKeyValue(), 2);
  MaskWindow w = op.getMaskWindow();
  if (w.hasStaticOffset())
    v.maskOffset = b.getIndexAttr(w.offset);
  else if (op.getKeyLengthsValue() || op.isPacked())
    v.maskOffset = {}; // per batch (sizesAtBatch) or sequence
  else
    v.maskOffset =
        arith::SubIOp::create(
            b, loc, getValueOrCreateConstantIndexOp(b, loc, v.keyLength),
            getValueOrCreateConstantIndexOp(b, loc, v.queryLength))
            .getResult();
  return v;
}

SizeValues sizesAtBatch(OpBuilder &b, Location loc, AttentionOpInterface op,
                        const SizeValues &sizes, Value batch,
                        Value lengths) {
  if (!lengths)
    lengths = op.getKeyLengthsValue();
  if (!lengths)
    return sizes;
  SizeValues v = sizes;
  Value raw = tensor::ExtractOp::create(b, loc, lengths, ValueRange{batch});
  Value length = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value nk = getValueOrCreateConstantIndexOp(b, loc, sizes.keyLength);
  Value clamped = arith::MinSIOp::create(
      b, loc,
      arith::MaxSIOp::create(b, loc, length,
                             arith::ConstantIndexOp::create(b, loc, 0)),
      nk);
  v.validKeys = clamped;
  if (!op.getMaskWindow().hasStaticOffset())
    v.maskOffset =
        arith::SubIOp::create(
            b, loc, clamped,
            getValueOrCreateConstantIndexOp(b, loc, sizes.queryLength))
            .getResult();
  return v;
}

PagedPosition buildPagedPosition(OpBuilder &b, Location loc,
                                 AttentionOpInterface op, Value batch,
                                 Value k, Value table) {
  if (!table)
    table = op.getBlockTableValue();
  int64_t pageSize = op.getSizes().pageSize;
  Value ps = arith::ConstantIndexOp::create(b, loc, pageSize);
  Value entry = arith::DivUIOp::create(b, loc, k, ps);
  Value raw = tensor::ExtractOp::create(b, loc, table, ValueRange{batch, entry});
  Value page = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  int64_t staticPages =
      cast<ShapedType>(op.getKeyValue().getType()).getDimSize(0);
  Value pages =
      ShapedType::isDynamic(staticPages)
          ? Value(tensor::DimOp::create(b, loc, op.getKeyValue(), 0))
          : Value(arith::ConstantIndexOp::create(b, loc, staticPages));
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, page, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, page, pages));
  Value safe = arith::SelectOp::create(b, loc, valid, page, zero);
  return {safe, arith::RemUIOp::create(b, loc, k, ps), valid};
}

namespace {
/// One runtime check: dimension `dim` of `tensor` equals `size`.
void checkDimEquals(OpBuilder &b, Location loc, Value tensor, int64_t dim,
                    OpFoldResult size, StringRef what) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(dim))
    return;
  Value actual = tensor::DimOp::create(b, loc, tensor, dim);
  Value ok = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, actual,
      getValueOrCreateConstantIndexOp(b, loc, size));
  cf::AssertOp::create(b, loc, ok,
                       ("attn: runtime size mismatch: " + what).str());
}

/// Checks the '?' dimensions of a [B, Hq, Nq, Nk]-broadcastable operand.
void checkScoreOperand(OpBuilder &b, Location loc, Value operand,
                       const SizeValues &s, OpFoldResult heads,
                       StringRef name) {
  if (!operand)
    return;
  auto type = cast<RankedTensorType>(operand.getType());
  OpFoldResult target[] = {s.batch, heads, s.queryLength, s.keyLength};
  StringRef names[] = {"B", "Hq", "Nq", "Nk"};
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t t = 4 - type.getRank() + i;
    checkDimEquals(b, loc, operand, i, target[t],
                   (name + " dimension " + Twine(i) + " != " + names[t]).str());
  }
}

template <typename OpTy>
void buildChecks(OpBuilder &b, Location loc, OpTy op, const SizeValues &s) {
  OpFoldResult heads = b.getIndexAttr(op.getSizes().queryHeads);
  // Q gives B and Nq, K (or the block table) gives Nk (materializeSizes).
  if (Value table = op.getBlockTableValue()) {
    checkDimEquals(b, loc, table, 0, s.batch,
                   "block_table batch != query batch");
    checkDimEquals(b, loc, op.getValue(), 0,
                   tensor::getMixedSize(b, loc, op.getKey(), 0),
                   "value pages != key pages");
  } else {
    checkDimEquals(b, loc, op.getKey(), 0, s.batch,
                   "key batch != query batch");
    checkDimEquals(b, loc, op.getValue(), 0, s.batch,
                   "value batch != query batch");
    checkDimEquals(b, loc, op.getValue(), 2, s.keyLength,
                   "value length != key length");
  }
  if (Value lengths = op.getKeyLengthsValue())
    checkDimEquals(b, loc, lengths, 0, s.batch,
                   "key_lengths batch != query batch");
  if (op.isPacked()) {
    checkDimEquals(b, loc, op.getKeyOffsetsValue(), 0,
                   tensor::getMixedSize(b, loc, op.getQueryOffsetsValue(), 0),
                   "key offsets length != query offsets length");
    // S + 1 >= 1: the offsets have a first entry (foldSequences reads it).
    Value offsets = op.getQueryOffsetsValue();
    if (cast<RankedTensorType>(offsets.getType()).isDynamicDim(0))
      cf::AssertOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                tensor::DimOp::create(b, loc, offsets, 0),
                                arith::ConstantIndexOp::create(b, loc, 0)),
          "attn: sequence offsets are empty (S + 1 = 0)");
  }
  checkScoreOperand(b, loc, op.getBias(), s, heads, "bias");
  checkScoreOperand(b, loc, op.getKeepMask(), s, heads, "keep_mask");
  if constexpr (std::is_same_v<OpTy, AttentionBackwardOp>) {
    for (auto [tensor, name] :
         {std::pair{op.getOutput(), "output"}, std::pair{op.getLse(), "lse"},
          std::pair{op.getGradOutput(), "grad_output"}}) {
      checkDimEquals(b, loc, tensor, 0, s.batch,
                     (Twine(name) + " batch != query batch").str());
      checkDimEquals(b, loc, tensor, 2, s.queryLength,
                     (Twine(name) + " length != query length").str());
    }
  }
}
} // namespace

void buildRuntimeSizeChecks(OpBuilder &b, Location loc,
                            AttentionOpInterface op, const SizeValues &s) {
  if (auto fwd = dyn_cast<AttentionOp>(op.getOperation()))
    buildChecks(b, loc, fwd, s);
  else
    buildChecks(b, loc, cast<AttentionBackwardOp>(op.getOperation()), s);
}

namespace {
/// The effective offsets of packed sequences, made monotone and in range:
/// off'[t] = min(max(0, off[0..t]), n). `running` is max(0, off[0..t-1]) (0
/// for t = 0); returns {the new running maximum, off'[t]}.
std::pair<Value, Value> stepOffset(OpBuilder &b, Location loc, Value offsets,
                                   Value t, Value running, Value n) {
  Value raw = tensor::ExtractOp::create(b, loc, offsets, ValueRange{t});
  Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value next = arith::MaxSIOp::create(b, loc, running, at);
  return {next, arith::MinSIOp::create(b, loc, next, n)};
}

/// Folds `body` over the S packed sequences of `op` in order: body(qBegin,
/// qEnd, kBegin, kEnd, state) returns the next state, where [qBegin, qEnd)
/// and [kBegin, kEnd) are the sequence's queries and keys (effective
/// offsets). Returns the final state.
SmallVector<Value> foldSequences(
    OpBuilder &b, Location loc, AttentionOpInterface op, ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, Value, Value,
                                    Value, ValueRange)>
        body) {
  Value cq = op.getQueryOffsetsValue(), ck = op.getKeyOffsetsValue();
  SizeValues sizes = materializeSizes(b, loc, op);
  Value nq = getValueOrCreateConstantIndexOp(b, loc, sizes.queryLength);
  Value nk = getValueOrCreateConstantIndexOp(b, loc, sizes.keyLength);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto [rq, q0] = stepOffset(b, loc, cq, zero, zero, nq);
  auto [rk, k0] = stepOffset(b, loc, ck, zero, zero, nk);
  SmallVector<Value> inits = {rq, rk, q0, k0};
  llvm::append_range(inits, init);
  Value count = tensor::DimOp::create(b, loc, cq, 0);
  auto loop = scf::ForOp::create(
      b, loc, one, count, one, inits,
      [&](OpBuilder &lb, Location ll, Value t, ValueRange it) {
        auto [nrq, q1] = stepOffset(lb, ll, cq, t, it[0], nq);
        auto [nrk, k1] = stepOffset(lb, ll, ck, t, it[1], nk);
        SmallVector<Value> next = {nrq, nrk, q1, k1};
        llvm::append_range(next, body(lb, ll, it[2], q1, it[3], k1,
                                      it.drop_front(4)));
        scf::YieldOp::create(lb, ll, next);
      });
  return SmallVector<Value>(loop.getResults().drop_front(4));
}
} // namespace

SequenceSpan buildSequenceSpan(OpBuilder &b, Location loc,
                               AttentionOpInterface op, Value q) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> span = foldSequences(
      b, loc, op, {zero, zero, zero, zero},
      [&](OpBuilder &lb, Location ll, Value qBegin, Value qEnd, Value kBegin,
          Value kEnd, ValueRange state) {
        Value in = arith::AndIOp::create(
            lb, ll,
            arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::sle, qBegin, q),
            arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::slt, q, qEnd));
        Value found[] = {qBegin, kBegin,
                         arith::SubIOp::create(lb, ll, qEnd, qBegin),
                         arith::SubIOp::create(lb, ll, kEnd, kBegin)};
        SmallVector<Value> next;
        for (auto [f, old] : llvm::zip(found, state))
          next.push_back(arith::SelectOp::create(lb, ll, in, f, old));
        return next;
      });
  return {span[0], span[1], span[2], span[3]};
}

std::pair<Value, Value> buildSequenceRange(OpBuilder &b, Location loc,
                                           AttentionOpInterface op,
                                           bool fromQueries, Value begin,
                                           Value end) {
  SizeValues sizes = materializeSizes(b, loc, op);
  Value n = getValueOrCreateConstantIndexOp(
      b, loc, fromQueries ? sizes.keyLength : sizes.queryLength);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> range = foldSequences(
      b, loc, op, {n, zero},
      [&](OpBuilder &lb, Location ll, Value qBegin, Value qEnd, Value kBegin,
          Value kEnd, ValueRange state) {
        Value from0 = fromQueries ? qBegin : kBegin;
        Value from1 = fromQueries ? qEnd : kEnd;
        Value to0 = fromQueries ? kBegin : qBegin;
        Value to1 = fromQueries ? kEnd : qEnd;
        // The sequence has positions in [begin, end).
        Value meets = arith::AndIOp::create(
            lb, ll,
            arith::AndIOp::create(
                lb, ll,
                arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::slt, from0,
                                      end),
                arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::sgt, from1,
                                      begin)),
            arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::slt, from0,
                                  from1));
        return SmallVector<Value>{
            arith::SelectOp::create(
                lb, ll, meets, arith::MinSIOp::create(lb, ll, state[0], to0),
                state[0]),
            arith::SelectOp::create(
                lb, ll, meets, arith::MaxSIOp::create(lb, ll, state[1], to1),
                state[1])};
      });
  return {range[0], range[1]};
}

namespace {
/// k - (q + offset) within the window [-left, right] of `w`, or null when
/// the window hides nothing.
Value buildWindowVisible(OpBuilder &b, Location loc, const MaskWindow &w,
                         Value q, Value k, Value offset, Value visible) {
  constexpr int64_t kUnbounded = MaskWindow::kUnbounded;
  if (w.left == kUnbounded && w.right == kUnbounded)
    return visible;
  Value shifted = arith::AddIOp::create(b, loc, q, offset);
  Value rel = arith::SubIOp::create(b, loc, k, shifted);
  auto both = [&](Value x, Value y) -> Value {
    return x ? Value(arith::AndIOp::create(b, loc, x, y)) : y;
  };
  if (w.right != kUnbounded)
    visible = both(visible, arith::CmpIOp::create(
                                b, loc, arith::CmpIPredicate::sle, rel,
                                arith::ConstantIndexOp::create(b, loc, w.right)));
  if (w.left != kUnbounded)
    visible = both(visible, arith::CmpIOp::create(
                                b, loc, arith::CmpIPredicate::sge, rel,
                                arith::ConstantIndexOp::create(b, loc, -w.left)));
  return visible;
}

/// Packed sequences: k among the keys of q's sequence, and the window in the
/// sequence's positions (docs/Semantics.md, "Packed sequences").
Value buildPackedVisible(OpBuilder &b, Location loc, AttentionOpInterface op,
                         Value q, Value k) {
  SequenceSpan s = buildSequenceSpan(b, loc, op, q);
  Value qi = arith::SubIOp::create(b, loc, q, s.queryStart);
  Value ki = arith::SubIOp::create(b, loc, k, s.keyStart);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value visible = arith::AndIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, ki, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, ki,
                            s.keyLength));
  MaskWindow w = op.getMaskWindow();
  Value offset = w.hasStaticOffset()
                     ? Value(arith::ConstantIndexOp::create(b, loc, w.offset))
                     : Value(arith::SubIOp::create(b, loc, s.keyLength,
                                                   s.queryLength));
  return buildWindowVisible(b, loc, w, qi, ki, offset, visible);
}
} // namespace

Value buildStructuralMaskVisible(OpBuilder &b, Location loc, AttentionOpInterface op,
                                 Value q, Value k, const SizeValues *sizes) {
  if (op.isPacked())
    return buildPackedVisible(b, loc, op, q, k);
  MaskWindow w = op.getMaskWindow();
  assert((!op.getKeyLengthsValue() || (sizes && sizes->validKeys)) &&
         "key lengths need the sizes at the element's batch");
  // With key lengths, the keys [validKeys, Nk) of the batch do not exist.
  Value visible;
  if (op.getKeyLengthsValue())
    visible = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, k,
        getValueOrCreateConstantIndexOp(b, loc, sizes->validKeys));
  constexpr int64_t kUnbounded = MaskWindow::kUnbounded;
  if (w.left == kUnbounded && w.right == kUnbounded)
    return visible;
  // rel = k - (q + offset); visible iff -left <= rel <= right.
  Value offset;
  if (w.hasStaticOffset())
    offset = arith::ConstantIndexOp::create(b, loc, w.offset);
  else
    offset = getValueOrCreateConstantIndexOp(
        b, loc,
        sizes ? sizes->maskOffset : materializeSizes(b, loc, op).maskOffset);
  return buildWindowVisible(b, loc, w, q, k, offset, visible);
}

bool isWindowSideBounded(int64_t side, int64_t queryLength,
                         int64_t keyLength) {
  if (ShapedType::isDynamic(queryLength) || ShapedType::isDynamic(keyLength))
    return side < (int64_t(1) << 61);
  return side < queryLength + keyLength; // unbounded sides are INT64_MAX
}

namespace {
/// keyBlockRangeOf's operations as index-typed arith ops.
struct IRArith {
  using V = Value;
  OpBuilder &b;
  Location loc;
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value floorDiv(Value x, int64_t d) {
    Value divisor = idx(d);
    return arith::FloorDivSIOp::create(b, loc, x, divisor);
  }
};
/// keyBlockRangeOf's operations on integers (floor division as
/// arith.floordivsi's).
struct IntArith {
  using V = int64_t;
  int64_t idx(int64_t v) { return v; }
  int64_t add(int64_t x, int64_t y) { return x + y; }
  int64_t sub(int64_t x, int64_t y) { return x - y; }
  int64_t max(int64_t x, int64_t y) { return std::max(x, y); }
  int64_t min(int64_t x, int64_t y) { return std::min(x, y); }
  int64_t floorDiv(int64_t x, int64_t d) {
    return x >= 0 ? x / d : -((-x + d - 1) / d);
  }
};
} // namespace

std::pair<Value, Value> buildKeyBlockRange(OpBuilder &b, Location loc,
                                           const MaskWindow &w, int64_t nq,
                                           int64_t nk, Value q0, Value rows,
                                           int64_t blockK,
                                           const SizeValues *sizes) {
  IRArith a{b, loc};
  Value nkValue, offsetValue;
  if (sizes && ShapedType::isDynamic(nk))
    nkValue = getValueOrCreateConstantIndexOp(b, loc, sizes->keyLength);
  if (sizes && !w.hasStaticOffset())
    offsetValue = getValueOrCreateConstantIndexOp(b, loc, sizes->maskOffset);
  assert((sizes || (!ShapedType::isDynamic(nk) && w.hasStaticOffset())) &&
         "runtime sizes need their values");
  auto range =
      keyBlockRangeOf(a, w, nq, nk, q0, rows, blockK, nkValue, offsetValue);
  if (sizes && sizes->validKeys) {
    Value valid = getValueOrCreateConstantIndexOp(b, loc, sizes->validKeys);
    range.second =
        a.min(range.second, a.floorDiv(a.add(valid, a.idx(blockK - 1)), blockK));
  }
  return range;
}

std::pair<int64_t, int64_t> getKeyBlockRange(const MaskWindow &w, int64_t nq,
                                             int64_t nk, int64_t q0,
                                             int64_t rows, int64_t blockK) {
  IntArith a;
  return keyBlockRangeOf(a, w, nq, nk, q0, rows, blockK);
}

std::pair<int64_t, int64_t> getQueryBlockRange(const MaskWindow &w, int64_t nq,
                                               int64_t nk, int64_t key0,
                                               int64_t blockK, int64_t blockQ) {
  IntArith a;
  return queryBlockRangeOf(a, w, nq, nk, key0, blockK, blockQ);
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
                       const IRMapping *captures, const SizeValues *sizes) {
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
  // Packed sequences hide keys of other sequences in every tile.
  if (applyStructuralMask || op.isPacked())
    visible = buildStructuralMaskVisible(b, loc, op, bhqk[2], bhqk[3], sizes);
  if (keep)
    visible = visible ? arith::AndIOp::create(b, loc, visible, keep) : keep;
  if (op.isPaged()) {
    Value valid = buildPagedPosition(b, loc, op, bhqk[0], bhqk[3]).valid;
    visible = visible ? arith::AndIOp::create(b, loc, visible, valid) : valid;
  }
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

Value buildScoreGradient(OpBuilder &b, Location loc, Value t, Value p,
                         Value dp, Value di) {
  Value hidden = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, t,
      arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity())));
  Value dt = arith::MulFOp::create(b, loc, p,
                                   arith::SubFOp::create(b, loc, dp, di));
  return arith::SelectOp::create(
      b, loc, hidden, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)),
      dt);
}

Value buildRoundedTensor(OpBuilder &b, Location loc, Value x,
                         Type elementType) {
  auto type = cast<RankedTensorType>(x.getType());
  if (elementType == type.getElementType())
    return x;
  int64_t rank = type.getRank();
  Value out = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x),
                                      elementType);
  return linalg::GenericOp::create(
             b, loc, TypeRange{out.getType()}, ValueRange{x}, ValueRange{out},
             SmallVector<AffineMap>(2, b.getMultiDimIdentityMap(rank)),
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{
                       arith::TruncFOp::create(nb, l, elementType, a[0])});
             })
      .getResult(0);
}

Value buildBiasGradient(OpBuilder &b, Location loc, Value scoreGradients,
                        RankedTensorType biasType) {
  MLIRContext *ctx = b.getContext();
  auto fullType = cast<RankedTensorType>(scoreGradients.getType());
  int64_t rank = biasType.getRank();
  // Bias dimension i reads score dimension 4 - rank + i unless it is
  // broadcast (size 1); the sum runs over every score dimension no kept bias
  // dimension reads, into a tensor of the kept dimensions, then reshaped to
  // the bias's shape. The loops: the kept dimensions (parallel), then the
  // summed ones (outer parallel loops map to GPU blocks in the naive
  // pipeline).
  SmallVector<unsigned> keptDims;
  SmallVector<OpFoldResult> keptSizes, biasSizes;
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i < rank; ++i) {
    unsigned dim = 4 - rank + i;
    if (biasType.getDimSize(i) == 1) {
      biasSizes.push_back(b.getIndexAttr(1));
      if (!groups.empty())
        groups.back().push_back(i);
      continue;
    }
    OpFoldResult size =
        fullType.isDynamicDim(dim)
            ? OpFoldResult(
                  tensor::DimOp::create(b, loc, scoreGradients, dim).getResult())
            : OpFoldResult(b.getIndexAttr(fullType.getDimSize(dim)));
    keptDims.push_back(dim);
    keptSizes.push_back(size);
    biasSizes.push_back(size);
    // A group: this kept dimension with the unit dimensions before it (the
    // first group) and after it.
    ReassociationIndices group;
    if (groups.empty())
      for (int64_t u = 0; u < i; ++u)
        group.push_back(u);
    group.push_back(i);
    groups.push_back(group);
  }
  int64_t keptRank = keptDims.size();
  // Score dimension d is loop loopOf[d].
  SmallVector<AffineExpr> loopOf(4);
  unsigned next = 0;
  for (unsigned d : keptDims)
    loopOf[d] = getAffineDimExpr(next++, ctx);
  for (unsigned d = 0; d < 4; ++d)
    if (!llvm::is_contained(keptDims, d))
      loopOf[d] = getAffineDimExpr(next++, ctx);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::reduction);
  std::fill_n(iterators.begin(), keptRank, utils::IteratorType::parallel);
  // Summed in f32, or in f64 for an f64 bias; rounded to the bias's type
  // once per element.
  Type f32 = b.getF32Type(), elementType = biasType.getElementType();
  Type accType = elementType.getIntOrFloatBitWidth() < 32 ? f32 : elementType;
  Value init = tensor::EmptyOp::create(b, loc, keptSizes, accType);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  init = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{scoreGradients},
          ValueRange{init},
          {AffineMap::get(4, 0, loopOf, ctx),
           AffineMap::getMultiDimIdentityMap(4, ctx).getMajorSubMap(keptRank)},
          iterators,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value x = a[0];
            if (accType != f32)
              x = arith::ExtFOp::create(nb, l, accType, x);
            linalg::YieldOp::create(
                nb, l, ValueRange{arith::AddFOp::create(nb, l, a[1], x)});
          })
          .getResult(0);
  if (accType != elementType)
    sum = buildRoundedTensor(b, loc, sum, elementType);
  if (keptRank == rank)
    return sum;
  return tensor::ExpandShapeOp::create(b, loc, biasType, sum, groups,
                                       biasSizes)
      .getResult();
}

Value buildNormalize(OpBuilder &b, Location loc, Value x, Value l) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  // UNE: true for l != 0 and for a NaN l.
  Value seesAKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, l, zero);
  return arith::SelectOp::create(b, loc, seesAKey,
                                 arith::DivFOp::create(b, loc, x, l), zero);
}

SmallVector<Value, 4> buildPhilox(OpBuilder &b, Location loc, Value seed,
                                  ValueRange counter) {
  // Philox4x32-10 in i32 arithmetic: each round takes the 32x32 -> 64-bit
  // products M0 * c0 and M1 * c2 as (lo, hi) pairs.
  Type i32 = b.getI32Type();
  auto cst = [&](uint32_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, static_cast<int32_t>(v));
  };
  Value c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  Value k0 = arith::TruncIOp::create(b, loc, i32, seed);
  Value k1 = arith::TruncIOp::create(
      b, loc, i32,
      arith::ShRUIOp::create(
          b, loc, seed,
          arith::ConstantIntOp::create(b, loc, b.getI64Type(), 32)));
  Value m0 = cst(0xD2511F53u), m1 = cst(0xCD9E8D57u);
  Value w0 = cst(0x9E3779B9u), w1 = cst(0xBB67AE85u);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = arith::AddIOp::create(b, loc, k0, w0);
      k1 = arith::AddIOp::create(b, loc, k1, w1);
    }
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c0);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c2);
    // c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c3), k1);
    c0 = n0;
    c1 = p1.getLow();
    c2 = n2;
    c3 = p0.getLow();
  }
  return {c0, c1, c2, c3};
}

SmallVector<Value, 4> buildDropoutCounter(OpBuilder &b, Location loc,
                                          ValueRange bhqk) {
  Type i32 = b.getI32Type();
  auto toI32 = [&](Value idx) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, idx);
  };
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  // 4 (k / 32) + (k / 2) % 4 = ((k >> 3) & ~3) | ((k >> 1) & 3).
  Value k = toI32(bhqk[3]);
  Value group = arith::OrIOp::create(
      b, loc,
      arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, k, cst(3)),
                            cst(~3)),
      arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, k, cst(1)),
                            cst(3)));
  return {group, toI32(bhqk[2]), toI32(bhqk[1]), toI32(bhqk[0])};
}

uint64_t getDropoutThreshold(double p) {
  return static_cast<uint64_t>(std::floor(p * 65536.0));
}

std::pair<Value, Value> buildDropoutKeepHalves(OpBuilder &b, Location loc,
                                               AttentionOpInterface op,
                                               Value word) {
  Type i32 = b.getI32Type();
  int64_t threshold =
      static_cast<int64_t>(getDropoutThreshold(op.getDropoutProbability()));
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  // Low half >= T iff (word << 16) >= (T << 16); high half iff word >=
  // (T << 16) (unsigned).
  Value high = cst(static_cast<int32_t>(threshold << 16));
  Value low =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                            arith::ShLIOp::create(b, loc, word, cst(16)), high);
  return {low,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, word, high)};
}

Value buildDropoutWord(OpBuilder &b, Location loc, ArrayRef<Value> words,
                       Value k) {
  // Word (k / 8) % 4: bit 4 of k picks the pair, bit 3 the word in it.
  Type i32 = b.getI32Type();
  Value k32 = arith::IndexCastUIOp::create(b, loc, i32, k);
  auto bit = [&](int64_t i) -> Value {
    Value shifted = arith::ShRUIOp::create(
        b, loc, k32, arith::ConstantIntOp::create(b, loc, i32, i));
    return arith::TruncIOp::create(b, loc, b.getI1Type(), shifted);
  };
  Value odd = bit(3), high = bit(4);
  return arith::SelectOp::create(
      b, loc, high, arith::SelectOp::create(b, loc, odd, words[3], words[2]),
      arith::SelectOp::create(b, loc, odd, words[1], words[0]));
}

Value buildDropoutKeep(OpBuilder &b, Location loc, AttentionOpInterface op,
                       Value seed, ValueRange bhqk) {
  SmallVector<Value, 4> words =
      buildPhilox(b, loc, seed, buildDropoutCounter(b, loc, bhqk));
  auto [keepLow, keepHigh] = buildDropoutKeepHalves(
      b, loc, op, buildDropoutWord(b, loc, words, bhqk[3]));
  Value odd = arith::TruncIOp::create(
      b, loc, b.getI1Type(),
      arith::IndexCastUIOp::create(b, loc, b.getI32Type(), bhqk[3]));
  return arith::SelectOp::create(b, loc, odd, keepHigh, keepLow);
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
