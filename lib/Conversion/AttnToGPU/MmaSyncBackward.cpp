//===- MmaSyncBackward.cpp - the backward kernel of the mma_sync family ---===//
//
// attn.attention_backward's `backward` kind on the tensor cores (sm_80+
// mma.sync m16n8k16, bf16/f16 operands, f32 accumulators),
// FlashAttention-2's backward with recomputation, assembled from the
// family's building blocks (MmaSyncBlocks.h), the fragments (Fragments.h)
// and the staging (Staging.h); options: MmaSyncFamily.cpp. The pre-pass
// (Di = rowsum(dO * O), the dQ accumulator zeroed) and the dQ conversion
// are the simt family's kinds (SimtBackward.cpp), launched before and after.
//
//   grid = (ceil(Nk / BK), B * Hkv); CTA = W warps (4 or 8), BK = 16 W / P
//   keys of one (batch, KV head), P = getBackwardColumnParts (1 up to head
//   dims of 128, 2 above): warp w owns keys k0 + 16 (w / P) .. + 15, the
//   rows of its transposed tiles, and the f32 accumulators of part w % P of
//   the columns of their dK (16 x Dqk / P) and dV (16 x Dv / P) rows in
//   registers (the P warps of a slice compute the same S^T and dP^T, and
//   the first stores dS^T), summed over the query heads of the
//   KV head's group (GQA/MQA) and every query block the structural mask
//   lets see the key block (queryBlockRange: block skipping for causal and
//   windows; the blocks whose every (query, key) pair is visible run a body
//   without per-element mask, runQueryBlocks).
//
//   K, V of the block: once, in shared memory (cp.async). Per query block of
//   BQ rows: Q, dO, lse and Di in 2 stages of shared memory (cp.async, the
//   next block's copies in flight while this one computes), then per warp
//     S^T  = K_w Q^T                 (A: K by ldmatrix, B: Q by ldmatrix)
//     P^T  = 2^(scale log2e S^T - lse log2e)  (0 where masked, or lse = -inf)
//            (with a score_mod, bias or keep mask: 2^(T^T log2e - lse log2e),
//            T = score_mod(scale S) + bias, -inf where the keep mask hides,
//            and dt/ds per element for dS^T: buildMaskedScore)
//     dP^T = V_w dO^T                (A: V, B: dO by ldmatrix)
//     dV  += (P Z)^T dO              (A: P^T's C fragments as registers,
//                                      B: dO by ldmatrix.trans; Z: dropout's
//                                      1 / (1 - p) or 0, else 1)
//     dS^T = P^T (dP^T Z - Di)       (times dt/ds with a score_mod)
//     dK  += dS^T Q                  (A: registers, B: Q by ldmatrix.trans)
//   dS^T goes to shared memory (bf16/f16); after a barrier the CTA computes
//     dQacc[q0 .., :] += scale dS K  (A: dS^T by ldmatrix.trans, B: K by
//                                      ldmatrix.trans)
//   split over the warps by 16 x 16 tiles of dQ, and adds it to the f32
//   accumulator by f32 atomics (red.global.add.f32). At the end dK (times
//   the scale) and dV go to global memory in their element type.
//
// Fragment layouts and ldmatrix lane addresses: MmaSyncForward.cpp's
// header and MmaSyncBlocks::laneOffsets. The transposed tiles S^T, dP^T
// have keys in rows and queries in columns, so that P^T and dS^T are, as
// registers, the A operands of dV and dK (as P is of the forward's P V).
// No N x N buffer: P and dS are recomputed per block pair.
//
//===----------------------------------------------------------------------===//
#include "MmaSyncBackward.h"
#include "Fragments.h"
#include "MmaSyncBlocks.h"
#include "Staging.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

std::string attnfuse::gpu_kernels::getMmaSyncBackwardUnsupportedReason(
    const KernelPlan &plan) {
  if (std::string why = getTensorCoreBackwardUnsupportedReason(plan);
      !why.empty())
    return why;
  const int64_t multiple = 16 * getBackwardColumnParts(plan);
  if (plan.D % multiple != 0 || plan.Dv % multiple != 0 || plan.D > 256 ||
      plan.Dv > 256)
    return ("its backward takes head dims that are multiples of 16 up to 128 "
            "or of 32 up to 256 (Dqk = " +
            llvm::Twine(plan.D) + ", Dv = " + llvm::Twine(plan.Dv) + ")")
        .str();
  return "";
}

