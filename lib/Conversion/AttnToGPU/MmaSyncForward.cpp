//===- MmaSyncForward.cpp - the forward kernel of the mma_sync family -----===//
//
// The tensor-core (sm_80+ mma.sync m16n8k16) fused forward kernel,
// FlashAttention-2's structure, assembled from the family's building blocks
// (MmaSyncBlocks.h) and the tensor-core families' fragments (Fragments.h)
// and staging (Staging.h); options and their defaults per head dim and
// feature: MmaSyncFamily.cpp.
//
//   CTA = W warps (4 or 8); warp w owns M m16 tiles (1 or 2), query rows
//   q0 + 16 M w .. + 16 M - 1 (BQ = 16 M W). Grid = (ceil(Nq / BQ), B * Hq),
//   or (B * Hq, ceil(Nq / BQ)) for causal masks (longest query blocks
//   first); query blocks walked backwards; with key splits (kvSplits,
//   FlashDecoding) grid z = the split, whose CTA takes its share of the
//   blocks and writes f32 partials that a second kernel combines
//   (SimtCombine.cpp). With M = 2 or above d = 128, Q is
//   copied once into shared memory (cp.async) and its A fragments re-read by
//   ldmatrix per key block, so with M = 2 every K/V fragment feeds two mmas
//   (FlashAttention-2's 128 x 64 tile); otherwise the warp's Q fragments stay
//   in registers.
//   K, V: blocks of BK keys, bf16/f16, in S stages of dynamic shared memory
//   (cp.async 16-byte copies, one group per block, S - 1 blocks in flight),
//   rows padded by 8 elements so that ldmatrix's 8 row addresses hit distinct
//   banks. The blocks every row sees whole run a loop without per-element
//   mask, the masked ones (window edges, causal diagonal, key tail) another.
//   S = Q K^T: mma m16n8k16 with f32 accumulators, k-step outer, K
//   B-fragments by ldmatrix (x4: two n-tiles); bias, keep mask and score_mod
//   per fragment element (ScoreUtils). Online softmax on the accumulator
//   fragments in the log2 domain (without per-element scores and with a
//   positive scale the row max is taken on raw S and scale * log2 e folds
//   into exp2's FFMA), row max over the quad by shuffle xor 1, 2, O rescaled
//   only when a row max of the warp changed (lazy-rescale); the row sums l
//   stay per-thread partial until the end. P of each k-step (bf16/f16,
//   registers, times the dropout factor) is the A operand of O += P V right
//   away, V B-fragments by ldmatrix.trans. O and lse written once.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with
// floating point type"); lane = 4 g + t (g = groupID, t = threadID_in_group):
//   A (16x16, row): reg0 = A[g][2t, 2t+1]    reg1 = A[g+8][2t, 2t+1]
//                   reg2 = A[g][2t+8, +9]    reg3 = A[g+8][2t+8, +9]
//   B (16x8, col):  reg0 = B[2t, 2t+1][g]    reg1 = B[2t+8, 2t+9][g]
//   C (16x8, f32):  c0, c1 = C[g][2t, 2t+1]  c2, c3 = C[g+8][2t, 2t+1]
// So the C fragments of the two n-tiles 2s, 2s+1 (keys 16s .. 16s+15) are
// exactly the A fragment of k-step s of P: reg0 = (c0, c1) of tile 2s,
// reg1 = (c2, c3) of 2s, reg2 = (c0, c1) of 2s+1, reg3 = (c2, c3) of 2s+1.
// ldmatrix (x4): lanes 8i .. 8i+7 give the row addresses of 8x8 matrix i;
// lane T receives register i = M_i[T/4][2(T%4), +1], or with .trans
// M_i[2(T%4), +1][T/4].
//   A of S (Q in shared memory): matrix i = Q rows 8 (i % 2) .., columns 16 ks +
//   8 (i / 2): registers 0..3 = reg0..reg3 of the A layout.
//   B of S (B[k][n] = K[n][k]): matrix i = K rows 16jj + 8 (i / 2) ..,
//   columns 16 ks + 8 (i % 2): registers (0, 1) = n-tile 2jj, (2, 3) = 2jj+1.
//   B of PV (B[k][n] = V[k][n]), .trans: matrix i = V rows 16s + 8(i%2),
//   columns 16n + 8(i/2): registers (0, 1) = n-tile 2n, (2, 3) = 2n+1.
//
//===----------------------------------------------------------------------===//
#include "MmaSyncForward.h"
#include "Fragments.h"
#include "MmaSyncBlocks.h"
#include "Staging.h"
#include "TileScheduler.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
/// m16 tiles per warp: 1 (Q fragments in registers up to d = 128) or 2 (Q
/// in shared memory, re-read by ldmatrix per block; every K/V fragment
/// feeds two mmas).
int64_t mTilesOf(const KernelPlan &plan) {
  return plan.cfg.blockQ / (16 * plan.cfg.warps);
}
/// Q lives in shared memory (A fragments re-read by ldmatrix per block) with
/// two m16 tiles per warp, and above d = 128, where its fragments (4 d / 16
/// registers) and the O accumulators (2 dv / 4) would not both fit.
bool qInSharedMemory(const KernelPlan &plan) {
  return mTilesOf(plan) > 1 || plan.D > 128;
}

} // namespace

