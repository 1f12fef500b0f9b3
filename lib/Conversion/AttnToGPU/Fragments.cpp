//===- Fragments.cpp - online softmax on tensor-core accumulators ---------===//
//
// See Fragments.h.
//
//===----------------------------------------------------------------------===//
#include "Fragments.h"
#include "SimtBackward.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

std::string attnfuse::gpu_kernels::getTensorCoreUnsupportedReason(
    const KernelPlan &plan) {
  assert(!isBackwardKind(plan.kind) &&
         "the families check their backward kinds themselves");
  Type elt = plan.elementType;
  if (!elt.isBF16() && !elt.isF16())
    return "element type is not bf16/f16";
  if (plan.D > 256 || plan.Dv > 256)
    return "head dims must be at most 256";
  return "";
}

std::string attnfuse::gpu_kernels::getTensorCoreBackwardUnsupportedReason(
    const KernelPlan &plan) {
  Type elt = plan.elementType;
  if (!elt.isBF16() && !elt.isF16())
    return "its backward takes bf16/f16 only";
  if (plan.cfg.deterministic)
    return "its backward adds dQ by atomics (deterministic=true: simt's dQ "
           "kernel)";
  return "";
}

Value attnfuse::gpu_kernels::exp2Approx(KB &e, Value x) {
  return LLVM::CallIntrinsicOp::create(
             e.b, e.loc, e.b.getF32Type(),
             e.b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"), ValueRange{x})
      .getResult(0);
}

Value attnfuse::gpu_kernels::toOperand(KB &e, Type elt, Value pair) {
  if (!elt.isBF16())
    return pair;
  auto i32v = VectorType::get({1}, e.b.getI32Type());
  Value cast = vector::BitCastOp::create(e.b, e.loc, i32v, pair);
  return vector::ExtractOp::create(e.b, e.loc, cast, 0);
}

Value attnfuse::gpu_kernels::packPair(KB &e, Type elt, Value x, Value y) {
  auto f2 = VectorType::get({2}, e.b.getF32Type());
  Value v = vector::FromElementsOp::create(e.b, e.loc, f2, ValueRange{x, y});
  if (elt == f2.getElementType())
    return v;
  return arith::TruncFOp::create(e.b, e.loc, VectorType::get({2}, elt), v);
}

Value attnfuse::gpu_kernels::packOperand(KB &e, Type elt, Value x, Value y) {
  return toOperand(e, elt, packPair(e, elt, x, y));
}

ElementOperands attnfuse::gpu_kernels::loadElementOperands(
    KB &e, const KernelPlan &plan, FragmentLayout sl, Value bias, Value keep,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool keyPairs) {
  ElementOperands ops;
  if (keep) {
    ops.keep.resize(sl.size());
    for (int64_t mt = 0; mt < sl.mTiles; ++mt)
      for (int64_t j = 0; j < sl.nTiles; ++j)
        for (int64_t i = 0; i < 4; ++i)
          ops.keep[sl.index(mt, j, i)] = e.loadBroadcast(keep, bhqk(mt, j, i));
  }
  if (!bias)
    return ops;
  ops.bias.resize(sl.size());
  auto type = cast<MemRefType>(bias.getType());
  int64_t rank = type.getRank();
  bool pairs =
      keyPairs && type.getDimSize(rank - 1) == plan.Nk && plan.Nk % 2 == 0;
  for (int64_t mt = 0; mt < sl.mTiles; ++mt)
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; i += pairs ? 2 : 1) {
        SmallVector<Value> coords = bhqk(mt, j, i);
        if (!pairs) {
          ops.bias[sl.index(mt, j, i)] = e.loadBroadcast(bias, coords);
          continue;
        }
        // Keys 2t, 2t + 1 of the row; past a tail (clamped to Nk - 1) the
        // pair starts at Nk - 2, still aligned and in bounds.
        coords[3] = e.min(coords[3], e.idx(plan.Nk - 2));
        Type elt = type.getElementType();
        Value v = vector::LoadOp::create(
            e.b, e.loc, VectorType::get({2}, elt), bias,
            e.broadcastIndices(bias, coords), /*nontemporal=*/false,
            llvm::MaybeAlign(2 * elt.getIntOrFloatBitWidth() / 8));
        ops.setBiasPair(e, sl.index(mt, j, i), v);
      }
  return ops;
}

