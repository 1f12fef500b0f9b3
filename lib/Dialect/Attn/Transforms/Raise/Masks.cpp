//===- Masks.cpp - which (q, k) a mask hides ===//
//
// The structural mask of attn.attention hides (q, k) outside a window on
// rel = k - q (docs/Semantics.md). The frontends write masks as index
// arithmetic (`linalg.index`, iota and `arange` constants, `k <= q + past`,
// `|q - k| <= w`), as constant mask tensors (a causal `tril`, a 0/-10000
// table), or as tensors computed from those (a boolean mask converted to an
// additive 0/-inf or 0/finfo.min tensor, and'ed with a padding mask). Here
// every such term is described as a Window: where it provably shows keys
// (`exact`: iff), over the ranges of the score's coordinates.
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;

namespace attnfuse::attn::raise {

using Pred = arith::CmpIPredicate;

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

Window Matcher::normalize(Window w) const {
  int64_t nq = current->qDim ? size(*current->qDim) : 1;
  int64_t nk = size(current->kDim);
  if (w.lo > w.hi)
    return Window::empty();
  // With a runtime length only the window's own bounds are known.
  if (ShapedType::isDynamic(nq) || ShapedType::isDynamic(nk))
    return w;
  // rel = k - q takes the values [-(nq - 1), nk - 1].
  if ( (w.lo != -kUnbounded && w.lo > nk - 1) ||
      (w.hi != kUnbounded && w.hi < -(nq - 1)))
    return Window::empty();
  if (w.lo <= -(nq - 1))
    w.lo = -kUnbounded;
  if (w.hi >= nk - 1)
    w.hi = kUnbounded;
  return w;
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

/// `e` as sum_d coef[d] * d + c; false when it is not linear.
static bool linearize(AffineExpr e, int64_t mult,
                      SmallVectorImpl<int64_t> &coef, int64_t &c) {
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    coef[d.getPosition()] += mult;
    return true;
  }
  if (auto k = dyn_cast<AffineConstantExpr>(e)) {
    c += mult * k.getValue();
    return true;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return false;
  if (bin.getKind() == AffineExprKind::Add)
    return linearize(bin.getLHS(), mult, coef, c) &&
           linearize(bin.getRHS(), mult, coef, c);
  if (bin.getKind() == AffineExprKind::Mul) {
    if (auto k = dyn_cast<AffineConstantExpr>(bin.getRHS()))
      return linearize(bin.getLHS(), mult * k.getValue(), coef, c);
    if (auto k = dyn_cast<AffineConstantExpr>(bin.getLHS()))
      return linearize(bin.getRHS(), mult * k.getValue(), coef, c);
  }
  return false;
}

/// Whether `v pred 0` holds for every v in [lo, hi] (true), for none (false).
static std::optional<bool> holdsOnRange(Pred pred, int64_t lo, int64_t hi) {
  switch (pred) {
  case Pred::sle:
    return hi <= 0  ? std::optional(true)
           : lo > 0 ? std::optional(false)
                    : std::nullopt;
  case Pred::slt:
    return hi < 0    ? std::optional(true)
           : lo >= 0 ? std::optional(false)
                     : std::nullopt;
  case Pred::sge:
    return lo >= 0  ? std::optional(true)
           : hi < 0 ? std::optional(false)
                    : std::nullopt;
  case Pred::sgt:
    return lo > 0    ? std::optional(true)
           : hi <= 0 ? std::optional(false)
                     : std::nullopt;
  case Pred::eq:
    return lo == 0 && hi == 0 ? std::optional(true)
           : lo > 0 || hi < 0 ? std::optional(false)
                              : std::nullopt;
  case Pred::ne:
    return lo > 0 || hi < 0     ? std::optional(true)
           : lo == 0 && hi == 0 ? std::optional(false)
                                : std::nullopt;
  default:
    return std::nullopt;
  }
}

static Pred swapSides(Pred p) {
  switch (p) {
  case Pred::slt:
    return Pred::sgt;
  case Pred::sle:
    return Pred::sge;
  case Pred::sgt:
    return Pred::slt;
  case Pred::sge:
    return Pred::sle;
  case Pred::ult:
    return Pred::ugt;
  case Pred::ule:
    return Pred::uge;
  case Pred::ugt:
    return Pred::ult;
  case Pred::uge:
    return Pred::ule;
  default:
    return p;
  }
}

static Pred toSigned(Pred p) {
  switch (p) {
  case Pred::ult:
    return Pred::slt;
  case Pred::ule:
    return Pred::sle;
  case Pred::ugt:
    return Pred::sgt;
  case Pred::uge:
    return Pred::sge;
  default:
    return p;
  }
}

static bool isUnsigned(Pred p) {
  return p == Pred::ult || p == Pred::ule || p == Pred::ugt || p == Pred::uge;
}

Window Matcher::linearWindow(AffineExpr e, Pred pred) {
  Chain &chain = *current;
  e = simplify(e);
  SmallVector<int64_t> coef(kMaxDims, 0);
  int64_t c = 0;
  if (linearize(e, 1, coef, c)) {
    // A coordinate of size 1 is 0.
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (d < sizes.size() && sizes[d] == 1)
        coef[d] = 0;
    unsigned k = chain.kDim;
    int64_t a = coef[k], b = chain.qDim ? coef[*chain.qDim] : 0;
    bool others = false;
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (coef[d] != 0 && d != k && !(chain.qDim && d == *chain.qDim))
        others = true;
    // e = s * (k - q) + c: a bound on rel. (A coordinate of size 1 has
    // coefficient 0 here: with q of size 1, k alone is k - q.)
    bool qUnit = !chain.qDim || size(*chain.qDim) == 1;
    bool kUnit = size(k) == 1;
    int64_t s = 0;
    if (!others) {
      if (a != 0 && b != 0) {
        if ((a == 1 || a == -1) && b == -a)
          s = a;
      } else if (a != 0) {
        if ((a == 1 || a == -1) && qUnit)
          s = a;
      } else if (b != 0) {
        if ((b == 1 || b == -1) && kUnit)
          s = -b;
      }
    }
    if (s != 0) {
      // s * rel + c pred 0  <=>  rel pred' bound.
      Pred p = s > 0 ? pred : swapSides(pred);
      int64_t bound = s > 0 ? -c : c;
      Window w;
      switch (p) {
      case Pred::sle:
        w.hi = bound;
        break;
      case Pred::slt:
        w.hi = bound - 1;
        break;
      case Pred::sge:
        w.lo = bound;
        break;
      case Pred::sgt:
        w.lo = bound + 1;
        break;
      case Pred::eq:
        w.lo = w.hi = bound;
        break;
      case Pred::ne:
        return normalize(unite(normalize(Window{-kUnbounded, bound - 1, true}),
                               normalize(Window{bound + 1, kUnbounded, true})));
      default:
        return Window::unknown();
      }
      return normalize(w);
    }
  }
  // Otherwise only a condition that holds everywhere or nowhere.
  if (auto r = rangeOf(e, sizes))
    if (std::optional<bool> h = holdsOnRange(pred, r->first, r->second))
      return *h ? Window{} : Window::empty();
  return Window::unknown();
}

/// True when every value `e` takes fits the signed range of `t`.
static bool fits(AffineExpr e, Type t, ArrayRef<int64_t> sizes) {
  unsigned w = t.isIndex() ? 64 : t.getIntOrFloatBitWidth();
  auto r = rangeOf(e, sizes);
  if (!r)
    return false;
  if (w >= 64)
    return true;
  int64_t lim = int64_t(1) << (w - 1);
  return r->first >= -lim && r->second < lim;
}

static std::optional<int64_t> intConstant(Term *t) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(getConstantTerm(t)))
    return i.getValue().getSExtValue();
  return std::nullopt;
}

