//===- Operands.cpp - roles of the rows; Q, K and V ===//
//
//===----------------------------------------------------------------------===//
#include "Chain.h"

#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SmallSet.h"

#include <functional>
#include <numeric>

using namespace mlir;

namespace attnfuse::attn::raise {

/// Peels data movement (transposes, broadcasts, copies, reshapes) above `v`
/// while the access stays a plain coordinate map.
static std::pair<Value, AffineMap>
peel(Value v, AffineMap access, function_ref<AffineMap(AffineMap)> normalize,
     function_ref<bool(AffineMap)> acceptable) {
  MLIRContext *ctx = v.getContext();
  Value cur = v;
  AffineMap curAccess = access;
  // The upcast of a cast round trip split over two ops (castRoundTripUpcast).
  Operation *upcast = nullptr;
  while (Operation *def = cur.getDefiningOp()) {
    Value src;
    AffineMap next;
    if (auto lin = dyn_cast<linalg::LinalgOp>(def)) {
      // Pure data movement: the body yields an input element (up to the
      // normal form: a broadcast written as `x + zeros` or `x * ones`, a
      // cast round trip).
      std::optional<unsigned> copied = copiedInput(lin);
      if (!copied && (def == upcast || (upcast = castRoundTripUpcast(lin))))
        copied = 0;
      if (!copied)
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
      OpOperand *in = lin.getDpsInputOperand(*copied);
      // A fill (a scalar broadcast) is a tensor with no source tensor.
      if (!isa<RankedTensorType>(in->get().getType()))
        break;
      src = in->get();
      next = composeAccess(lin.getMatchingIndexingMap(in), loops, ctx);
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def) &&
               !regroupsRuntimeDim(def)) {
      src = def->getOperand(0);
      next = reshapeSourceAccess(def, curAccess, /*unitDimsAtZero=*/true);
    } else {
      break;
    }
    // Intermediate maps may be anything (a collapse reads `h mod G` that a
    // later broadcast drops); the result is the deepest acceptable point.
    next = normalize(next);
    cur = src;
    curAccess = next;
    if (acceptable(next)) {
      v = src;
      access = next;
    }
  }
  return {v, access};
}

void Matcher::splitRow(Chain &chain, unsigned row, unsigned outer,
                       unsigned inner, int64_t factor) {
  chain.split = Chain::Split{row, outer, inner, factor};
  const Chain::Split &split = *chain.split;
  for (Term &t : arena) {
    if (t.kind == Term::Leaf)
      t.access = splitMap(t.access, split);
    else if (t.kind == Term::Index)
      t.index =
          splitMap(AffineMap::get(kMaxDims, 0, t.index), split).getResult(0);
  }
  scoresAccess = splitMap(scoresAccess, split);
  auto it = llvm::find(chain.rows, row);
  *it = inner;
  chain.rows.insert(it, outer);
}