void ElementOperands::setBiasPair(KB &e, int64_t index, Value pair) {
  for (int64_t h = 0; h < 2; ++h)
    bias[index + h] = vector::ExtractOp::create(e.b, e.loc, pair, h);
}

void attnfuse::gpu_kernels::applyElementScores(
    KB &e, const KernelPlan &plan, FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands, const IRMapping *captures,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    SmallVectorImpl<Value> *derivatives) {
  if (derivatives)
    derivatives->resize(sl.size());
  for (int64_t mt = 0; mt < sl.mTiles; ++mt)
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        int64_t at = sl.index(mt, j, i);
        Value &x = s[at];
        x = attn::buildMaskedScore(
            e.b, e.loc, plan.op, x, bhqk(mt, j, i),
            operands.bias.empty() ? Value() : operands.bias[at],
            operands.keep.empty() ? Value() : operands.keep[at],
            /*applyStructuralMask=*/false,
            derivatives ? &(*derivatives)[at] : nullptr, captures);
        x = e.toLog2(x);
      }
}

namespace {
/// The i32 comparisons of one element's visibility: the structural mask's
/// bounds on delta = d0 + c (off - left <= delta <= off + right) and the
/// tails `x < limit - offset` of `tails`, and-ed in that order (null: no
/// bound). An offset that follows the tile's key lengths is in d0 instead
/// (`offset` 0).
struct ElementMask {
  KB &e;
  const KernelPlan &plan;
  Value d0;
  int64_t offset =
      plan.window.hasStaticOffset() ? plan.window.offset : int64_t(0);
  Value toI32(Value v) {
    return arith::IndexCastOp::create(e.b, e.loc, e.b.getI32Type(), v);
  }
  Value cmp(arith::CmpIPredicate p, Value x, int64_t c) {
    return arith::CmpIOp::create(
        e.b, e.loc, p, x,
        arith::ConstantOp::create(e.b, e.loc, e.b.getI32IntegerAttr(c)));
  }
  Value visible(int64_t c, ArrayRef<std::pair<Value, int64_t>> tails) {
    const MaskWindow &w = plan.window;
    Value vis;
    auto both = [&](Value x) {
      vis = vis ? arith::AndIOp::create(e.b, e.loc, vis, x) : x;
    };
    if (plan.leftBounded)
      both(cmp(arith::CmpIPredicate::sge, d0, offset - w.left - c));
    if (plan.rightBounded)
      both(cmp(arith::CmpIPredicate::sle, d0, offset + w.right - c));
    for (auto [x, limit] : tails)
      both(cmp(arith::CmpIPredicate::slt, x, limit));
    return vis;
  }
};
} // namespace

