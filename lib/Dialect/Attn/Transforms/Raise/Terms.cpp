//===- Terms.cpp - tensors as scalar expression trees ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include <functional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace attnfuse::attn::raise {

AffineExpr simplify(AffineExpr e) {
  return simplifyAffineExpr(e, kMaxDims, 0);
}

/// The access of a reshape's source (over kMaxDims loops) that reads what
/// `access` reads of its result: collapse_shape delinearizes each result
/// index over its group (src[group[i]] = (j floordiv stride) mod size),
/// expand_shape linearizes each group of result indices. With
/// `unitDimsAtZero`, a unit source dimension of a collapse is read at 0, its
/// only in-bounds index (the delinearization alone leaves the outermost one
/// as `j floordiv stride`).
AffineMap reshapeSourceAccess(Operation *reshape, AffineMap access,
                                     bool unitDimsAtZero) {
  MLIRContext *ctx = access.getContext();
  SmallVector<AffineExpr> exprs;
  // A group with a runtime dim has only unit dims beside it
  // (regroupsRuntimeDim): the runtime dim carries the whole index.
  auto runtimeDimOf = [](ArrayRef<int64_t> shape,
                         const ReassociationIndices &group) {
    std::optional<int64_t> dim;
    for (int64_t d : group)
      if (ShapedType::isDynamic(shape[d]))
        dim = d;
    return dim;
  };
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape)) {
    ArrayRef<int64_t> srcShape = collapse.getSrcType().getShape();
    exprs.resize(srcShape.size());
    for (auto [j, group] :
         llvm::enumerate(collapse.getReassociationIndices())) {
      if (std::optional<int64_t> dyn = runtimeDimOf(srcShape, group)) {
        for (int64_t d : group)
          exprs[d] = d == *dyn ? access.getResult(j)
                               : getAffineConstantExpr(0, ctx);
        continue;
      }
      int64_t stride = 1;
      for (int64_t i = group.size() - 1; i >= 0; --i) {
        AffineExpr e = access.getResult(j);
        if (group.size() > 1)
          e = e.floorDiv(stride);
        if (i != 0)
          e = e % srcShape[group[i]];
        if (unitDimsAtZero && srcShape[group[i]] == 1)
          e = getAffineConstantExpr(0, ctx);
        exprs[group[i]] = simplify(e);
        stride *= srcShape[group[i]];
      }
    }
  } else {
    auto expand = cast<tensor::ExpandShapeOp>(reshape);
    ArrayRef<int64_t> resShape = expand.getResultType().getShape();
    for (const auto &group : expand.getReassociationIndices()) {
      if (std::optional<int64_t> dyn = runtimeDimOf(resShape, group)) {
        exprs.push_back(access.getResult(*dyn));
        continue;
      }
      AffineExpr e = getAffineConstantExpr(0, ctx);
      for (int64_t i : group)
        e = e * resShape[i] + access.getResult(i);
      exprs.push_back(simplify(e));
    }
  }
  return AffineMap::get(kMaxDims, 0, exprs, ctx);
}

/// The values `e` takes with every dim d in [0, sizes[d]); nullopt when
/// unbounded or negative parts make it unknown.
std::optional<std::pair<int64_t, int64_t>> rangeOf(AffineExpr e,
                                                   ArrayRef<int64_t> sizes) {
  using R = std::optional<std::pair<int64_t, int64_t>>;
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return std::make_pair(c.getValue(), c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    if (d.getPosition() >= sizes.size() || sizes[d.getPosition()] <= 0)
      return R();
    return std::make_pair<int64_t, int64_t>(0, sizes[d.getPosition()] - 1);
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return R();
  R l = rangeOf(bin.getLHS(), sizes), r = rangeOf(bin.getRHS(), sizes);
  if (!l || !r)
    return R();
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return std::make_pair(l->first + r->first, l->second + r->second);
  case AffineExprKind::Mul: {
    int64_t a = l->first * r->first, b = l->first * r->second,
            c = l->second * r->first, d = l->second * r->second;
    return std::make_pair(std::min({a, b, c, d}), std::max({a, b, c, d}));
  }
  case AffineExprKind::FloorDiv:
    if (l->first < 0 || r->first <= 0 || r->first != r->second)
      return R();
    return std::make_pair(l->first / r->first, l->second / r->first);
  case AffineExprKind::Mod:
    if (r->first <= 0 || r->first != r->second)
      return R();
    if (l->first >= 0 && l->second < r->first)
      return l;
    return std::make_pair<int64_t, int64_t>(0, r->first - 1);
  default:
    return R();
  }
}

