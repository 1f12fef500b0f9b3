//===- WgmmaBackward.cpp - the backward kernel of the wgmma family --------===//
//
// attn.attention_backward's `backward` kind on sm_90a's warpgroup MMAs
// (wgmma.mma_async, bf16/f16 operands, f32 accumulators), FlashAttention-3's
// backward with recomputation (flash_bwd_kernel_sm90.h's split into a
// producer and consumer warpgroups), assembled from the family's building
// blocks (WgmmaBlocks.h: the mbarrier ring, swizzled tiles, the wgmma
// issue), the transposed-tile math the mma_sync backward shares
// (Fragments.h) and the query-block walk (Staging.h). The pre-pass
// (Di = rowsum(dO * O), the dQ accumulator zeroed) and the dQ conversion are
// the simt family's kinds (SimtBackward.cpp), launched before and after.
//
//   grid = (ceil(Nk / BK), B * Hkv); CTA = a producer warpgroup and W = 2
//   consumer warpgroups (setmaxnreg: RegisterSplit), BK = 64 W keys of one
//   (batch, KV head): consumer warpgroup w owns keys k0 + 64 w .. + 63, the
//   rows of its transposed tiles (each warp's 16 of them in the m16n8
//   fragment layout of mma.sync, as the forward's), and their dK and dV
//   accumulators in registers, summed over the query heads of the KV
//   head's group (GQA/MQA) and the query blocks the structural mask lets
//   see the key block (queryBlockRange, runQueryBlocks: block skipping and
//   unmasked full blocks).
//
//   The producer loads the key block's K and V once, then per query block
//   of BQ = 64 rows its Q and dO tiles into a ring of S stages, by cp.async
//   of its 128 threads in the swizzled layouts wgmma reads (TileLayout),
//   each thread's copies signalling the stage's full mbarrier as they land;
//   it refills a stage once every consumer thread arrived on its empty one.
//   A consumer warpgroup, per query block:
//     S^T  = K_w Q^T                      (both operands from shared
//                                          memory, K-major)
//     dP^T = V_w dO^T - Di                (the same; accumulated onto each
//                                          column's -Di, whose registers are
//                                          then the accumulators': without
//                                          dropout)
//     P^T  = 2^(t log2 e - lse log2 e)    (transposedProbabilities: the
//                                          scale or the per-element terms,
//                                          the structural mask and tails on
//                                          masked blocks)
//     dS^T = P^T (dP^T Z - Di)            (times dt/ds with a score_mod; Z:
//                                          dropout's factors)
//     dV  += (P Z)^T dO, dK += dS^T Q     (A: registers, B N-major; issued
//                                          together)
//     dQacc[q0 .., :] += scale dS K       (by warpgroup i mod W of query
//                                          block i, over all BK keys: A,
//                                          every warpgroup's dS^T tile,
//                                          M-major; B: K N-major; by f32
//                                          vector reductions of column
//                                          pairs, PTX ISA 8.1)
//   and frees the stage once dV and dK are done. lse and Di of the block's
//   rows come with its stage (the producer's cp.async, as FA3's TMA copies
//   of them): read from global memory in the consumers, they stalled each
//   block's first product.
//   At the end dK (times the scale) and dV go to global memory in their
//   element type.
//
//   dQ takes turns: the warpgroups store their dS^T tiles, and the one
//   whose turn it is waits for all of them (a named barrier of the
//   consumers), multiplies and adds dQ, one f32 addition per element and
//   CTA (half as many as a warpgroup each for its own keys: the atomics
//   bound this kernel, docs/GPU.md), while the others go on to the next
//   block, whose dS^T stores wait until it is done (a second one). It
//   works in column chunks of at most 64 (one wgmma each, so that the
//   chunk's accumulators, not all of dQ's, live beside dK and dV).
//
//===----------------------------------------------------------------------===//
#include "WgmmaBackward.h"
#include "Fragments.h"
#include "Staging.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

std::string attnfuse::gpu_kernels::getWgmmaBackwardUnsupportedReason(
    const KernelPlan &plan) {
  if (std::string why = getTensorCoreBackwardUnsupportedReason(plan);
      !why.empty())
    return why;
  if (plan.D % 16 != 0 || plan.Dv % 16 != 0 || plan.D > 128 || plan.Dv > 128)
    return ("its backward takes head dims that are multiples of 16 up to 128 "
            "(Dqk = " +
            llvm::Twine(plan.D) + ", Dv = " + llvm::Twine(plan.Dv) + ")")
        .str();
  return "";
}

WgmmaBackwardLayout::WgmmaBackwardLayout(const KernelPlan &plan)
    : k(plan.cfg.blockK, 2 * plan.D), v(plan.cfg.blockK, 2 * plan.Dv),
      q(plan.cfg.blockQ, 2 * plan.D), dO(plan.cfg.blockQ, 2 * plan.Dv),
      ds(64, 2 * plan.cfg.blockQ), stages(plan.cfg.stages),
      consumers(plan.cfg.warps / 4) {}