MmaSyncBackwardLayout::MmaSyncBackwardLayout(const KernelPlan &plan) {
  const int64_t BK = plan.cfg.blockK, BQ = plan.cfg.blockQ, S = plan.cfg.stages;
  k = BK * rowStride(plan.D) * 2;
  v = BK * rowStride(plan.Dv) * 2;
  q = S * BQ * rowStride(plan.D) * 2;
  dO = S * BQ * rowStride(plan.Dv) * 2;
  ds = BK * rowStride(BQ) * 2;
  lse = S * BQ * 4;
  di = S * BQ * 4;
}

namespace {
class MmaSyncBackwardKernel : KernelArgs, MmaSyncBlocks {
public:
  MmaSyncBackwardKernel(KernelPlan &plan, OpBuilder &b, Location loc,
                        ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args), MmaSyncBlocks(plan), b(b), loc(loc), k{b, loc} {
  }
  void emit();

private:
  /// The copies of query block `qb` of head `hi` (Q, dO, lse, Di) into
  /// stage `stage`, as one cp.async group.
  Value loadQueryBlock(KB &e, Value hi, Value qb, Value stage);
  /// The body of query block `qb` of head `hi`: dK, dV (`iter`) updated,
  /// dQ added to the accumulator; ends with scf.yield.
  void queryBlock(bool masked, OpBuilder &lb, Location ll, Value hi,
                  Value qbBegin, Value qb, ValueRange iter);