/// A constant integer tensor whose elements are c + sum_j a_j * i_j (an
/// iota, an `arange`, a broadcast column of positions) read at `access`.
static AffineExpr progression(Term *leaf, MLIRContext *ctx) {
  Attribute a;
  if (!matchPattern(leaf->tensor, m_Constant(&a)))
    return AffineExpr();
  auto d = dyn_cast<DenseIntElementsAttr>(a);
  if (!d || d.getElementType().isInteger(1))
    return AffineExpr();
  ArrayRef<int64_t> shape = d.getType().getShape();
  int64_t n = d.getNumElements();
  if (n > (int64_t(1) << 22) ||
      static_cast<int64_t>(shape.size()) != leaf->access.getNumResults())
    return AffineExpr();
  SmallVector<int64_t> v;
  v.reserve(n);
  for (const APInt &x : d.getValues<APInt>())
    v.push_back(x.getSExtValue());
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t j = static_cast<int64_t>(shape.size()) - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * shape[j + 1];
  int64_t c = v[0];
  SmallVector<int64_t> step(shape.size(), 0);
  for (auto [j, s] : llvm::enumerate(shape))
    if (s > 1)
      step[j] = v[strides[j]] - c;
  for (int64_t i = 0; i < n; ++i) {
    int64_t expect = c, rest = i;
    for (auto [j, s] : llvm::enumerate(strides)) {
      expect += step[j] * (rest / s);
      rest %= s;
    }
    if (v[i] != expect)
      return AffineExpr();
  }
  AffineExpr e = getAffineConstantExpr(c, ctx);
  for (auto [j, r] : llvm::enumerate(leaf->access.getResults()))
    if (step[j] != 0)
      e = e + r * step[j];
  return simplify(e);
}