/// The constant coefficient of a summand: `c` for a constant `c`, `c` for
/// `x * c`, 0 for anything else.
static int64_t constantCoefficient(AffineExpr t) {
  if (auto tc = dyn_cast<AffineConstantExpr>(t))
    return tc.getValue();
  if (auto tm = dyn_cast<AffineBinaryOpExpr>(t);
      tm && tm.getKind() == AffineExprKind::Mul)
    if (auto mc = dyn_cast<AffineConstantExpr>(tm.getRHS()))
      return mc.getValue();
  return 0;
}

/// `e` with `x floordiv c` -> 0 and `x mod c` -> x where x provably lies in
/// [0, c), and `(c * y + x) floordiv c` -> y, `(c * y + x) mod c` -> x
/// likewise (the reshapes of a collapsed dimension, read back).
static AffineExpr simplifyInRanges(AffineExpr e, ArrayRef<int64_t> sizes) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return e;
  // An expression of one value (`d * 8` with d a unit dimension) is that
  // constant (a bare unit dimension stays a dimension).
  if (std::optional<std::pair<int64_t, int64_t>> r = rangeOf(e, sizes);
      r && r->first == r->second)
    return getAffineConstantExpr(r->first, e.getContext());
  AffineExpr l = simplifyInRanges(bin.getLHS(), sizes),
             r = simplifyInRanges(bin.getRHS(), sizes);
  auto c = dyn_cast<AffineConstantExpr>(r);
  bool divOrMod = bin.getKind() == AffineExprKind::FloorDiv ||
                  bin.getKind() == AffineExprKind::Mod;
  if (divOrMod && c && c.getValue() > 0) {
    int64_t k = c.getValue();
    // Split l into summands that are multiples of k and the rest.
    SmallVector<AffineExpr> terms;
    std::function<void(AffineExpr)> collect = [&](AffineExpr x) {
      if (auto add = dyn_cast<AffineBinaryOpExpr>(x);
          add && add.getKind() == AffineExprKind::Add) {
        collect(add.getLHS());
        collect(add.getRHS());
      } else {
        terms.push_back(x);
      }
    };
    collect(l);
    AffineExpr multiple = getAffineConstantExpr(0, e.getContext()),
               rest = getAffineConstantExpr(0, e.getContext());
    for (AffineExpr t : terms) {
      int64_t coeff = constantCoefficient(t);
      if (coeff != 0 && coeff % k == 0)
        multiple = multiple + t;
      else
        rest = rest + t;
    }
    std::optional<std::pair<int64_t, int64_t>> range = rangeOf(rest, sizes);
    if (range && range->first >= 0 && range->second < k)
      return simplify(bin.getKind() == AffineExprKind::FloorDiv
                          ? multiple.floorDiv(k)
                          : rest);
    // (a * X + y) floordiv (a * m) = X floordiv m and (a * X + y) mod (a * m)
    // = a * (X mod m) + y where 0 <= y < a (a collapsed dim read through an
    // expand of a coarser grouping).
    for (int64_t a = k / 2; a > 1; --a) {
      if (k % a != 0)
        continue;
      AffineExpr big = getAffineConstantExpr(0, e.getContext()),
                 small = getAffineConstantExpr(0, e.getContext());
      bool anyBig = false;
      for (AffineExpr t : terms) {
        int64_t coeff = constantCoefficient(t);
        if (coeff != 0 && coeff % a == 0) {
          big = big + t;
          anyBig = true;
        } else {
          small = small + t;
        }
      }
      std::optional<std::pair<int64_t, int64_t>> sr = rangeOf(small, sizes);
      if (!anyBig || !sr || sr->first < 0 || sr->second >= a)
        continue;
      AffineExpr x = simplify(big.floorDiv(a)); // exact: every term divides
      return bin.getKind() == AffineExprKind::FloorDiv
                 ? simplifyInRanges(simplify(x.floorDiv(k / a)), sizes)
                 : simplifyInRanges(simplify((x % (k / a)) * a + small), sizes);
    }
    // (k * y + x) floordiv k = y + x floordiv k and (k * y + x) mod k =
    // x mod k for integers, whatever the range of x.
    if (!isa<AffineConstantExpr>(simplify(multiple)) &&
        !isa<AffineConstantExpr>(simplify(rest)))
      return bin.getKind() == AffineExprKind::FloorDiv
                 ? simplify(simplify(multiple.floorDiv(k)) +
                            simplifyInRanges(simplify(rest.floorDiv(k)), sizes))
                 : simplifyInRanges(simplify(rest % k), sizes);
  }
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return simplify(l + r);
  case AffineExprKind::Mul:
    return simplify(l * r);
  case AffineExprKind::FloorDiv:
    return simplify(l.floorDiv(r));
  case AffineExprKind::CeilDiv:
    return simplify(l.ceilDiv(r));
  case AffineExprKind::Mod:
    return simplify(l % r);
  default:
    return e;
  }
}

