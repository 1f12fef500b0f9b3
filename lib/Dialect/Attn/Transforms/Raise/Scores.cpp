//===- Scores.cpp - the score pipeline of an attention chain ===//
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

LogicalResult Matcher::setStructuralMask(Window w, bool exact, Chain &chain) {
  w = normalize(w);
  chain.mask = MaskKind::none;
  chain.alignment = MaskAlignment::top_left;
  if (w.isFull())
    return success();
  if (w.isEmpty())
    return failure(exact); // no mask attribute hides every key
  int64_t nq = chain.qDim ? size(*chain.qDim) : 1, nk = size(chain.kDim);
  // rel = k - q in [lo, hi]. top_left: window (-lo, hi) with offset 0;
  // bottom_right: rel - (nk - nq) in [lo - off, hi - off]. Prefer a causal
  // mask in either alignment, then a window.
  for (int pass = 0; pass < 3; ++pass)
    for (MaskAlignment al :
         {MaskAlignment::top_left, MaskAlignment::bottom_right}) {
      // Bottom-right alignment states an offset Nk - Nq that the graph's
      // constant window can only express for static lengths; with key
      // lengths the op's offset would follow them, the graph's does not.
      bool lengthsStatic =
          !ShapedType::isDynamic(nq) && !ShapedType::isDynamic(nk);
      if (al == MaskAlignment::bottom_right &&
          (!lengthsStatic || chain.keyLengths))
        continue;
      int64_t off = al == MaskAlignment::bottom_right ? nk - nq : 0;
      if (al == MaskAlignment::bottom_right && off == 0)
        continue;
      // An implied window may be widened to one the op states (it still
      // shows every key the graph shows; the graph hides the rest itself).
      int64_t lo = w.lo, hi = w.hi;
      if (pass == 2) {
        if (exact || al != MaskAlignment::top_left)
          continue;
        lo = std::min<int64_t>(lo, 0);
        hi = std::max<int64_t>(hi, 0);
      }
      int64_t l = lo == -kUnbounded ? kUnbounded : off - lo;
      int64_t r = hi == kUnbounded ? kUnbounded : hi - off;
      if (l < 0 || r < 0)
        continue;
      bool causal = l == kUnbounded && r == 0;
      if (pass == 0 && !causal)
        continue;
      chain.alignment = al;
      if (causal) {
        chain.mask = MaskKind::causal;
      } else {
        chain.mask = MaskKind::sliding_window;
        // An unbounded side is exactly a bound past the sequence.
        chain.windowLeft = l == kUnbounded ? nq + nk : l;
        chain.windowRight = r == kUnbounded ? nq + nk : r;
      }
      return success();
    }
  return failure();
}

bool Matcher::isFiniteScoreFunction(Term *t) {
  double c;
  switch (t->kind) {
  case Term::Leaf:
    if (t->tensor == scoresValue)
      return true;
    [[fallthrough]];
  case Term::Scalar:
    return isConstTerm(t, &c) && std::isfinite(c);
  case Term::Index:
    return true;
  case Term::Reduce:
  case Term::Softmax:
    return false;
  case Term::Op:
    if (isConstTerm(t, &c))
      return std::isfinite(c);
    if (getConstantTerm(t))
      return isa<IntegerAttr>(getConstantTerm(t));
    if (isOp<arith::DivFOp>(t))
      return isFiniteScoreFunction(t->args[0]) &&
             isConstTerm(t->args[1], &c) && std::isfinite(c) && c != 0.0;
    if (!isOp<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp,
              arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
              arith::MinNumFOp, arith::ExtFOp, arith::TruncFOp,
              arith::SIToFPOp, arith::UIToFPOp, arith::IndexCastOp,
              arith::IndexCastUIOp, arith::AddIOp, arith::SubIOp,
              arith::MulIOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
              math::TanhOp>(t))
      return false;
    return llvm::all_of(t->args,
                        [&](Term *a) { return isFiniteScoreFunction(a); });
  }
  return false;
}

/// Tries the split with as many masks dropped for the structural mask as is
/// exact, then fewer: `MaskDrop::None` is the split without (structural
/// masks only where the graph's own -inf implies them).
LogicalResult Matcher::splitScores(Chain &chain) {
  current = &chain;
  RaiseFailure saved = why;
  // A padding mask from sequence lengths as key lengths first; without,
  // where the chain then fits no structural mask the op states.
  for (bool lengths : {true, false}) {
    allowKeyLengths = lengths;
    for (MaskDrop drop : {MaskDrop::All, MaskDrop::NegInf, MaskDrop::None}) {
      why = saved;
      if (succeeded(splitScores(chain, drop)))
        return success();
    }
  }
  return failure();
}