namespace {
class WgmmaBackwardKernel : KernelArgs, WgmmaBlocks {
public:
  WgmmaBackwardKernel(KernelPlan &plan, OpBuilder &b, Location loc,
                      ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args),
        WgmmaBlocks(plan, /*tma=*/false,
                    WgmmaBackwardLayout(plan).barrierOffset()),
        b(b), loc(loc), k{b, loc}, layout(plan) {}
  void emit();

private:
  /// The producer warpgroup's body (setmaxnreg to `registers`).
  void emitProducer(OpBuilder &pb, int64_t registers);
  /// The consumer warpgroups' body (setmaxnreg to `registers`) and the
  /// epilogue (`wgAll`: the warpgroup index, 1 ..).
  void emitConsumers(OpBuilder &cb, Value wgAll, int64_t registers);
  /// The body of query block `qb` of head `hi` (`i`: its place in the
  /// ring): dK, dV (`iter`) updated, dQ added to the accumulator; ends with
  /// scf.yield.
  void queryBlock(bool masked, OpBuilder &lb, Location ll, Value hi, Value i,
                  Value qb, ValueRange iter);
  /// The producer's copies of the lse and Di of query block `q0`'s rows
  /// (clamped to `lastQuery` when given) into stage `stage`'s rows, one f32
  /// a thread by cp.async, before the stage's tiles: the thread's arrival
  /// on the full barrier after them covers them too.
  void copyRowValues(KB &e, Value hi, Value q0, Value stage, Value lastQuery);
  /// A consumer thread's lse (kLseRow) or Di (kDiRow) of query columns
  /// t2 + 8 n + h of the block (n < nQ, h < 2), from stage `stage`'s rows.
  /// (Loaded where they are used: a consumer thread's registers hold dK
  /// and dV, 128 at head dims of 128.)
  static constexpr int64_t kLseRow = 0, kDiRow = 1;
  SmallVector<Value> rowValues(KB &e, Value stage, int64_t which);
  /// The shared-memory address of byte `bytes` of stage `stage`'s rows
  /// (lse, then Di 4 BQ bytes on).
  Value stageRows(KB &e, Value stage, int64_t bytes) {
    return e.add(bufAddress,
                 e.add(e.idx(layout.rowsOffset() + bytes),
                       e.mul(stage, e.idx(layout.rowsBytes()))));
  }
  /// The query blocks of each head: [qbBegin, qbEnd) (count: nqb >= 0);
  /// block qb of group head gi is number gi nqb + qb - qbBegin of the ring.
  Value ringIndex(KB &e, Value gi, Value qb) {
    return e.add(e.mul(gi, nqb), e.sub(qb, qbBegin));
  }
  int64_t consumers() const { return plan.cfg.warps / 4; }
  /// Named barriers of the consumer warpgroups (after syncWarpgroup's 1 ..
  /// W): every dS^T tile of the query block stored; the last block's dQ
  /// product done.
  int64_t dsWrittenBarrier() const { return 1 + consumers(); }
  int64_t dsFreeBarrier() const { return 2 + consumers(); }