/// `a * c * (x floordiv c) + a * (x mod c)` -> `a * x` among the summands of
/// `e` (a linearization of a delinearized index: a collapse read back through
/// an expand of another grouping).
static AffineExpr recombine(AffineExpr e) {
  SmallVector<std::pair<int64_t, AffineExpr>> terms; // coefficient, factor
  std::function<void(AffineExpr, int64_t)> collect = [&](AffineExpr x,
                                                         int64_t coeff) {
    auto bin = dyn_cast<AffineBinaryOpExpr>(x);
    if (bin && bin.getKind() == AffineExprKind::Add) {
      collect(bin.getLHS(), coeff);
      collect(bin.getRHS(), coeff);
      return;
    }
    if (bin && bin.getKind() == AffineExprKind::Mul)
      if (auto c = dyn_cast<AffineConstantExpr>(bin.getRHS())) {
        collect(bin.getLHS(), coeff * c.getValue());
        return;
      }
    terms.push_back({coeff, x});
  };
  collect(e, 1);
  bool changed = true, any = false;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      auto div = dyn_cast<AffineBinaryOpExpr>(terms[i].second);
      if (!div || div.getKind() != AffineExprKind::FloorDiv)
        continue;
      auto c = dyn_cast<AffineConstantExpr>(div.getRHS());
      if (!c || c.getValue() <= 0 || terms[i].first % c.getValue() != 0)
        continue;
      int64_t a = terms[i].first / c.getValue();
      for (size_t j = 0; j < terms.size(); ++j) {
        auto mod = dyn_cast<AffineBinaryOpExpr>(terms[j].second);
        if (j == i || !mod || mod.getKind() != AffineExprKind::Mod ||
            mod.getLHS() != div.getLHS() || mod.getRHS() != div.getRHS() ||
            terms[j].first != a)
          continue;
        terms[i] = {a, div.getLHS()};
        terms.erase(terms.begin() + j);
        changed = any = true;
        break;
      }
    }
  }
  if (!any)
    return e;
  AffineExpr out = getAffineConstantExpr(0, e.getContext());
  for (auto [coeff, x] : terms)
    out = out + x * coeff;
  return simplify(out);
}

AffineMap Matcher::simplifyInRanges(AffineMap map) const {
  SmallVector<AffineExpr> exprs;
  for (AffineExpr e : map.getResults()) {
    e = raise::simplifyInRanges(e, sizes);
    // Recombining may expose more floordiv / mod of collapsed dims.
    for (int i = 0; i < 4; ++i) {
      AffineExpr r = recombine(e);
      if (r == e)
        break;
      e = raise::simplifyInRanges(r, sizes);
    }
    exprs.push_back(e);
  }
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(), exprs,
                        map.getContext());
}

AffineMap composeAccess(AffineMap map, ArrayRef<AffineExpr> loops,
                        MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (AffineExpr r : map.getResults())
    exprs.push_back(simplify(r.replaceDims(loops)));
  return AffineMap::get(kMaxDims, 0, exprs, ctx);
}

/// Structural equality of two terms, where `a`'s dims are renamed by `subst`
/// (and the fresh dims of reductions met in both are paired on the way).
AffineExpr TermEq::rename(AffineExpr e) {
  SmallVector<AffineExpr> dims;
  for (unsigned i = 0; i < kMaxDims; ++i) {
    auto it = subst.find(i);
    dims.push_back(getAffineDimExpr(it == subst.end() ? i : it->second, ctx));
  }
  return simplify(e.replaceDims(dims));
}