void attnfuse::gpu_kernels::maskScores(KB &e, const KernelPlan &plan,
                                       const attn::SizeValues &sizes,
                                       FragmentLayout sl, Value k0, Value t2,
                                       Value row0, MutableArrayRef<Value> s,
                                       KeyValidity pageValid) {
  const bool tail = plan.Nk % plan.cfg.blockK != 0;
  // Paged K/V: whether element (j, i)'s page has an id in range, one lookup
  // per page the elements can span (the block, an n-tile, a key).
  DenseMap<int64_t, Value> pages;
  auto pageOk = [&](int64_t j, int64_t i) -> Value {
    const int64_t ps = plan.pageSize;
    bool wholeBlock = ps % plan.cfg.blockK == 0, wholeTile = ps % 8 == 0;
    int64_t group = wholeBlock ? -1 : wholeTile ? j : 2 * j + i % 2;
    Value &ok = pages[group];
    if (ok)
      return ok;
    Value key = wholeBlock  ? k0
                : wholeTile ? e.add(k0, e.idx(8 * j))
                            : e.add(e.add(k0, t2), e.idx(8 * j + i % 2));
    return ok = pageValid(e, key);
  };
  ElementMask mask{e, plan, Value()};
  Value key = e.add(k0, t2);
  // The keys' bound: the tile's valid keys (key - validKeys < -kc) or the
  // tail of Nk (key < Nk - kc).
  Value kt;
  int64_t keyLimit = plan.Nk;
  if (sizes.validKeys) {
    kt = mask.toI32(e.sub(key, e.index(sizes.validKeys)));
    keyLimit = 0;
  } else if (tail) {
    kt = mask.toI32(key);
  }
  // delta's key side: less an offset that follows the key lengths.
  if (!plan.window.hasStaticOffset() &&
      (plan.leftBounded || plan.rightBounded))
    key = e.sub(key, e.index(sizes.maskOffset));
  // delta = key - query position: d0 + c below. Packed grouped queries: a
  // row's position is its index mod the period, one d0 per row (16 mt +
  // 8 (i / 2)) of the thread.
  SmallVector<Value> rowDeltas;
  if (plan.queryPeriod && (plan.leftBounded || plan.rightBounded))
    for (int64_t r = 0; r < 2 * sl.mTiles; ++r) {
      Value position =
          plan.queryPeriod == 1
              ? e.idx(0)
              : e.remu(e.add(row0, e.idx(8 * r)), plan.queryPeriod);
      rowDeltas.push_back(mask.toI32(e.sub(key, position)));
    }
  else
    mask.d0 = mask.toI32(e.sub(key, row0));
  for (int64_t mt = 0; mt < sl.mTiles; ++mt)
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        int64_t kc = 8 * j + i % 2, c = kc - 16 * mt - 8 * (i / 2);
        if (!rowDeltas.empty()) {
          mask.d0 = rowDeltas[2 * mt + i / 2];
          c = kc;
        }
        SmallVector<std::pair<Value, int64_t>, 1> tails;
        if (kt)
          tails.push_back({kt, keyLimit - kc});
        Value vis = mask.visible(c, tails);
        if (pageValid) {
          Value ok = pageOk(j, i);
          vis = vis ? arith::AndIOp::create(e.b, e.loc, vis, ok) : ok;
        }
        Value &x = s[sl.index(mt, j, i)];
        if (vis)
          x = e.select(vis, x, e.f32(kNegInf));
      }
}

void attnfuse::gpu_kernels::maskScoresTransposed(KB &e, const KernelPlan &plan,
                                                 FragmentLayout sl, Value key0,
                                                 Value q0, bool keyTail,
                                                 bool queryTail,
                                                 MutableArrayRef<Value> s) {
  assert(plan.window.hasStaticOffset() && "the backward takes no key lengths");
  ElementMask mask{e, plan, Value()};
  Value kt = keyTail ? mask.toI32(key0) : Value();
  Value qt = queryTail ? mask.toI32(q0) : Value();
  mask.d0 = mask.toI32(e.sub(key0, q0));
  for (int64_t mt = 0; mt < sl.mTiles; ++mt)
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        int64_t kr = 16 * mt + 8 * (i / 2), qc = 8 * j + i % 2;
        SmallVector<std::pair<Value, int64_t>, 2> tails;
        if (keyTail)
          tails.push_back({kt, plan.Nk - kr});
        if (queryTail)
          tails.push_back({qt, plan.Nq - qc});
        Value vis = mask.visible(kr - qc, tails);
        Value &x = s[sl.index(mt, j, i)];
        if (vis)
          x = e.select(vis, x, e.f32(kNegInf));
      }
}

void attnfuse::gpu_kernels::scoreFragments(
    KB &e, const KernelPlan &plan, const ScoreScaling &scaling,
    FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands, const IRMapping *captures,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool masked, Value k0, Value t2, Value row0,
    const attn::SizeValues &sizes, KeyValidity pageValid) {
  if (scaling.elementwise) {
    applyElementScores(e, plan, sl, s, operands, captures, bhqk);
  } else if (!scaling.foldScale) {
    for (Value &x : s)
      x = e.fmul(x, e.f32(scaling.scaleLog2e));
  }
  if (masked)
    maskScores(e, plan, sizes, sl, k0, t2, row0, s, pageValid);
}