  OpBuilder &b;
  Location loc;
  KB k;
  WgmmaBackwardLayout layout;
  const int64_t BQ = plan.cfg.blockQ, BK = plan.cfg.blockK;
  const bool keyTail = plan.Nk % plan.cfg.blockK != 0,
             queryTail = plan.Nq % plan.cfg.blockQ != 0;
  /// The CTA's batch, KV head, first key, whether its key block is the
  /// last, and its query-block range.
  Value bi, kvh, key0, lastKeyBlock, qbBegin, qbEnd, nqb;
  /// A consumer thread's warpgroup (0-based), lane coordinates (g, t,
  /// 2t), its first line in the warpgroup's tiles (16 warp + g) and its
  /// first key row in the sequence; the descriptors: K and V of the
  /// warpgroup's keys as A (K-major), K as B (N-major), Q and dO of stage 0
  /// as B (K-major and N-major), the first warpgroup's dS^T as A
  /// (M-major; the others' follow).
  Value wg, g, t, t2, line, keyRow;
  Value kA, vA, kN, qK, qN, dOK, dON, dsA;
};

void WgmmaBackwardKernel::emitProducer(OpBuilder &pb, int64_t registers) {
  KB top{pb, loc};
  NVVM::SetMaxRegisterOp::create(pb, loc, registers,
                                 NVVM::SetMaxRegisterAction::decrease);
  Value lastKey = keyTail ? top.idx(plan.Nk - 1) : Value();
  Value lastQuery = queryTail ? top.idx(plan.Nq - 1) : Value();
  Value kvFull = top.idx(layout.kvFull());
  loadTile(top, {Value(), key}, bi, kvh, key0, lastKey, plan.D, layout.k,
           top.idx(0), kvFull);
  loadTile(top, {Value(), value}, bi, kvh, key0, lastKey, plan.Dv, layout.v,
           top.idx(layout.vOffset()), kvFull);
  const int64_t S = layout.stages;
  scf::ForOp::create(
      pb, loc, top.idx(0), top.idx(plan.G), top.idx(1), ValueRange{},
      [&](OpBuilder &hb, Location hl, Value gi, ValueRange) {
        KB h{hb, hl};
        Value hi = h.add(h.mul(kvh, h.idx(plan.G)), gi);
        scf::ForOp::create(
            hb, hl, qbBegin, qbEnd, h.idx(1), ValueRange{},
            [&](OpBuilder &lb, Location ll, Value qb, ValueRange) {
              KB e{lb, ll};
              Value i = ringIndex(e, gi, qb);
              Value stage = e.remu(i, S), round = e.divu(i, S);
              ifThen(e, e.ult(e.idx(S - 1), i), [&](KB &y) {
                waitBarrier(y, y.add(y.idx(layout.empty()), stage),
                            y.remu(y.sub(round, y.idx(1)), 2));
              });
              Value q0 = e.mul(qb, e.idx(BQ));
              Value full = e.add(e.idx(layout.full()), stage);
              copyRowValues(e, hi, q0, stage, lastQuery);
              loadTile(e, {Value(), q}, bi, hi, q0, lastQuery, plan.D, layout.q,
                       e.add(e.idx(layout.qOffset()),
                             e.mul(stage, e.idx(layout.aligned(layout.q)))),
                       full);
              loadTile(e, {Value(), gradOut}, bi, hi, q0, lastQuery, plan.Dv,
                       layout.dO,
                       e.add(e.idx(layout.dOOffset()),
                             e.mul(stage, e.idx(layout.aligned(layout.dO)))),
                       full);
              scf::YieldOp::create(lb, ll);
            });
        scf::YieldOp::create(hb, hl);
      });
  // No copy outlives the producer.
  NVVM::CpAsyncWaitGroupOp::create(pb, loc, 0);
}

void WgmmaBackwardKernel::copyRowValues(KB &e, Value hi, Value q0,
                                        Value stage, Value lastQuery) {
  // lse and Di are [B, Hq, Nq] f32 of any static strides: the element's
  // address from its base pointer and the strides.
  auto address = [&](Value buffer, Value query) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(cast<MemRefType>(buffer.getType())
                   .getStridesAndOffset(strides, offset)))
      llvm_unreachable("lse and Di have static strides");
    Value index = e.idx(offset);
    Value at[] = {bi, hi, query};
    for (int64_t i = 0; i < 3; ++i)
      index = e.add(index, e.mul(at[i], e.idx(strides[i])));
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(e.b, e.loc, buffer);
    return e.add(base, e.mul(index, e.idx(4)));
  };
  assert(2 * BQ == kProducerThreads && "a row value a producer thread");
  Value isDi = e.ult(e.idx(BQ - 1), tid);
  Value column = e.remu(tid, BQ);
  Value query = e.add(q0, column);
  if (lastQuery)
    query = e.min(query, lastQuery);
  Value src = e.select(isDi, address(di, query), address(lse, query));
  Value global = LLVM::AddrSpaceCastOp::create(
      e.b, e.loc, LLVM::LLVMPointerType::get(e.b.getContext(), 1),
      pointerAt(e, src, 0));
  Value dst = e.add(stageRows(e, stage, 0), e.mul(tid, e.idx(4)));
  NVVM::CpAsyncOp::create(e.b, e.loc, pointerAt(e, dst, 3), global,
                          /*size=*/4,
                          NVVM::LoadCacheModifierKind::CA, Value());
}

SmallVector<Value> WgmmaBackwardKernel::rowValues(KB &e, Value stage,
                                                  int64_t which) {
  Value row = e.add(stageRows(e, stage, which * 4 * BQ), e.mul(t2, e.idx(4)));
  auto pairType = VectorType::get({2}, e.b.getF32Type());
  SmallVector<Value> values;
  for (int64_t n = 0; n < BQ / 8; ++n) {
    Value pair = LLVM::LoadOp::create(
        e.b, e.loc, pairType, pointerAt(e, e.add(row, e.idx(32 * n)), 3),
        /*align=*/8);
    for (int64_t h = 0; h < 2; ++h)
      values.push_back(vector::ExtractOp::create(e.b, e.loc, pair, h));
  }
  return values;
}