bool TermEq::eq(Term *a, Term *b) {
  if (a->kind != b->kind || a->type != b->type)
    return false;
  switch (a->kind) {
  case Term::Leaf:
    if (a->tensor != b->tensor ||
        a->access.getNumResults() != b->access.getNumResults())
      return false;
    for (auto [x, y] : llvm::zip(a->access.getResults(),
                                 b->access.getResults()))
      if (AffineExpr rx = rename(x); rx != y) {
        // A unit dimension read as `q` on one side and `0` on the other
        // (a reshape of unit axes on one path): the same index.
        auto rr = rangeOf(rx, sizes), ry = rangeOf(y, sizes);
        if (!rr || !ry || rr->first != rr->second || *rr != *ry)
          return false;
      }
    return true;
  case Term::Scalar:
    return a->scalar == b->scalar;
  case Term::Index:
    return rename(a->index) == b->index;
  case Term::Reduce:
  case Term::Softmax:
    if (a->op != b->op)
      return false;
    if (a->kind == Term::Reduce)
      subst[a->dim] = b->dim;
    else if (rename(getAffineDimExpr(a->dim, ctx)) !=
             getAffineDimExpr(b->dim, ctx))
      return false;
    [[fallthrough]];
  case Term::Op:
    if (a->op != b->op || a->args.size() != b->args.size())
      return false;
    for (auto [x, y] : llvm::zip(a->args, b->args))
      if (!eq(x, y))
        return false;
    return true;
  }
  return false;
}

TypedAttr getConstantTerm(Term *t) {
  Attribute a;
  if (t->kind == Term::Op && matchPattern(t->op, m_Constant(&a)))
    return dyn_cast<TypedAttr>(a);
  // A float cast of a constant is the constant rounded as the cast rounds
  // (to nearest even): `truncf %c : f64 to f32`, torch-mlir's scale.
  if (isOp<arith::TruncFOp, arith::ExtFOp>(t) && t->args.size() == 1)
    if (auto c = dyn_cast_or_null<FloatAttr>(getConstantTerm(t->args[0])))
      if (auto to = dyn_cast<FloatType>(t->type)) {
        APFloat v = c.getValue();
        bool lost;
        v.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        return FloatAttr::get(to, v);
      }
  if (t->kind == Term::Scalar && matchPattern(t->scalar, m_Constant(&a)))
    return dyn_cast<TypedAttr>(a);
  return getSplatLeaf(t);
}

bool isConstTerm(Term *t, double *value) {
  TypedAttr a = getConstantTerm(t);
  return a && isF32Const(a, value);
}

/// The element of a tensor that holds one constant everywhere: a fill, a
/// splat constant, or a broadcast of one (a generic whose body yields its
/// only input, as torch-mlir writes a 0-d constant broadcast to runtime
/// sizes).
static TypedAttr getSplatValue(Value v) {
  Attribute a;
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    if (matchPattern(fill.getInputs()[0], m_Constant(&a)))
      return dyn_cast<TypedAttr>(a);
    return {};
  }
  if (auto copy = v.getDefiningOp<linalg::GenericOp>();
      copy && copy.getNumDpsInputs() == 1 && copy.getNumResults() == 1) {
    auto yield = cast<linalg::YieldOp>(copy.getBody()->getTerminator());
    if (yield.getValues().front() == copy.getBody()->getArgument(0))
      return getSplatValue(copy.getDpsInputs()[0]);
    return {};
  }
  if (matchPattern(v, m_Constant(&a)))
    if (auto d = dyn_cast<DenseElementsAttr>(a); d && d.isSplat())
      return d.getSplatValue<TypedAttr>();
  return {};
}

TypedAttr getSplatLeaf(Term *t) {
  if (t->kind != Term::Leaf)
    return {};
  return getSplatValue(t->tensor);
}

bool isScalarLeaf(Term *t) {
  return t->kind == Term::Leaf &&
         (getSplatLeaf(t) ||
          llvm::all_of(t->access.getResults(),
                       [](AffineExpr e) { return isa<AffineConstantExpr>(e); }));
}

Term *stripCasts(Term *t) {
  while (isOp<arith::ExtFOp, arith::TruncFOp>(t))
    t = t->args[0];
  return t;
}

/// True when `t` reads the scores (the first contraction's result).
bool readsScores(Term *t, Value scores) {
  if (t->kind == Term::Leaf)
    return t->tensor == scores;
  return llvm::any_of(t->args, [&](Term *a) { return readsScores(a, scores); });
}