RowMaxima attnfuse::gpu_kernels::updateRowMaxima(KB &e, FragmentLayout sl,
                                                 ArrayRef<Value> s,
                                                 ArrayRef<Value> m,
                                                 ArrayRef<Value> l,
                                                 const ScoreScaling &scaling) {
  const int64_t R = sl.rows();
  RowMaxima rows;
  rows.mNew.resize(R);
  rows.negM.resize(R);
  rows.alpha.resize(R);
  rows.lsum.resize(R);
  for (int64_t rr = 0; rr < R; ++rr) {
    int64_t mt = rr / 2, r = rr % 2;
    Value mx;
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 2; ++i) {
        Value x = s[sl.index(mt, j, 2 * r + i)];
        mx = mx ? e.fmax(mx, x) : x;
      }
    for (int32_t off : {1, 2})
      mx = e.fmax(mx, gpu::ShuffleOp::create(e.b, e.loc, mx, off, 32,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
    if (scaling.foldScale)
      mx = e.fmul(mx, e.f32(scaling.scaleLog2e));
    mx = e.fmax(mx, m[rr]);
    rows.mNew[rr] = mx;
    KB::SoftmaxRescale rescale = e.rescaleRow(m[rr], mx, l[rr], exp2Approx);
    rows.negM[rr] = rescale.negM;
    rows.alpha[rr] = rescale.alpha;
    rows.lsum[rr] = rescale.lsum;
  }
  return rows;
}

SmallVector<Value> attnfuse::gpu_kernels::rescaleAccumulators(
    KB &e, FragmentLayout ol, const RowMaxima &rows, ArrayRef<Value> mOld,
    ArrayRef<Value> accIn, bool lazy) {
  SmallVector<Value> acc(accIn);
  auto rescale = [&](KB &x) {
    SmallVector<Value> scaled(acc);
    for (int64_t mt = 0; mt < ol.mTiles; ++mt)
      for (int64_t n = 0; n < ol.nTiles; ++n)
        for (int64_t i = 0; i < 4; ++i) {
          Value &a = scaled[ol.index(mt, n, i)];
          a = x.fmul(a, rows.alpha[2 * mt + i / 2]);
        }
    return scaled;
  };
  if (!lazy)
    return rescale(e);
  OpBuilder &lb = e.b;
  Location ll = e.loc;
  Value changed;
  for (int64_t rr = 0, R = ol.rows(); rr < R; ++rr) {
    Value c = arith::CmpFOp::create(lb, ll, arith::CmpFPredicate::UNE,
                                    rows.mNew[rr], mOld[rr]);
    changed = changed ? arith::OrIOp::create(lb, ll, changed, c) : c;
  }
  Value any = NVVM::VoteSyncOp::create(
      lb, ll, lb.getI1Type(),
      arith::ConstantOp::create(lb, ll, lb.getI32IntegerAttr(-1)), changed,
      NVVM::VoteSyncKind::any);
  auto ifOp = scf::IfOp::create(
      lb, ll, any,
      [&](OpBuilder &rb, Location rl) {
        KB x{rb, rl};
        scf::YieldOp::create(rb, rl, rescale(x));
      },
      [&](OpBuilder &rb, Location rl) { scf::YieldOp::create(rb, rl, acc); });
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value, 4>
DropoutDraws::keep(KB &e, int64_t mt, int64_t n,
                   function_ref<SmallVector<Value>(int64_t, int64_t)> bhqk) {
  auto call = [&](ArrayRef<Value> coords) {
    return attn::buildPhilox(e.b, e.loc, seed,
                             attn::buildDropoutCounter(e.b, e.loc, coords));
  };
  // The words of rows r (i = 0, 1) and r + 8 (i = 2, 3) for this n-tile.
  Value top, bottom;
  if (aligned) {
    // Lane t's first key in n-tile 4j is k0 + 32j + 2t: its call's counter
    // is 4 (k0 / 32 + j) + t, and word w serves n-tile 4j + w.
    SmallVector<Value, 8> &w = words[{mt, n / 4}];
    if (w.empty()) {
      w = call(bhqk(4 * (n / 4), 0));
      w.append(call(bhqk(4 * (n / 4), 2)));
    }
    top = w[n % 4];
    bottom = w[4 + n % 4];
  } else {
    SmallVector<Value> coords = bhqk(n, 0);
    top = attn::buildDropoutWord(e.b, e.loc, call(coords), coords[3]);
    bottom = attn::buildDropoutWord(e.b, e.loc, call(bhqk(n, 2)), coords[3]);
  }
  auto [topEven, topOdd] = attn::buildDropoutKeepHalves(e.b, e.loc, op, top);
  auto [bottomEven, bottomOdd] =
      attn::buildDropoutKeepHalves(e.b, e.loc, op, bottom);
  return {topEven, topOdd, bottomEven, bottomOdd};
}

SmallVector<Value> attnfuse::gpu_kernels::probabilityOperands(
    KB &e, const KernelPlan &plan, FragmentLayout sl, MutableArrayRef<Value> s,
    int64_t mt, int64_t ks, RowMaxima &rows, const ScoreScaling &scaling,
    DropoutDraws &dropout,
    function_ref<SmallVector<Value>(int64_t, int64_t)> bhqk) {
  Type elt = plan.elementType;
  Value *c0 = s.data() + sl.index(mt, 2 * ks, 0), *c1 = c0 + 4;
  for (Value *c : {c0, c1})
    for (int64_t i = 0; i < 4; ++i) {
      int64_t rr = 2 * mt + i / 2;
      Value &x = c[i];
      x = exp2Approx(e, scaling.foldScale
                            ? e.fma(x, e.f32(scaling.scaleLog2e), rows.negM[rr])
                            : e.fadd(x, rows.negM[rr]));
    }
  for (int64_t r = 0; r < 2; ++r) {
    Value part = e.fadd(e.fadd(c0[2 * r], c0[2 * r + 1]),
                        e.fadd(c1[2 * r], c1[2 * r + 1]));
    rows.lsum[2 * mt + r] = e.fadd(rows.lsum[2 * mt + r], part);
  }
  // Dropout acts on the normalized probabilities (P V), not on l:
  // p = keep(b, h, q, k) ? p / (1 - dropout_p) : 0.
  if (dropout) {
    AttentionOpInterface op = plan.op;
    Value scaleKept = e.f32(1.0 / (1.0 - op.getDropoutProbability()));
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value, 4> kept = dropout.keep(e, mt, 2 * ks + h, bhqk);
      for (int64_t i = 0; i < 4; ++i) {
        Value &x = (h ? c1 : c0)[i];
        x = e.select(kept[i], e.fmul(x, scaleKept), e.f32(0.0));
      }
    }
  }
  return SmallVector<Value>{
      packOperand(e, elt, c0[0], c0[1]), packOperand(e, elt, c0[2], c0[3]),
      packOperand(e, elt, c1[0], c1[1]), packOperand(e, elt, c1[2], c1[3])};
}

void attnfuse::gpu_kernels::storeOutputs(
    KB &k, const KernelPlan &plan, FragmentLayout ol, ArrayRef<Value> state,
    ArrayRef<Value> rows, Value bi, Value hi, Value t, Value t2, Value out,
    Value lse, function_ref<void(KB &, Value, Value, Value)> storePair) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  const int64_t R = ol.rows();
  // O's element type: the op's, or f32 for a split forward's partials.
  Type outType = cast<MemRefType>(out.getType()).getElementType();
  for (int64_t rr = 0; rr < R; ++rr) {
    int64_t mt = rr / 2, r = rr % 2;
    Value m = state[rr], l = state[R + rr];
    for (int32_t off : {1, 2})
      l = k.fadd(
          l, gpu::ShuffleOp::create(b, loc, l, off, 32, gpu::ShuffleMode::XOR)
                 .getShuffleResult());
    Value inv = attn::buildNormalize(b, loc, k.f32(1), l);
    // O of the row's columns 8 n + 2t, + 1.
    auto normalized = [&](KB &e, int64_t n) {
      int64_t base = 2 * R + ol.index(mt, n, 2 * r);
      return std::make_pair(e.fmul(state[base], inv),
                            e.fmul(state[base + 1], inv));
    };
    // A staged tile's rows and columns are all written, those past Nq and
    // Dv too (what a TMA store of the whole box reads; it writes only those
    // inside O).
    if (storePair) {
      for (int64_t n = 0; n < ol.nTiles; ++n) {
        auto [x, y] = normalized(k, n);
        Value col = k.add(k.idx(8 * n), t2);
        storePair(k, rows[rr], col, packPair(k, plan.elementType, x, y));
      }
    }
    Value valid = k.ult(rows[rr], k.idx(plan.Nq));
    scf::IfOp::create(b, loc, valid, [&](OpBuilder &nb, Location nl) {
      KB e{nb, nl};
      // n-tiles past Dv are a padded head dim's zero columns. A pair is
      // one aligned store when Dv is even; an odd Dv takes one store per
      // element. Columns past Dv (an n-tile that Dv cuts) are not stored.
      for (int64_t n = 0; !storePair && n < ol.nTiles && 8 * n < plan.Dv; ++n) {
        Value x, y;
        std::tie(x, y) = normalized(e, n);
        Value col = e.add(e.idx(8 * n), t2);
        auto storeIf = [&](Value cond, function_ref<void(KB &)> store) {
          if (8 * n + 8 <= plan.Dv) {
            store(e);
            return;
          }
          scf::IfOp::create(nb, nl, cond, [&](OpBuilder &sb, Location sl) {
            KB s{sb, sl};
            store(s);
            scf::YieldOp::create(sb, sl);
          });
        };
        if (plan.Dv % 2 == 0) {
          storeIf(e.ult(col, e.idx(plan.Dv)), [&](KB &s) {
            Value v = packPair(s, outType, x, y);
            vector::StoreOp::create(s.b, s.loc, v, out,
                                    ValueRange{bi, hi, rows[rr], col},
                                    /*nontemporal=*/false, llvm::MaybeAlign(4));
          });
          continue;
        }
        for (int64_t h = 0; h < 2; ++h) {
          Value c = e.add(col, e.idx(h));
          storeIf(e.ult(c, e.idx(plan.Dv)), [&](KB &s) {
            Value v = h ? y : x;
            if (outType != v.getType())
              v = arith::TruncFOp::create(s.b, s.loc, outType, v);
            memref::StoreOp::create(s.b, s.loc, v, out,
                                    ValueRange{bi, hi, rows[rr], c});
          });
        }
      }
      Value first =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, t, e.idx(0));
      scf::IfOp::create(nb, nl, first, [&](OpBuilder &fb, Location fl) {
        KB f{fb, fl};
        memref::StoreOp::create(fb, fl, f.lse(m, l), lse,
                                ValueRange{bi, hi, rows[rr]});
        scf::YieldOp::create(fb, fl);
      });
      scf::YieldOp::create(nb, nl);
    });
  }
}

