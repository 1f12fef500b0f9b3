//===- Softmax.cpp - the softmax of an attention chain ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace attnfuse::attn::raise {

/// True when `t` is an integer (i1) constant equal to `value`.
static bool isIntConstTerm(Term *t, int64_t value) {
  auto i = dyn_cast_or_null<IntegerAttr>(getConstantTerm(t));
  return i && (i.getValue().getSExtValue() == value ||
               i.getValue().getZExtValue() == static_cast<uint64_t>(value));
}

/// `all_r(cast?(T[k := r]) == -inf)` with `T` = `scores`: the rows whose
/// every key is hidden.
bool Matcher::isEmptyRowTest(Term *t, Term *scores, unsigned k) {
  t = stripCasts(t);
  if (t->kind != Term::Reduce || !isa<arith::AndIOp>(t->op) ||
      !isIntConstTerm(t->args[1], 1))
    return false;
  Term *cmp = t->args[0];
  auto cmpOp = cmp->kind == Term::Op ? dyn_cast<arith::CmpFOp>(cmp->op)
                                     : arith::CmpFOp();
  if (!cmpOp || cmpOp.getPredicate() != arith::CmpFPredicate::OEQ)
    return false;
  for (int i = 0; i < 2; ++i) {
    double c;
    if (!isConstTerm(cmp->args[1 - i], &c) || !std::isinf(c) || c > 0)
      continue;
    TermEq eq{{{t->dim, k}}, ctx, sizes};
    if (eq.eq(stripCasts(cmp->args[i]), scores))
      return true;
  }
  return false;
}

/// `isnan(p)`: `cmpf une|uno (p, p)`.
static bool isNaNTest(Term *t, Term *p, MLIRContext *ctx) {
  auto cmp = t->kind == Term::Op ? dyn_cast<arith::CmpFOp>(t->op)
                                 : arith::CmpFOp();
  if (!cmp || (cmp.getPredicate() != arith::CmpFPredicate::UNE &&
               cmp.getPredicate() != arith::CmpFPredicate::UNO))
    return false;
  TermEq eq{DenseMap<unsigned, unsigned>(), ctx};
  return eq.eq(t->args[0], p) && eq.eq(t->args[1], p);
}

/// P = select(all_k(T == -inf), 0, P') (torch's `_safe_softmax`) or
/// select(isnan(P'), 0, P') (its ONNX export), or P'. Both zero the rows
/// whose every key is hidden, which is the op's rule (Raising.md says what
/// the second does with NaN inputs).
LogicalResult Matcher::matchSoftmax(Term *p, Chain &chain) {
  p = stripCasts(p);
  double zero;
  Term *emptyRows = nullptr;
  if (isOp<arith::SelectOp>(p) && isConstTerm(p->args[1], &zero) &&
      zero == 0.0) {
    emptyRows = p->args[0];
    p = p->args[2];
    if (isNaNTest(emptyRows, p, ctx))
      emptyRows = nullptr;
  }
  if (failed(matchNormalization(p, chain)))
    return failure();
  if (emptyRows && !isEmptyRowTest(emptyRows, chain.scores, chain.kDim))
    return fail(p->kind == Term::Op ? p->op->getParentOp()
                                    : chain.c2.getOperation(),
                "no-softmax",
                "the probabilities are zeroed where a condition holds that "
                "is not `every score of the row is -inf`");
  return success();
}

