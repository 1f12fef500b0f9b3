//===- Match.cpp - the stages of the raising for one chain ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <functional>

using namespace mlir;

namespace attnfuse::attn::raise {

FailureOr<Chain> Matcher::match() {
  Chain chain;
  chain.c2 = c2;
  Operation *c2op = c2.getOperation();
  // Dims of c2 are canonical dims 0..n-1.
  // Runtime dims have the size ShapedType::kDynamic: every range analysis
  // treats them as unknown (rangeOf), and the roles they may take are
  // checked once assigned (below, after assignRoles).
  SmallVector<int64_t> ranges = c2.getStaticLoopRanges();
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
  // Which c2 input is P: the one that is a softmax of a first contraction
  // (not a fixed position: O^T = V^T P^T reads P second, and V may come out
  // of a projection, another contraction).
  for (unsigned pi = 0; pi < 2; ++pi) {
    OpOperand *pOp = c2.getDpsInputOperand(pi);
    if (!isSoftmaxOfContraction(pOp->get()))
      continue;
    SetVector<Operation *> back;
    BackwardSliceOptions opts;
    opts.inclusive = false;
    opts.omitUsesFromAbove = false; // bodies that read P's source from above
    opts.filter = [](Operation *op) { return !isContraction(op, true); };
    SmallVector<Operation *> contractions;
    if (Operation *def = pOp->get().getDefiningOp()) {
      if (isContraction(def, true))
        continue; // P straight from a contraction: no softmax
      (void)getBackwardSlice(def, &back, opts);
      back.insert(def);
      for (Operation *op : back)
        op->walk([&](Operation *inner) {
          for (Value operand : inner->getOperands())
            if (Operation *d = operand.getDefiningOp();
                d && isContraction(d, true) &&
                !llvm::is_contained(contractions, d))
              contractions.push_back(d);
        });
    }
    if (contractions.empty())
      continue;
    if (contractions.size() > 1)
      return (void)fail(c2op, "several-contractions",
                  "the probabilities depend on several contractions"),
             failure();
    if (!isContraction(contractions.front()))
      return (void)fail(contractions.front(), "quantized",
                  "the scores come from an integer contraction (quantized "
                  "Q.K^T); attn.attention computes Q.K^T in floating point"),
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
    // And the ops whose bodies read the slice from above (a broadcast
    // written as tensor.extract in a generic without inputs), with theirs.
    for (bool grown = true; grown;) {
      grown = false;
      for (Operation &op : *c2op->getBlock()) {
        if (&op == c2op || slice.contains(&op) || op.getNumRegions() == 0)
          continue;
        bool reads = false;
        op.walk([&](Operation *inner) {
          for (Value x : inner->getOperands())
            if (Operation *d = x.getDefiningOp(); d && slice.contains(d))
              reads = true;
        });
        if (!reads)
          continue;
        slice.insert(&op);
        SetVector<Operation *> more;
        getForwardSlice(&op, &more, fopts);
        for (Operation *m : more)
          if (m != c2op && m->getBlock() == c2op->getBlock())
            slice.insert(m);
        grown = true;
      }
    }
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
    visited.insert(contractions.front());
    // The log-sum-exp of the softmax returned beside O becomes the op's lse.
    matchLse(chain);
    // Intermediates must not escape: every user of a chain op is in the
    // chain, or dead (an unused reshape of the scores is no escape; it is
    // erased with the chain).
    SetVector<Operation *> dead;
    std::function<bool(Operation *)> isDead = [&](Operation *op) {
      if (dead.contains(op))
        return true;
      if (op->getNumResults() == 0 || !isMemoryEffectFree(op) ||
          op->getNumRegions() != 0 ||
          !llvm::all_of(op->getUsers(), isDead))
        return false;
      dead.insert(op);
      return true;
    };
    // A use inside a body (a broadcast's tensor.extract from above) is a
    // use by the op that holds it.
    auto holder = [&](Operation *owner) {
      Operation *op = c2op->getBlock()->findAncestorOpInBlock(*owner);
      return op ? op : owner;
    };
    for (Operation *op : visited)
      for (OpOperand &use : op->getUses())
        if (Operation *user = holder(use.getOwner());
            user != c2op && !visited.contains(user) && !isDead(user) &&
            !(chain.lse && use.get() == chain.lse->value))
          return (void)fail(op, "escapes",
                      "an intermediate of the chain has a user outside it (" +
                          user->getName().getStringRef() + ")"),
                 failure();
    // What computes from the LSE is outside the chain.
    SetVector<Operation *> afterLse;
    if (chain.lse)
      getForwardSlice(chain.lse->value, &afterLse);
    for (Operation *op : slice)
      if (!visited.contains(op) && !afterLse.contains(op) && !isDead(op))
        return (void)fail(op, "escapes",
                    "the scores flow into an op outside the chain"),
               failure();
    visited.insert(dead.begin(), dead.end());
    chain.ops = visited;
    if (failed(assignRoles(chain)))
      return failure();
    // Head counts and head dims shape the code: they must be static; B, Nq
    // and Nk may be runtime sizes.
    for (auto [d, what] :
         {std::pair{chain.hDim, "head count"},
          std::pair{std::optional<unsigned>(chain.dDim), "query/key head dim"},
          std::pair{std::optional<unsigned>(chain.eDim), "value head dim"}})
      if (d && ShapedType::isDynamic(size(*d)))
        return fail(c2op, "dynamic",
                    Twine("the ") + what +
                        " is a runtime size ('?'); attn.attention takes "
                        "runtime batch and sequence lengths only");
    // An LSE that reads a folded row as two dims: the roles split it.
    if (chain.lse && chain.lse->fold) {
      const Chain::Lse::Fold &f = *chain.lse->fold;
      if (!chain.split || chain.split->row != f.row ||
          chain.split->factor != f.factor)
        return fail(c2op, "lse-layout",
                    "the log-sum-exp splits a row of the output that the "
                    "operands do not split the same way");
      chain.lse->dims[f.outerPos] = chain.split->outer;
      chain.lse->dims[f.innerPos] = chain.split->inner;
    }
    if (failed(splitScores(chain)))
      return failure();
    return chain;
  }
  return (void)fail(c2op, "no-softmax",
              "no operand of the contraction is a softmax of another "
              "contraction"),
         failure();
}

/// `max + log(sum)` (or `log(sum)` for a softmax without the max
/// subtraction) of the chain's own row max and sum, casts aside.
static bool isLse(Term *t, Chain &chain, MLIRContext *ctx) {
  auto same = [&](Term *a, Term *b) {
    TermEq eq{DenseMap<unsigned, unsigned>(), ctx};
    return eq.eq(stripCasts(a), stripCasts(b));
  };
  auto logOf = [&](Term *x) -> Term * {
    x = stripCasts(x);
    return isOp<math::LogOp>(x) ? x->args[0] : nullptr;
  };
  t = stripCasts(t);
  if (!chain.rowMax) {
    Term *l = logOf(t);
    return l && same(l, chain.rowSum);
  }
  if (!isOp<arith::AddFOp>(t))
    return false;
  for (int i = 0; i < 2; ++i)
    if (Term *l = logOf(t->args[1 - i]);
        l && same(l, chain.rowSum) && same(t->args[i], chain.rowMax))
      return true;
  return false;
}

void Matcher::matchLse(Chain &chain) {
  if (!chain.rowSum)
    return;
  Operation *c2op = c2.getOperation();
  // The rows of the output: each non-unit dim of the LSE reads one of those
  // of its size; its unit dims read the unit rows (in order) or nothing.
  SmallVector<unsigned> rows, unitRows;
  for (unsigned r : chain.rows)
    (size(r) != 1 ? rows : unitRows).push_back(r);
  // Traces `r` read through `exprs` and takes it as the chain's LSE (with
  // the layout `lse`) where it is one; otherwise restores what the trace
  // visited and the dims it added.
  auto tryLse = [&](Value r, ArrayRef<AffineExpr> exprs, Chain::Lse &lse) {
    size_t mark = visited.size(), dims = sizes.size(),
           checks = sizeChecks.size();
    RaiseFailure saved = why;
    Term *t = traceTensor(r, AffineMap::get(kMaxDims, 0, exprs, ctx));
    why = saved;
    if (t && isLse(t, chain, ctx)) {
      chain.lse = std::move(lse);
      return true;
    }
    while (visited.size() > mark)
      visited.pop_back();
    sizes.resize(dims);
    sizeChecks.resize(checks);
    return false;
  };
  // Any op beside the chain that computes from it may be the LSE (the
  // escape check below rejects the chain where an intermediate of the LSE
  // has other users).
  for (Operation *op : slice) {
    if (visited.contains(op) || op->getNumResults() != 1)
      continue;
    Value r = op->getResult(0);
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type || !type.hasStaticShape() || r.use_empty())
      continue;
    // The op is written before the second contraction; every user of the
    // LSE must come after it.
    bool after = llvm::all_of(r.getUsers(), [&](Operation *u) {
      Operation *a = c2op->getBlock()->findAncestorOpInBlock(*u);
      return a && c2op->isBeforeInBlock(a);
    });
    if (!after)
      continue;
    SmallVector<unsigned> big, unit;
    for (auto [i, n] : llvm::enumerate(type.getShape()))
      (n != 1 ? big : unit).push_back(i);
    SmallVector<unsigned> perm(rows);
    llvm::sort(perm);
    if (big.size() == rows.size())
    do {
      for (bool withUnitRows : {true, false}) {
        bool sizesMatch = true;
        for (auto [i, p] : llvm::enumerate(big))
          sizesMatch &= type.getDimSize(p) == size(perm[i]);
        if (!sizesMatch)
          continue;
        Chain::Lse lse{r, {}};
        lse.dims.resize(type.getRank());
        SmallVector<AffineExpr> exprs(type.getRank(),
                                      getAffineConstantExpr(0, ctx));
        for (auto [i, p] : llvm::enumerate(big)) {
          lse.dims[p] = perm[i];
          exprs[p] = getAffineDimExpr(perm[i], ctx);
        }
        if (withUnitRows)
          for (auto [p, row] : llvm::zip(unit, unitRows)) {
            lse.dims[p] = row;
            exprs[p] = getAffineDimExpr(row, ctx);
          }
        if (tryLse(r, exprs, lse))
          return;
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
    // A row of the output folded from two of the LSE's dims (the second
    // contraction on B * H, the LSE on [B, H, N, 1]): adjacent non-unit
    // dims (n1, n2) of the LSE read a row of size n1 * n2 as
    // (row floordiv n2, row mod n2); the other dims read the other rows in
    // order.
    if (big.size() != rows.size() + 1)
      continue;
    for (size_t i = 0; i + 1 < big.size(); ++i) {
      int64_t n1 = type.getDimSize(big[i]), n2 = type.getDimSize(big[i + 1]);
      for (unsigned row : rows) {
        if (size(row) != n1 * n2)
          continue;
        SmallVector<unsigned> others;
        for (unsigned r2 : rows)
          if (r2 != row)
            others.push_back(r2);
        Chain::Lse lse{r, {}, Chain::Lse::Fold{row, big[i], big[i + 1], n2}};
        lse.dims.resize(type.getRank());
        SmallVector<AffineExpr> exprs(type.getRank(),
                                      getAffineConstantExpr(0, ctx));
        bool sizesMatch = true;
        for (size_t j = 0, o = 0; j < big.size(); ++j) {
          if (j == i || j == i + 1)
            continue;
          sizesMatch &= type.getDimSize(big[j]) == size(others[o]);
          lse.dims[big[j]] = others[o];
          exprs[big[j]] = getAffineDimExpr(others[o], ctx);
          ++o;
        }
        if (!sizesMatch)
          continue;
        AffineExpr rowExpr = getAffineDimExpr(row, ctx);
        exprs[big[i]] = rowExpr.floorDiv(n2);
        exprs[big[i + 1]] = rowExpr % n2;
        if (tryLse(r, exprs, lse))
          return;
      }
    }
  }
}

} // namespace attnfuse::attn::raise