//===----------------------------------------------------------------------===//
// The backward's transposed tiles
//===----------------------------------------------------------------------===//

/// lse times `factor` (< 0: -lse times a positive number) in place, -inf
/// times the sign of -factor where lse = -inf (so that P = 0 follows).
static void scaleLogSumExp(KB &e, double factor, MutableArrayRef<Value> lse) {
  for (Value &l : lse) {
    Value empty = arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ,
                                        l, e.f32(kNegInf));
    l = e.select(empty, e.f32(factor < 0 ? kNegInf : -kNegInf),
                 e.fmul(l, e.f32(factor)));
  }
}

void attnfuse::gpu_kernels::negateLogSumExp(KB &e, MutableArrayRef<Value> lse) {
  scaleLogSumExp(e, -kLog2e, lse);
}

void attnfuse::gpu_kernels::foldedLogSumExp(KB &e, double scale,
                                            MutableArrayRef<Value> lse) {
  assert(scale != 0.0 && "-lse / scale needs a scale");
  scaleLogSumExp(e, -1.0 / scale, lse);
}

SmallVector<Value> attnfuse::gpu_kernels::transposedProbabilities(
    KB &e, const KernelPlan &plan, FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool masked, Value keyRow, Value q0, Value t2, bool keyTail,
    bool queryTail, ArrayRef<Value> negLse, SmallVectorImpl<Value> *dtds) {
  assert(sl.mTiles == 1 && "one 16-key slice of transposed fragments");
  AttentionOpInterface op(plan.op);
  const bool elementwise = plan.bias || plan.keepMask || op.hasScoreMod();
  assert((!negLse.empty() || !elementwise) &&
         "-lse / scale folds into S^T only without per-element terms");
  const double scaleLog2e = op.getScaleOrDefault() * kLog2e;
  // Masked blocks: t log2 e first, -inf where the structural mask or a tail
  // hides the element. With per-element terms: t log2 e (KB::toLog2, as the
  // forward) and dt/ds of every element.
  if (elementwise)
    applyElementScores(e, plan, sl, s, operands, /*captures=*/nullptr, bhqk,
                       dtds);
  else if (masked)
    for (Value &x : s)
      x = e.fmul(x, e.f32(scaleLog2e));
  if (masked)
    maskScoresTransposed(e, plan, sl, keyRow, e.add(q0, t2), keyTail,
                         queryTail, s);
  const bool scaled = masked || elementwise;
  SmallVector<Value> p(sl.size());
  for (int64_t n = 0; n < sl.nTiles; ++n)
    for (int64_t i = 0; i < 4; ++i) {
      Value x = s[sl.index(0, n, i)];
      if (negLse.empty()) {
        // s - lse / scale already: t log2 e - lse log2 e = scale log2 e s.
        p[sl.index(0, n, i)] =
            exp2Approx(e, scaled ? x : e.fmul(x, e.f32(scaleLog2e)));
        continue;
      }
      Value nl = negLse[2 * n + i % 2];
      p[sl.index(0, n, i)] = exp2Approx(
          e, scaled ? e.fadd(x, nl) : e.fma(x, e.f32(scaleLog2e), nl));
    }
  return p;
}

