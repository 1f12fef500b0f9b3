//===- ScoreModDerivative.cpp - d score_mod / d score, forward mode -------===//
//
// The backward pass needs dy/ds of the score_mod region y = f(s, b, h, q, k).
// Forward-mode differentiation: every value v gets a tangent dv = dv/ds,
// propagated op by op (ds = 1; coordinates and constants have tangent 0).
// A null tangent stands for 0, so operations that do not depend on the score
// are cloned as they are.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace attnfuse::attn;

namespace {
/// Emits the tangent of one operation from its operands' tangents, or fails
/// when the operation has no derivative rule. `b` is null in check-only mode.
class TangentBuilder {
public:
  TangentBuilder(OpBuilder *b, Location loc) : b(b), loc(loc) {}

  /// Returns the tangent of `op`'s single result (null for 0), or failure.
  FailureOr<Value> tangent(Operation *op, ArrayRef<Value> x, Value y,
                           ArrayRef<Value> dx) {
    bool anyTangent = llvm::any_of(dx, [](Value v) { return v; });
    if (!anyTangent)
      return Value(); // Independent of the score.
    // Integer and boolean results of score-dependent floats (comparisons)
    // carry no tangent.
    if (op->getNumResults() == 1 && !isa<FloatType>(y.getType()) &&
        isa<arith::CmpFOp>(op))
      return Value();
    return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
        .Case([&](arith::AddFOp) { return add(dx[0], dx[1]); })
        .Case([&](arith::SubFOp) { return add(dx[0], neg(dx[1])); })
        .Case([&](arith::NegFOp) { return neg(dx[0]); })
        // d(uv) = du v + u dv
        .Case([&](arith::MulFOp) {
          return add(mul(dx[0], x[1]), mul(x[0], dx[1]));
        })
        // d(u/v) = du / v - (u/v) dv / v = (du - y dv) / v
        .Case([&](arith::DivFOp) {
          return div(add(dx[0], neg(mul(y, dx[1]))), x[1]);
        })
        .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
              arith::MinNumFOp>([&](Operation *) {
          // The tangent of the operand that is selected.
          return select(cmp(arith::CmpFPredicate::OEQ, y, x[0]), dx[0], dx[1]);
        })
        .Case([&](arith::SelectOp) { return select(x[0], dx[1], dx[2]); })
        .Case<arith::ExtFOp, arith::TruncFOp>([&](Operation *) {
          return cast(dx[0], y.getType());
        })
        // d tanh(u) = (1 - y^2) du
        .Case([&](math::TanhOp) {
          return mul(add(constant(1.0, y), neg(mul(y, y))), dx[0]);
        })
        .Case([&](math::ExpOp) { return mul(y, dx[0]); })
        .Case([&](math::Exp2Op) {
          return mul(mul(y, constant(llvm::numbers::ln2, y)), dx[0]);
        })
        .Case([&](math::LogOp) { return div(dx[0], x[0]); })
        .Case([&](math::Log2Op) {
          return div(dx[0], mul(x[0], constant(llvm::numbers::ln2, y)));
        })
        // d sqrt(u) = du / (2 y);  d rsqrt(u) = -y^3 / 2 du
        .Case([&](math::SqrtOp) {
          return div(dx[0], mul(constant(2.0, y), y));
        })
        .Case([&](math::RsqrtOp) {
          return mul(mul(constant(-0.5, y), mul(y, mul(y, y))), dx[0]);
        })
        .Case([&](math::AbsFOp) {
          return select(cmp(arith::CmpFPredicate::OLT, x[0], constant(0.0, y)),
                        neg(dx[0]), dx[0]);
        })
        .Case([&](math::SinOp) {
          return mul(unary<math::CosOp>(x[0]), dx[0]);
        })
        .Case([&](math::CosOp) {
          return neg(mul(unary<math::SinOp>(x[0]), dx[0]));
        })
        .Default([&](Operation *) -> FailureOr<Value> {
          return op->emitOpError()
                 << "in a score_mod region cannot be differentiated with "
                    "respect to the score (supported: arith add/sub/mul/div/"
                    "neg/max/min/select/extf/truncf, math tanh/exp/exp2/log/"
                    "log2/sqrt/rsqrt/absf/sin/cos)";
        });
  }

private:
  OpBuilder *b;
  Location loc;