/// An op whose result a mask producer is traced through (maskMode): an
/// elementwise or broadcasting linalg op on tensors (no reduction, not a
/// fill or contraction) or a reshape.
static bool isMaskTraceable(Operation *def) {
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
    return !regroupsRuntimeDim(def);
  auto lin = dyn_cast<linalg::LinalgOp>(def);
  return lin && !isa<linalg::FillOp>(def) && lin.hasPureTensorSemantics() &&
         lin.getNumReductionLoops() == 0 &&
         llvm::none_of(lin->getOperandTypes(),
                       [](Type t) { return !isa<RankedTensorType>(t); }) &&
         llvm::none_of(lin.getStaticLoopRanges(), ShapedType::isDynamic);
}

bool regroupsRuntimeDim(Operation *reshape) {
  auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape);
  auto expand = dyn_cast<tensor::ExpandShapeOp>(reshape);
  RankedTensorType wide =
      collapse ? collapse.getSrcType() : expand.getResultType();
  SmallVector<ReassociationIndices> groups =
      collapse ? collapse.getReassociationIndices()
               : expand.getReassociationIndices();
  return llvm::any_of(groups, [&](const ReassociationIndices &g) {
    int64_t runtime = llvm::count_if(
        g, [&](int64_t d) { return wide.isDynamicDim(d); });
    int64_t units = llvm::count_if(
        g, [&](int64_t d) { return wide.getDimSize(d) == 1; });
    return runtime > 1 || (runtime == 1 && runtime + units != int64_t(g.size()));
  });
}

std::optional<AffineMap> Matcher::reshapeAccess(tensor::ReshapeOp reshape,
                                                AffineMap access) {
  // Runtime dims split both shapes into static segments; each runtime dim
  // of the source is the runtime dim of the result at the same place (the
  // shape operand's value there, asserted at run time), and each static
  // segment of the source is a row-major regrouping of the result's.
  ArrayRef<int64_t> src = reshape.getSource().getType().getShape();
  ArrayRef<int64_t> res = reshape.getResult().getType().getShape();
  auto segments = [](ArrayRef<int64_t> shape) {
    SmallVector<SmallVector<int64_t>> segs(1);
    for (auto [i, d] : llvm::enumerate(shape)) {
      if (ShapedType::isDynamic(d))
        segs.emplace_back();
      else
        segs.back().push_back(i);
    }
    return segs;
  };
  SmallVector<SmallVector<int64_t>> srcSegs = segments(src),
                                    resSegs = segments(res);
  auto product = [](ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= shape[d];
    return p;
  };
  bool same = srcSegs.size() == resSegs.size();
  for (size_t k = 0; same && k < srcSegs.size(); ++k)
    same = product(src, srcSegs[k]) == product(res, resSegs[k]);
  if (!same) {
    (void)fail(reshape, "dynamic-reshape",
               "the reshape does not keep each runtime dimension apart");
    return std::nullopt;
  }
  SmallVector<AffineExpr> exprs(src.size());
  SmallVector<int64_t> srcDyn, resDyn;
  for (auto [i, d] : llvm::enumerate(src))
    if (ShapedType::isDynamic(d))
      srcDyn.push_back(i);
  for (auto [j, d] : llvm::enumerate(res))
    if (ShapedType::isDynamic(d))
      resDyn.push_back(j);
  for (auto [i, j] : llvm::zip(srcDyn, resDyn)) {
    exprs[i] = access.getResult(j);
    sizeChecks.push_back({reshape.getSource(), i, reshape.getShape(), j,
                          /*bIsShape=*/true});
  }
  for (auto [srcSeg, resSeg] : llvm::zip(srcSegs, resSegs)) {
    AffineExpr lin = getAffineConstantExpr(0, ctx);
    for (int64_t j : resSeg)
      lin = lin * res[j] + access.getResult(j);
    int64_t stride = 1;
    for (int64_t i : llvm::reverse(srcSeg)) {
      AffineExpr e = stride == 1 ? lin : lin.floorDiv(stride);
      if (i != srcSeg.front())
        e = e % src[i];
      exprs[i] = simplify(e);
      stride *= src[i];
    }
  }
  return AffineMap::get(kMaxDims, 0, exprs, ctx);
}