SmallVector<Value> attnfuse::gpu_kernels::transposedDropoutFactors(
    KB &e, AttentionOpInterface op, Value seed, FragmentLayout sl, Value batch,
    Value head, Value keyRow, Value q0, Value t2) {
  assert(sl.mTiles == 1 && "one 16-key slice of transposed fragments");
  SmallVector<Value> z(sl.size());
  Value oddKey = e.ult(e.idx(0), e.remu(keyRow, 2));
  Value factor = e.f32(1.0 / (1.0 - op.getDropoutProbability()));
  for (int64_t n = 0; n < sl.nTiles; ++n)
    for (int64_t c = 0; c < 2; ++c) {
      Value query = e.add(e.add(q0, t2), e.idx(8 * n + c));
      SmallVector<Value> bhqk{batch, head, query, keyRow};
      SmallVector<Value, 4> words = attn::buildPhilox(
          e.b, e.loc, seed, attn::buildDropoutCounter(e.b, e.loc, bhqk));
      for (int64_t r = 0; r < 2; ++r) {
        Value word = attn::buildDropoutWord(e.b, e.loc, words,
                                            e.add(keyRow, e.idx(8 * r)));
        auto [even, odd] = attn::buildDropoutKeepHalves(e.b, e.loc, op, word);
        Value kept = e.select(oddKey, odd, even);
        z[sl.index(0, n, 2 * r + c)] = e.select(kept, factor, e.f32(0.0));
      }
    }
  return z;
}