AffineMap Matcher::splitMap(AffineMap map, const Chain::Split &split) const {
  SmallVector<AffineExpr> dims;
  for (unsigned d = 0; d < kMaxDims; ++d)
    dims.push_back(d == split.row
                       ? getAffineDimExpr(split.outer, ctx) * split.factor +
                             getAffineDimExpr(split.inner, ctx)
                       : getAffineDimExpr(d, ctx));
  SmallVector<AffineExpr> exprs;
  for (AffineExpr e : map.getResults())
    exprs.push_back(simplify(e.replaceDims(dims)));
  return simplifyInRanges(AffineMap::get(kMaxDims, 0, exprs, ctx));
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
  SmallVector<int64_t> c1Ranges = chain.c1.getStaticLoopRanges();
  // A row of the second contraction that the first folds with another
  // coordinate in the other order (JAX's GQA folds queries and the heads of
  // a group as q * G + g in the first contraction and g * Nq + q in the
  // second): the row is split at the factor the scores' access divides it
  // by, so that both read plain coordinates.
  for (AffineExpr e : scoresAccess.getResults()) {
    if (isa<AffineDimExpr, AffineConstantExpr>(e) || chain.split)
      continue;
    std::optional<std::pair<unsigned, int64_t>> fold;
    e.walk([&](AffineExpr x) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(x);
      if (fold || !bin || bin.getKind() != AffineExprKind::FloorDiv)
        return;
      auto r = dyn_cast<AffineDimExpr>(bin.getLHS());
      auto f = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (r && f && llvm::is_contained(chain.rows, r.getPosition()) &&
          f.getValue() > 1 && f.getValue() < size(r.getPosition()) &&
          size(r.getPosition()) % f.getValue() == 0)
        fold = std::make_pair(r.getPosition(), f.getValue());
    });
    if (!fold)
      continue;
    std::optional<unsigned> outer = freshDim(size(fold->first) / fold->second),
                            inner = freshDim(fold->second);
    if (!outer || !inner)
      return fail(c1op, "too-complex", "too many dimensions");
    splitRow(chain, fold->first, *outer, *inner, fold->second);
  }
  for (auto [p, e] : llvm::enumerate(outMap.getResults())) {
    auto d = dyn_cast<AffineDimExpr>(e);
    // A unit dimension of the scores is read at 0 when a reshape of unit
    // axes lies between the contractions (its only index).
    if (auto c = dyn_cast<AffineConstantExpr>(scoresAccess.getResult(p));
        d && c && c.getValue() == 0 && c1Ranges[d.getPosition()] == 1 &&
        !loops[d.getPosition()]) {
      loops[d.getPosition()] = c;
      continue;
    }
    if (!d || loops[d.getPosition()])
      return fail(c1op, "score-layout",
                  "the scores are reshaped between the contractions");
    // Any affine access: Q and K are composed with it exactly (and must
    // come out as plain coordinate maps below).
    loops[d.getPosition()] = scoresAccess.getResult(p);
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
  // A sum of coordinates times constants (flash decoding's split of the
  // keys, read back as `s * chunk + k`): the layout copy reads it as is.
  std::function<bool(AffineExpr)> isLinear = [&](AffineExpr e) -> bool {
    if (isa<AffineDimExpr, AffineConstantExpr>(e))
      return true;
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin)
      return false;
    if (bin.getKind() == AffineExprKind::Add)
      return isLinear(bin.getLHS()) && isLinear(bin.getRHS());
    return bin.getKind() == AffineExprKind::Mul &&
           isa<AffineDimExpr>(bin.getLHS()) &&
           isa<AffineConstantExpr>(bin.getRHS());
  };
  // K and V: plain dims, or h floordiv G, or 0 on unit dims, or linear.
  auto kvAcceptable = [&](AffineMap m) {
    for (AffineExpr e : m.getResults()) {
      if (isa<AffineDimExpr, AffineConstantExpr>(e))
        continue;
      if (isLinear(e))
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
  auto inRanges = [&](AffineMap m) { return simplifyInRanges(m); };
  OpOperand *vOperand = nullptr;
  for (OpOperand *in : chain.c2.getDpsInputOperands())
    if (in->get() != chain.c2.getDpsInputs()[chain.scoresOperand])
      vOperand = in;
  AffineMap m2 = chain.c2.getMatchingIndexingMap(vOperand)
                     .replaceDimsAndSymbols({}, {}, kMaxDims, 0);
  if (chain.split)
    m2 = splitMap(m2, *chain.split);
  // A row that folds batch and heads (torch-mlir lowers every [B, H, N, D]
  // matmul to a 3-D batch_matmul over B * H): where K's source reads it as
  // both `r floordiv F` and `r mod F`, r becomes two coordinates
  // r = outer * F + inner, so that K/V heads and broadcast operands are read
  // as they are stored. (A GQA read `h floordiv G` alone is no fold.)
  // The factor is read off K's source and Q's (GQA through reshapes: K's
  // source reads r as `r floordiv (2 * G)` and `(r floordiv G) mod 2`, Q's
  // as `r floordiv H` and `r mod H`).
  AffineMap kSrcMap =
      peel(kv, m1, inRanges, [](AffineMap) { return true; }).second;
  AffineMap qSrcMap =
      peel(qv, m0, inRanges, [](AffineMap) { return true; }).second;
  llvm::SmallSet<std::pair<unsigned, int64_t>, 4> divs, mods;
  for (AffineExpr e : llvm::concat<const AffineExpr>(kSrcMap.getResults(),
                                                     qSrcMap.getResults()))
    e.walk([&](AffineExpr x) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(x);
      if (!bin)
        return;
      auto r = dyn_cast<AffineDimExpr>(bin.getLHS());
      auto f = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!r || !f || !llvm::is_contained(chain.rows, r.getPosition()))
        return;
      if (bin.getKind() == AffineExprKind::FloorDiv)
        divs.insert({r.getPosition(), f.getValue()});
      else if (bin.getKind() == AffineExprKind::Mod)
        mods.insert({r.getPosition(), f.getValue()});
    });
  // The largest factor read both ways (B * H, not a group inside H); a fold
  // the graph's LSE reads as two dims first.
  SmallVector<std::pair<unsigned, int64_t>> folds;
  if (chain.lse && chain.lse->fold) {
    folds.push_back({chain.lse->fold->row, chain.lse->fold->factor});
    mods.insert(folds.front());
  }
  folds.append(divs.begin(), divs.end());
  std::stable_sort(std::next(folds.begin(), chain.lse && chain.lse->fold),
                    folds.end(),
                    [](auto a, auto b) { return a.second > b.second; });
  for (auto [row, factor] : folds) {
    if (chain.split)
      break;
    int64_t n = size(row);
    if (!mods.contains({row, factor}) || factor <= 1 || factor >= n ||
        n % factor != 0)
      continue;
    std::optional<unsigned> outer = freshDim(n / factor),
                            inner = freshDim(factor);
    if (!outer || !inner)
      break;
    splitRow(chain, row, *outer, *inner, factor);
    m0 = splitMap(m0, *chain.split);
    m1 = splitMap(m1, *chain.split);
    m2 = splitMap(m2, *chain.split);
    break;
  }
  std::tie(chain.q, chain.qMap) = peel(qv, m0, inRanges, plainAcceptable);
  std::tie(chain.k, chain.kMap) = peel(kv, m1, inRanges, kvAcceptable);
  std::tie(chain.v, chain.vMap) =
      peel(vOperand->get(), m2, inRanges, kvAcceptable);
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
      if (auto bin = dyn_cast<AffineBinaryOpExpr>(e);
          bin && bin.getKind() == AffineExprKind::FloorDiv)
        if (cast<AffineDimExpr>(bin.getLHS()).getPosition() == row) {
          *group = cast<AffineConstantExpr>(bin.getRHS()).getValue();
          return true;
        }
      // A linear read of the row: its own data per index.
      if (!isa<AffineDimExpr, AffineConstantExpr>(e) && usesDim(e, row) &&
          isLinear(e)) {
        *group = 1;
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
    // K and V may be grouped differently (MQA's V broadcast where K went
    // through an elementwise op per head): the op's group is the common
    // divisor, and a K or V read as `h floordiv g` is exact for it when G
    // divides g (every head of a group reads the same K/V head).
    if (h % gk != 0 || h % gv != 0)
      return fail(c1op, "heads",
                  "key or value heads do not divide the query heads");
    chain.groupSize = std::gcd(gk, gv);
    // Exactness of the grouping: every read of h by K and V is `h` (G = 1)
    // or `h floordiv g` with G | g, so K4[b, h / G] holds what the graph
    // reads.
    int64_t g = chain.groupSize;
    for (AffineMap m : {chain.kMap, chain.vMap})
      for (AffineExpr e : m.getResults()) {
        if (!usesDim(e, *chain.hDim))
          continue;
        auto bin = dyn_cast<AffineBinaryOpExpr>(e);
        bool ok = isa<AffineDimExpr>(e) || (bin && isLinear(e))
                      ? g == 1
                      : bin && bin.getKind() == AffineExprKind::FloorDiv &&
                            isa<AffineDimExpr>(bin.getLHS()) &&
                            cast<AffineConstantExpr>(bin.getRHS()).getValue() %
                                    g ==
                                0;
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

} // namespace attnfuse::attn::raise