/// P = cast?(E / L | E * (1 / L) | softmax_k(T)), L = sum_k E,
/// E = exp(X) | exp2(X * log2(e)), X = T - max_k T | T.
LogicalResult Matcher::matchNormalization(Term *p, Chain &chain) {
  Operation *c2op = chain.c2.getOperation();
  p = stripCasts(p);
  unsigned k = chain.kDim;
  if (p->kind == Term::Softmax) {
    if (p->dim != k)
      return fail(p->op, "softmax-axis",
                  "the softmax axis is not the reduction axis of the second "
                  "contraction (the key axis)");
    chain.scores = p->args[0];
    return success();
  }
  // Find the normalization E * R or E / L.
  Term *e = nullptr, *l = nullptr;
  auto isRowSum = [&](Term *t) {
    t = stripCasts(t);
    return t->kind == Term::Reduce && isa<arith::AddFOp>(t->op);
  };
  double one;
  if (isOp<arith::DivFOp>(p) && isRowSum(p->args[1])) {
    e = p->args[0];
    l = stripCasts(p->args[1]);
  } else if (isOp<arith::MulFOp>(p)) {
    for (int i = 0; i < 2 && !e; ++i) {
      Term *r = stripCasts(p->args[1 - i]);
      if (isOp<arith::DivFOp>(r) && isConstTerm(r->args[0], &one) &&
          one == 1.0 && isRowSum(r->args[1])) {
        e = p->args[i];
        l = stripCasts(r->args[1]);
      }
    }
  }
  if (!e) {
    Operation *at = p->kind == Term::Op ? p->op->getParentOp() : c2op;
    // P * mask * c (or a select on a mask) over a softmax: dropout with a
    // mask from outside.
    std::function<bool(Term *)> foreignMask = [&](Term *t) -> bool {
      t = stripCasts(t);
      if (!isOp<arith::MulFOp, arith::SelectOp>(t))
        return false;
      for (Term *a : t->args) {
        Term *x = stripCasts(a);
        if ((x->kind == Term::Leaf && x->tensor != scoresValue) ||
            foreignMask(x))
          return true;
      }
      return false;
    };
    if (foreignMask(p)) {
      // What multiplies or selects the probabilities: a runtime tensor is
      // dropout; a constant (a splat scale, a constant mask) changes them
      // after the normalization, which the op never does.
      bool runtime = false;
      std::function<void(Term *)> scan = [&](Term *t) {
        t = stripCasts(t);
        if (t->kind == Term::Leaf && t->tensor != scoresValue &&
            !getSplatLeaf(t) && !matchPattern(t->tensor, m_Constant()))
          runtime = true;
        if (isOp<arith::MulFOp, arith::SelectOp>(t))
          for (Term *a : t->args)
            scan(a);
      };
      scan(p);
      if (!runtime)
        return fail(at, "after-softmax",
                    "the probabilities are scaled or masked after the "
                    "softmax (attn.attention masks and scales before it)");
      return fail(at, "external-dropout",
                  "dropout with an external mask tensor cannot be carried "
                  "(attn.attention regenerates its mask from a seed)");
    }
    return fail(at, "no-softmax",
                "the probabilities are not a softmax (a quotient by a row "
                "sum of exponentials)");
  }
  Operation *sumAt = l->op->getParentOp();
  double zero;
  if (!isConstTerm(l->args[1], &zero) || zero != 0.0)
    return fail(sumAt, "softmax-sum", "the softmax sum does not start at 0");
  // Casts around the summed exponentials (a bf16 numerator summed in an f32
  // accumulator) only round; the op sums in f32.
  TermEq sumEq{{{l->dim, k}}, ctx, sizes};
  if (!sumEq.eq(stripCasts(l->args[0]), stripCasts(e)))
    return fail(sumAt, "softmax-axis",
                "the softmax sum does not reduce the exponentials over the "
                "key axis (the reduction axis of the second contraction)");
  // E = exp(X) | exp2(X * c) with c = log2(e).
  Term *x = nullptr;
  Term *ex = stripCasts(e);
  if (isOp<math::ExpOp>(ex)) {
    x = ex->args[0];
  } else if (isOp<math::Exp2Op>(ex) && isOp<arith::MulFOp>(ex->args[0])) {
    double c;
    for (int i = 0; i < 2 && !x; ++i)
      if (isConstTerm(ex->args[0]->args[1 - i], &c) &&
          std::abs(c - M_LOG2E) <= 1e-6 * M_LOG2E)
        x = ex->args[0]->args[i];
  }
  if (!x)
    return fail(ex->kind == Term::Op ? ex->op->getParentOp() : c2op,
                "softmax-exp",
                "the softmax numerator is not exp(x) or exp2(x * log2(e))");
  // X = T - max_k T, or T alone.
  chain.scores = x;
  chain.rowSum = l;
  chain.rowMax = nullptr;
  if (isOp<arith::SubFOp>(x)) {
    Term *m = stripCasts(x->args[1]);
    if (m->kind == Term::Reduce &&
        isa<arith::MaximumFOp, arith::MaxNumFOp>(m->op)) {
      Operation *maxAt = m->op->getParentOp();
      // Starting at -inf, or at or below the lowest finite value the maxed
      // values can take (-65504 for scores in f16), gives the same max
      // (except for rows of -inf, where both paths give the empty-row rule).
      double init, largest = std::numeric_limits<double>::infinity();
      for (Term *t = m->args[0];; t = t->args[0]) {
        if (auto f = dyn_cast<FloatType>(t->type))
          largest = std::min(largest, APFloat::getLargest(f.getFloatSemantics())
                                          .convertToDouble());
        if (!isOp<arith::ExtFOp, arith::TruncFOp>(t))
          break;
      }
      if (!isConstTerm(m->args[1], &init) || !(init <= -largest))
        return fail(maxAt, "softmax-max",
                    "the softmax max does not start at -inf or the lowest "
                    "finite value of the scores' type");
      TermEq maxEq{{{m->dim, k}}, ctx, sizes};
      if (!maxEq.eq(m->args[0], x->args[0]))
        return fail(maxAt, "softmax-axis",
                    "the softmax max is not taken over the key axis of the "
                    "same scores");
      chain.scores = x->args[0];
      chain.rowMax = m;
    }
  }
  return success();
}

} // namespace attnfuse::attn::raise