Value getRuntimeSize(Value t, int64_t dim) {
  while (Operation *def = t.getDefiningOp()) {
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return empty.getType().isDynamicDim(dim) ? empty.getDynamicSize(dim)
                                               : Value();
    auto dps = dyn_cast<DestinationStyleOpInterface>(def);
    if (!dps)
      break;
    t = dps.getTiedOpOperand(cast<OpResult>(t))->get();
  }
  return Value();
}

Term *Matcher::traceExtract(tensor::ExtractOp extract, linalg::LinalgOp op,
                            ArrayRef<AffineExpr> loops) {
  Value t = extract.getTensor();
  auto unfail = [&](StringRef what) -> Term * {
    (void)fail(op, "unsupported-op",
               "a tensor.extract in the body reads " + what.str());
    return nullptr;
  };
  if (Operation *d = t.getDefiningOp(); d && op->isProperAncestor(d))
    return unfail("a tensor computed in the body");
  // Mask producers are traced tentatively: no runtime assumption there.
  if (maskMode)
    return unfail("a mask tensor");
  auto stripCast = [](Value v) {
    while (auto c = v.getDefiningOp<arith::IndexCastOp>())
      v = c.getIn();
    return v;
  };
  // The loop of `op` that linalg.index `v` reads, if it is one.
  auto loopOf = [&](Value v) -> std::optional<unsigned> {
    auto idx = v.getDefiningOp<linalg::IndexOp>();
    if (!idx || !op->isProperAncestor(idx))
      return std::nullopt;
    return idx.getDim();
  };
  SmallVector<AffineExpr> exprs;
  for (auto [pos, index] : llvm::enumerate(extract.getIndices())) {
    Value v = stripCast(index);
    if (std::optional<int64_t> c = getConstantIntValue(v)) {
      exprs.push_back(getAffineConstantExpr(*c, ctx));
      continue;
    }
    // A runtime broadcast: select(dim(t, pos) == 1, 0, i) is i when the
    // size of t there is the loop's (asserted at run time).
    if (auto sel = v.getDefiningOp<arith::SelectOp>()) {
      auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
      std::optional<int64_t> zero = getConstantIntValue(sel.getTrueValue());
      if (cmp && cmp.getPredicate() == arith::CmpIPredicate::eq && zero &&
          *zero == 0) {
        Value x = stripCast(cmp.getLhs()), one = cmp.getRhs();
        if (getConstantIntValue(x) == 1)
          std::swap(x, one);
        auto dim = x.getDefiningOp<tensor::DimOp>();
        std::optional<int64_t> dimIndex =
            dim ? dim.getConstantIndex() : std::nullopt;
        bool sizeOfT = dim ? dim.getSource() == t &&
                                 dimIndex == static_cast<int64_t>(pos)
                           : Value(getRuntimeSize(t, pos)) &&
                                 stripCast(getRuntimeSize(t, pos)) == x;
        if (getConstantIntValue(one) == 1 && sizeOfT)
          v = stripCast(sel.getFalseValue());
      }
      if (v == stripCast(index))
        return unfail("at an index it does not understand");
      std::optional<unsigned> loop = loopOf(v);
      AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
      std::optional<unsigned> outPos =
          loop ? out.getResultPosition(getAffineDimExpr(*loop, ctx))
               : std::nullopt;
      if (!outPos)
        return unfail("a runtime broadcast of an index that is not a loop");
      sizeChecks.push_back({t, static_cast<int64_t>(pos), op.getDpsInits()[0],
                            static_cast<int64_t>(*outPos),
                            /*bIsShape=*/false});
      exprs.push_back(loops[*loop]);
      continue;
    }
    std::optional<unsigned> loop = loopOf(v);
    if (!loop)
      return unfail("at an index that is not a loop or a constant");
    exprs.push_back(loops[*loop]);
  }
  return traceTensor(t, AffineMap::get(kMaxDims, 0, exprs, ctx));
}

Term *Matcher::traceProducer(Term *leaf) {
  if (leaf->kind != Term::Leaf || leaf->tensor == scoresValue ||
      getSplatLeaf(leaf))
    return leaf;
  auto key = std::make_pair(leaf->tensor, leaf->access);
  if (auto it = producers.find(key); it != producers.end())
    return it->second;
  Operation *def = leaf->tensor.getDefiningOp();
  Term *t = leaf;
  if (def && !slice.contains(def) && isMaskTraceable(def)) {
    RaiseFailure saved = why;
    bool savedMode = maskMode;
    maskMode = true;
    t = traceTensor(leaf->tensor, leaf->access);
    maskMode = savedMode;
    why = saved;
    if (!t)
      t = leaf;
  }
  producers[key] = t;
  return t;
}