AffineExpr Matcher::intValue(Term *t) {
  if (!t->type.isIntOrIndex() || t->type.isInteger(1))
    return AffineExpr();
  if (t->kind == Term::Index)
    return t->index;
  if (std::optional<int64_t> c = intConstant(t))
    return getAffineConstantExpr(*c, ctx);
  if (t->kind == Term::Leaf) {
    if (AffineExpr e = progression(t, ctx))
      return e;
    Term *p = traceProducer(t);
    return p != t ? intValue(p) : AffineExpr();
  }
  if (t->kind != Term::Op)
    return AffineExpr();
  if (isOp<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
           arith::ExtUIOp, arith::TruncIOp>(t)) {
    AffineExpr x = intValue(t->args[0]);
    if (!x || !fits(x, t->args[0]->type, sizes) || !fits(x, t->type, sizes))
      return AffineExpr();
    // A zero extension of a negative value would not be the same number.
    if (isOp<arith::IndexCastUIOp, arith::ExtUIOp>(t) &&
        rangeOf(x, sizes)->first < 0)
      return AffineExpr();
    return x;
  }
  if (isOp<arith::AddIOp, arith::SubIOp, arith::MulIOp>(t)) {
    AffineExpr l = intValue(t->args[0]), r = intValue(t->args[1]);
    if (!l || !r)
      return AffineExpr();
    AffineExpr e;
    if (isa<arith::AddIOp>(t->op))
      e = l + r;
    else if (isa<arith::SubIOp>(t->op))
      e = l - r;
    else if (isa<AffineConstantExpr>(l) || isa<AffineConstantExpr>(r))
      e = l * r;
    else
      return AffineExpr();
    e = simplify(e);
    return fits(e, t->type, sizes) ? e : AffineExpr();
  }
  // select(c, a, b) where c holds everywhere or nowhere (torch's wrap of
  // negative indices, `i < 0 ? i + n : i`, on positions >= 0).
  if (isOp<arith::SelectOp>(t)) {
    Window w = condWindow(t->args[0], /*negate=*/false);
    if (w.exact && w.isFull())
      return intValue(t->args[1]);
    if (w.isEmpty())
      return intValue(t->args[2]);
  }
  return AffineExpr();
}

//===----------------------------------------------------------------------===//
// Constant mask tensors
//===----------------------------------------------------------------------===//

static int64_t evalAffine(AffineExpr e, ArrayRef<int64_t> dims) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dims[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  auto bin = cast<AffineBinaryOpExpr>(e);
  int64_t l = evalAffine(bin.getLHS(), dims),
          r = evalAffine(bin.getRHS(), dims);
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return l + r;
  case AffineExprKind::Mul:
    return l * r;
  case AffineExprKind::FloorDiv:
    return llvm::divideFloorSigned(l, r);
  case AffineExprKind::CeilDiv:
    return llvm::divideCeilSigned(l, r);
  case AffineExprKind::Mod: {
    int64_t m = l % r;
    return m < 0 ? m + r : m;
  }
  default:
    return 0;
  }
}