MmaSyncForwardLayout::MmaSyncForwardLayout(const KernelPlan &plan)
    : k(plan.cfg.stages * plan.cfg.blockK * rowStride(paddedHeadDim(plan.D)) *
        2),
      v(plan.cfg.stages * plan.cfg.blockK * rowStride(paddedHeadDim(plan.Dv)) *
        2),
      q(qInSharedMemory(plan)
            ? plan.cfg.blockQ * rowStride(paddedHeadDim(plan.D)) * 2
            : 0) {}

namespace {
class MmaSyncForwardKernel : KernelArgs, MmaSyncBlocks {
public:
  MmaSyncForwardKernel(KernelPlan &plan, OpBuilder &b, Location loc,
                       ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args), MmaSyncBlocks(plan), b(b), loc(loc),
        k{b, loc} {}
  void emit();

private:
  OpBuilder &b;
  Location loc;
  KB k;
  Value bi, hi, kvh;
};

void MmaSyncForwardKernel::emit() {
  mapCaptures(plan, b, loc);
  // True head dims (copies) and padded ones (shared memory, fragments).
  int64_t D = plan.D, Dv = plan.Dv, Dp = paddedHeadDim(D),
          Dvp = paddedHeadDim(Dv);
  // Each K/V block of kBK keys is processed in online-softmax steps of kC
  // (chunk) keys: the registers of S and P scale with kC, the copies and
  // barriers with kBK.
  const int64_t kC = plan.cfg.chunk;
  int64_t nS = kC / 8;  // n-tiles of S per warp and step (8 keys each)
  int64_t nO = Dvp / 8; // n-tiles of O per warp
  int64_t kQ = Dp / 16; // k-steps of S
  int64_t kP = kC / 16; // k-steps of P V per step
  const int64_t M = mTilesOf(plan), kBQ = 16 * M * kWarps;
  const bool qInSmem = qInSharedMemory(plan);
  // The fragments of S (one step of kC keys) and of O.
  const FragmentLayout sl{M, nS}, ol{M, nO};

  // Shared memory: K stages then V stages, rows padded by kPad elements.
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  auto kType = MemRefType::get({kStages, kBK, rowStride(Dp)}, elt,
                               MemRefLayoutAttrInterface(), workgroup);
  auto vType = MemRefType::get({kStages, kBK, rowStride(Dvp)}, elt,
                               MemRefLayoutAttrInterface(), workgroup);
  MmaSyncForwardLayout layout(plan);
  Value kBuf = memref::ViewOp::create(b, loc, kType, smem, k.idx(0), {});
  Value vBuf = memref::ViewOp::create(b, loc, vType, smem, k.idx(layout.k), {});
  // Q (in shared memory): one "stage" of kBQ rows after the V stages.
  Value qBuf;
  if (qInSmem)
    qBuf = memref::ViewOp::create(b, loc,
                                  MemRefType::get({1, kBQ, rowStride(Dp)}, elt,
                                                  MemRefLayoutAttrInterface(),
                                                  workgroup),
                                  smem, k.idx(layout.k + layout.v), {});

  auto [qb, by] = blockCoordinates(k, plan);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hq);
  hi = k.remu(by, plan.Hq);
  kvh = k.divu(hi, plan.G);
  Value warp = k.divu(tid, 32), lane = k.remu(tid, 32);
  Value g = k.divu(lane, 4), t = k.remu(lane, 4);
  Value t2 = k.mul(t, k.idx(2));
  // ldmatrix lane addresses: A fragments (Q) and V (.trans): row
  // l % 8 + 8 ((l / 8) % 2), column 8 (l / 16); K (B of S): row
  // l % 8 + 8 (l / 16), column 8 ((l / 8) % 2).
  LaneOffsets lo = laneOffsets(k, lane);
  Value arow = lo.arow, acol = lo.acol, brow = lo.brow, bcol = lo.bcol;
  Value q0 = k.mul(qb, k.idx(kBQ));
  // The thread's rows: per m-tile mt, g and g + 8 of the warp's tile
  // (warp rows 16 M w + 16 mt ..): rows[2 mt + r].
  Value warpRow0 = k.mul(warp, k.idx(16 * M));
  SmallVector<Value> rows, rowsC;
  for (int64_t mt = 0; mt < M; ++mt)
    for (int64_t r = 0; r < 2; ++r) {
      Value row = k.add(k.add(q0, warpRow0), k.add(g, k.idx(16 * mt + 8 * r)));
      rows.push_back(row);
      rowsC.push_back(k.min(row, k.idx(plan.Nq - 1)));
    }