  OpBuilder &b;
  Location loc;
  KB k;
  const int64_t BQ = plan.cfg.blockQ;
  /// The CTA's batch and KV head, the thread's warp, lane coordinates (g,
  /// t, 2t), the warp's first key in the block (warpKey = 16 (w / parts))
  /// and the thread's first key row, in the block (localKey = warpKey + g)
  /// and in the sequence (keyRow = k0 + localKey).
  Value bi, kvh, warp, g, t, t2, warpKey, localKey, keyRow;
  /// The warps that share a 16-key slice (getBackwardColumnParts), this
  /// warp's part (w % parts), and its first column of dK and of dV.
  const int64_t parts = getBackwardColumnParts(plan);
  Value part, dkColumn0, dvColumn0;
  LaneOffsets lo;
  Value kBuf, vBuf, qBuf, dOBuf, dsBuf, lseBuf, diBuf;
};

Value MmaSyncBackwardKernel::loadQueryBlock(KB &e, Value hi, Value qb,
                                            Value stage) {
  SmallVector<Value> tokens;
  copyRows(e, q, bi, hi, qBuf, plan.D, qb, BQ, plan.Nq, plan.numQB, stage,
           tokens);
  copyRows(e, gradOut, bi, hi, dOBuf, plan.Dv, qb, BQ, plan.Nq, plan.numQB,
           stage, tokens);
  Value row0 = e.mul(qb, e.idx(BQ));
  copyRowValues(e, lse, bi, hi, row0, BQ, plan.Nq, lseBuf, stage);
  copyRowValues(e, di, bi, hi, row0, BQ, plan.Nq, diBuf, stage);
  return commit(e, tokens);
}

void MmaSyncBackwardKernel::queryBlock(bool masked, OpBuilder &lb, Location ll,
                                       Value hi, Value qbBegin, Value qb,
                                       ValueRange iter) {
  KB e{lb, ll};
  const int64_t D = plan.D, Dv = plan.Dv;
  const int64_t nQ = BQ / 8; // n-tiles of S^T (queries)
  const FragmentLayout sl{1, nQ}, kl{1, D / parts / 8};
  const bool keyTail = plan.Nk % kBK != 0, queryTail = plan.Nq % BQ != 0;
  SmallVector<Value> dK(iter.begin(), iter.begin() + kl.size());
  SmallVector<Value> dV(iter.begin() + kl.size(), iter.end());
  Value stage = e.remu(e.sub(qb, qbBegin), kStages);
  // Block qb + 1 into the other stage while this one computes; its readers
  // (the last block) finished before the barrier that published dS^T.
  Value next = e.remu(e.sub(e.add(qb, e.idx(1)), qbBegin), kStages);
  Value group = loadQueryBlock(e, hi, e.add(qb, e.idx(1)), next);
  Value q0 = e.mul(qb, e.idx(BQ));
  Value zero = e.idx(0);

  // Element 4 n + i of S^T: key keyRow + 8 (i / 2), query q0 + 8 n + 2t +
  // i % 2; clamped to Nk - 1 and Nq - 1 where they address the bias, keep
  // mask and score_mod (the tail masks hide those past the ends).
  AttentionOpInterface op(plan.op);
  const bool hasScoreMod = op.hasScoreMod();
  const bool elementwise = bias || keep || hasScoreMod;
  auto coordinates = [&](int64_t n, int64_t i) {
    Value key = e.add(keyRow, e.idx(8 * (i / 2)));
    Value query = e.add(e.add(q0, t2), e.idx(8 * n + i % 2));
    if (keyTail)
      key = e.min(key, e.idx(plan.Nk - 1));
    if (queryTail)
      query = e.min(query, e.idx(plan.Nq - 1));
    return SmallVector<Value>{bi, hi, query, key};
  };
  // The bias and keep values load while the products run.
  ElementOperands operands;
  if (elementwise)
    operands = loadElementOperands(
        e, plan, sl, bias, keep,
        [&](int64_t, int64_t n, int64_t i) { return coordinates(n, i); },
        /*keyPairs=*/false);

  // S^T = K_w Q^T and dP^T = V_w dO^T: element 4 n + i at key row
  // keyRow + 8 (i / 2), query q0 + 8 n + 2t + i % 2. k-step outer: one A
  // fragment (4 registers) live; a B ldmatrix x4 covers n-tiles 2jj, 2jj+1.
  auto transposedProduct = [&](Value aBuf, Value bBuf, int64_t width) {
    SmallVector<Value> c(sl.size(), e.f32(0.0));
    for (int64_t ks = 0; ks < width / 16; ++ks) {
      SmallVector<Value> a =
          ldmatrix(e, aBuf, zero, e.add(warpKey, lo.arow),
                   e.add(e.idx(16 * ks), lo.acol), /*transpose=*/false);
      for (int64_t jj = 0; jj < nQ / 2; ++jj) {
        SmallVector<Value> bq =
            ldmatrix(e, bBuf, stage, e.add(e.idx(16 * jj), lo.brow),
                     e.add(e.idx(16 * ks), lo.bcol), /*transpose=*/false);
        mmaPair(e, a, bq, c.data() + 4 * 2 * jj);
      }
    }
    return c;
  };
  SmallVector<Value> s = transposedProduct(kBuf, qBuf, D);

  // Per query column 8 n + 2t + h of stage `stage` of `buf` (lse, Di).
  auto columnValues = [&](Value buf) {
    SmallVector<Value> values;
    auto f2 = VectorType::get({2}, e.b.getF32Type());
    for (int64_t n = 0; n < nQ; ++n) {
      Value pair = vector::LoadOp::create(
          lb, ll, f2, buf, ValueRange{stage, e.add(e.idx(8 * n), t2)},
          /*nontemporal=*/false, llvm::MaybeAlign(8));
      for (int64_t h = 0; h < 2; ++h)
        values.push_back(vector::ExtractOp::create(lb, ll, pair, h));
    }
    return values;
  };
  SmallVector<Value> negLse = columnValues(lseBuf);
  negateLogSumExp(e, negLse);
  SmallVector<Value> dtds;
  SmallVector<Value> p = transposedProbabilities(
      e, plan, sl, s, operands,
      [&](int64_t, int64_t n, int64_t i) { return coordinates(n, i); }, masked,
      keyRow, q0, t2, keyTail, queryTail, negLse,
      hasScoreMod ? &dtds : nullptr);

  // acc (width / 8 n-tiles) += A(c) B, B[query][col] by ldmatrix.trans of
  // `bBuf` (rows 16 ks + arow, columns col0 + 16 n + acol).
  auto accumulate = [&](ArrayRef<Value> c, Value bBuf, Value col0,
                        int64_t width, MutableArrayRef<Value> acc) {
    for (int64_t ks = 0; ks < BQ / 16; ++ks) {
      SmallVector<Value> a = transposedOperands(e, elt, sl, c, ks);
      for (int64_t n = 0; n < width / 16; ++n) {
        SmallVector<Value> bt = ldmatrix(
            e, bBuf, stage, e.add(e.idx(16 * ks), lo.arow),
            e.add(col0, e.add(e.idx(16 * n), lo.acol)), /*transpose=*/true);
        mmaPair(e, a, bt, acc.data() + 8 * n);
      }
    }
  };
  // Dropout: Z = keep ? 1 / (1 - p) : 0 per element (16-key warp slices of
  // 32-aligned blocks).
  SmallVector<Value> z;
  if (seed)
    z = transposedDropoutFactors(e, op, seed, sl, bi, hi, keyRow, q0, t2);
  // dV += (P Z)^T dO, then dP^T (its registers live after P^T's operands).
  if (seed) {
    SmallVector<Value> pz(sl.size());
    for (int64_t at = 0; at < sl.size(); ++at)
      pz[at] = e.fmul(p[at], z[at]);
    accumulate(pz, dOBuf, dvColumn0, Dv / parts, dV);
  } else {
    accumulate(p, dOBuf, dvColumn0, Dv / parts, dV);
  }
  SmallVector<Value> dp = transposedProduct(vBuf, dOBuf, Dv);
  SmallVector<Value> rowDi = columnValues(diBuf);
  SmallVector<Value> dt;
  SmallVector<Value> ds = transposedScoreGradients(
      e, sl, p, dp, z, rowDi, dtds, plan.biasGrad ? &dt : nullptr);
  // grad_bias by the slice's first warp.
  if (plan.biasGrad)
    ifThen(e, e.ult(part, e.idx(1)), [&](KB &x) {
      writeTransposedBiasGradients(x, plan, *this, sl, p, dt, bi, hi, keyRow,
                                   x.add(q0, t2));
    });
  // dK += dS^T Q.
  accumulate(ds, qBuf, dkColumn0, D / parts, dK);

  // dS^T into shared memory: rows warpKey + g + 8 r, columns 8 n + 2t (by
  // the slice's first warp).
  auto storeDs = [&](KB &x) {
    for (int64_t n = 0; n < nQ; ++n)
      for (int64_t r = 0; r < 2; ++r) {
        Value pair = packPair(x, elt, ds[sl.index(0, n, 2 * r)],
                              ds[sl.index(0, n, 2 * r + 1)]);
        vector::StoreOp::create(
            x.b, x.loc, pair, dsBuf,
            ValueRange{zero, x.add(localKey, x.idx(8 * r)),
                       x.add(x.idx(8 * n), t2)},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
      }
  };
  if (parts == 1) {
    storeDs(e);
  } else {
    scf::IfOp::create(lb, ll, e.ult(part, e.idx(1)),
                      [&](OpBuilder &nb, Location nl) {
                        KB x{nb, nl};
                        storeDs(x);
                        scf::YieldOp::create(nb, nl);
                      });
  }
  gpu::BarrierOp::create(lb, ll);

  // dQ (BQ x Dqk) += scale dS K over the block's BK keys: 16 x 16 tiles
  // (mt, nn), tile u = w U / W + j of warp w (U = BQ / 16 * Dqk / 16);
  // A: dS^T by ldmatrix.trans (rows 16 kk + brow, columns 16 mt + bcol), B:
  // K by ldmatrix.trans (rows 16 kk + arow, columns 16 nn + acol).
  const int64_t nD = D / 16, per = BQ / 16 * nD / kWarps;
  Value first = e.mul(warp, e.idx(per));
  Value mtBase = e.divu(first, nD), nnBase = e.remu(first, nD);
  auto mtOf = [&](int64_t j) {
    return per >= nD ? e.add(mtBase, e.idx(j / nD)) : mtBase;
  };
  auto nnOf = [&](int64_t j) {
    return per >= nD ? e.idx(j % nD) : e.add(nnBase, e.idx(j));
  };
  SmallVector<Value> dq(8 * per, e.f32(0.0));
  for (int64_t kk = 0; kk < kBK / 16; ++kk) {
    SmallVector<Value> a;
    for (int64_t j = 0; j < per; ++j) {
      if (j == 0 || (per >= nD && j % nD == 0))
        a = ldmatrix(e, dsBuf, zero, e.add(e.idx(16 * kk), lo.brow),
                     e.add(e.mul(mtOf(j), e.idx(16)), lo.bcol),
                     /*transpose=*/true);
      SmallVector<Value> bk =
          ldmatrix(e, kBuf, zero, e.add(e.idx(16 * kk), lo.arow),
                   e.add(e.mul(nnOf(j), e.idx(16)), lo.acol),
                   /*transpose=*/true);
      mmaPair(e, a, bk, dq.data() + 8 * j);
    }
  }
  const double scale = backwardGradientScale(plan.op);
  for (int64_t j = 0; j < per; ++j)
    for (int64_t r = 0; r < 2; ++r) {
      Value row =
          e.add(e.add(q0, e.mul(mtOf(j), e.idx(16))), e.add(g, e.idx(8 * r)));
      auto add = [&](KB &x) {
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t c = 0; c < 2; ++c) {
            Value col =
                x.add(x.add(x.mul(nnOf(j), x.idx(16)), x.idx(8 * h + c)), t2);
            Value v = dq[8 * j + 4 * h + 2 * r + c];
            if (scale != 1.0)
              v = x.fmul(v, x.f32(scale));
            memref::AtomicRMWOp::create(x.b, x.loc, arith::AtomicRMWKind::addf,
                                        v, dqAccum,
                                        ValueRange{bi, hi, row, col});
          }
      };
      if (masked && queryTail) {
        scf::IfOp::create(lb, ll, e.ult(row, e.idx(plan.Nq)),
                          [&](OpBuilder &nb, Location nl) {
                            KB x{nb, nl};
                            add(x);
                            scf::YieldOp::create(nb, nl);
                          });
      } else {
        add(e);
      }
    }
  // Block qb + 1 landed and every warp is done with dS^T and stage `stage`.
  waitOldest(e, group);
  SmallVector<Value> out(dK);
  out.append(dV);
  scf::YieldOp::create(lb, ll, out);
}

void MmaSyncBackwardKernel::emit() {
  const int64_t D = plan.D, Dv = plan.Dv;
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  MmaSyncBackwardLayout layout(plan);
  int64_t offset = 0;
  auto view = [&](ArrayRef<int64_t> shape, Type type, int64_t bytes) {
    Value v = memref::ViewOp::create(
        b, loc,
        MemRefType::get(shape, type, MemRefLayoutAttrInterface(), workgroup),
        smem, k.idx(offset), {});
    offset += bytes;
    return v;
  };
  Type f32 = b.getF32Type();
  kBuf = view({1, kBK, rowStride(D)}, elt, layout.k);
  vBuf = view({1, kBK, rowStride(Dv)}, elt, layout.v);
  qBuf = view({kStages, BQ, rowStride(D)}, elt, layout.q);
  dOBuf = view({kStages, BQ, rowStride(Dv)}, elt, layout.dO);
  dsBuf = view({1, kBK, rowStride(BQ)}, elt, layout.ds);
  lseBuf = view({kStages, BQ}, f32, layout.lse);
  diBuf = view({kStages, BQ}, f32, layout.di);

  Value kb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hkv);
  kvh = k.remu(by, plan.Hkv);
  warp = k.divu(tid, 32);
  Value lane = k.remu(tid, 32);
  g = k.divu(lane, 4);
  t = k.remu(lane, 4);
  t2 = k.mul(t, k.idx(2));
  lo = laneOffsets(k, lane);
  Value key0 = k.mul(kb, k.idx(kBK));
  warpKey = k.mul(k.divu(warp, parts), k.idx(16));
  part = k.remu(warp, parts);
  dkColumn0 = k.mul(part, k.idx(D / parts));
  dvColumn0 = k.mul(part, k.idx(Dv / parts));
  localKey = k.add(warpKey, g);
  keyRow = k.add(key0, localKey);
  Value lastKeyBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             kb, k.idx(plan.numKB - 1));
  Value qbBegin, qbEnd;
  std::tie(qbBegin, qbEnd) = queryBlockRange(k, plan, key0, kBK, BQ);

  // K, V of the block: one cp.async group, waited for with the first query
  // block's.
  {
    SmallVector<Value> tokens;
    copyBlock(k, key, bi, kvh, kBuf, D, kb, k.idx(0), tokens);
    copyBlock(k, value, bi, kvh, vBuf, Dv, kb, k.idx(0), tokens);
    commit(k, tokens);
  }

  const FragmentLayout kl{1, D / parts / 8}, vl{1, Dv / parts / 8};
  SmallVector<Value> init(kl.size() + vl.size(), k.f32(0.0));
  auto heads = scf::ForOp::create(
      b, loc, k.idx(0), k.idx(plan.G), k.idx(1), init,
      [&](OpBuilder &hb, Location hl, Value gi, ValueRange iter) {
        KB h{hb, hl};
        Value hi = h.add(h.mul(kvh, h.idx(plan.G)), gi);
        // The first query block into stage 0 (the last head's copies all
        // landed: its last block waited for them).
        waitOldest(h, loadQueryBlock(h, hi, qbBegin, h.idx(0)));
        SmallVector<Value> state = runQueryBlocks(
            h, plan, key0, lastKeyBlock, kBK, BQ, qbBegin, qbEnd, iter,
            [&](bool masked, OpBuilder &lb, Location ll, Value qb,
                ValueRange blockIter) {
              queryBlock(masked, lb, ll, hi, qbBegin, qb, blockIter);
            });
        scf::YieldOp::create(hb, hl, state);
      });

  // dK (times backwardGradientScale(plan.op)) and dV of the warp's rows within Nk: pairs
  // at rows keyRow + 8 r, columns 8 n + 2t.
  const double scale = backwardGradientScale(plan.op);
  ValueRange acc = heads.getResults();
  auto store = [&](KB &e, Value dst, Value col0, ValueRange frag,
                   FragmentLayout fl, double factor, Value row, int64_t r) {
    for (int64_t n = 0; n < fl.nTiles; ++n) {
      Value x = frag[fl.index(0, n, 2 * r)],
            y = frag[fl.index(0, n, 2 * r + 1)];
      if (factor != 1.0) {
        x = e.fmul(x, e.f32(factor));
        y = e.fmul(y, e.f32(factor));
      }
      vector::StoreOp::create(e.b, e.loc, packPair(e, elt, x, y), dst,
                              ValueRange{bi, kvh, row,
                                         e.add(col0, e.add(e.idx(8 * n), t2))},
                              /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  };
  for (int64_t r = 0; r < 2; ++r) {
    Value row = k.add(keyRow, k.idx(8 * r));
    auto both = [&](KB &e) {
      store(e, dk, dkColumn0, acc.take_front(kl.size()), kl, scale, row, r);
      store(e, dv, dvColumn0, acc.drop_front(kl.size()), vl, 1.0, row, r);
    };
    if (plan.Nk % kBK == 0) {
      both(k);
      continue;
    }
    scf::IfOp::create(b, loc, k.ult(row, k.idx(plan.Nk)),
                      [&](OpBuilder &nb, Location nl) {
                        KB e{nb, nl};
                        both(e);
                        scf::YieldOp::create(nb, nl);
                      });
  }
  gpu::ReturnOp::create(b, loc);
}
} // namespace

void attnfuse::gpu_kernels::emitMmaSyncBackward(KernelPlan &plan,
                                                gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  MmaSyncBackwardKernel(plan, b, plan.op.getLoc(), func.getArguments()).emit();
}