std::optional<Window>
Matcher::constantWindow(Term *leaf, function_ref<int(int64_t)> classify,
                        bool *anyOther) {
  Chain &chain = *current;
  Attribute a;
  if (leaf->kind != Term::Leaf || !matchPattern(leaf->tensor, m_Constant(&a)))
    return std::nullopt;
  auto d = dyn_cast<DenseElementsAttr>(a);
  if (!d)
    return std::nullopt;
  ArrayRef<int64_t> shape = d.getType().getShape();
  if (static_cast<int64_t>(shape.size()) != leaf->access.getNumResults())
    return std::nullopt;
  // The coordinates to enumerate: q, k and whatever the access reads.
  SmallVector<unsigned> dims;
  if (chain.qDim)
    dims.push_back(*chain.qDim);
  dims.push_back(chain.kDim);
  for (AffineExpr e : leaf->access.getResults())
    for (unsigned x = 0; x < kMaxDims; ++x)
      if (usesDim(e, x) && !llvm::is_contained(dims, x))
        dims.push_back(x);
  int64_t total = 1;
  for (unsigned x : dims) {
    if (x >= sizes.size() || sizes[x] <= 0)
      return std::nullopt;
    total *= sizes[x];
    if (total > (int64_t(1) << 22))
      return std::nullopt;
  }
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t j = static_cast<int64_t>(shape.size()) - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * shape[j + 1];
  SmallVector<int64_t> vals(kMaxDims, 0);
  // Visits every point; returns false when an index is out of bounds.
  auto forEach = [&](function_ref<void(int64_t rel, int cls)> fn) {
    for (int64_t p = 0; p < total; ++p) {
      int64_t rest = p;
      for (unsigned x : llvm::reverse(dims)) {
        vals[x] = rest % sizes[x];
        rest /= sizes[x];
      }
      int64_t flat = 0;
      for (auto [j, e] : llvm::enumerate(leaf->access.getResults())) {
        int64_t i = evalAffine(e, vals);
        if (i < 0 || i >= shape[j])
          return false;
        flat += i * strides[j];
      }
      int64_t rel = vals[chain.kDim] - (chain.qDim ? vals[*chain.qDim] : 0);
      fn(rel, classify(d.isSplat() ? 0 : flat));
    }
    return true;
  };
  int64_t lo = kUnbounded, hi = -kUnbounded;
  *anyOther = false;
  if (!forEach([&](int64_t rel, int cls) {
        if (cls == 0) {
          lo = std::min(lo, rel);
          hi = std::max(hi, rel);
        }
        *anyOther |= cls == 2;
      }))
    return std::nullopt;
  if (lo > hi)
    return Window::empty();
  bool exact = true;
  forEach([&](int64_t rel, int cls) {
    exact &= (cls == 0) == (lo <= rel && rel <= hi);
  });
  return normalize(Window{lo, hi, exact});
}

//===----------------------------------------------------------------------===//
// Conditions
//===----------------------------------------------------------------------===//

