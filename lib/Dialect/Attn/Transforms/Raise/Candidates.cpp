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

namespace attnfuse::attn::raise {

/// What a value computes from, up to (not through) the contractions: the ops
/// of its backward slice, values used inside bodies included (a broadcast
/// written as `tensor.extract` in a generic without inputs, as torch-mlir
/// emits for runtime sizes, reads its source from above).
static SetVector<Operation *> sliceToContractions(Value v) {
  SetVector<Operation *> back;
  Operation *def = v.getDefiningOp();
  if (!def || isContraction(def, true))
    return back;
  BackwardSliceOptions opts;
  opts.omitUsesFromAbove = false;
  opts.filter = [](Operation *o) { return !isContraction(o, true); };
  (void)getBackwardSlice(def, &back, opts);
  back.insert(def);
  return back;
}

bool isSoftmaxOfContraction(Value v) {
  // A softmax needs an exponential and a row reduction (its sum); an
  // exponential alone (SiLU, sigmoid, GELU in an MLP) is not attention.
  bool softmax = false, exp = false, reduction = false, fromContraction = false;
  for (Operation *o : sliceToContractions(v)) {
    softmax |= isa<linalg::SoftmaxOp>(o);
    if (auto lin = dyn_cast<linalg::LinalgOp>(o)) {
      exp |= llvm::any_of(lin.getBlock()->getOperations(), [](Operation &x) {
        return isa<math::ExpOp, math::Exp2Op>(x);
      });
      reduction |= lin.getNumReductionLoops() != 0;
    }
    exp |= isa<math::ExpOp, math::Exp2Op>(o);
    for (Value x : o->getOperands())
      if (Operation *d = x.getDefiningOp(); d && isContraction(d, true))
        fromContraction = true;
    o->walk([&](Operation *inner) {
      for (Value x : inner->getOperands())
        if (Operation *d = x.getDefiningOp();
            d && d->getBlock() == o->getBlock() && isContraction(d, true))
          fromContraction = true;
    });
  }
  return (softmax || (exp && reduction)) && fromContraction;
}

} // namespace attnfuse::attn::raise

SmallVector<Operation *> attnfuse::attn::findAttentionCandidates(Operation *root) {
  SmallVector<Operation *> candidates;
  root->walk([&](linalg::LinalgOp op) {
    if (isContraction(op) && llvm::any_of(op.getDpsInputs(), [](Value in) {
          return isSoftmaxOfContraction(in);
        }))
      candidates.push_back(op);
  });
  return candidates;
}