void WgmmaBackwardKernel::queryBlock(bool masked, OpBuilder &lb, Location ll,
                                     Value hi, Value i, Value qb,
                                     ValueRange iter) {
  KB e{lb, ll};
  MLIRContext *ctx = lb.getContext();
  const int64_t D = plan.D, Dv = plan.Dv, S = layout.stages;
  const int64_t nQ = BQ / 8; // n-tiles of S^T (queries)
  const FragmentLayout sl{1, nQ};
  AttentionOpInterface op(plan.op);
  const bool hasScoreMod = op.hasScoreMod();
  const bool elementwise = bias || keep || hasScoreMod;
  SmallVector<Value> dK(iter.begin(), iter.begin() + D / 2);
  SmallVector<Value> dV(iter.begin() + D / 2, iter.end());
  Value stage = e.remu(i, S);
  Value q0 = e.mul(qb, e.idx(BQ));
  Value queryColumn0 = e.add(q0, t2);
  waitLanded(e, e.add(e.idx(layout.full()), stage), e.remu(e.divu(i, S), 2));

  // S^T = K_w Q^T and dP^T = V_w dO^T, issued together (two groups).
  auto stageDesc = [&](Value desc, const TileLayout &tile) {
    return advance(e, desc, e.mul(stage, e.idx(layout.aligned(tile))));
  };
  Value qKs = stageDesc(qK, layout.q), qNs = stageDesc(qN, layout.q);
  Value dOKs = stageDesc(dOK, layout.dO), dONs = stageDesc(dON, layout.dO);
  // (`init`: the accumulators' values before the product, or none.)
  auto transposedProduct = [&](Value aDesc, const TileLayout &aTile,
                               Value bDesc, const TileLayout &bTile,
                               int64_t width, Value init) {
    Value acc =
        init ? init : LLVM::UndefOp::create(lb, ll, f32Struct(ctx, BQ / 2));
    for (int64_t ks = 0; ks < width / 16; ++ks)
      acc = wgmmaShared(
          e, acc, advance(e, aDesc, e.idx(aTile.kStepOffset(ks, false))),
          advance(e, bDesc, e.idx(bTile.kStepOffset(ks, false))), BQ,
          /*first=*/ks == 0 && !init);
    NVVM::WgmmaGroupSyncAlignedOp::create(lb, ll);
    return acc;
  };
  auto clampQuery = [&](Value query) {
    return queryTail ? e.min(query, e.idx(plan.Nq - 1)) : query;
  };
  // Per-column starting accumulators (from -Di and -lse / scale).
  auto columnAccumulators = [&](ArrayRef<Value> columns) -> Value {
    Value acc = LLVM::UndefOp::create(lb, ll, f32Struct(ctx, BQ / 2));
    for (int64_t n = 0; n < nQ; ++n)
      for (int64_t i = 0; i < 4; ++i)
        acc = LLVM::InsertValueOp::create(lb, ll, acc, columns[2 * n + i % 2],
                                          sl.index(0, n, i));
    return acc;
  };
  // S^T = K_w Q^T - lse / scale where there are no per-element terms: lse's
  // registers are the accumulators' (the exponent of P^T is then
  // scale log2 e times them).
  const double opScale = op.getScaleOrDefault();
  const bool foldLse = !elementwise && opScale != 0.0;
  Value sInit;
  if (foldLse) {
    SmallVector<Value> lseColumns = rowValues(e, stage, kLseRow);
    foldedLogSumExp(e, opScale, lseColumns);
    sInit = columnAccumulators(lseColumns);
  }
  NVVM::WgmmaFenceAlignedOp::create(lb, ll);
  Value sAcc = transposedProduct(kA, layout.k, qKs, layout.q, D, sInit);

  // Element 4 n + i of S^T: key keyRow + 8 (i / 2), query queryColumn0 +
  // 8 n + i % 2; clamped to Nk - 1 and Nq - 1 where they address the bias,
  // keep mask, score_mod, lse and Di (the tail masks hide those past the
  // ends).
  auto coordinates = [&](int64_t n, int64_t i) {
    Value key = e.add(keyRow, e.idx(8 * (i / 2)));
    if (keyTail)
      key = e.min(key, e.idx(plan.Nk - 1));
    Value query = clampQuery(e.add(queryColumn0, e.idx(8 * n + i % 2)));
    return SmallVector<Value>{bi, hi, query, key};
  };
  // While the products run: the bias and keep values.
  ElementOperands operands;
  if (elementwise)
    operands = loadElementOperands(
        e, plan, sl, bias, keep,
        [&](int64_t, int64_t n, int64_t i) { return coordinates(n, i); },
        /*keyPairs=*/false);

  // dP^T = V_w dO^T, accumulated onto -Di (each column's) where dS^T is
  // P^T (dP^T - Di): Di's registers are the accumulators' (a consumer
  // thread's registers hold dK and dV: 128 at head dims of 128); with
  // dropout (dP^T Z - Di) the product starts from zero.
  Value dpInit;
  if (!seed) {
    SmallVector<Value> diColumns = rowValues(e, stage, kDiRow);
    for (Value &d : diColumns)
      d = arith::NegFOp::create(lb, ll, d);
    dpInit = columnAccumulators(diColumns);
    // (The accumulators were written by other instructions.)
    NVVM::WgmmaFenceAlignedOp::create(lb, ll);
  }
  Value dpAcc = transposedProduct(vA, layout.v, dOKs, layout.dO, Dv, dpInit);

  SmallVector<Value> s = waitGroup(e, unpack(e, sAcc, BQ / 2), 1);
  SmallVector<Value> negLse;
  if (!foldLse) {
    negLse = rowValues(e, stage, kLseRow);
    negateLogSumExp(e, negLse);
  }
  SmallVector<Value> dtds;
  SmallVector<Value> p = transposedProbabilities(
      e, plan, sl, s, operands,
      [&](int64_t, int64_t n, int64_t i) { return coordinates(n, i); }, masked,
      keyRow, q0, t2, keyTail, queryTail, negLse,
      hasScoreMod ? &dtds : nullptr);
  SmallVector<Value> z;
  if (seed)
    z = transposedDropoutFactors(e, op, seed, sl, bi, hi, keyRow, q0, t2);
  SmallVector<Value> dp = waitGroup(e, unpack(e, dpAcc, BQ / 2), 0);
  SmallVector<Value> dt;
  SmallVector<Value> ds = transposedScoreGradients(
      e, sl, p, dp, z,
      seed ? rowValues(e, stage, kDiRow) : SmallVector<Value>(), dtds,
      plan.biasGrad ? &dt : nullptr);
  if (plan.biasGrad)
    writeTransposedBiasGradients(e, plan, *this, sl, p, dt, bi, hi, keyRow,
                                 queryColumn0);
  // The A operands of dV += (P Z)^T dO and dK += dS^T Q (P and dS^T in f32
  // are dead after them).
  SmallVector<Value> pz(p);
  if (seed)
    for (int64_t at = 0; at < sl.size(); ++at)
      pz[at] = e.fmul(p[at], z[at]);
  SmallVector<Value> pOps, dsOps;
  for (int64_t ks = 0; ks < BQ / 16; ++ks) {
    pOps.append(transposedOperands(e, elt, sl, pz, ks));
    dsOps.append(transposedOperands(e, elt, sl, ds, ks));
  }

  // dQ's column chunks (a panel of K's tile when it holds 64 columns).
  // With dq-column-split and a chunk per warpgroup (Dqk = 128:
  // FlashAttention-3's split of dQ's columns), chunk c of query block i is
  // warpgroup (i + c) mod W's and every warpgroup multiplies one every
  // block; otherwise the warpgroups take turns, all of block i's chunks by
  // warpgroup i mod W (ncu, H100: the one whose turn it is waits 8.6% of
  // the samples for the other's dS^T tile, late by its own last turn).
  const int64_t W = consumers(), consumerThreads = 128 * W;
  const int64_t chunk = D > 64 && D % 64 == 0 && layout.k.panel == 128 ? 64 : D;
  const int64_t chunks = D / chunk;
  const bool everyBlock = plan.cfg.dqColumnSplit && chunks % W == 0;

  // dS^T into the warpgroup's tile (lines 16 warp + g + 8 r, columns
  // 8 n + 2t), once the last block's dQ products, which read every
  // warpgroup's tile, are done: where every warpgroup multiplied, all meet
  // at the barrier; in turns, the warpgroup that did syncs its own warps,
  // the others wait for its arrival.
  ifThen(e, e.ult(e.idx(0), i), [&](KB &y) {
    if (everyBlock) {
      syncNamedBarrier(y, y.idx(dsFreeBarrier()), consumerThreads);
      return;
    }
    Value previous = y.remu(y.sub(i, y.idx(1)), W);
    Value wasMine = arith::CmpIOp::create(y.b, y.loc,
                                          arith::CmpIPredicate::eq, previous,
                                          wg);
    auto ifPrevious = scf::IfOp::create(y.b, y.loc, wasMine,
                                        /*withElseRegion=*/true);
    OpBuilder tb = ifPrevious.getThenBodyBuilder();
    KB tk{tb, y.loc};
    syncWarpgroup(tk, tk.add(wg, tk.idx(1)));
    OpBuilder eb = ifPrevious.getElseBodyBuilder();
    KB ek{eb, y.loc};
    syncNamedBarrier(ek, ek.idx(dsFreeBarrier()), consumerThreads);
  });
  Value dsBase = e.add(e.idx(layout.dsOffset()),
                       e.mul(wg, e.idx(layout.aligned(layout.ds))));
  for (int64_t n = 0; n < nQ; ++n)
    for (int64_t r = 0; r < 2; ++r) {
      Value pair = packPair(e, elt, ds[sl.index(0, n, 2 * r)],
                            ds[sl.index(0, n, 2 * r + 1)]);
      Value bytes = layout.ds.elementOffset(e, e.add(line, e.idx(8 * r)),
                                            e.add(e.idx(8 * n), t2));
      vector::StoreOp::create(lb, ll, pair, buf,
                              ValueRange{e.divu(e.add(dsBase, bytes), 2)},
                              /*nontemporal=*/false, llvm::MaybeAlign(4));
    }

  // dV += (P Z)^T dO.
  NVVM::WgmmaFenceAlignedOp::create(lb, ll);
  for (int64_t ks = 0; ks < BQ / 16; ++ks)
    dV = wgmmaRegisterA(
        e, dV, ArrayRef<Value>(pOps).slice(4 * ks, 4),
        advance(e, dONs, e.idx(layout.dO.kStepOffset(ks, true))));
  NVVM::WgmmaGroupSyncAlignedOp::create(lb, ll);
  // dK += dS^T Q.
  for (int64_t ks = 0; ks < BQ / 16; ++ks)
    dK = wgmmaRegisterA(
        e, dK, ArrayRef<Value>(dsOps).slice(4 * ks, 4),
        advance(e, qNs, e.idx(layout.q.kStepOffset(ks, true))));
  NVVM::WgmmaGroupSyncAlignedOp::create(lb, ll);

  // The stores are generic-proxy writes, wgmma reads through the async
  // proxy.
  proxyFence(e);

  // dQ (BQ x Dqk) += scale dS K over the CTA's keys, chunk by chunk (one
  // f32 addition per element and CTA, not per warpgroup), once every
  // warpgroup stored its dS^T tile. A warpgroup frees the stage once its
  // dV and dK are done; in turns, the others go on at once.
  const double scale = backwardGradientScale(plan.op);
  const FragmentLayout ql{1, chunk / 8};
  // Chunk `c` (an index) of dQ; the warpgroup's first of the block
  // (`first`) waits for dK and dV (`k`, `v`: the issued products, then
  // their values) and frees the stage once its product is issued.
  auto addChunk = [&](KB &x, Value c, bool first, SmallVector<Value> &k,
                      SmallVector<Value> &v) {
    Value acc = LLVM::UndefOp::create(x.b, x.loc, f32Struct(ctx, chunk / 2));
    Value kChunk =
        advance(x, kN,
                x.mul(c, x.idx(chunk * 2 / layout.k.panel *
                               layout.k.panelStride())));
    NVVM::WgmmaFenceAlignedOp::create(x.b, x.loc);
    // The k-steps walk the warpgroups' dS^T tiles and K's rows together.
    for (int64_t ks = 0; ks < 4 * W; ++ks)
      acc = wgmmaShared(
          x, acc,
          advance(x, dsA,
                  x.idx(ks / 4 * layout.aligned(layout.ds) +
                        layout.ds.kStepOffset(ks % 4, true))),
          advance(x, kChunk, x.idx(layout.k.kStepOffset(ks, true))), chunk,
          /*first=*/ks == 0, /*mMajorA=*/true, /*nMajorB=*/true);
    NVVM::WgmmaGroupSyncAlignedOp::create(x.b, x.loc);
    if (first) {
      // Every product reading Q and dO is done: the stage is free.
      v = waitGroup(x, v, 0);
      k = waitGroup(x, k, 0);
    }
    SmallVector<Value> dq = waitGroup(x, unpack(x, acc, chunk / 2), 0);
    if (first)
      arriveBarrier(x, x.add(x.idx(layout.empty()), stage));
    // Rows q0 + 16 warp + g + 8 r (line + 8 r), columns c chunk + 8 n + 2t
    // + h.
    Value dqAddress =
        memref::ExtractAlignedPointerAsIndexOp::create(x.b, x.loc, dqAccum);
    for (int64_t r = 0; r < 2; ++r) {
      Value row = x.add(q0, x.add(line, x.idx(8 * r)));
      // Each thread's two adjacent columns by one red.global.add.v2.f32
      // (PTX ISA 8.1) per n-tile, from one address per row with the
      // n-tiles at immediate offsets: a 64-bit address per n-tile made
      // ptxas spill 736 bytes instead of 160 at d = 128 causal.
      auto add = [&](KB &y) {
        Value rowBytes = y.mul(
            y.add(y.mul(y.add(y.mul(bi, y.idx(plan.Hq)), hi), y.idx(plan.Nq)),
                  row),
            y.idx(4 * D));
        Value bytes = y.add(
            rowBytes,
            y.mul(y.add(y.mul(c, y.idx(chunk)), t2), y.idx(4)));
        SmallVector<Value> operands{arith::IndexCastUIOp::create(
            y.b, y.loc, y.b.getI64Type(), y.add(dqAddress, bytes))};
        std::string asmText = "{\n.reg .b64 a;\ncvta.to.global.u64 a, $0;\n";
        std::string constraints = "l";
        for (int64_t n = 0; n < ql.nTiles; ++n) {
          for (int64_t h = 0; h < 2; ++h) {
            Value v = dq[ql.index(0, n, 2 * r + h)];
            operands.push_back(scale != 1.0 ? y.fmul(v, y.f32(scale)) : v);
            constraints += ",f";
          }
          asmText += "red.global.add.v2.f32 [a" +
                     (n ? "+" + std::to_string(32 * n) : std::string()) +
                     "], {$" + std::to_string(2 * n + 1) + ", $" +
                     std::to_string(2 * n + 2) + "};\n";
        }
        inlinePtx(y, Type(), operands, asmText + "}", constraints);
      };
      if (masked && queryTail)
        ifThen(x, x.ult(row, x.idx(plan.Nq)), add);
      else
        add(x);
    }
  };

  auto yieldAccumulators = [&](KB &x, ArrayRef<Value> k, ArrayRef<Value> v) {
    SmallVector<Value> out(k);
    out.append(v.begin(), v.end());
    scf::YieldOp::create(x.b, x.loc, out);
  };
  if (everyBlock) {
    // Chunks c ≡ wg - i (mod W).
    syncNamedBarrier(e, e.idx(dsWrittenBarrier()), consumerThreads);
    Value c0 = e.remu(e.sub(e.add(wg, e.idx(W)), e.remu(i, W)), W);
    for (int64_t j = 0; j < chunks / W; ++j)
      addChunk(e, e.add(c0, e.idx(j * W)), /*first=*/j == 0, dK, dV);
    yieldAccumulators(e, dK, dV);
    return;
  }
  SmallVector<Type> accTypes(dK.size() + dV.size(), lb.getF32Type());
  Value isMine = arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::eq,
                                       e.remu(i, W), wg);
  auto turn = scf::IfOp::create(lb, ll, accTypes, isMine,
                                /*withElseRegion=*/true);
  // (Each branch waits for dK and dV and yields them.)
  {
    OpBuilder eb = turn.getElseBodyBuilder();
    KB x{eb, ll};
    arriveNamedBarrier(x, x.idx(dsWrittenBarrier()), consumerThreads);
    SmallVector<Value> v = waitGroup(x, dV, 0);
    SmallVector<Value> k = waitGroup(x, dK, 0);
    arriveBarrier(x, x.add(x.idx(layout.empty()), stage));
    yieldAccumulators(x, k, v);
  }
  OpBuilder tb = turn.getThenBodyBuilder();
  KB x{tb, ll};
  syncNamedBarrier(x, x.idx(dsWrittenBarrier()), consumerThreads);
  for (int64_t c = 0; c < chunks; ++c)
    addChunk(x, x.idx(c), /*first=*/c == 0, dK, dV);
  // The next block's dS^T stores may begin (none after the CTA's last).
  ifThen(x, x.ult(x.add(i, x.idx(1)), x.mul(x.idx(plan.G), nqb)), [&](KB &y) {
    arriveNamedBarrier(y, y.idx(dsFreeBarrier()), consumerThreads);
  });
  yieldAccumulators(x, dK, dV);
  scf::YieldOp::create(lb, ll, turn.getResults());
}