  // Each helper treats a null Value as 0 and returns null in check-only mode.
  Value add(Value u, Value v) {
    if (!u || !v || !b)
      return u ? u : v;
    return arith::AddFOp::create(*b, loc, u, v);
  }
  Value neg(Value u) {
    return u && b ? Value(arith::NegFOp::create(*b, loc, u)) : Value();
  }
  Value mul(Value u, Value v) {
    return u && v && b ? Value(arith::MulFOp::create(*b, loc, u, v)) : Value();
  }
  Value div(Value u, Value v) {
    return u && b ? Value(arith::DivFOp::create(*b, loc, u, v)) : Value();
  }
  Value cmp(arith::CmpFPredicate pred, Value u, Value v) {
    return b ? Value(arith::CmpFOp::create(*b, loc, pred, u, v)) : Value();
  }
  Value select(Value c, Value u, Value v) {
    if (!b || (!u && !v))
      return Value();
    Type t = u ? u.getType() : v.getType();
    return arith::SelectOp::create(*b, loc, c, u ? u : constant(0.0, t),
                                   v ? v : constant(0.0, t));
  }
  Value cast(Value u, Type t) {
    if (!u || !b)
      return Value();
    if (u.getType().getIntOrFloatBitWidth() < t.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(*b, loc, t, u);
    return arith::TruncFOp::create(*b, loc, t, u);
  }
  template <typename OpTy>
  Value unary(Value u) {
    return b ? Value(OpTy::create(*b, loc, u)) : Value();
  }
  Value constant(double v, Value like) { return constant(v, like.getType()); }
  Value constant(double v, Type t) {
    if (!b)
      return Value();
    return arith::ConstantOp::create(*b, loc, b->getFloatAttr(t, v));
  }
};

/// Walks the region's block once; with a builder, clones it and builds the
/// tangents, without, only checks that every tangent has a rule.
FailureOr<std::pair<Value, Value>> differentiate(OpBuilder *b, Location loc,
                                                 Region &region, Value score,
                                                 ValueRange coords) {
  Block &block = region.front();
  IRMapping primal;
  llvm::DenseMap<Value, Value> tangentOf; // keyed by region values
  llvm::DenseSet<Value> dependsOnScore = {block.getArgument(0)};
  if (b) {
    primal.map(block.getArgument(0), score);
    for (auto [arg, c] : llvm::zip(block.getArguments().drop_front(), coords))
      primal.map(arg, c);
    tangentOf[block.getArgument(0)] = arith::ConstantOp::create(
        *b, loc, b->getF32FloatAttr(1.0f));
  }
  TangentBuilder tb(b, loc);
  for (Operation &op : block.without_terminator()) {
    // The operands of `op` and of the operations nested in its regions (which
    // read the block's values from above).
    bool dependent = false;
    op.walk([&](Operation *inner) {
      dependent |= llvm::any_of(inner->getOperands(), [&](Value v) {
        return dependsOnScore.contains(v);
      });
    });
    Operation *clone = b ? cloneScoreModOp(*b, op, primal) : nullptr;
    if (!dependent)
      continue;
    if (op.getNumRegions() != 0)
      return op.emitOpError()
             << "in a score_mod region cannot be differentiated with respect "
                "to the score (it uses the score inside its regions; write "
                "the region with arith.select instead)";
    if (op.getNumResults() != 1)
      return op.emitOpError()
             << "in a score_mod region cannot be differentiated with respect "
                "to the score (it has "
             << op.getNumResults() << " results)";
    Value result = op.getResult(0);
    dependsOnScore.insert(result);
    SmallVector<Value> x, dx;
    for (Value operand : op.getOperands()) {
      x.push_back(b ? primal.lookupOrDefault(operand) : operand);
      // In check-only mode a non-null marker stands for "has a tangent".
      Value t = tangentOf.lookup(operand);
      if (!b && dependsOnScore.contains(operand))
        t = operand;
      dx.push_back(t);
    }
    // In check-only mode the region's own values stand in for the clones;
    // only their types are read.
    FailureOr<Value> d =
        tb.tangent(&op, x, clone ? clone->getResult(0) : result, dx);
    if (failed(d))
      return failure();
    if (*d)
      tangentOf[result] = *d;
  }
  if (!b)
    return std::pair<Value, Value>();
  Value yielded = cast<YieldOp>(block.getTerminator()).getValues().front();
  Value derivative = tangentOf.lookup(yielded);
  if (!derivative)
    derivative = arith::ConstantOp::create(*b, loc, b->getF32FloatAttr(0.0f));
  return std::make_pair(
      lookupOrCloneScoreModValue(*b, yielded, region, primal), derivative);
}
} // namespace

/// Whether `v` is defined outside `region` by a scalar constant. A constant
/// tensor (a mask the region reads with tensor.extract) is data, not a
/// scalar to copy: it stays a capture.
static bool isConstantFromAbove(Value v, Region &region) {
  Operation *def = v.getDefiningOp();
  return def && !region.isAncestor(def->getParentRegion()) &&
         def->hasTrait<OpTrait::ConstantLike>() && !isa<ShapedType>(v.getType());
}

Value attnfuse::attn::lookupOrCloneScoreModValue(OpBuilder &b, Value v,
                                                 Region &scoreMod,
                                                 IRMapping &mapping) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  if (!isConstantFromAbove(v, scoreMod))
    return v;
  return b.clone(*v.getDefiningOp(), mapping)->getResult(
      cast<OpResult>(v).getResultNumber());
}