Term *Matcher::traceTensor(Value v, AffineMap access) {
  Type elem = cast<ShapedType>(v.getType()).getElementType();
  Operation *def = v.getDefiningOp();
  // Only ops computing from the scores are looked through; anything else
  // (Q-side ops, bias producers, fills) is a leaf. In maskMode, the
  // producers of a mask tensor are looked through instead.
  auto leaf = [&] {
    Term *t = make(Term::Leaf, elem);
    t->tensor = v;
    t->access = simplifyInRanges(access);
    return t;
  };
  if (!def || def == c2.getOperation() ||
      (maskMode ? slice.contains(def) || !isMaskTraceable(def)
                : !slice.contains(def)))
    return leaf();
  if (maskMode) {
    // A producer that cannot be looked through is a leaf; the ops are not
    // part of the chain.
    RaiseFailure saved = why;
    Term *t = nullptr;
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      t = traceTensor(def->getOperand(0),
                      reshapeSourceAccess(def, access,
                                          /*unitDimsAtZero=*/false));
    else
      t = traceLinalg(cast<linalg::LinalgOp>(def), cast<OpResult>(v), access);
    why = saved;
    return t ? t : leaf();
  }
  visited.insert(def);
  if (auto sm = dyn_cast<linalg::SoftmaxOp>(def)) {
    Term *in = traceTensor(sm.getInput(), access);
    if (!in)
      return nullptr;
    auto dim = dyn_cast<AffineDimExpr>(
        access.getResult(static_cast<unsigned>(sm.getDimension())));
    if (!dim) {
      (void)fail(def, "softmax-axis",
                 "the softmax axis is not a single coordinate of the second "
                 "contraction");
      return nullptr;
    }
    Term *t = make(Term::Softmax, elem);
    t->op = def;
    t->dim = dim.getPosition();
    t->args = {in};
    return t;
  }
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def)) {
    if (regroupsRuntimeDim(def)) {
      (void)fail(def, "dynamic-reshape",
                 "the reshape groups a runtime dimension with others");
      return nullptr;
    }
    return traceTensor(def->getOperand(0),
                       reshapeSourceAccess(def, access,
                                           /*unitDimsAtZero=*/false));
  }
  if (auto reshape = dyn_cast<tensor::ReshapeOp>(def)) {
    std::optional<AffineMap> src = reshapeAccess(reshape, access);
    return src ? traceTensor(reshape.getSource(), *src) : nullptr;
  }
  if (auto lin = dyn_cast<linalg::LinalgOp>(def))
    return traceLinalg(lin, cast<OpResult>(v), access);
  (void)fail(def, "unsupported-op",
             "op '" + def->getName().getStringRef() +
                 "' between the contractions is not understood");
  return nullptr;
}