void WgmmaBackwardKernel::emitConsumers(OpBuilder &cb, Value wgAll,
                                        int64_t registers) {
  KB c{cb, loc};
  NVVM::SetMaxRegisterOp::create(cb, loc, registers,
                                 NVVM::SetMaxRegisterAction::increase);
  const int64_t D = plan.D, Dv = plan.Dv;
  wg = c.sub(wgAll, c.idx(1));
  Value warp = c.remu(c.divu(tid, 32), 4);
  Value lane = c.remu(tid, 32);
  g = c.divu(lane, 4);
  t = c.remu(lane, 4);
  t2 = c.mul(t, c.idx(2));
  line = c.add(c.mul(warp, c.idx(16)), g);
  keyRow = c.add(c.add(key0, c.mul(wg, c.idx(64))), line);
  const TileLayout &kt = layout.k, &vt = layout.v, &qt = layout.q,
                   &dOt = layout.dO, &dst = layout.ds;
  auto at = [&](int64_t offset, Value extra) {
    return c.add(c.add(bufAddress, c.idx(offset)), extra);
  };
  Value zero = c.idx(0);
  Value kRows = c.mul(wg, c.idx(64 * kt.panel));
  kA = descriptor(c, at(0, kRows), kt.descriptorBits(false));
  kN = descriptor(c, at(0, zero), kt.descriptorBits(true));
  vA = descriptor(c, at(layout.vOffset(), c.mul(wg, c.idx(64 * vt.panel))),
                  vt.descriptorBits(false));
  qK = descriptor(c, at(layout.qOffset(), zero), qt.descriptorBits(false));
  qN = descriptor(c, at(layout.qOffset(), zero), qt.descriptorBits(true));
  dOK = descriptor(c, at(layout.dOOffset(), zero), dOt.descriptorBits(false));
  dON = descriptor(c, at(layout.dOOffset(), zero), dOt.descriptorBits(true));
  dsA = descriptor(c, at(layout.dsOffset(), zero), dst.descriptorBits(true));

  // K and V of the key block.
  waitLanded(c, c.idx(layout.kvFull()), zero);
  SmallVector<Value> init(D / 2 + Dv / 2, c.f32(0.0));
  auto heads = scf::ForOp::create(
      cb, loc, c.idx(0), c.idx(plan.G), c.idx(1), init,
      [&](OpBuilder &hb, Location hl, Value gi, ValueRange iter) {
        KB h{hb, hl};
        Value hi = h.add(h.mul(kvh, h.idx(plan.G)), gi);
        SmallVector<Value> state = runQueryBlocks(
            h, plan, key0, lastKeyBlock, BK, BQ, qbBegin, qbEnd, iter,
            [&](bool masked, OpBuilder &lb, Location ll, Value qb,
                ValueRange blockIter) {
              KB e{lb, ll};
              queryBlock(masked, lb, ll, hi, ringIndex(e, gi, qb), qb,
                         blockIter);
            });
        scf::YieldOp::create(hb, hl, state);
      });

  // dK (times the gradient scale) and dV of the thread's rows within Nk:
  // pairs at rows keyRow + 8 r, columns 8 n + 2t.
  const double scale = backwardGradientScale(plan.op);
  ValueRange acc = heads.getResults();
  auto store = [&](KB &e, Value dst, ValueRange frag, int64_t width,
                   double factor, Value row, int64_t r) {
    const FragmentLayout fl{1, width / 8};
    for (int64_t n = 0; n < fl.nTiles; ++n) {
      Value x = frag[fl.index(0, n, 2 * r)],
            y = frag[fl.index(0, n, 2 * r + 1)];
      if (factor != 1.0) {
        x = e.fmul(x, e.f32(factor));
        y = e.fmul(y, e.f32(factor));
      }
      vector::StoreOp::create(
          e.b, e.loc, packPair(e, elt, x, y), dst,
          ValueRange{bi, kvh, row, e.add(e.idx(8 * n), t2)},
          /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  };
  for (int64_t r = 0; r < 2; ++r) {
    Value row = c.add(keyRow, c.idx(8 * r));
    auto both = [&](KB &e) {
      store(e, dk, acc.take_front(D / 2), D, scale, row, r);
      store(e, dv, acc.drop_front(D / 2), Dv, 1.0, row, r);
    };
    if (keyTail)
      ifThen(c, c.ult(row, c.idx(plan.Nk)), both);
    else
      both(c);
  }
}

void WgmmaBackwardKernel::emit() {
  setUpSharedMemory(b, loc, layout.barrierOffset() / 2);
  Value kb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  bi = k.divu(by, plan.Hkv);
  kvh = k.remu(by, plan.Hkv);
  key0 = k.mul(kb, k.idx(BK));
  lastKeyBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kb,
                                       k.idx(plan.numKB - 1));
  std::tie(qbBegin, qbEnd) = queryBlockRange(k, plan, key0, BK, BQ);
  nqb = k.max(k.sub(qbEnd, qbBegin), k.idx(0));

  // The mbarriers: K/V full takes the producer's 128 cp.async arrivals of
  // each tile, a stage's full its Q's and dO's, a stage's empty every
  // consumer thread.
  ifThen(k, isEqual(k, tid, 0), [&](KB &x) {
    initBarrier(x, layout.kvFull(), 2 * kProducerThreads);
    for (int64_t st = 0; st < layout.stages; ++st) {
      initBarrier(x, layout.full() + st, 2 * kProducerThreads);
      initBarrier(x, layout.empty() + st, 32 * plan.cfg.warps);
    }
    NVVM::FenceMbarrierInitOp::create(x.b, x.loc);
  });
  gpu::BarrierOp::create(b, loc);

  const RegisterSplit split = registerSplit(consumers());
  splitRoles(
      b, loc, [&](OpBuilder &pb) { emitProducer(pb, split.producer); },
      [&](OpBuilder &cb, Value wgAll) {
        emitConsumers(cb, wgAll, split.consumer);
      });
  gpu::ReturnOp::create(b, loc);
}
} // namespace

void attnfuse::gpu_kernels::emitWgmmaBackward(KernelPlan &plan,
                                              gpu::GPUFuncOp func) {
  // setmaxnreg needs the register count at entry, which ptxas derives from
  // the CTAs per SM (otherwise it ignores setmaxnreg and spills at 168).
  func->setAttr("nvvm.minctasm",
                OpBuilder(func).getI32IntegerAttr(
                    std::max<int64_t>(plan.cfg.minCtasPerSM, 1)));
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  WgmmaBackwardKernel(plan, b, plan.op.getLoc(), func.getArguments()).emit();
}