Window Matcher::condWindow(Term *c, bool negate) {
  auto constant = [&](bool value) {
    return value != negate ? Window{} : Window::empty();
  };
  if (std::optional<int64_t> v = intConstant(c))
    if (c->type.isInteger(1))
      return constant(*v != 0);
  if (c->kind == Term::Leaf) {
    bool other;
    Attribute a;
    if (matchPattern(c->tensor, m_Constant(&a)))
      if (auto d = dyn_cast<DenseIntElementsAttr>(a);
          d && d.getElementType().isInteger(1)) {
        SmallVector<bool> v = llvm::to_vector(d.getValues<bool>());
        if (std::optional<Window> w = constantWindow(
                c, [&](int64_t i) { return v[i] != negate ? 0 : 1; }, &other))
          return *w;
        return Window::unknown();
      }
    Term *p = traceProducer(c);
    return p != c ? condWindow(p, negate) : Window::unknown();
  }
  if (c->kind != Term::Op)
    return Window::unknown();
  if (isOp<arith::AndIOp, arith::OrIOp>(c) && c->type.isInteger(1)) {
    Window a = condWindow(c->args[0], negate),
           b = condWindow(c->args[1], negate);
    bool conjunction = isa<arith::AndIOp>(c->op) != negate;
    return normalize(conjunction ? intersect(a, b) : unite(a, b));
  }
  if (isOp<arith::XOrIOp>(c) && c->type.isInteger(1)) {
    for (int i = 0; i < 2; ++i)
      if (std::optional<int64_t> v = intConstant(c->args[i]))
        return condWindow(c->args[1 - i], negate != (*v != 0));
    return Window::unknown();
  }
  if (isOp<arith::SelectOp>(c) && c->type.isInteger(1)) {
    std::optional<int64_t> a = intConstant(c->args[1]),
                           b = intConstant(c->args[2]);
    if (a && b && (*a != 0) != (*b != 0))
      return condWindow(c->args[0], negate != (*a == 0));
    return Window::unknown();
  }
  auto cmp = dyn_cast<arith::CmpIOp>(c->op);
  if (!cmp)
    return Window::unknown();
  Pred pred = cmp.getPredicate();
  Term *l = c->args[0], *r = c->args[1];
  // A boolean compared with a constant, or an extended boolean with 0.
  for (int i = 0; i < 2; ++i) {
    Term *x = c->args[i];
    std::optional<int64_t> k = intConstant(c->args[1 - i]);
    if (!k || (pred != Pred::eq && pred != Pred::ne))
      continue;
    if (isOp<arith::ExtUIOp, arith::ExtSIOp>(x) &&
        x->args[0]->type.isInteger(1) && *k == 0)
      x = x->args[0];
    else if (!x->type.isInteger(1))
      continue;
    bool isTrueWhenX = (pred == Pred::ne) == (*k == 0);
    return condWindow(x, negate != !isTrueWhenX);
  }
  if (negate)
    pred = arith::invertPredicate(pred);
  // |x| against a constant: `|q - k| <= w` (ModernBERT's local window),
  // written `math.absi(x)` or `maxsi(x, 0 - x)` (tosa.abs).
  auto asAbs = [&](Term *a,
                   Term *b) -> std::optional<std::pair<AffineExpr, int64_t>> {
    AffineExpr x;
    if (isOp<math::AbsIOp>(a)) {
      x = intValue(a->args[0]);
    } else if (isOp<arith::MaxSIOp>(a)) {
      AffineExpr u = intValue(a->args[0]), v = intValue(a->args[1]);
      if (u && v && simplify(u + v) == getAffineConstantExpr(0, ctx))
        x = u;
    }
    AffineExpr k = intValue(b);
    auto kc = dyn_cast_or_null<AffineConstantExpr>(k);
    if (!x || !kc || !fits(x, a->type, sizes) ||
        !fits(getAffineConstantExpr(0, ctx) - x, a->type, sizes))
      return std::nullopt;
    return std::make_pair(x, kc.getValue());
  };
  std::optional<std::pair<AffineExpr, int64_t>> abs = asAbs(l, r);
  if (!abs) {
    abs = asAbs(r, l);
    if (abs)
      pred = swapSides(pred);
  }
  if (abs) {
    auto [x, k] = *abs;
    if (isUnsigned(pred)) {
      if (k < 0)
        return Window::unknown();
      pred = toSigned(pred);
    }
    // |x| pred k: x pred k and -x pred k, i.e. conditions on x - k and
    // x + k; both must hold for <, <=, != and one for >, >=, ==.
    Window hiSide = linearWindow(x - k, pred);
    Window loSide = linearWindow(x + k, swapSides(pred));
    bool conj = pred == Pred::slt || pred == Pred::sle || pred == Pred::ne;
    return normalize(conj ? intersect(hiSide, loSide) : unite(hiSide, loSide));
  }
  AffineExpr lv = intValue(l), rv = intValue(r);
  if (!lv || !rv)
    return Window::unknown();
  if (isUnsigned(pred)) {
    auto lr = rangeOf(lv, sizes), rr = rangeOf(rv, sizes);
    if (!lr || !rr || lr->first < 0 || rr->first < 0)
      return Window::unknown();
    pred = toSigned(pred);
  }
  return linearWindow(lv - rv, pred);
}