Term *Matcher::traceLinalg(linalg::LinalgOp op, OpResult result,
                           AffineMap access) {
  Operation *def = op.getOperation();
  if (isContraction(def, /*allowInteger=*/true)) {
    (void)fail(def, "contraction-in-scores",
               "a contraction between the two contractions of the chain");
    return nullptr;
  }
  // Other results must be dead (torch-mlir's row max also yields the
  // argmax, which nothing reads).
  if (!op.hasPureTensorSemantics() ||
      (!maskMode && llvm::any_of(op->getResults(), [&](OpResult r) {
         return r != result && !r.use_empty();
       }))) {
    (void)fail(def, "unsupported-op",
               "a linalg op on tensors with another live result is not looked "
               "through");
    return nullptr;
  }
  AffineMap outMap = op.getIndexingMapMatchingResult(result);
  ArrayRef<int64_t> outShape =
      cast<ShapedType>(result.getType()).getShape();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<AffineExpr> loops(op.getNumLoops());
  for (auto [p, e] : llvm::enumerate(outMap.getResults())) {
    // A kept unit dimension (keepdim reductions write `(.., 0)`).
    if (auto c = dyn_cast<AffineConstantExpr>(e);
        c && c.getValue() == 0 && outShape[p] == 1)
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || loops[d.getPosition()]) {
      (void)fail(def, "not-pointwise",
                 "the op's output map is not a permutation of its loops");
      return nullptr;
    }
    loops[d.getPosition()] = access.getResult(p);
  }
  unsigned numRed = 0;
  for (auto [i, it] : llvm::enumerate(iters)) {
    if (loops[i])
      continue;
    // A reduction over a runtime range gets a dim of runtime size: the
    // softmax matcher identifies it with the key dim through what it reads.
    if (it != utils::IteratorType::reduction) {
      (void)fail(def, "not-pointwise", "a loop of the op is not in its output");
      return nullptr;
    }
    std::optional<unsigned> fresh = freshDim(ranges[i]);
    if (!fresh) {
      (void)fail(def, "too-complex", "too many nested reductions");
      return nullptr;
    }
    loops[i] = getAffineDimExpr(*fresh, ctx);
    ++numRed;
  }
  Block *body = op.getBlock();
  Value yielded = body->getTerminator()->getOperand(result.getResultNumber());
  if (numRed == 0)
    return traceScalar(yielded, op, loops);
  // A reduction: yield combine(f(ins), acc).
  BlockArgument acc =
      body->getArgument(op.getNumDpsInputs() + result.getResultNumber());
  Operation *combine = yielded.getDefiningOp();
  if (numRed != 1 || !combine ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp, arith::AndIOp,
           arith::OrIOp>(combine) ||
      combine->getBlock() != body ||
      (combine->getOperand(0) == acc) == (combine->getOperand(1) == acc)) {
    (void)fail(def, "unsupported-reduction",
               "a reduction that is not a single sum, max, and or or");
    return nullptr;
  }
  Value x = combine->getOperand(0) == acc ? combine->getOperand(1)
                                          : combine->getOperand(0);
  unsigned redDim = 0;
  for (auto [i, it] : llvm::enumerate(iters))
    if (it == utils::IteratorType::reduction)
      redDim = cast<AffineDimExpr>(loops[i]).getPosition();
  Term *in = traceScalar(x, op, loops);
  if (!in)
    return nullptr;
  Term *init = traceTensor(op.getDpsInits()[result.getResultNumber()], access);
  Term *t = make(Term::Reduce, result.getType() ? cast<ShapedType>(
                                                      result.getType())
                                                      .getElementType()
                                                : Type());
  t->op = combine;
  t->dim = redDim;
  t->args = {in, init};
  return t;
}

Term *Matcher::traceScalar(Value s, linalg::LinalgOp op,
                           ArrayRef<AffineExpr> loops) {
  Block *body = op.getBlock();
  if (auto arg = dyn_cast<BlockArgument>(s)) {
    if (arg.getOwner() != body) {
      Term *t = make(Term::Scalar, s.getType());
      t->scalar = s;
      return t;
    }
    OpOperand &operand = op->getOpOperand(arg.getArgNumber());
    if (!isa<ShapedType>(operand.get().getType())) {
      Term *t = make(Term::Scalar, s.getType());
      t->scalar = operand.get();
      return t;
    }
    if (op.isDpsInit(&operand) && op.getNumReductionLoops() != 0) {
      (void)fail(op, "unsupported-reduction",
                 "the accumulator is read outside the combiner");
      return nullptr;
    }
    return traceTensor(operand.get(),
                       composeAccess(op.getMatchingIndexingMap(&operand),
                                     loops, ctx));
  }
  Operation *def = s.getDefiningOp();
  if (!op->isProperAncestor(def)) {
    Term *t = make(Term::Scalar, s.getType());
    t->scalar = s;
    return t;
  }
  if (auto idx = dyn_cast<linalg::IndexOp>(def)) {
    Term *t = make(Term::Index, s.getType());
    t->index = loops[idx.getDim()];
    return t;
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(def);
      extract && isa<RankedTensorType>(extract.getTensor().getType()))
    return traceExtract(extract, op, loops);
  if (def->getNumRegions() != 0 || def->getNumResults() != 1 ||
      !isMemoryEffectFree(def)) {
    (void)fail(op, "unsupported-op",
               "body op '" + def->getName().getStringRef() +
                   "' is not a pure scalar op");
    return nullptr;
  }
  Term *t = make(Term::Op, s.getType());
  t->op = def;
  for (Value operand : def->getOperands()) {
    Term *a = traceScalar(operand, op, loops);
    if (!a)
      return nullptr;
    t->args.push_back(a);
  }
  return normalizeTerm(t);
}

} // namespace attnfuse::attn::raise