/// T = select(keep | mask, T', hidden) ... ; T' = R + mask ... + bias | R.
LogicalResult Matcher::splitScores(Chain &chain, MaskDrop drop) {
  chain.region = nullptr;
  chain.scale.reset();
  chain.bias = chain.keep = nullptr;
  chain.keyLengths = nullptr;
  chain.mask = MaskKind::none;
  chain.alignment = MaskAlignment::top_left;
  chain.windowLeft = chain.windowRight = 0;
  chain.droppedMasks = 0;
  Term *t = chain.scores;
  Operation *c2op = chain.c2.getOperation();
  auto atOf = [&](Term *x) {
    return x->kind == Term::Op ? x->op->getParentOp() : c2op;
  };
  // Where the graph's scores are -inf whatever else holds: the structural
  // mask may hide that (implied), the terms stay.
  Window implied = impliedWindow(t);
  // The windows of the mask terms dropped: exactly 0 on the window and
  // hidden outside it.
  Window dropped;
  bool finiteDropped = false;
  auto dropMask = [&](const MaskInfo &mi) {
    if (!mi.pure || drop == MaskDrop::None ||
        (mi.finite && drop != MaskDrop::All))
      return false;
    dropped = intersect(dropped, mi.vis);
    finiteDropped |= mi.finite;
    ++chain.droppedMasks;
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    Term *s = stripCasts(t);
    // select(c, T', hidden) or select(c, hidden, T'), applied last.
    if (isOp<arith::SelectOp>(s)) {
      bool finite = false;
      int hiddenArg = isHiddenValue(s->args[2], &finite)   ? 2
                      : isHiddenValue(s->args[1], &finite) ? 1
                                                           : 0;
      Term *cond = s->args[0];
      if (hiddenArg && !readsScores(cond, scoresValue)) {
        Term *rest = s->args[hiddenArg == 2 ? 1 : 2];
        // -inf past a per-batch length: the op's key lengths; and'ed with
        // a window (causal AND padding), the window dropped as well.
        if (allowKeyLengths && !finite && !chain.keyLengths) {
          bool negate = hiddenArg == 1;
          if (Term *len = keyLengthBound(cond, negate)) {
            chain.keyLengths = len;
            t = rest;
            changed = true;
            continue;
          }
          Term *c = cond;
          for (Term *p; c->kind == Term::Leaf && (p = traceProducer(c)) != c;)
            c = p;
          // Shown where both show: a AND b, or NOT(a OR b) of hiding ones.
          if (isOp<arith::AndIOp, arith::OrIOp>(c) &&
              isa<arith::AndIOp>(c->op) != negate) {
            for (int i = 0; i < 2 && !changed; ++i) {
              Term *len = keyLengthBound(c->args[i], negate);
              if (!len)
                continue;
              Window w = condWindow(c->args[1 - i], negate);
              if (dropMask(MaskInfo{w, w.exact, finite})) {
                chain.keyLengths = len;
                t = rest;
                changed = true;
              }
            }
            if (changed)
              continue;
          }
        }
        Window w = condWindow(cond, /*negate=*/hiddenArg == 1);
        if (dropMask(MaskInfo{w, w.exact, finite})) {
          t = rest;
          changed = true;
          continue;
        }
        // A boolean tensor, -inf where it is false: the keep mask.
        if (!finite && hiddenArg == 2 && cond->kind == Term::Leaf &&
            cond->tensor != scoresValue && !chain.keep) {
          chain.keep = cond;
          t = rest;
          changed = true;
          continue;
        }
      }
    }
    // T' + m with m a mask: 0 where it shows, hidden elsewhere (or -inf
    // past a per-batch length: the key lengths).
    if (isOp<arith::AddFOp>(s)) {
      for (int i = 0; i < 2 && !changed; ++i) {
        Term *m = s->args[1 - i];
        if (readsScores(m, scoresValue))
          continue;
        if (allowKeyLengths && !chain.keyLengths)
          if (Term *len = keyLengthMask(m)) {
            chain.keyLengths = len;
            t = s->args[i];
            changed = true;
            continue;
          }
        if (dropMask(maskInfo(m))) {
          t = s->args[i];
          changed = true;
        }
      }
    }
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
  // A large negative hidden value is -inf only where the row's max comes
  // from a visible finite score (exp underflows to exactly 0): every row
  // must see a key, and nothing left (a keep mask, a bias, a tensor in the
  // region) may hide the keys the dropped masks show.
  if (finiteDropped) {
    Window w = normalize(intersect(dropped, implied));
    int64_t nq = chain.qDim ? size(*chain.qDim) : 1, nk = size(chain.kDim);
    // With a runtime length: only a window that shows each row's own
    // position and everything before it (key 0 included).
    bool dynamicLengths =
        ShapedType::isDynamic(nq) || ShapedType::isDynamic(nk);
    bool everyRowSeesAKey =
        !w.isEmpty() && w.hi >= 0 &&
        (w.lo == -kUnbounded || (!dynamicLengths && w.lo <= nk - nq));
    if (!everyRowSeesAKey || chain.keep || chain.bias ||
        !isFiniteScoreFunction(chain.region))
      return failure();
  }
  if (chain.droppedMasks == 0)
    return setStructuralMask(implied, /*exact=*/false, chain);
  // The op must hide what the dropped masks hid, and may hide what the
  // graph hides anyway.
  if (succeeded(setStructuralMask(intersect(dropped, implied), true, chain)) ||
      succeeded(setStructuralMask(dropped, true, chain)))
    return success();
  return failure();
}

} // namespace attnfuse::attn::raise
