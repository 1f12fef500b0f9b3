//===- RaiseAttention.cpp - raise unfused attention to attn.attention -----===//
//
// Finds `O = contract_k(P, V)` with `P = softmax_k(T)`, `T = f(S)` and
// `S = contract_d(Q, K)` by meaning, not by syntax:
//
//  1. Every tensor on the way from the second contraction back to the first
//     is described as a scalar expression tree (a `Term`) over one canonical
//     iteration space: the second contraction's loops plus a fresh dimension
//     per reduction met on the way. Linalg ops (named or generic), softmax
//     and reshapes are looked through, so layouts, casts and op boundaries
//     do not matter; only the function computed does.
//  2. The softmax is matched on that tree (normalization over the key
//     dimension of the second contraction, the sum and max over the same
//     key-indexed values) and the score pipeline `T` is split into what
//     attn.attention carries: scale, score_mod region, bias, keep mask,
//     structural mask.
//  3. Q, K, V are peeled through transposes, broadcasts and reshapes down to
//     tensors the op reads with a BHSD map (GQA: `h floordiv G`).
//  4. Only then is IR written: operand layout copies, the op, and the copy
//     back to the graph's output layout.
//
// Every step that fails records the reason and the op that failed it.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Analysis/SliceAnalysis.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <deque>
#include <limits>
#include <optional>

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNRAISEATTENTION
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

namespace {

/// Canonical iteration space: dimensions are numbered 0..kMaxDims-1.
constexpr unsigned kMaxDims = 24;

/// Why a chain was not fused, and where.
struct Failure {
  Operation *at = nullptr;
  std::string key;     ///< Short reason key for the summary.
  std::string message; ///< "<the precondition that failed>".
};

/// A scalar expression over the canonical iteration space.
struct Term {
  enum Kind { Leaf, Scalar, Index, Op, Reduce, Softmax } kind;
  Value tensor;       ///< Leaf: the tensor read at `access`.
  AffineMap access;   ///< Leaf: canonical dims -> tensor indices.
  Value scalar;       ///< Scalar: a value defined outside any body.
  AffineExpr index;   ///< Index: the coordinate, in canonical dims.
  Operation *op = nullptr; ///< Op: body op; Reduce: combiner; Softmax: op.
  SmallVector<Term *> args; ///< Op operands; Reduce {body, init}; Softmax {in}.
  unsigned dim = 0;   ///< Reduce: reduced dim; Softmax: normalized dim.
  Type type;          ///< Scalar (element) type.
};

/// The description of a matched chain, everything needed by the rewrite.
struct Chain {
  linalg::LinalgOp c1, c2;
  unsigned scoresOperand = 0; ///< Which input of c2 is P.
  unsigned kDim = 0, eDim = 0, dDim = 0; ///< Key, value-feature, head dims.
  SmallVector<unsigned> rows;            ///< Row dims of the output.
  std::optional<unsigned> bDim, hDim, qDim;
  int64_t groupSize = 1; ///< G = Hq / Hkv.
  Term *scores = nullptr; ///< T, the softmax input.
  Term *region = nullptr; ///< The part of T that goes into score_mod.
  std::optional<APFloat> scale;
  Term *bias = nullptr, *keep = nullptr;
  MaskKind mask = MaskKind::none;
  MaskAlignment alignment = MaskAlignment::top_left;
  int64_t windowLeft = 0, windowRight = 0;
  Value q, k, v;           ///< Peeled sources.
  AffineMap qMap, kMap, vMap; ///< Canonical dims -> source indices.
  Type elementType;
  SetVector<Operation *> ops; ///< Chain ops between c1 and c2 (inclusive c1).
};

static bool isF32Const(Attribute a, double *out) {
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
static bool isContraction(Operation *op) {
  auto lin = dyn_cast<linalg::LinalgOp>(op);
  if (!lin || lin.getNumDpsInputs() != 2 || lin.getNumDpsInits() != 1 ||
      lin.getNumReductionLoops() != 1 || !lin.hasPureTensorSemantics())
    return false;
  Block *body = lin.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  BlockArgument acc = body->getArgument(2);
  Value prod = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if ((add.getLhs() == acc) == (add.getRhs() == acc))
    return false;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto strip = [](Value v) {
    if (auto e = v.getDefiningOp<arith::ExtFOp>())
      return e.getIn();
    return v;
  };
  Value a = strip(mul.getLhs()), b = strip(mul.getRhs());
  return (a == body->getArgument(0) && b == body->getArgument(1)) ||
         (a == body->getArgument(1) && b == body->getArgument(0));
}

/// True when `v` is a tensor of zeros (linalg.fill or a splat constant).
static bool isZeroTensor(Value v) {
  double c;
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    Attribute a;
    return matchPattern(fill.getInputs()[0], m_Constant(&a)) &&
           isF32Const(a, &c) && c == 0.0;
  }
  Attribute a;
  return matchPattern(v, m_Constant(&a)) && isF32Const(a, &c) && c == 0.0;
}

static AffineExpr simplify(AffineExpr e) {
  return simplifyAffineExpr(e, kMaxDims, 0);
}

/// The access of a reshape's source (over kMaxDims loops) that reads what
/// `access` reads of its result: collapse_shape delinearizes each result
/// index over its group (src[group[i]] = (j floordiv stride) mod size),
/// expand_shape linearizes each group of result indices. With
/// `unitDimsAtZero`, a unit source dimension of a collapse is read at 0, its
/// only in-bounds index (the delinearization alone leaves the outermost one
/// as `j floordiv stride`).
static AffineMap reshapeSourceAccess(Operation *reshape, AffineMap access,
                                     bool unitDimsAtZero) {
  MLIRContext *ctx = access.getContext();
  SmallVector<AffineExpr> exprs;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape)) {
    ArrayRef<int64_t> srcShape = collapse.getSrcType().getShape();
    exprs.resize(srcShape.size());
    for (auto [j, group] :
         llvm::enumerate(collapse.getReassociationIndices())) {
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
      AffineExpr e = getAffineConstantExpr(0, ctx);
      for (int64_t i : group)
        e = e * resShape[i] + access.getResult(i);
      exprs.push_back(simplify(e));
    }
  }
  return AffineMap::get(kMaxDims, 0, exprs, ctx);
}

