//===- Candidates.cpp - candidates of the raising ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace attnfuse::attn::raise {

bool isF32Const(Attribute a, double *out) {
  if (auto f = dyn_cast_or_null<FloatAttr>(a)) {
    *out = f.getValueAsDouble();
    return true;
  }
  if (auto d = dyn_cast_or_null<DenseFPElementsAttr>(a))
    if (d.isSplat()) {
      *out = d.getSplatValue<APFloat>().convertToDouble();
      return true;
    }
  return false;
}

/// A 2-input contraction `acc + cast(a) * cast(b)` with one reduction loop.
bool isContraction(Operation *op, bool allowInteger) {
  auto lin = dyn_cast<linalg::LinalgOp>(op);
  if (!lin || lin.getNumDpsInputs() != 2 || lin.getNumDpsInits() != 1 ||
      lin.getNumReductionLoops() != 1 || !lin.hasPureTensorSemantics())
    return false;
  Block *body = lin.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!add || !(isa<arith::AddFOp>(add) ||
                (allowInteger && isa<arith::AddIOp>(add))))
    return false;
  BlockArgument acc = body->getArgument(2);
  Value lhs = add->getOperand(0), rhs = add->getOperand(1);
  Value prod = lhs == acc ? rhs : lhs;
  if ((lhs == acc) == (rhs == acc))
    return false;
  Operation *mul = prod.getDefiningOp();
  if (!mul || !(isa<arith::MulFOp>(mul) ||
                (allowInteger && isa<arith::MulIOp>(mul))))
    return false;
  auto strip = [](Value v) {
    if (Operation *e = v.getDefiningOp();
        e && isa<arith::ExtFOp, arith::ExtSIOp, arith::ExtUIOp>(e))
      return e->getOperand(0);
    return v;
  };
  Value a = strip(mul->getOperand(0)), b = strip(mul->getOperand(1));
  return (a == body->getArgument(0) && b == body->getArgument(1)) ||
         (a == body->getArgument(1) && b == body->getArgument(0));
}

/// True when `v` is a tensor of zeros (linalg.fill or a splat constant).
bool isZeroTensor(Value v) {
  double c;
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    Attribute a;
    return matchPattern(fill.getInputs()[0], m_Constant(&a)) &&
           isF32Const(a, &c) && c == 0.0;
  }
  Attribute a;
  return matchPattern(v, m_Constant(&a)) && isF32Const(a, &c) && c == 0.0;
}

} // namespace attnfuse::attn::raise

using namespace attnfuse::attn::raise;

SmallVector<Operation *> attnfuse::attn::findAttentionCandidates(Operation *root) {
  SmallVector<Operation *> candidates;
  root->walk([&](linalg::LinalgOp op) {
    if (!isContraction(op))
      return;
    SetVector<Operation *> back;
    BackwardSliceOptions opts;
    opts.filter = [](Operation *o) { return !isContraction(o, true); };
    for (Value in : op.getDpsInputs())
      if (Operation *def = in.getDefiningOp())
        if (!isContraction(def, true))
          (void)getBackwardSlice(def, &back, opts), back.insert(def);
    // A softmax needs an exponential and a row reduction (its sum); an
    // exponential alone (SiLU, sigmoid, GELU in an MLP) is not attention.
    bool softmax = false, exp = false, reduction = false, fromContraction = false;
    for (Operation *o : back) {
      softmax |= isa<linalg::SoftmaxOp>(o);
      if (auto lin = dyn_cast<linalg::LinalgOp>(o)) {
        exp |= llvm::any_of(lin.getBlock()->getOperations(), [](Operation &x) {
          return isa<math::ExpOp, math::Exp2Op>(x);
        });
        reduction |= lin.getNumReductionLoops() != 0;
      }
      exp |= isa<math::ExpOp, math::Exp2Op>(o);
      for (Value v : o->getOperands())
        if (Operation *d = v.getDefiningOp(); d && isContraction(d, true))
          fromContraction = true;
    }
    if ((softmax || (exp && reduction)) && fromContraction)
      candidates.push_back(op);
  });
  return candidates;
}