  // Q A-fragments (in registers), k-step s: reg0 = Q[g][16s + 2t],
  // reg1 = Q[g+8][16s + 2t], reg2 = Q[g][16s + 8 + 2t],
  // reg3 = Q[g+8][16s + 8 + 2t] (pairs).
  SmallVector<SmallVector<Value>> qFrag(kQ);
  if (!qInSmem) {
    auto pairType = VectorType::get({2}, elt);
    for (int64_t s = 0; s < kQ; ++s)
      for (int64_t r = 0; r < 4; ++r) {
        if (16 * s + 8 * (r / 2) >= D) {
          // A padding column of the last k-step: zeros.
          Value zero = arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(
                          pairType, b.getZeroAttr(elt)));
          qFrag[s].push_back(toOperand(k, elt, zero));
          continue;
        }
        Value col = k.add(k.idx(16 * s + 8 * (r / 2)), t2);
        Value v;
        if (D % 8 == 0) {
          v = vector::LoadOp::create(
              b, loc, pairType, q, ValueRange{bi, hi, rowsC[r % 2], col},
              /*nontemporal=*/false, llvm::MaybeAlign(4));
        } else {
          // Rows that are not 4-byte aligned: one element at a time,
          // zeros past D.
          SmallVector<Value> pair;
          for (int64_t h = 0; h < 2; ++h) {
            Value c = k.add(col, k.idx(h));
            Value x = memref::LoadOp::create(
                b, loc, q,
                ValueRange{bi, hi, rowsC[r % 2], k.min(c, k.idx(D - 1))});
            pair.push_back(k.select(
                k.ult(c, k.idx(D)), x,
                arith::ConstantOp::create(b, loc, b.getZeroAttr(elt))));
          }
          v = vector::FromElementsOp::create(b, loc, pairType, pair);
        }
        qFrag[s].push_back(toOperand(k, elt, v));
      }
  }

  // Key blocks the structural mask can show (as in the SIMT kernel), of the
  // batch's keys; with key lengths the loads read no row past its last.
  const attn::SizeValues sizes = sizesAt(plan, b, loc, bi);
  Value lastRow = sizes.validKeys ? lastKeyRow(k, plan, sizes, kBK) : Value();
  // Paged K/V: a key row from its page, and whether a key's page id is in
  // range.
  auto keyPlace = [&](KB &x, Value row) {
    return keyRow(plan, x.b, x.loc, bi, row);
  };
  RowPlace place = plan.blockTable ? RowPlace(keyPlace) : RowPlace();
  auto pageValid = [&](KB &x, Value key) {
    return keyPageValid(plan, x.b, x.loc, bi, key);
  };
  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = k.keyBlockRange(
      plan, q0, k.min(k.idx(kBQ), k.sub(k.idx(plan.Nq), q0)), kBK, sizes);
  // Split keys: this CTA's share of them, and its rows of the partials.
  Value outBatch = bi, oDst = out, lseDst = lse;
  if (plan.kvSplits > 1) {
    Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
    std::tie(kbBegin, kbEnd) = splitKeyBlocks(k, plan, split, kbBegin, kbEnd);
    outBatch = k.add(k.mul(split, k.idx(plan.B)), bi);
    oDst = outPartial;
    lseDst = lsePartial;
  }

  // The block a prefetch of block `kb` copies: with split keys, at most
  // the share's last (a prefetch past it re-reads that block, which L2
  // holds, instead of the next split's first from HBM; its stage is never
  // read).
  auto prefetched = [&](KB &e, Value kb) {
    if (plan.kvSplits <= 1)
      return kb;
    return e.min(kb, e.max(e.sub(kbEnd, e.idx(1)), kbBegin));
  };

  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  // The copies of one block form a cp.async group (commit, waitOldest).
  // Prologue: Q, and blocks kbBegin .. kbBegin + S - 2 into stages
  // 0 .. S - 2; wait for the first.
  {
    // Padded head dims: zeros in the padding columns [D, Dp) of every K
    // (and Q) row and [Dv, Dvp) of every V row (zeroPadding); the
    // prologue's barrier publishes them.
    // A head dim that is not a multiple of 8 shares its last chunk with
    // the padding: that chunk is zeroed whole, then (after a barrier) the
    // element copies write its true columns.
    auto chunkStart = [](int64_t d) { return d / 8 * 8; };
    zeroPadding(k, kBuf, kStages, kBK, chunkStart(D), Dp);
    zeroPadding(k, vBuf, kStages, kBK, chunkStart(Dv), Dvp);
    if (qInSmem)
      zeroPadding(k, qBuf, 1, kBQ, chunkStart(D), Dp);
    if (D % 8 != 0 || Dv % 8 != 0)
      gpu::BarrierOp::create(b, loc);
    SmallVector<Value> tokens;
    if (qInSmem && D % 8 != 0) {
      // Q rows q0 .. q0 + BQ - 1 (clamped to Nq - 1), element by element.
      forEachElement(k, tid, kThreads, kBQ * D, [&](KB &x, Value flat) {
        Value row = x.divu(flat, D), col = x.remu(flat, D);
        Value qr = x.min(x.add(q0, row), x.idx(plan.Nq - 1));
        Value v =
            memref::LoadOp::create(x.b, x.loc, q, ValueRange{bi, hi, qr, col});
        memref::StoreOp::create(x.b, x.loc, v, qBuf,
                                ValueRange{x.idx(0), row, col});
      });
    } else if (qInSmem) {
      // Q rows q0 .. q0 + BQ - 1 (clamped to Nq - 1), 16-byte pieces.
      int64_t perRow = D / 8;
      forEachItem(
          k, tid, kThreads, kBQ * perRow,
          [&](KB &x, int64_t it) -> Value {
            Value flat = x.add(tid, x.idx(it * kThreads));
            Value row = x.divu(flat, perRow);
            Value col = x.mul(x.remu(flat, perRow), x.idx(8));
            Value qr = x.min(x.add(q0, row), x.idx(plan.Nq - 1));
            return nvgpu::DeviceAsyncCopyOp::create(
                x.b, x.loc, tokenType, qBuf, ValueRange{x.idx(0), row, col},
                q, ValueRange{bi, hi, qr, col}, x.b.getIndexAttr(8), Value(),
                x.b.getUnitAttr());
          },
          &tokens);
    }
    Value group;
    for (int64_t st = 0; st < kStages - 1; ++st) {
      Value kb = prefetched(k, k.add(kbBegin, k.idx(st)));
      copyBlock(k, key, bi, kvh, kBuf, D, kb, k.idx(st), tokens, lastRow,
                place);
      copyBlock(k, value, bi, kvh, vBuf, Dv, kb, k.idx(st), tokens, lastRow,
                place);
      group = commit(k, tokens);
    }
    waitOldest(k, group);
  }

  // Loop state: m (2M rows), l (2M rows, thread-partial), O accumulators
  // (m-tile mt, n-tile n: 4 (mt nO + n) ..).
  const int64_t R = 2 * M;
  SmallVector<Value> init;
  for (int64_t i = 0; i < R; ++i)
    init.push_back(k.f32(kNegInf));
  for (int64_t i = 0; i < R; ++i)
    init.push_back(k.f32(0.0));
  for (int64_t i = 0; i < M * nO * 4; ++i)
    init.push_back(k.f32(0.0));
  // score_mod, bias and the keep mask act on each element (ScoreUtils's
  // buildMaskedScore: t = score_mod(scale s, b, h, q, k) + bias, -inf where
  // keep is false), then t log2 e. Without them, with a positive scale the
  // row max of the raw scores times the scale is the max of the scaled
  // scores, so the scale folds into exp2's FFMA.
  const ScoreScaling scaling(plan);

  // One key block: `masked` applies the per-element structural mask and
  // the key tail (the blocks those cut), otherwise none is computed.
  auto blockBody = [&](bool masked, OpBuilder &lb, Location ll, Value kb,
                       ValueRange iter) {
    KB e{lb, ll};
    Value stage = e.remu(e.sub(kb, kbBegin), kStages);
    // Block kb + S - 1 into the stage of block kb - 1 while this one
    // computes; its readers finished before the barrier that ended the
    // last iteration.
    Value ahead = e.add(kb, e.idx(kStages - 1));
    Value next = e.remu(e.sub(ahead, kbBegin), kStages);
    SmallVector<Value> tokens;
    Value copied = prefetched(e, ahead);
    copyBlock(e, key, bi, kvh, kBuf, D, copied, next, tokens, lastRow,
              place);
    copyBlock(e, value, bi, kvh, vBuf, Dv, copied, next, tokens, lastRow,
              place);
    Value group = commit(e, tokens);

    SmallVector<Value> cur(iter.begin(), iter.end());
    for (int64_t kOff = 0; kOff < kBK; kOff += kC) {
      // S = Q K^T; element (mt nS + j) 4 + i of s: row rows[2 mt + i / 2],
      // key k0 + 8j + 2t + i % 2.
      SmallVector<Value> s(M * nS * 4, e.f32(0.0));
      // Element i of n-tile j: key k0 + 8j + 2t + i % 2 (clamped to
      // Nk - 1 for loads; the tail mask hides the keys past Nk).
      Value k0 = e.add(e.mul(kb, e.idx(kBK)), e.idx(kOff));
      auto keyOf = [&](KB &x, int64_t j, int64_t i, bool clamp) {
        Value kg = x.add(x.add(k0, x.idx(8 * j + i % 2)), t2);
        return clamp && tail ? x.min(kg, x.idx(plan.Nk - 1)) : kg;
      };
      // Keys past a tail are clamped where they address bias/keep, not
      // where they only count (dropout).
      auto coordinates = [&](int64_t mt, int64_t j, int64_t i,
                             bool clamp = true) {
        return SmallVector<Value>{bi, hi, rowsC[2 * mt + i / 2],
                                  keyOf(e, j, i, clamp)};
      };
      // The bias and keep values load while the products run.
      ElementOperands operands = loadElementOperands(
          e, plan, sl, bias, keep, [&](int64_t mt, int64_t j, int64_t i) {
            return coordinates(mt, j, i);
          });

      // k-step outer: the A fragments of one k-step (M x 4 registers) are
      // live at a time; a K ldmatrix x4 covers n-tiles 2jj, 2jj + 1 of the
      // k-step.
      for (int64_t ks = 0; ks < kQ; ++ks) {
        SmallVector<SmallVector<Value>> qa(M);
        for (int64_t mt = 0; mt < M; ++mt)
          qa[mt] = qInSmem
                       ? ldmatrix(e, qBuf, e.idx(0),
                                  e.add(warpRow0, e.add(e.idx(16 * mt), arow)),
                                  e.add(e.idx(16 * ks), acol),
                                  /*transpose=*/false)
                       : qFrag[ks];
        for (int64_t jj = 0; jj < nS / 2; ++jj) {
          SmallVector<Value> bk =
              ldmatrix(e, kBuf, stage, e.add(e.idx(kOff + 16 * jj), brow),
                       e.add(e.idx(16 * ks), bcol), /*transpose=*/false);
          for (int64_t mt = 0; mt < M; ++mt) {
            Value *c = s.data() + 4 * (mt * nS + 2 * jj);
            mmaPair(e, qa[mt], bk, c);
          }
        }
      }
      scoreFragments(
          e, plan, scaling, sl, s, operands, getCaptures(),
          [&](int64_t mt, int64_t j, int64_t i) {
            return coordinates(mt, j, i);
          },
          masked, k0, t2, rows[0], sizes,
          plan.blockTable ? KeyValidity(pageValid) : KeyValidity());

      // Online softmax per row rr = 2 mt + r (elements of m-tile mt with
      // i / 2 == r); m is kept scaled (log2 domain).
      ArrayRef<Value> curRef(cur);
      RowMaxima rowMax =
          updateRowMaxima(e, sl, s, curRef.take_front(R),
                          curRef.slice(R, R), scaling);
      SmallVector<Value> acc =
          rescaleAccumulators(e, ol, rowMax, curRef.take_front(R),
                              curRef.drop_front(2 * R), plan.cfg.lazyRescale);

      // The step starts at a multiple of 32 keys where block and chunk are.
      DropoutDraws dropout(plan.op, seed, kBK % 32 == 0 && kC % 32 == 0);
      auto probabilities = [&](int64_t mt, int64_t ks) {
        return probabilityOperands(e, plan, sl, s, mt, ks, rowMax, scaling,
                                   dropout, [&](int64_t j, int64_t i) {
                                     return coordinates(mt, j, i,
                                                        /*clamp=*/false);
                                   });
      };
      // Per k-step ks: P of its 16 keys, then O += P V with V by
      // ldmatrix.trans (rows 16 ks + arow, columns 16n + acol): registers
      // (0, 1) = n-tile 2n, (2, 3) = 2n + 1. P of one k-step is live at a
      // time.
      for (int64_t ks = 0; ks < kP; ++ks) {
        SmallVector<SmallVector<Value>> pa;
        for (int64_t mt = 0; mt < M; ++mt)
          pa.push_back(probabilities(mt, ks));
        for (int64_t n = 0; n < nO / 2; ++n) {
          SmallVector<Value> bv =
              ldmatrix(e, vBuf, stage, e.add(e.idx(kOff + 16 * ks), arow),
                       e.add(e.idx(16 * n), acol), /*transpose=*/true);
          for (int64_t mt = 0; mt < M; ++mt) {
            Value *a = acc.data() + 4 * (mt * nO + 2 * n);
            mmaPair(e, pa[mt], bv, a);
          }
        }
      }
      cur = rowMax.mNew;
      cur.append(rowMax.lsum);
      cur.append(acc);
    }
    // Block kb + 1 landed (at most S - 2 younger groups pending) and
    // every warp is done with stage `stage`.
    waitOldest(e, group);
    scf::YieldOp::create(lb, ll, cur);
  };

  // The blocks every row sees whole run the mask-free body, the others
  // (the structural mask's edges, the key tail) the masked one.
  SmallVector<Value> state =
      runKeyBlocks(k, plan, sizes, q0, kBQ, kBK, kbBegin, kbEnd, init,
                   blockBody);

  // With more than two stages, prefetches past the last block may still be
  // in flight: drain them (an empty group, then wait for all) so that no
  // cp.async outlives the kernel's use of shared memory.
  if (kStages > 2) {
    SmallVector<Value> none;
    nvgpu::DeviceAsyncWaitOp::create(b, loc, commit(k, none),
                                     b.getI32IntegerAttr(0));
  }

  // l over the quad; O = acc * ((l != 0) ? 1 / l : 0); lse.
  storeOutputs(k, plan, ol, state, rows, outBatch, hi, t, t2, oDst, lseDst);
  gpu::ReturnOp::create(b, loc);
}

} // namespace

void attnfuse::gpu_kernels::emitMmaSyncForward(KernelPlan &plan,
                                               gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  MmaSyncForwardKernel(plan, b, plan.op.getLoc(), func.getArguments()).emit();
}
