//===- Scores.cpp - the score pipeline of an attention chain ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace attnfuse::attn::raise {

/// Checks that `access` only uses the score's coordinates (b, h, q, k).
LogicalResult Matcher::checkScoreCoordinates(AffineMap access, Chain &chain,
                                             Operation *at) {
  for (AffineExpr e : access.getResults())
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (usesDim(e, d) && !llvm::is_contained(chain.rows, d) &&
          d != chain.kDim)
        return fail(at, "not-pointwise",
                    "a score term uses a coordinate that is not one of the "
                    "score's");
  return success();
}

/// Checks that `t` can be the score_mod region: pointwise in the scores,
/// reading no tensor but the scores (at the element being computed).
LogicalResult Matcher::checkRegion(Term *t, Chain &chain, Operation *at) {
  switch (t->kind) {
  case Term::Leaf: {
    if (t->tensor == scoresValue) {
      if (t->access != scoresAccess)
        return fail(at, "not-pointwise",
                    "a score term reads another element of the score matrix");
      return success();
    }
    if (isScalarLeaf(t))
      return success();
    // Another tensor read at the score's coordinates (a second bias, a
    // weight, a mask under the bias): the region reads it where the graph
    // does.
    if (failed(checkScoreCoordinates(t->access, chain, at)))
      return failure();
    return success();
  }
  case Term::Index:
    return checkScoreCoordinates(
        AffineMap::get(kMaxDims, 0, t->index), chain, at);
  case Term::Scalar:
    return success();
  case Term::Reduce:
  case Term::Softmax:
    return fail(t->op->getParentOp() ? t->op->getParentOp() : at,
                "not-pointwise",
                "a score term is a reduction over the scores (not pointwise)");
  case Term::Op:
    for (Term *a : t->args)
      if (failed(checkRegion(a, chain, t->op->getParentOp())))
        return failure();
    return success();
  }
  return success();
}

/// Recognizes an index-only condition `k - q <= R` (and/or `k - q >= -L`) as
/// a structural mask.
LogicalResult Matcher::matchStructuralMask(Term *cond, Chain &chain) {
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  int64_t lo = -kInf, hi = kInf; // bounds on rel = k - q
  std::function<bool(Term *)> addConstraint = [&](Term *c) -> bool {
    if (isOp<arith::AndIOp>(c))
      return addConstraint(c->args[0]) && addConstraint(c->args[1]);
    auto cmp = c->kind == Term::Op ? dyn_cast<arith::CmpIOp>(c->op) : nullptr;
    if (!cmp)
      return false;
    // An integer term of index arithmetic as an affine expression.
    std::function<AffineExpr(Term *)> affine = [&](Term *t) -> AffineExpr {
      if (isOp<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(t))
        return affine(t->args[0]);
      if (t->kind == Term::Index)
        return t->index;
      if (isOp<arith::AddIOp, arith::SubIOp, arith::MulIOp>(t)) {
        AffineExpr l = affine(t->args[0]), r = affine(t->args[1]);
        if (!l || !r)
          return AffineExpr();
        if (isa<arith::AddIOp>(t->op))
          return l + r;
        if (isa<arith::SubIOp>(t->op))
          return l - r;
        if (!isa<AffineConstantExpr>(l) && !isa<AffineConstantExpr>(r))
          return AffineExpr();
        return l * r;
      }
      Attribute a;
      Operation *def = t->kind == Term::Op ? t->op
                       : t->kind == Term::Scalar ? t->scalar.getDefiningOp()
                                                 : nullptr;
      if (def && matchPattern(def, m_Constant(&a)))
        if (auto i = dyn_cast<IntegerAttr>(a))
          return getAffineConstantExpr(i.getInt(), ctx);
      return AffineExpr();
    };
    AffineExpr l = affine(c->args[0]), r = affine(c->args[1]);
    if (!l || !r || !chain.qDim)
      return false;
    // diff = l - r = a * (k - q) + c0 with a = +-1.
    AffineExpr diff = simplify(l - r);
    AffineExpr kE = getAffineDimExpr(chain.kDim, ctx),
               qE = getAffineDimExpr(*chain.qDim, ctx);
    int64_t sign = 0;
    for (int64_t s : {1, -1}) {
      AffineExpr rest = simplify(diff - (kE - qE) * s);
      if (auto cst = dyn_cast<AffineConstantExpr>(rest)) {
        sign = s;
        int64_t c0 = cst.getValue();
        // diff = sign * rel + c0; predicate on diff vs 0.
        using P = arith::CmpIPredicate;
        P pred = cmp.getPredicate();
        if (sign < 0) // -rel + c0 <op> 0  <=>  rel <swapped op> c0
          pred = pred == P::slt   ? P::sgt
                 : pred == P::sle ? P::sge
                 : pred == P::sgt ? P::slt
                 : pred == P::sge ? P::sle
                                  : pred;
        int64_t bound = sign < 0 ? c0 : -c0; // rel <op> bound
        switch (pred) {
        case P::sle: hi = std::min(hi, bound); return true;
        case P::slt: hi = std::min(hi, bound - 1); return true;
        case P::sge: lo = std::max(lo, bound); return true;
        case P::sgt: lo = std::max(lo, bound + 1); return true;
        default: return false;
        }
      }
    }
    return false;
  };
  if (!addConstraint(cond))
    return failure();
  int64_t nq = size(*chain.qDim), nk = size(chain.kDim);
  // rel = k - q in [lo, hi]. top_left: window (-lo, hi) with offset 0;
  // bottom_right: rel' = rel - (nk - nq) in [lo - off, hi - off].
  // Prefer a causal mask in either alignment, then a window.
  for (int pass = 0; pass < 2; ++pass)
  for (MaskAlignment al : {MaskAlignment::top_left, MaskAlignment::bottom_right}) {
    int64_t off = al == MaskAlignment::bottom_right ? nk - nq : 0;
    int64_t l = lo == -kInf ? kInf : off - lo;
    int64_t r = hi == kInf ? kInf : hi - off;
    if (l < 0 || r < 0)
      continue;
    if (al == MaskAlignment::bottom_right && off == 0)
      continue;
    if (pass == 0 && !(l == kInf && r == 0))
      continue;
    chain.alignment = al;
    if (l == kInf && r == 0) {
      chain.mask = MaskKind::causal;
    } else {
      chain.mask = MaskKind::sliding_window;
      // An unbounded side is exactly a bound past the sequence.
      chain.windowLeft = l == kInf ? nq + nk : l;
      chain.windowRight = r == kInf ? nq + nk : r;
    }
    return success();
  }
  return failure();
}

