//===- NormalForm.cpp - equivalent writings brought to one form ===//
//
// The match runs on a normal form of the chain in which equivalent writings
// of the same function coincide; the rewrite reads the original values.
// One definition per equivalence (docs/Raising.md, "Normal form"):
//
//   neutral operands   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1 -> x
//                      (broadcasts written as arithmetic: a product with a
//                      tensor of ones, a sum with a tensor of zeros)
//   cast round trips   truncf(extf(x)) -> x where the types meet again
//   commutative order  every match of an operand of addf / mulf / maximumf
//                      / andi / ori tries both positions (Softmax.cpp,
//                      Scores.cpp, Masks.cpp); no rule needed here
//   copies             a linalg op whose result is one of its inputs up to
//                      the above is data movement (peeled like a copy)
//
// Reshape round trips (a flatten to one dimension and a re-expand, reshapes
// of unit axes), transposes, broadcasts by indexing maps and folded batch
// dimensions need no rule here: tensors are scalar functions over one
// iteration space (Terms.cpp), where they compose to the same access.
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace attnfuse::attn::raise {

std::optional<unsigned>
neutralPassThrough(Operation *op,
                   function_ref<std::optional<double>(unsigned)> constantOf) {
  if (!op || op->getNumOperands() != 2 || op->getNumResults() != 1 ||
      op->getOperand(0).getType() != op->getResult(0).getType() ||
      op->getOperand(1).getType() != op->getResult(0).getType())
    return std::nullopt;
  auto is = [&](unsigned i, double c) {
    std::optional<double> v = constantOf(i);
    return v && *v == c;
  };
  if (isa<arith::MulFOp>(op)) {
    if (is(1, 1.0))
      return 0u;
    if (is(0, 1.0))
      return 1u;
  } else if (isa<arith::AddFOp>(op)) {
    if (is(1, 0.0))
      return 0u;
    if (is(0, 0.0))
      return 1u;
  } else if (isa<arith::SubFOp>(op)) {
    if (is(1, 0.0))
      return 0u;
  } else if (isa<arith::DivFOp>(op)) {
    if (is(1, 1.0))
      return 0u;
  }
  return std::nullopt;
}

bool isCastRoundTrip(Type outer, Type inner, Type back) {
  auto o = dyn_cast<FloatType>(outer), i = dyn_cast<FloatType>(inner);
  if (!o || !i || outer != back)
    return false;
  // Every value of `outer` is exactly representable in `inner`.
  return APFloat::isRepresentableAsNormalIn(o.getFloatSemantics(),
                                            i.getFloatSemantics()) ||
         (o.getWidth() < i.getWidth() &&
          APFloat::semanticsPrecision(o.getFloatSemantics()) <=
              APFloat::semanticsPrecision(i.getFloatSemantics()) &&
          APFloat::semanticsMaxExponent(o.getFloatSemantics()) <=
              APFloat::semanticsMaxExponent(i.getFloatSemantics()) &&
          APFloat::semanticsMinExponent(o.getFloatSemantics()) >=
              APFloat::semanticsMinExponent(i.getFloatSemantics()));
}

Term *normalizeTerm(Term *t) {
  if (t->kind != Term::Op)
    return t;
  if (std::optional<unsigned> keep =
          neutralPassThrough(t->op, [&](unsigned i) -> std::optional<double> {
            double c;
            if (i < t->args.size() && isConstTerm(t->args[i], &c))
              return c;
            return std::nullopt;
          }))
    return t->args[*keep];
  if (isOp<arith::TruncFOp>(t) && isOp<arith::ExtFOp>(t->args[0])) {
    Term *x = t->args[0]->args[0];
    if (isCastRoundTrip(x->type, t->args[0]->type, t->type))
      return x;
  }
  return t;
}

std::optional<unsigned> copiedInput(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.hasPureTensorSemantics())
    return std::nullopt;
  Block *body = op.getBlock();
  // The constant a body value holds: a constant op, or a block argument of a
  // splat constant or fill input.
  auto constantOf = [&](Value v) -> std::optional<double> {
    Attribute a;
    double c;
    if (matchPattern(v, m_Constant(&a)) && isF32Const(a, &c))
      return c;
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != body ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return std::nullopt;
    Value in = op.getDpsInputs()[arg.getArgNumber()];
    if (!isa<ShapedType>(in.getType()))
      return matchPattern(in, m_Constant(&a)) && isF32Const(a, &c)
                 ? std::optional<double>(c)
                 : std::nullopt;
    if (auto fill = in.getDefiningOp<linalg::FillOp>())
      if (matchPattern(fill.getInputs()[0], m_Constant(&a)) &&
          isF32Const(a, &c))
        return c;
    if (matchPattern(in, m_Constant(&a)) && isF32Const(a, &c))
      return c;
    return std::nullopt;
  };
  Value v = body->getTerminator()->getOperand(0);
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != body || arg.getArgNumber() >= op.getNumDpsInputs() ||
          !isa<RankedTensorType>(op.getDpsInputs()[arg.getArgNumber()].getType()))
        return std::nullopt;
      return arg.getArgNumber();
    }
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != body)
      return std::nullopt;
    if (std::optional<unsigned> keep = neutralPassThrough(
            def, [&](unsigned i) { return constantOf(def->getOperand(i)); })) {
      v = def->getOperand(*keep);
      continue;
    }
    if (isa<arith::TruncFOp>(def))
      if (auto ext = def->getOperand(0).getDefiningOp<arith::ExtFOp>();
          ext && isCastRoundTrip(ext.getIn().getType(), ext.getType(),
                                 def->getResult(0).getType())) {
        v = ext.getIn();
        continue;
      }
    return std::nullopt;
  }
}

/// The body of an elementwise op with one input whose result is `OpTy` of
/// the input element.
template <typename OpTy> static bool isElementwiseCast(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 || !op.hasPureTensorSemantics() ||
      !isa<RankedTensorType>(op.getDpsInputs()[0].getType()))
    return false;
  Block *body = op.getBlock();
  auto cast = body->getTerminator()->getOperand(0).getDefiningOp<OpTy>();
  return cast && cast->getOperand(0) == body->getArgument(0);
}

Operation *castRoundTripUpcast(linalg::LinalgOp down) {
  if (!isElementwiseCast<arith::TruncFOp>(down))
    return nullptr;
  auto up = down.getDpsInputs()[0].getDefiningOp<linalg::LinalgOp>();
  if (!up || !isElementwiseCast<arith::ExtFOp>(up) ||
      !up.getIndexingMapsArray()[0].isIdentity() ||
      !up.getIndexingMapsArray()[1].isIdentity())
    return nullptr;
  auto elem = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  if (!isCastRoundTrip(elem(up.getDpsInputs()[0]), elem(up->getResult(0)),
                       elem(down->getResult(0))))
    return nullptr;
  return up;
}

} // namespace attnfuse::attn::raise