//===----------------------------------------------------------------------===//
// Key lengths
//===----------------------------------------------------------------------===//

/// Whether the integer term `t` reads no coordinate but `bDim` (and reads
/// it, or is a constant or an outside scalar): a value per batch element.
static bool isPerBatch(Term *t, std::optional<unsigned> bDim, Value scores) {
  switch (t->kind) {
  case Term::Scalar:
    return true;
  case Term::Index:
    return false;
  case Term::Leaf: {
    if (t->tensor == scores)
      return false;
    if (getSplatLeaf(t))
      return true;
    bool readsBatch = false;
    for (AffineExpr e : t->access.getResults())
      for (unsigned d = 0; d < kMaxDims; ++d)
        if (usesDim(e, d)) {
          if (!bDim || d != *bDim)
            return false;
          readsBatch = true;
        }
    // (A read at constant coordinates only would be extracted before the
    // op: not taken.)
    return readsBatch;
  }
  case Term::Op:
    if (t->op->getNumRegions() != 0 || !isMemoryEffectFree(t->op) ||
        t->op->getNumResults() != 1)
      return false;
    return llvm::all_of(t->args, [&](Term *a) {
      return isPerBatch(a, bDim, scores);
    });
  case Term::Reduce:
  case Term::Softmax:
    return false;
  }
  return false;
}

Term *Matcher::keyLengthBound(Term *c, bool negate) {
  if (!current)
    return nullptr;
  if (c->kind == Term::Leaf) {
    Term *p = traceProducer(c);
    return p != c ? keyLengthBound(p, negate) : nullptr;
  }
  if (isOp<arith::XOrIOp>(c) && c->type.isInteger(1)) {
    for (int i = 0; i < 2; ++i)
      if (std::optional<int64_t> v = intConstant(c->args[i]))
        return keyLengthBound(c->args[1 - i], negate != (*v != 0));
    return nullptr;
  }
  auto cmp = dyn_cast_or_null<arith::CmpIOp>(c->kind == Term::Op ? c->op
                                                                  : nullptr);
  if (!cmp)
    return nullptr;
  Pred pred = cmp.getPredicate();
  if (negate)
    pred = arith::invertPredicate(pred);
  // k < L, or L > k: signed (a negative length shows no key, as the op's
  // clamp does).
  Term *key = nullptr, *len = nullptr;
  if (pred == Pred::slt) {
    key = c->args[0];
    len = c->args[1];
  } else if (pred == Pred::sgt) {
    key = c->args[1];
    len = c->args[0];
  } else {
    return nullptr;
  }
  AffineExpr k = intValue(key);
  auto kd = dyn_cast_or_null<AffineDimExpr>(k);
  if (!kd || kd.getPosition() != current->kDim || intValue(len) ||
      !len->type.isIntOrIndex() ||
      !isPerBatch(len, current->bDim, scoresValue))
    return nullptr;
  return len;
}