SmallVector<Value> attnfuse::gpu_kernels::transposedScoreGradients(
    KB &e, FragmentLayout sl, ArrayRef<Value> p, ArrayRef<Value> dp,
    ArrayRef<Value> z, ArrayRef<Value> di, ArrayRef<Value> dtds,
    SmallVectorImpl<Value> *dt) {
  SmallVector<Value> ds(sl.size());
  if (dt)
    dt->resize(sl.size());
  for (int64_t n = 0; n < sl.nTiles; ++n)
    for (int64_t i = 0; i < 4; ++i) {
      int64_t at = sl.index(0, n, i);
      Value dpz = z.empty() ? dp[at] : e.fmul(dp[at], z[at]);
      ds[at] = e.fmul(p[at], di.empty() ? dpz : e.fsub(dpz, di[2 * n + i % 2]));
      if (dt)
        (*dt)[at] = ds[at];
      if (!dtds.empty())
        ds[at] = e.fmul(ds[at], dtds[at]);
    }
  return ds;
}

void attnfuse::gpu_kernels::writeTransposedBiasGradients(
    KB &e, const KernelPlan &plan, const KernelArgs &args, FragmentLayout sl,
    ArrayRef<Value> p, ArrayRef<Value> dt, Value bi, Value hi, Value keyRow,
    Value queryColumn0) {
  // A term: 0 where hidden (P = 0) or past Nq.
  auto term = [&](int64_t n, int64_t i, Value query) {
    int64_t at = sl.index(0, n, i);
    Value hidden = arith::OrIOp::create(
        e.b, e.loc,
        arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ, p[at],
                              e.f32(0.0)),
        arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::uge, query,
                              e.idx(plan.Nq)));
    return e.select(hidden, e.f32(0.0), dt[at]);
  };
  auto queryOf = [&](int64_t n, int64_t i) {
    return e.add(queryColumn0, e.idx(8 * n + i % 2));
  };
  auto bias = cast<ShapedType>(plan.bias.getType());
  bool queriesShareBias = bias.getRank() < 2 ||
                          bias.getDimSize(bias.getRank() - 2) == 1;
  if (getBiasGradient(plan) == BiasGradient::Accumulate && queriesShareBias) {
    // A bias shared by the queries (key padding, [.., 1, Nk]): the thread's
    // terms of a key row summed in registers, then over the quad's 4 lanes
    // (the same key rows), added once by lane 4g.
    Value lane = gpu::LaneIdOp::create(e.b, e.loc, /*upper_bound=*/nullptr);
    Value first = arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::eq,
                                        e.remu(lane, 4), e.idx(0));
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = e.f32(0.0);
      for (int64_t n = 0; n < sl.nTiles; ++n)
        for (int64_t h = 0; h < 2; ++h)
          sum = e.fadd(sum, term(n, 2 * r + h, queryOf(n, 2 * r + h)));
      for (int64_t offset : {1, 2})
        sum = e.fadd(sum, gpu::ShuffleOp::create(e.b, e.loc, sum, offset, 32,
                                                 gpu::ShuffleMode::XOR)
                              .getShuffleResult());
      Value key = e.add(keyRow, e.idx(8 * r));
      Value owner = arith::AndIOp::create(e.b, e.loc, first,
                                          e.ult(key, e.idx(plan.Nk)));
      ifThen(e, owner, [&](KB &x) {
        writeBiasGradient(x, plan, args, {bi, hi, queryColumn0, key}, sum);
      });
    }
    return;
  }
  for (int64_t n = 0; n < sl.nTiles; ++n)
    for (int64_t i = 0; i < 4; ++i) {
      Value key = e.add(keyRow, e.idx(8 * (i / 2)));
      Value query = queryOf(n, i);
      Value value = term(n, i, query);
      Value inside = arith::AndIOp::create(e.b, e.loc,
                                           e.ult(key, e.idx(plan.Nk)),
                                           e.ult(query, e.idx(plan.Nq)));
      ifThen(e, inside, [&](KB &x) {
        writeBiasGradient(x, plan, args, {bi, hi, query, key}, value);
      });
    }
}

SmallVector<Value> attnfuse::gpu_kernels::transposedOperands(
    KB &e, Type elt, FragmentLayout sl, ArrayRef<Value> c, int64_t ks) {
  const Value *c0 = c.data() + sl.index(0, 2 * ks, 0), *c1 = c0 + 4;
  return SmallVector<Value>{
      packOperand(e, elt, c0[0], c0[1]), packOperand(e, elt, c0[2], c0[3]),
      packOperand(e, elt, c1[0], c1[1]), packOperand(e, elt, c1[2], c1[3])};
}