/// T = select(keep | structural, T', -inf) ... ; T' = R + bias | R.
LogicalResult Matcher::splitScores(Chain &chain) {
  Term *t = chain.scores;
  Operation *c2op = chain.c2.getOperation();
  auto atOf = [&](Term *x) {
    return x->kind == Term::Op ? x->op->getParentOp() : c2op;
  };
  auto isNegInf = [](Term *x) {
    double c;
    return isConstTerm(x, &c) && std::isinf(c) && c < 0;
  };
  // Selects with -inf at the top (applied last): keep mask or structural.
  while (true) {
    Term *s = stripCasts(t);
    if (!isOp<arith::SelectOp>(s) || !isNegInf(stripCasts(s->args[2])))
      break;
    Term *cond = s->args[0];
    bool indexOnly = !readsScores(cond, scoresValue);
    std::function<bool(Term *)> noTensor = [&](Term *x) {
      if (x->kind == Term::Leaf)
        return false;
      return llvm::all_of(x->args, noTensor);
    };
    if (cond->kind == Term::Leaf && cond->tensor != scoresValue &&
        !chain.keep) {
      chain.keep = cond;
    } else if (indexOnly && noTensor(cond) && chain.mask == MaskKind::none &&
               succeeded(matchStructuralMask(cond, chain))) {
    } else {
      break;
    }
    t = s->args[1];
  }
  // The bias: T' = R + f(bias) with bias a tensor not reading the scores.
  Term *s = stripCasts(t);
  if (isOp<arith::AddFOp>(s)) {
    for (int i = 0; i < 2; ++i) {
      Term *b = s->args[1 - i];
      Term *bl = b;
      while (isOp<arith::ExtFOp>(bl))
        bl = bl->args[0];
      if (bl->kind == Term::Leaf && bl->tensor != scoresValue &&
          !isScalarLeaf(bl)) {
        chain.bias = bl;
        t = s->args[i];
        break;
      }
    }
  }
  // Bias and keep mask are read at score coordinates only.
  for (Term *side : {chain.bias, chain.keep}) {
    if (!side)
      continue;
    for (AffineExpr e : side->access.getResults())
      for (unsigned d = 0; d < kMaxDims; ++d)
        if (usesDim(e, d) && d != chain.kDim &&
            !(chain.bDim && d == *chain.bDim) &&
            !(chain.hDim && d == *chain.hDim) &&
            !(chain.qDim && d == *chain.qDim))
          return fail(atOf(chain.scores), "score-tensor",
                      "a bias or mask is read at a coordinate that is not "
                      "one of the score's");
  }
  // Anything else is the region; a keep mask below the bias cannot move.
  if (failed(checkRegion(t, chain, atOf(t))))
    return failure();
  // Leading f32 multiply by a constant is the op's scale.
  if (isOp<arith::MulFOp>(t) && t->type.isF32()) {
    for (int i = 0; i < 2; ++i) {
      double c;
      Term *sc = t->args[i];
      if (sc->kind == Term::Leaf && sc->tensor == scoresValue &&
          isConstTerm(t->args[1 - i], &c) && std::isfinite(c)) {
        chain.scale = APFloat(static_cast<float>(c));
        t = sc;
        break;
      }
    }
  }
  chain.region = t;
  if (!t->type.isF32() && !t->type.isF16() && !t->type.isBF16())
    return fail(atOf(t), "element-type", "the scores are not f16, bf16 or f32");
  return success();
}

} // namespace attnfuse::attn::raise