static AffineMap composeAccess(AffineMap map, ArrayRef<AffineExpr> loops,
                               MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (AffineExpr r : map.getResults())
    exprs.push_back(simplify(r.replaceDims(loops)));
  return AffineMap::get(kMaxDims, 0, exprs, ctx);
}

static bool usesDim(AffineExpr e, unsigned d) {
  return e.isFunctionOfDim(d);
}

//===----------------------------------------------------------------------===//
// Matcher
//===----------------------------------------------------------------------===//

class Matcher {
public:
  explicit Matcher(linalg::LinalgOp c2) : c2(c2), ctx(c2.getContext()) {}

  /// Matches the chain ending at c2; on failure `failure` says why.
  FailureOr<Chain> match();
  Failure why;

private:
  LogicalResult fail(Operation *at, StringRef key, const Twine &msg) {
    if (!why.at) {
      why.at = at;
      why.key = key.str();
      why.message = msg.str();
    }
    return mlir::failure();
  }

  Term *make(Term::Kind kind, Type type) {
    arena.emplace_back();
    Term *t = &arena.back();
    t->kind = kind;
    t->type = type;
    return t;
  }
  std::optional<unsigned> freshDim(int64_t size) {
    if (sizes.size() >= kMaxDims)
      return std::nullopt;
    sizes.push_back(size);
    return sizes.size() - 1;
  }

  Term *traceTensor(Value v, AffineMap access);
  Term *traceLinalg(linalg::LinalgOp op, OpResult result, AffineMap access);
  Term *traceScalar(Value s, linalg::LinalgOp op,
                    ArrayRef<AffineExpr> loops);

  LogicalResult matchSoftmax(Term *p, Chain &chain);
  LogicalResult splitScores(Chain &chain);
  LogicalResult checkRegion(Term *t, Chain &chain, Operation *at);
  LogicalResult matchStructuralMask(Term *cond, Chain &chain);
  LogicalResult assignRoles(Chain &chain);

  linalg::LinalgOp c2;
  MLIRContext *ctx;
  std::deque<Term> arena;
  SmallVector<int64_t> sizes;
  /// Ops computing from the first contraction's result (forward slice).
  SetVector<Operation *> slice;
  SetVector<Operation *> visited;
  Value scoresValue; ///< The first contraction's result.
  AffineMap scoresAccess;
  friend struct TermEq;
  friend class Rewriter;

public:
  int64_t size(unsigned d) const { return sizes[d]; }
};