Operation *attnfuse::attn::cloneScoreModOp(OpBuilder &b, Operation &op,
                                           IRMapping &mapping) {
  Region *scoreMod = op.getParentRegion();
  // Operands of `op` and of the operations nested in it.
  op.walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      (void)lookupOrCloneScoreModValue(b, operand, *scoreMod, mapping);
  });
  return b.clone(op, mapping);
}

Value attnfuse::attn::cloneScoreMod(OpBuilder &b, Region &scoreMod,
                                    Value score, ValueRange coords,
                                    IRMapping &mapping) {
  Block &block = scoreMod.front();
  mapping.map(block.getArgument(0), score);
  for (auto [arg, c] : llvm::zip(block.getArguments().drop_front(), coords))
    mapping.map(arg, c);
  for (Operation &op : block.without_terminator())
    cloneScoreModOp(b, op, mapping);
  return lookupOrCloneScoreModValue(
      b, cast<YieldOp>(block.getTerminator()).getValues().front(), scoreMod,
      mapping);
}

llvm::SetVector<Value> attnfuse::attn::getScoreModCaptures(Region &scoreMod) {
  llvm::SetVector<Value> captures;
  scoreMod.walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      Region *defRegion = operand.getParentRegion();
      if (!scoreMod.isAncestor(defRegion) &&
          !isConstantFromAbove(operand, scoreMod))
        captures.insert(operand);
    }
  });
  return captures;
}

FailureOr<std::pair<Value, Value>>
attnfuse::attn::buildScoreModWithDerivative(OpBuilder &b, Location loc,
                                            Region &scoreMod, Value score,
                                            ValueRange coords) {
  if (scoreMod.empty())
    return std::make_pair(
        score, Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f))));
  return differentiate(&b, loc, scoreMod, score, coords);
}

LogicalResult attnfuse::attn::verifyDifferentiable(Region &scoreMod) {
  if (scoreMod.empty())
    return success();
  return differentiate(nullptr, UnknownLoc::get(scoreMod.getContext()),
                       scoreMod, Value(), {});
}