Term *Matcher::keyLengthMask(Term *m) {
  m = stripCasts(m);
  if (m->kind == Term::Leaf) {
    Term *p = traceProducer(m);
    return p != m ? keyLengthMask(p) : nullptr;
  }
  if (!isOp<arith::SelectOp>(m))
    return nullptr;
  double v;
  bool finite = false;
  // select(c, 0, -inf): visible where c; select(c, -inf, 0): where not c.
  if (isConstTerm(stripCasts(m->args[1]), &v) && v == 0.0 &&
      isHiddenValue(m->args[2], &finite) && !finite)
    return keyLengthBound(m->args[0], false);
  if (isConstTerm(stripCasts(m->args[2]), &v) && v == 0.0 &&
      isHiddenValue(m->args[1], &finite) && !finite)
    return keyLengthBound(m->args[0], true);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Mask values
//===----------------------------------------------------------------------===//

bool isHiddenValue(Term *t, bool *finite) {
  double h;
  if (!isConstTerm(stripCasts(t), &h))
    return false;
  if (std::isinf(h) && h < 0) {
    *finite = false;
    return true;
  }
  if (std::isfinite(h) && h <= kLargeNegative) {
    *finite = true;
    return true;
  }
  return false;
}

static MaskInfo combine(const MaskInfo &a, const MaskInfo &b) {
  MaskInfo r{intersect(a.vis, b.vis), a.pure && b.pure, a.finite || b.finite};
  // A finite hidden value implies nothing unless the term is a pure mask.
  if (!r.pure && r.finite)
    return MaskInfo();
  return r;
}

MaskInfo Matcher::maskInfo(Term *m) {
  m = stripCasts(m);
  double v;
  if (isConstTerm(m, &v))
    return v == 0.0 ? MaskInfo{Window{}, true, false} : MaskInfo();
  if (isOp<arith::SelectOp>(m)) {
    bool finite = false;
    Window w;
    Term *x;
    if (isHiddenValue(m->args[2], &finite)) {
      w = condWindow(m->args[0], false);
      x = m->args[1];
    } else if (isHiddenValue(m->args[1], &finite)) {
      w = condWindow(m->args[0], true);
      x = m->args[2];
    } else {
      return MaskInfo();
    }
    return combine(MaskInfo{w, w.exact, finite}, maskInfo(x));
  }
  if (isOp<arith::AddFOp>(m))
    return combine(maskInfo(m->args[0]), maskInfo(m->args[1]));
  if (m->kind == Term::Leaf) {
    Attribute a;
    if (matchPattern(m->tensor, m_Constant(&a)))
      if (auto d = dyn_cast<DenseFPElementsAttr>(a)) {
        SmallVector<double> vals;
        for (const APFloat &x : d.getValues<APFloat>())
          vals.push_back(x.convertToDouble());
        // 0: visible (0), hidden (1), anything else (2).
        bool anyFinite = false;
        auto cls = [&](int64_t i) {
          double x = vals[i];
          if (x == 0.0)
            return 0;
          if (std::isinf(x) && x < 0)
            return 1;
          if (std::isfinite(x) && x <= kLargeNegative) {
            anyFinite = true;
            return 1;
          }
          return 2;
        };
        bool other;
        std::optional<Window> w = constantWindow(m, cls, &other);
        if (w && !other)
          return combine(MaskInfo{*w, w->exact, anyFinite},
                         MaskInfo{Window{}, true, false});
        // A bias with -inf entries: hidden where it is -inf.
        w = constantWindow(
            m,
            [&](int64_t i) {
              return std::isinf(vals[i]) && vals[i] < 0 ? 1 : 0;
            },
            &other);
        if (w)
          return MaskInfo{Window{w->lo, w->hi, false}, false, false};
        return MaskInfo();
      }
    Term *p = traceProducer(m);
    return p != m ? maskInfo(p) : MaskInfo();
  }
  return MaskInfo();
}

Window Matcher::impliedWindow(Term *t) {
  t = stripCasts(t);
  if (!readsScores(t, scoresValue)) {
    MaskInfo mi = maskInfo(t);
    return mi.finite ? Window::unknown() : mi.vis;
  }
  auto isNegInf = [](Term *x) {
    bool finite;
    return isHiddenValue(x, &finite) && !finite;
  };
  if (isOp<arith::SelectOp>(t)) {
    if (isNegInf(t->args[2]))
      return intersect(condWindow(t->args[0], false),
                       impliedWindow(t->args[1]));
    if (isNegInf(t->args[1]))
      return intersect(condWindow(t->args[0], true), impliedWindow(t->args[2]));
    return unite(impliedWindow(t->args[1]), impliedWindow(t->args[2]));
  }
  // -inf + x = -inf (x = +inf or NaN give NaN in the graph: a NaN score of a
  // hidden key, which the op hides, docs/Semantics.md).
  if (isOp<arith::AddFOp>(t))
    return intersect(impliedWindow(t->args[0]), impliedWindow(t->args[1]));
  if (isOp<arith::MulFOp>(t))
    for (int i = 0; i < 2; ++i) {
      double c;
      if (isConstTerm(t->args[1 - i], &c) && std::isfinite(c) && c > 0)
        return impliedWindow(t->args[i]);
    }
  return Window::unknown();
}

} // namespace attnfuse::attn::raise