/// Structural equality of two terms, where `a`'s dims are renamed by `subst`
/// (and the fresh dims of reductions met in both are paired on the way).
struct TermEq {
  DenseMap<unsigned, unsigned> subst;
  MLIRContext *ctx;
  AffineExpr rename(AffineExpr e) {
    SmallVector<AffineExpr> dims;
    for (unsigned i = 0; i < kMaxDims; ++i) {
      auto it = subst.find(i);
      dims.push_back(getAffineDimExpr(it == subst.end() ? i : it->second, ctx));
    }
    return simplify(e.replaceDims(dims));
  }
  bool eq(Term *a, Term *b) {
    if (a->kind != b->kind || a->type != b->type)
      return false;
    switch (a->kind) {
    case Term::Leaf:
      if (a->tensor != b->tensor ||
          a->access.getNumResults() != b->access.getNumResults())
        return false;
      for (auto [x, y] : llvm::zip(a->access.getResults(),
                                   b->access.getResults()))
        if (rename(x) != y)
          return false;
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
};

static bool isConstTerm(Term *t, double *value) {
  Attribute a;
  if (t->kind == Term::Op && matchPattern(t->op, m_Constant(&a)))
    return isF32Const(a, value);
  if (t->kind == Term::Scalar && matchPattern(t->scalar, m_Constant(&a)))
    return isF32Const(a, value);
  if (t->kind == Term::Leaf && t->tensor.getDefiningOp<linalg::FillOp>()) {
    Value fv = t->tensor.getDefiningOp<linalg::FillOp>().getInputs()[0];
    return matchPattern(fv, m_Constant(&a)) && isF32Const(a, value);
  }
  if (t->kind == Term::Leaf && matchPattern(t->tensor, m_Constant(&a)))
    return isF32Const(a, value);
  return false;
}

template <typename... OpTys> static bool isOp(Term *t) {
  return t->kind == Term::Op && isa<OpTys...>(t->op);
}

static Term *stripCasts(Term *t) {
  while (isOp<arith::ExtFOp, arith::TruncFOp>(t))
    t = t->args[0];
  return t;
}

/// True when `t` reads the scores (the first contraction's result).
static bool readsScores(Term *t, Value scores) {
  if (t->kind == Term::Leaf)
    return t->tensor == scores;
  return llvm::any_of(t->args, [&](Term *a) { return readsScores(a, scores); });
}

Term *Matcher::traceTensor(Value v, AffineMap access) {
  Type elem = cast<ShapedType>(v.getType()).getElementType();
  Operation *def = v.getDefiningOp();
  // Only ops computing from the scores are looked through; anything else
  // (Q-side ops, bias producers, fills) is a leaf.
  if (!def || !slice.contains(def) || def == c2.getOperation()) {
    Term *t = make(Term::Leaf, elem);
    t->tensor = v;
    t->access = access;
    return t;
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
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
    return traceTensor(def->getOperand(0),
                       reshapeSourceAccess(def, access,
                                           /*unitDimsAtZero=*/false));
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
  if (isContraction(def)) {
    (void)fail(def, "contraction-in-scores",
               "a contraction between the two contractions of the chain");
    return nullptr;
  }
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1) {
    (void)fail(def, "unsupported-op",
               "only single-result linalg ops on tensors are looked through");
    return nullptr;
  }
  AffineMap outMap = op.getIndexingMapMatchingResult(result);
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<AffineExpr> loops(op.getNumLoops());
  for (auto [p, e] : llvm::enumerate(outMap.getResults())) {
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
    if (it != utils::IteratorType::reduction ||
        ShapedType::isDynamic(ranges[i])) {
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
  BlockArgument acc = body->getArgument(op.getNumDpsInputs());
  Operation *combine = yielded.getDefiningOp();
  if (numRed != 1 || !combine ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp>(combine) ||
      combine->getBlock() != body ||
      (combine->getOperand(0) == acc) == (combine->getOperand(1) == acc)) {
    (void)fail(def, "unsupported-reduction",
               "a reduction that is not a single sum or max");
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
  Term *init = traceTensor(op.getDpsInits()[0], access);
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
  return t;
}

/// P = cast?(E / L | E * (1 / L) | softmax_k(T)), L = sum_k E,
/// E = exp(X) | exp2(X * log2(e)), X = T - max_k T | T.
LogicalResult Matcher::matchSoftmax(Term *p, Chain &chain) {
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
    if (foreignMask(p))
      return fail(at, "external-dropout",
                  "dropout with an external mask tensor cannot be carried "
                  "(attn.attention regenerates its mask from a seed)");
    return fail(at, "no-softmax",
                "the probabilities are not a softmax (a quotient by a row "
                "sum of exponentials)");
  }
  Operation *sumAt = l->op->getParentOp();
  double zero;
  if (!isConstTerm(l->args[1], &zero) || zero != 0.0)
    return fail(sumAt, "softmax-sum", "the softmax sum does not start at 0");
  TermEq sumEq{{{l->dim, k}}, ctx};
  if (!sumEq.eq(l->args[0], e))
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
  if (isOp<arith::SubFOp>(x)) {
    Term *m = stripCasts(x->args[1]);
    if (m->kind == Term::Reduce &&
        isa<arith::MaximumFOp, arith::MaxNumFOp>(m->op)) {
      Operation *maxAt = m->op->getParentOp();
      double init;
      if (!isConstTerm(m->args[1], &init) ||
          !(std::isinf(init) || init <= -3.0e38) || init > 0)
        return fail(maxAt, "softmax-max",
                    "the softmax max does not start at -inf or the lowest "
                    "float");
      TermEq maxEq{{{m->dim, k}}, ctx};
      if (!maxEq.eq(m->args[0], x->args[0]))
        return fail(maxAt, "softmax-axis",
                    "the softmax max is not taken over the key axis of the "
                    "same scores");
      chain.scores = x->args[0];
    }
  }
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
    // A tensor read at a constant position is a scalar.
    if (llvm::all_of(t->access.getResults(),
                     [](AffineExpr e) { return isa<AffineConstantExpr>(e); }))
      return success();
    return fail(at, "score-tensor",
                "a score term reads a tensor elementwise (only an additive "
                "bias and a boolean keep mask may read tensors)");
  }
  case Term::Index:
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (usesDim(t->index, d) && !llvm::is_contained(chain.rows, d) &&
          d != chain.kDim)
        return fail(at, "not-pointwise",
                    "a score term uses a coordinate that is not one of the "
                    "score's");
    return success();
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
          !llvm::all_of(bl->access.getResults(), [](AffineExpr e) {
            return isa<AffineConstantExpr>(e);
          })) {
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

/// Peels data movement (transposes, broadcasts, copies, reshapes) above `v`
/// while the access stays a plain coordinate map.
static std::pair<Value, AffineMap>
peel(Value v, AffineMap access,
     function_ref<bool(AffineMap)> acceptable) {
  MLIRContext *ctx = v.getContext();
  Value cur = v;
  AffineMap curAccess = access;
  while (Operation *def = cur.getDefiningOp()) {
    Value src;
    AffineMap next;
    if (auto lin = dyn_cast<linalg::LinalgOp>(def)) {
      // Pure data movement: one input, body yields the input element.
      if (lin.getNumDpsInputs() != 1 || lin.getNumDpsInits() != 1 ||
          lin.getNumReductionLoops() != 0 || !lin.hasPureTensorSemantics())
        break;
      Block *body = lin.getBlock();
      if (body->getTerminator()->getOperand(0) != body->getArgument(0))
        break;
      AffineMap outMap = lin.getIndexingMapMatchingResult(cast<OpResult>(cur));
      SmallVector<AffineExpr> loops(lin.getNumLoops());
      bool ok = true;
      for (auto [p, e] : llvm::enumerate(outMap.getResults())) {
        auto d = dyn_cast<AffineDimExpr>(e);
        if (!d || loops[d.getPosition()]) {
          ok = false;
          break;
        }
        loops[d.getPosition()] = curAccess.getResult(p);
      }
      if (!ok || llvm::any_of(loops, [](AffineExpr e) { return !e; }))
        break;
      OpOperand *in = lin.getDpsInputOperand(0);
      src = in->get();
      next = composeAccess(lin.getMatchingIndexingMap(in), loops, ctx);
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def)) {
      src = def->getOperand(0);
      next = reshapeSourceAccess(def, curAccess, /*unitDimsAtZero=*/true);
    } else {
      break;
    }
    // Intermediate maps may be anything (a collapse reads `h mod G` that a
    // later broadcast drops); the result is the deepest acceptable point.
    cur = src;
    curAccess = next;
    if (acceptable(next)) {
      v = src;
      access = next;
    }
  }
  return {v, access};
}

/// Assigns the output's row dims to the op's (b, h, q) and peels Q, K, V.
LogicalResult Matcher::assignRoles(Chain &chain) {
  Operation *c1op = chain.c1.getOperation();
  // Access of the first contraction's loops in canonical dims.
  AffineMap outMap = chain.c1.getDpsInitOperand(0)
                         ->getOwner()
                         ->getNumResults()
                         ? chain.c1.getIndexingMapMatchingResult(
                               chain.c1->getResult(0))
                         : AffineMap();
  SmallVector<AffineExpr> loops(chain.c1.getNumLoops());
  for (auto [p, e] : llvm::enumerate(outMap.getResults())) {
    auto d = dyn_cast<AffineDimExpr>(e);
    auto s = dyn_cast<AffineDimExpr>(scoresAccess.getResult(p));
    if (!d || !s || loops[d.getPosition()])
      return fail(c1op, "score-layout",
                  "the scores are reshaped between the contractions");
    loops[d.getPosition()] = s;
  }
  for (auto [i, e] : llvm::enumerate(loops))
    if (!e) {
      std::optional<unsigned> fresh =
          freshDim(chain.c1.getStaticLoopRanges()[i]);
      if (!fresh)
        return fail(c1op, "too-complex", "too many dimensions");
      chain.dDim = *fresh;
      e = getAffineDimExpr(*fresh, ctx);
    }
  if (!isZeroTensor(chain.c1.getDpsInits()[0]) ||
      !isZeroTensor(chain.c2.getDpsInits()[0]))
    return fail(isZeroTensor(chain.c1.getDpsInits()[0]) ? c2.getOperation()
                                                        : c1op,
                "accumulator", "a contraction accumulates into a non-zero "
                               "tensor");
  // Q is the operand that does not read the key dim.
  AffineMap m0 = composeAccess(
      chain.c1.getMatchingIndexingMap(chain.c1.getDpsInputOperand(0)), loops,
      ctx);
  AffineMap m1 = composeAccess(
      chain.c1.getMatchingIndexingMap(chain.c1.getDpsInputOperand(1)), loops,
      ctx);
  Value qv = chain.c1.getDpsInputs()[0], kv = chain.c1.getDpsInputs()[1];
  auto readsDim = [](AffineMap m, unsigned d) {
    return llvm::any_of(m.getResults(),
                        [&](AffineExpr e) { return usesDim(e, d); });
  };
  if (readsDim(m0, chain.kDim)) {
    std::swap(m0, m1);
    std::swap(qv, kv);
  }
  if (readsDim(m0, chain.kDim) || !readsDim(m1, chain.kDim))
    return fail(c1op, "score-layout",
                "the key axis of the second contraction is not the key axis "
                "of the first");
  // The rows: output dims other than the value feature dim.
  if (chain.rows.size() > 3)
    return fail(c2.getOperation(), "rank",
                "more than three row dimensions (batch, heads, queries)");
  // K and V: plain dims, or h floordiv G, or 0 on unit dims.
  auto kvAcceptable = [&](AffineMap m) {
    for (AffineExpr e : m.getResults()) {
      if (isa<AffineDimExpr, AffineConstantExpr>(e))
        continue;
      auto bin = dyn_cast<AffineBinaryOpExpr>(e);
      if (bin && bin.getKind() == AffineExprKind::FloorDiv &&
          isa<AffineDimExpr>(bin.getLHS()) &&
          isa<AffineConstantExpr>(bin.getRHS()))
        continue;
      return false;
    }
    return true;
  };
  auto plainAcceptable = [&](AffineMap m) {
    return llvm::all_of(m.getResults(), [](AffineExpr e) {
      return isa<AffineDimExpr, AffineConstantExpr>(e);
    });
  };
  std::tie(chain.q, chain.qMap) = peel(qv, m0, plainAcceptable);
  std::tie(chain.k, chain.kMap) = peel(kv, m1, kvAcceptable);
  OpOperand *vOperand = nullptr;
  for (OpOperand *in : chain.c2.getDpsInputOperands())
    if (in->get() != chain.c2.getDpsInputs()[chain.scoresOperand])
      vOperand = in;
  std::tie(chain.v, chain.vMap) =
      peel(vOperand->get(), chain.c2.getMatchingIndexingMap(vOperand)
                                .replaceDimsAndSymbols({}, {}, kMaxDims, 0),
           kvAcceptable);
  if (!plainAcceptable(chain.qMap) || !kvAcceptable(chain.kMap) ||
      !kvAcceptable(chain.vMap))
    return fail(c1op, "operand-layout",
                "an operand is read through a map that is not a coordinate "
                "permutation");
  // Which rows K reads, and through which group size.
  auto headInfo = [&](AffineMap m, unsigned row, int64_t *group) {
    for (AffineExpr e : m.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == row) {
        *group = 1;
        return true;
      }
      if (auto bin = dyn_cast<AffineBinaryOpExpr>(e))
        if (cast<AffineDimExpr>(bin.getLHS()).getPosition() == row) {
          *group = cast<AffineConstantExpr>(bin.getRHS()).getValue();
          return true;
        }
    }
    *group = 0; // absent: all heads share one
    return false;
  };
  SmallVector<unsigned> absent, present;
  std::optional<unsigned> grouped;
  for (unsigned r : chain.rows) {
    int64_t g;
    if (!headInfo(chain.kMap, r, &g))
      absent.push_back(r);
    else
      present.push_back(r);
    if (g > 1)
      grouped = r;
  }
  if (absent.empty() || absent.size() > 2)
    return fail(c1op, "rank",
                "cannot identify the query axis (rows not read by K)");
  chain.qDim = absent.back();
  if (absent.size() == 2) {
    if (grouped)
      return fail(c1op, "heads", "two head axes not read by K");
    chain.hDim = absent.front();
  } else if (grouped) {
    chain.hDim = grouped;
  }
  SmallVector<unsigned> rest;
  for (unsigned r : present)
    if (!chain.hDim || r != *chain.hDim)
      rest.push_back(r);
  if (!chain.hDim && !rest.empty()) {
    chain.hDim = rest.back();
    rest.pop_back();
  }
  if (rest.size() > 1)
    return fail(c1op, "rank", "more than one batch axis");
  if (!rest.empty())
    chain.bDim = rest.front();
  // Group size, identical for K and V.
  int64_t gk = 0, gv = 0;
  if (chain.hDim) {
    headInfo(chain.kMap, *chain.hDim, &gk);
    headInfo(chain.vMap, *chain.hDim, &gv);
    int64_t h = size(*chain.hDim);
    if (gk == 0)
      gk = h;
    if (gv == 0)
      gv = h;
    if (gk != gv || h % gk != 0)
      return fail(c1op, "heads",
                  "key and value heads are grouped differently");
    chain.groupSize = gk;
    // Exactness of the grouping: every read of h by K and V is `h` (G = 1)
    // or `h floordiv G`, so K4[b, h / G] holds what the graph reads.
    for (AffineMap m : {chain.kMap, chain.vMap})
      for (AffineExpr e : m.getResults()) {
        if (!usesDim(e, *chain.hDim))
          continue;
        auto bin = dyn_cast<AffineBinaryOpExpr>(e);
        bool ok = isa<AffineDimExpr>(e) ? gk == 1
                  : bin && bin.getKind() == AffineExprKind::FloorDiv &&
                      isa<AffineDimExpr>(bin.getLHS()) &&
                      cast<AffineConstantExpr>(bin.getRHS()).getValue() == gk;
        if (!ok)
          return fail(c1op, "heads",
                      "key/value heads are not read as h or h floordiv G");
      }
  }
  int64_t dummy;
  if (chain.qDim && headInfo(chain.vMap, *chain.qDim, &dummy))
    return fail(c2.getOperation(), "operand-layout",
                "V depends on the query axis");
  // Element type: the widest of Q, K, V; narrower ones are extended (exact).
  Type widest;
  for (Value x : {chain.q, chain.k, chain.v}) {
    Type t = cast<ShapedType>(x.getType()).getElementType();
    if (!t.isF16() && !t.isBF16() && !t.isF32())
      return fail(c1op, "element-type",
                  "Q, K and V must be f16, bf16 or f32");
    if (!widest || t.getIntOrFloatBitWidth() > widest.getIntOrFloatBitWidth())
      widest = t;
    else if (t != widest && t.getIntOrFloatBitWidth() ==
                                widest.getIntOrFloatBitWidth())
      widest = Float32Type::get(ctx); // f16 with bf16: both fit in f32
  }
  chain.elementType = widest;
  return success();
}

FailureOr<Chain> Matcher::match() {
  Chain chain;
  chain.c2 = c2;
  Operation *c2op = c2.getOperation();
  // Dims of c2 are canonical dims 0..n-1.
  SmallVector<int64_t> ranges = c2.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return (void)fail(c2op, "dynamic", "dynamic shapes are not supported"), failure();
  sizes.assign(ranges.begin(), ranges.end());
  for (auto [i, it] : llvm::enumerate(c2.getIteratorTypesArray()))
    if (it == utils::IteratorType::reduction)
      chain.kDim = i;
  auto dimsOf = [](AffineMap m) {
    llvm::SmallSetVector<unsigned, 4> ds;
    for (AffineExpr e : m.getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        ds.insert(d.getPosition());
    return ds;
  };
  auto toCanon = [&](AffineMap m) {
    return m.replaceDimsAndSymbols({}, {}, kMaxDims, 0);
  };
  // Which c2 input is P: the one computed from a first contraction through a
  // softmax. Try both; the first that has a first contraction wins.
  for (unsigned pi = 0; pi < 2; ++pi) {
    OpOperand *pOp = c2.getDpsInputOperand(pi);
    SetVector<Operation *> back;
    BackwardSliceOptions opts;
    opts.inclusive = false;
    opts.filter = [](Operation *op) { return !isContraction(op); };
    SmallVector<Operation *> contractions;
    if (Operation *def = pOp->get().getDefiningOp()) {
      if (isContraction(def))
        continue; // P straight from a contraction: no softmax
      (void)getBackwardSlice(def, &back, opts);
      back.insert(def);
      for (Operation *op : back)
        for (Value operand : op->getOperands())
          if (Operation *d = operand.getDefiningOp(); d && isContraction(d))
            if (!llvm::is_contained(contractions, d))
              contractions.push_back(d);
    }
    if (contractions.empty())
      continue;
    if (contractions.size() > 1)
      return (void)fail(c2op, "several-contractions",
                  "the probabilities depend on several contractions"),
             failure();
    chain.scoresOperand = pi;
    chain.c1 = cast<linalg::LinalgOp>(contractions.front());
    scoresValue = contractions.front()->getResult(0);
    // The forward slice of the scores up to c2.
    ForwardSliceOptions fopts;
    fopts.filter = [&](Operation *op) { return op != c2op; };
    SetVector<Operation *> forward;
    getForwardSlice(contractions.front(), &forward, fopts);
    // Only ops beside the contractions (not the scalar ops of their bodies).
    for (Operation *op : forward)
      if (op != c2op && op->getBlock() == c2op->getBlock())
        slice.insert(op);
    AffineMap pAccess = toCanon(c2.getMatchingIndexingMap(pOp));
    AffineMap vMapC2 = c2.getMatchingIndexingMap(c2.getDpsInputOperand(1 - pi));
    AffineMap oMap = c2.getIndexingMapMatchingResult(c2->getResult(0));
    auto pDims = dimsOf(c2.getMatchingIndexingMap(pOp)), vDims = dimsOf(vMapC2);
    for (unsigned d : dimsOf(oMap)) {
      if (vDims.contains(d) && !pDims.contains(d)) {
        chain.eDim = d;
      } else {
        chain.rows.push_back(d);
      }
    }
    if (dimsOf(oMap).size() != oMap.getNumResults() ||
        chain.rows.size() + 1 != oMap.getNumResults() ||
        !pDims.contains(chain.kDim) || !vDims.contains(chain.kDim))
      return (void)fail(c2op, "contraction-form",
                  "the second contraction is not rows x key x value-features"),
             failure();
    Term *p = traceTensor(pOp->get(), pAccess);
    if (!p)
      return failure();
    if (failed(matchSoftmax(p, chain)))
      return failure();
    // The scores leaf access (for pointwise checks).
    std::function<Term *(Term *)> findScores = [&](Term *t) -> Term * {
      if (t->kind == Term::Leaf && t->tensor == scoresValue)
        return t;
      for (Term *a : t->args)
        if (Term *s = findScores(a))
          return s;
      return nullptr;
    };
    Term *sLeaf = findScores(chain.scores);
    if (!sLeaf)
      return (void)fail(c2op, "no-scores",
                  "the softmax input does not read the first contraction"),
             failure();
    scoresAccess = sLeaf->access;
    // Intermediates must not escape: every user of a chain op is in the chain.
    visited.insert(contractions.front());
    for (Operation *op : visited)
      for (Operation *user : op->getUsers())
        if (user != c2op && !visited.contains(user))
          return (void)fail(op, "escapes",
                      "an intermediate of the chain has a user outside it (" +
                          user->getName().getStringRef() + ")"),
                 failure();
    for (Operation *op : slice)
      if (!visited.contains(op))
        return (void)fail(op, "escapes",
                    "the scores flow into an op outside the chain"),
               failure();
    chain.ops = visited;
    if (failed(assignRoles(chain)))
      return failure();
    if (failed(splitScores(chain)))
      return failure();
    return chain;
  }
  return (void)fail(c2op, "no-softmax",
              "no operand of the contraction is a softmax of another "
              "contraction"),
         failure();
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

class Rewriter {
public:
  Rewriter(Matcher &m, Chain &c, OpBuilder &b)
      : m(m), c(c), b(b), loc(c.c2.getLoc()), ctx(b.getContext()) {}

  Value run();

private:
  /// Canonical dim -> position in [B, H, Nq, X] (X = the last operand dim).
  std::optional<unsigned> role(unsigned d, unsigned last) {
    if (c.bDim && d == *c.bDim)
      return 0;
    if (c.hDim && d == *c.hDim)
      return 1;
    if (c.qDim && d == *c.qDim)
      return 2;
    if (d == last)
      return 3;
    return std::nullopt;
  }
  int64_t roleSize(std::optional<unsigned> d) { return d ? m.size(*d) : 1; }

  /// A [4]-d tensor `T4[i0..i3] = convert(src[map(i)])`, where `map` is the
  /// canonical access with dims renamed to their role positions.
  Value layout(Value src, AffineMap access, ArrayRef<int64_t> shape, Type elem,
               ArrayRef<std::optional<AffineExpr>> dimToLoop);
  Value buildRegionTerm(Term *t, OpBuilder &rb, ArrayRef<Value> coords,
                        Value score, IRMapping &memo);

  Matcher &m;
  Chain &c;
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  Operation *attnOp = nullptr;
};

static Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(b, loc, to, v);
  // Same width (f16 <-> bf16): through f32.
  Value w = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, to, w);
}

Value Rewriter::layout(Value src, AffineMap access, ArrayRef<int64_t> shape,
                       Type elem, ArrayRef<std::optional<AffineExpr>> dimToLoop) {
  SmallVector<AffineExpr> repl;
  for (unsigned d = 0; d < kMaxDims; ++d)
    repl.push_back(dimToLoop[d] ? *dimToLoop[d] : getAffineConstantExpr(0, ctx));
  SmallVector<AffineExpr> exprs;
  for (AffineExpr e : access.getResults())
    exprs.push_back(simplifyAffineExpr(e.replaceDims(repl), shape.size(), 0));
  AffineMap inMap = AffineMap::get(shape.size(), 0, exprs, ctx);
  auto srcType = cast<RankedTensorType>(src.getType());
  if (inMap.isIdentity() && srcType.getShape() == shape &&
      srcType.getElementType() == elem)
    return src;
  Value init = tensor::EmptyOp::create(b, loc, shape, elem);
  SmallVector<utils::IteratorType> iters(shape.size(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{src},
             ValueRange{init},
             ArrayRef<AffineMap>{inMap, b.getMultiDimIdentityMap(shape.size())},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value x = a[0];
               if (x.getType() != elem)
                 x = convertScalar(nb, l, x, elem);
               linalg::YieldOp::create(nb, l, ValueRange{x});
             })
      .getResult(0);
}

Value Rewriter::buildRegionTerm(Term *t, OpBuilder &rb, ArrayRef<Value> coords,
                                Value score, IRMapping &memo) {
  switch (t->kind) {
  case Term::Leaf: {
    if (t->tensor == m.scoresValue)
      return convertScalar(rb, loc, score, t->type);
    // A tensor read at a constant position: extract it before the op.
    double cst;
    if (isConstTerm(t, &cst))
      return arith::ConstantOp::create(rb, loc, FloatAttr::get(t->type, cst));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(attnOp);
    SmallVector<Value> idx;
    for (AffineExpr e : t->access.getResults())
      idx.push_back(arith::ConstantIndexOp::create(
          b, loc, cast<AffineConstantExpr>(e).getValue()));
    return tensor::ExtractOp::create(b, loc, t->tensor, idx);
  }
  case Term::Scalar:
    return t->scalar;
  case Term::Index: {
    SmallVector<Value> dims(kMaxDims);
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (std::optional<unsigned> r = role(d, c.kDim))
        dims[d] = coords[*r];
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (!dims[d])
        dims[d] = coords[0]; // unused (checkRegion proved it)
    return affine::expandAffineExpr(rb, loc, t->index, dims, {});
  }
  case Term::Op: {
    IRMapping map;
    for (auto [operand, arg] : llvm::zip(t->op->getOperands(), t->args))
      map.map(operand, buildRegionTerm(arg, rb, coords, score, memo));
    return rb.clone(*t->op, map)->getResult(0);
  }
  case Term::Reduce:
  case Term::Softmax:
    break;
  }
  llvm_unreachable("checked by checkRegion");
}

Value Rewriter::run() {
  b.setInsertionPoint(c.c2);
  Type et = c.elementType;
  int64_t B = roleSize(c.bDim), H = roleSize(c.hDim), Nq = roleSize(c.qDim),
          Nk = m.size(c.kDim), D = m.size(c.dDim), Dv = m.size(c.eDim);
  int64_t G = c.groupSize, Hkv = H / G;
  auto dimsFor = [&](unsigned last, bool kv) {
    SmallVector<std::optional<AffineExpr>> map(kMaxDims);
    if (c.bDim)
      map[*c.bDim] = getAffineDimExpr(0, ctx);
    if (c.hDim)
      map[*c.hDim] = kv ? getAffineDimExpr(1, ctx) * G : getAffineDimExpr(1, ctx);
    if (c.qDim)
      map[*c.qDim] = getAffineDimExpr(2, ctx);
    map[kv ? c.kDim : last] = getAffineDimExpr(kv ? 2 : 3, ctx);
    map[last] = getAffineDimExpr(3, ctx);
    return map;
  };
  // Q4[b,h,q,d], K4[b,hkv,k,d], V4[b,hkv,k,e].
  Value q4 = layout(c.q, c.qMap, {B, H, Nq, D}, et, dimsFor(c.dDim, false));
  Value k4 = layout(c.k, c.kMap, {B, Hkv, Nk, D}, et, dimsFor(c.dDim, true));
  Value v4 = layout(c.v, c.vMap, {B, Hkv, Nk, Dv}, et, dimsFor(c.eDim, true));
  // Bias / keep: [B|1, H|1, Nq|1, Nk|1], read through their broadcast maps.
  auto sideOperand = [&](Term *leaf) -> Value {
    SmallVector<int64_t> shape(4, 1);
    SmallVector<std::optional<AffineExpr>> map(kMaxDims);
    for (AffineExpr e : leaf->access.getResults())
      for (unsigned d = 0; d < kMaxDims; ++d)
        if (usesDim(e, d)) {
          std::optional<unsigned> r = role(d, c.kDim);
          shape[*r] = m.size(d);
          map[d] = getAffineDimExpr(*r, ctx);
        }
    return layout(leaf->tensor, leaf->access, shape,
                  cast<ShapedType>(leaf->tensor.getType()).getElementType(),
                  map);
  };
  Value bias = c.bias ? sideOperand(c.bias) : Value();
  Value keep = c.keep ? sideOperand(c.keep) : Value();

  auto outType = RankedTensorType::get({B, H, Nq, Dv}, et);
  auto op = AttentionOp::create(
      b, loc, TypeRange{outType}, q4, k4, v4, bias, keep, /*seed=*/Value(),
      b.getF32FloatAttr(c.scale ? c.scale->convertToFloat() : 1.0f),
      MaskKindAttr::get(ctx, c.mask), MaskAlignmentAttr::get(ctx, c.alignment),
      c.mask == MaskKind::sliding_window ? b.getI64IntegerAttr(c.windowLeft)
                                         : IntegerAttr(),
      c.mask == MaskKind::sliding_window ? b.getI64IntegerAttr(c.windowRight)
                                         : IntegerAttr(),
      b.getF32FloatAttr(0.0f));
  attnOp = op;
  // score_mod: the region term with the scores as the block argument.
  bool trivialRegion = c.region->kind == Term::Leaf &&
                       c.region->tensor == m.scoresValue &&
                       c.region->type.isF32();
  if (!trivialRegion) {
    Region &region = op.getScoreMod();
    Block *block = new Block();
    region.push_back(block);
    Type f32 = b.getF32Type(), index = b.getIndexType();
    for (Type t : {f32, index, index, index, index})
      block->addArgument(t, loc);
    OpBuilder rb = OpBuilder::atBlockEnd(block);
    IRMapping memo;
    SmallVector<Value> coords(block->getArguments().drop_front());
    Value y = buildRegionTerm(c.region, rb, coords, block->getArgument(0), memo);
    YieldOp::create(rb, loc, ValueRange{convertScalar(rb, loc, y, f32)});
  }
  // Back to the graph's output layout and type.
  auto resType = cast<RankedTensorType>(c.c2->getResult(0).getType());
  AffineMap oMap = c.c2.getIndexingMapMatchingResult(c.c2->getResult(0));
  SmallVector<AffineExpr> exprs;
  for (std::optional<unsigned> d : {c.bDim, c.hDim, c.qDim,
                                    std::optional<unsigned>(c.eDim)}) {
    AffineExpr e = getAffineConstantExpr(0, ctx);
    if (d)
      for (auto [p, r] : llvm::enumerate(oMap.getResults()))
        if (cast<AffineDimExpr>(r).getPosition() == *d)
          e = getAffineDimExpr(p, ctx);
    exprs.push_back(e);
  }
  AffineMap readO = AffineMap::get(resType.getRank(), 0, exprs, ctx);
  Value out = op.getOutput();
  if (!(readO.isIdentity() && resType == outType)) {
    Value init = tensor::EmptyOp::create(b, loc, resType.getShape(),
                                         resType.getElementType());
    SmallVector<utils::IteratorType> iters(resType.getRank(),
                                           utils::IteratorType::parallel);
    Type resElem = resType.getElementType();
    out = linalg::GenericOp::create(
              b, loc, TypeRange{resType}, ValueRange{out}, ValueRange{init},
              ArrayRef<AffineMap>{readO,
                                  b.getMultiDimIdentityMap(resType.getRank())},
              iters,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                linalg::YieldOp::create(
                    nb, l, ValueRange{convertScalar(nb, l, a[0], resElem)});
              })
              .getResult(0);
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

void RaiseAttentionStats::print(llvm::raw_ostream &os) const {
  os << "attn-raise-attention: " << candidates << " candidate(s), " << fused
     << " fused, " << (candidates - fused) << " not fused\n";
  for (const auto &[key, n] : notFused)
    os << "  not fused (" << key << "): " << n << "\n";
}

LogicalResult attnfuse::attn::raiseAttention(Operation *root,
                                             const RaiseAttentionOptions &options,
                                             RaiseAttentionStats *stats) {
  RaiseAttentionStats local;
  RaiseAttentionStats &st = stats ? *stats : local;
  // Candidates: contractions reading, through non-contraction ops, the
  // exponential or softmax of another contraction.
  SmallVector<linalg::LinalgOp> candidates;
  root->walk([&](linalg::LinalgOp op) {
    if (!isContraction(op))
      return;
    SetVector<Operation *> back;
    BackwardSliceOptions opts;
    opts.filter = [](Operation *o) { return !isContraction(o); };
    for (Value in : op.getDpsInputs())
      if (Operation *def = in.getDefiningOp())
        if (!isContraction(def))
          (void)getBackwardSlice(def, &back, opts), back.insert(def);
    bool softmaxLike = false, fromContraction = false;
    for (Operation *o : back) {
      if (isa<linalg::SoftmaxOp, math::ExpOp, math::Exp2Op>(o) ||
          (isa<linalg::LinalgOp>(o) &&
           llvm::any_of(o->getRegion(0).getOps(), [](Operation &x) {
             return isa<math::ExpOp, math::Exp2Op>(x);
           })))
        softmaxLike = true;
      for (Value v : o->getOperands())
        if (Operation *d = v.getDefiningOp(); d && isContraction(d))
          fromContraction = true;
    }
    if (softmaxLike && fromContraction)
      candidates.push_back(op);
  });
  bool anyError = false;
  for (linalg::LinalgOp c2 : candidates) {
    ++st.candidates;
    Matcher matcher(c2);
    FailureOr<Chain> chain = matcher.match();
    if (failed(chain)) {
      Failure &f = matcher.why;
      Operation *at = f.at ? f.at : c2.getOperation();
      std::string key = f.key.empty() ? "unknown" : f.key;
      ++st.notFused[key];
      std::string msg = "not fused: " + (f.message.empty() ? "unknown reason"
                                                           : f.message);
      if (options.report == RaiseReport::Remarks)
        at->emitRemark(msg);
      else if (options.report == RaiseReport::Errors) {
        at->emitError(msg);
        anyError = true;
      }
      continue;
    }
    OpBuilder b(c2);
    Rewriter rewriter(matcher, *chain, b);
    Value out = rewriter.run();
    if (options.report != RaiseReport::None)
      c2->emitRemark("fused into attn.attention");
    c2->getResult(0).replaceAllUsesWith(out);
    c2->erase();
    // The chain is dead now; erase it, users first.
    SmallVector<Operation *> ops(chain->ops.begin(), chain->ops.end());
    bool progress = true;
    while (progress) {
      progress = false;
      for (Operation *&op : ops)
        if (op && op->use_empty()) {
          op->erase();
          op = nullptr;
          progress = true;
        }
    }
    ++st.fused;
  }
  return failure(anyError);
}

namespace {
struct AttnRaiseAttentionPass
    : attnfuse::attn::impl::AttnRaiseAttentionBase<AttnRaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    RaiseAttentionOptions options;
    if (report == "remarks")
      options.report = RaiseReport::Remarks;
    else if (report == "errors")
      options.report = RaiseReport::Errors;
    else if (report == "none")
      options.report = RaiseReport::None;
    else {
      getOperation()->emitError("attn-raise-attention: unknown report mode '")
          << report << "' (expected remarks, errors or none)";
      return signalPassFailure();
    }
    RaiseAttentionStats stats;
    LogicalResult result = raiseAttention(getOperation(), options, &stats);
    if (summary)
      stats.print(llvm::errs());
    if (failed(result))
      signalPassFailure();
  }
};
} // namespace
