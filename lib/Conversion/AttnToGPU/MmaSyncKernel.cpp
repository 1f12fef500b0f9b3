//===- MmaSyncKernel.cpp - the mma.sync instruction family ----------------===//
//
// The tensor-core (sm_80+ mma.sync m16n8k16) variant of the fused forward
// kernel, FlashAttention-2's structure (options and their defaults per head
// dim and feature: convertAttentionToGPU in AttnToGPU.cpp):
//
//   CTA = W warps (4 or 8); warp w owns M m16 tiles (1 or 2), query rows
//   q0 + 16 M w .. + 16 M - 1 (BQ = 16 M W). Grid = (ceil(Nq / BQ), B * Hq),
//   or (B * Hq, ceil(Nq / BQ)) for causal masks (longest query blocks
//   first); query blocks walked backwards. With M = 2 or above d = 128, Q is
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
#include "Fragments.h"
#include "KernelFamily.h"
#include "Staging.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
constexpr int64_t kPad = 8;
int64_t rowStride(int64_t d) { return d + kPad; }
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
/// Bytes of dynamic shared memory: the K stages, then the V stages, then Q
/// (when in shared memory); bf16/f16 rows padded by kPad elements.
struct SharedLayout {
  int64_t k, v, q;
  explicit SharedLayout(const KernelPlan &plan)
      : k(plan.cfg.stages * plan.cfg.blockK *
          rowStride(paddedHeadDim(plan.D)) * 2),
        v(plan.cfg.stages * plan.cfg.blockK *
          rowStride(paddedHeadDim(plan.Dv)) * 2),
        q(qInSharedMemory(plan)
              ? plan.cfg.blockQ * rowStride(paddedHeadDim(plan.D)) * 2
              : 0) {}
  int64_t total() const { return k + v + q; }
};

class MmaSyncEmitter : KernelArgs {
public:
  MmaSyncEmitter(KernelPlan &plan, OpBuilder &b, Location loc,
                 ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args), plan(plan), b(b), loc(loc), k{b, loc},
        kBK(plan.cfg.blockK), kWarps(plan.cfg.warps),
        kThreads(32 * plan.cfg.warps), kStages(plan.cfg.stages),
        tail(plan.Nk % plan.cfg.blockK != 0) {
    elt = plan.elementType;
    isBF16 = elt.isBF16();
  }
  void emit();

private:
  /// Issues the cp.async copies of key block `kb` (rows clamped to Nk - 1)
  /// into stage `stage` of `buf`, and returns their tokens.
  void copyBlock(KB &e, Value src, Value buf, int64_t width, Value kb,
                 Value stage, SmallVector<Value> &tokens);
  /// c = a * b + c on one m16n8k16 tile; c has four f32.
  void mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
           MutableArrayRef<Value> c);
  /// The two n-tiles of an ldmatrix x4 B operand: c[0..3] += a * (b0, b1),
  /// c[4..7] += a * (b2, b3).
  void mmaPair(KB &e, ArrayRef<Value> a, ArrayRef<Value> b4, Value *c) {
    mma(e, a, {b4[0], b4[1]}, MutableArrayRef<Value>(c, 4));
    mma(e, a, {b4[2], b4[3]}, MutableArrayRef<Value>(c + 4, 4));
  }
  /// ldmatrix x4 of `buf[stage, row, col]`, the four registers as operands.
  SmallVector<Value> ldmatrix(KB &e, Value buf, Value stage, Value row,
                              Value col, bool transpose);

  KernelPlan &plan;
  OpBuilder &b;
  Location loc;
  KB k;
  Type elt;
  bool isBF16;
  Value bi, hi, kvh, tid;
  /// Keys per block, warps and threads per CTA, K/V pipeline stages.
  const int64_t kBK, kWarps, kThreads, kStages;
  /// Nk is not a multiple of kBK: the last block's rows past Nk are clamped
  /// on load and masked.
  const bool tail;
};

void MmaSyncEmitter::mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
                         MutableArrayRef<Value> c) {
  Type f32 = e.b.getF32Type();
  auto resType =
      LLVM::LLVMStructType::getLiteral(e.b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes t = isBF16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value r = NVVM::MmaOp::create(
      e.b, e.loc, resType, a, bOps, ValueRange(c), ArrayRef<int64_t>{16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{t, t},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    c[i] = LLVM::ExtractValueOp::create(e.b, e.loc, r, i);
}

SmallVector<Value> MmaSyncEmitter::ldmatrix(KB &e, Value buf, Value stage,
                                            Value row, Value col,
                                            bool transpose) {
  auto resType = VectorType::get({4, 2}, elt);
  Value r = nvgpu::LdMatrixOp::create(
      e.b, e.loc, resType, buf, ValueRange{stage, row, col},
      e.b.getBoolAttr(transpose), e.b.getI32IntegerAttr(4));
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i)
    regs.push_back(
        toOperand(e, elt, vector::ExtractOp::create(e.b, e.loc, r, i)));
  return regs;
}

void MmaSyncEmitter::copyBlock(KB &e, Value src, Value buf, int64_t width,
                               Value kb, Value stage,
                               SmallVector<Value> &tokens) {
  // 16-byte pieces (forEachItem): flat = tid + it * kThreads,
  // row = flat / perRow, column = 8 (flat % perRow) (perRow = width / 8).
  // When kThreads is a multiple of perRow, the column is the same for every
  // full round and the row grows by kThreads / perRow. Without a key tail
  // only the block index is clamped (to the last block: prefetches past the
  // range re-read it), so that the pieces' global addresses are one pointer
  // plus constant offsets; with a tail each row is clamped to Nk - 1.
  Value k0 = e.mul(tail ? kb : e.min(kb, e.idx(plan.numKB - 1)), e.idx(kBK));
  if (width % 8 != 0) {
    // Rows that are not 16-byte aligned: element by element, loads and
    // shared-memory stores (the barrier that publishes the block orders
    // them like the cp.async group).
    forEachElement(e, tid, kThreads, kBK * width, [&](KB &x, Value flat) {
      Value row = x.divu(flat, width), col = x.remu(flat, width);
      Value kr = x.min(x.add(k0, row), x.idx(plan.Nk - 1));
      Value v =
          memref::LoadOp::create(x.b, x.loc, src, ValueRange{bi, kvh, kr, col});
      memref::StoreOp::create(x.b, x.loc, v, buf, ValueRange{stage, row, col});
    });
    return;
  }
  int64_t perRow = width / 8, total = kBK * perRow;
  bool uniformColumn = kThreads % perRow == 0;
  Value row0, col0;
  if (uniformColumn) {
    row0 = e.divu(tid, perRow);
    col0 = e.mul(e.remu(tid, perRow), e.idx(8));
  }
  auto copy = [&](KB &x, Value row, Value col) {
    Value kr = x.add(k0, row);
    if (tail)
      kr = x.min(kr, x.idx(plan.Nk - 1));
    return nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, nvgpu::DeviceAsyncTokenType::get(x.b.getContext()), buf,
        ValueRange{stage, row, col}, src, ValueRange{bi, kvh, kr, col},
        x.b.getIndexAttr(8), /*srcElements=*/Value(),
        /*bypassL1=*/x.b.getUnitAttr());
  };
  forEachItem(
      e, tid, kThreads, total,
      [&](KB &x, int64_t it) -> Value {
        if (uniformColumn && (it + 1) * kThreads <= total)
          return copy(x, x.add(row0, x.idx(it * (kThreads / perRow))), col0);
        Value flat = x.add(tid, x.idx(it * kThreads));
        return copy(x, x.divu(flat, perRow),
                    x.mul(x.remu(flat, perRow), x.idx(8)));
      },
      &tokens);
}

void MmaSyncEmitter::emit() {
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
  SharedLayout layout(plan);
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

  auto [qb, by] = k.blockCoordinates(plan);
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
  Value lrow = k.remu(lane, 8);
  Value arow = k.add(lrow, k.mul(k.remu(k.divu(lane, 8), 2), k.idx(8)));
  Value acol = k.mul(k.divu(lane, 16), k.idx(8));
  Value brow = k.add(lrow, k.mul(k.divu(lane, 16), k.idx(8)));
  Value bcol = k.mul(k.remu(k.divu(lane, 8), 2), k.idx(8));
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

  // Key blocks the structural mask can show (as in the SIMT kernel).
  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = k.keyBlockRange(
      plan, q0, k.min(k.idx(kBQ), k.sub(k.idx(plan.Nq), q0)), kBK);

  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  // The copies of one block form a cp.async group; with S stages, S - 1
  // blocks are in flight, and a block is ready once at most S - 2 younger
  // groups are pending (then a barrier makes it visible to every warp).
  auto commit = [&](KB &e, SmallVector<Value> &tokens) {
    Value group =
        nvgpu::DeviceAsyncCreateGroupOp::create(e.b, e.loc, tokenType, tokens);
    tokens.clear();
    return group;
  };
  auto waitOldest = [&](KB &e, Value group) {
    nvgpu::DeviceAsyncWaitOp::create(e.b, e.loc, group,
                                     e.b.getI32IntegerAttr(kStages - 2));
    gpu::BarrierOp::create(e.b, e.loc);
  };
  // Prologue: Q, and blocks kbBegin .. kbBegin + S - 2 into stages
  // 0 .. S - 2; wait for the first.
  {
    // Padded head dims: zeros in the padding columns [D, Dp) of every K
    // (and Q) row and [Dv, Dvp) of every V row, for good (the copies write
    // only the true columns); the prologue's barrier publishes them. One
    // 16-byte store per row of `stages` x `rows` (threads past the last row
    // store nothing: no write-after-write).
    auto zeroPadding = [&](Value buf, int64_t stages, int64_t rows,
                           int64_t from, int64_t to) {
      if (from == to)
        return;
      auto zeros = VectorType::get({to - from}, elt);
      Value zero = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(zeros, b.getZeroAttr(elt)));
      forEachItem(
          k, tid, kThreads, stages * rows, [&](KB &x, int64_t it) -> Value {
            Value flat = x.add(tid, x.idx(it * kThreads));
            vector::StoreOp::create(
                x.b, x.loc, zero, buf,
                ValueRange{x.divu(flat, rows), x.remu(flat, rows), x.idx(from)},
                /*nontemporal=*/false, llvm::MaybeAlign(16));
            return Value();
          });
    };
    // A head dim that is not a multiple of 8 shares its last chunk with
    // the padding: that chunk is zeroed whole, then (after a barrier) the
    // element copies write its true columns.
    auto chunkStart = [](int64_t d) { return d / 8 * 8; };
    zeroPadding(kBuf, kStages, kBK, chunkStart(D), Dp);
    zeroPadding(vBuf, kStages, kBK, chunkStart(Dv), Dvp);
    if (qInSmem)
      zeroPadding(qBuf, 1, kBQ, chunkStart(D), Dp);
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
      Value kb = k.add(kbBegin, k.idx(st));
      copyBlock(k, key, kBuf, D, kb, k.idx(st), tokens);
      copyBlock(k, value, vBuf, Dv, kb, k.idx(st), tokens);
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
  const ScoreScaling scaling(plan.op);

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
    copyBlock(e, key, kBuf, D, ahead, next, tokens);
    copyBlock(e, value, vBuf, Dv, ahead, next, tokens);
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
          masked, k0, t2, rows[0]);

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
      runKeyBlocks(k, plan, q0, kBQ, kBK, kbBegin, kbEnd, init, blockBody);

  // With more than two stages, prefetches past the last block may still be
  // in flight: drain them (an empty group, then wait for all) so that no
  // cp.async outlives the kernel's use of shared memory.
  if (kStages > 2) {
    SmallVector<Value> none;
    nvgpu::DeviceAsyncWaitOp::create(b, loc, commit(k, none),
                                     b.getI32IntegerAttr(0));
  }

  // l over the quad; O = acc * ((l != 0) ? 1 / l : 0); lse.
  storeOutputs(k, plan, ol, state, rows, bi, hi, t, t2, out, lse);
  gpu::ReturnOp::create(b, loc);
}

class MmaSyncFamily final : public KernelFamily {
public:
  StringRef getName() const override { return "mma_sync"; }
  const KernelFamily *getFallback() const override { return &getSimtFamily(); }
  std::string getUnsupportedReason(AttentionOp op,
                                   StringRef chip) const override {
    if (!isMmaSyncChip(chip))
      return ("mma_sync needs sm_80 or newer (cp.async, bf16 mma.sync), the "
              "target is " + chip).str();
    return getTensorCoreUnsupportedReason(op);
  }
  LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const override;
  int64_t getDynamicSharedBytes(const KernelPlan &plan) const override {
    return SharedLayout(plan).total();
  }
  void emit(KernelPlan &plan, gpu::GPUFuncOp func) const override {
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    MmaSyncEmitter(plan, b, plan.op.getLoc(), func.getArguments()).emit();
  }
};

/// Defaults per head dim d = max(dqk, dv) and features, measured on the
/// H200 (docs/GPU.md) and chosen so that ptxas needs no spills under 255
/// registers. 2 stages (3 were 5-15% slower at d = 128). Rows per warp:
/// two m16 tiles up to d = 128; one above (O alone needs 2 M dv / 4 f32
/// registers per thread), with dropout (Philox per element) and with
/// per-element scores (bias, keep mask, score_mod) above d = 64. Warps:
/// 4, and 8 above d = 128 (128 rows share each K/V block: +7-9% at
/// d = 256). Keys per block: 64, but 32 with dropout and with two tiles
/// above d = 64 when some blocks take the per-element mask (causal/window
/// edges, a key tail): O (128) + S (64) f32 registers per thread and the
/// masked loop body spill there.
LogicalResult
MmaSyncFamily::resolveOptions(KernelPlan &plan,
                              const AttentionKernelOptions &requested) const {
  AttentionOp op = plan.op;
  const int64_t sharedLimit = plan.sharedLimit;
  AttentionKernelOptions &resolved = plan.cfg;
  resolved = requested;
  resolved.mma = getName();
  int64_t d = std::max(paddedHeadDim(plan.D), paddedHeadDim(plan.Dv));
  bool dropout = static_cast<bool>(op.getSeed());
  bool elementwise = op.getBias() || op.getKeepMask() || op.hasScoreMod();
  if (resolved.warps == 0)
    resolved.warps = d > 128 ? 8 : 4;
  if (resolved.stages == 0)
    resolved.stages = 2;
  if (resolved.warps != 4 && resolved.warps != 8)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "warps 4 or 8, not "
                            << resolved.warps;
  if (resolved.stages < 2 || resolved.stages > 4)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "2 to 4 stages, not "
                            << resolved.stages;
  int64_t warpRows = 16 * resolved.warps;
  if (resolved.blockQ == 0)
    resolved.blockQ = d > 128 || dropout || (elementwise && d > 64)
                          ? warpRows
                          : 2 * warpRows;
  if (resolved.blockQ != warpRows && resolved.blockQ != 2 * warpRows)
    return op.emitOpError()
           << "convert-attn-to-gpu: mma=mma_sync with " << resolved.warps
           << " warps takes block-q " << warpRows << " or " << 2 * warpRows
           << " (one or two m16 tiles per warp), not " << resolved.blockQ;
  bool twoTiles = resolved.blockQ == 2 * warpRows;
  bool maskedBlocks =
      plan.leftBounded || plan.rightBounded || plan.Nk % 64 != 0;
  if (resolved.blockK == 0)
    resolved.blockK =
        dropout || (twoTiles && d > 64 && maskedBlocks) ? 32 : 64;
  if (resolved.blockK != 32 && resolved.blockK != 64)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes "
                               "block-k 32 or 64, not "
                            << resolved.blockK;
  // Defaults shrink to the target's shared memory: 32-key blocks, then
  // one m16 tile per warp, then 4 warps.
  auto sharedBytes = [&] { return getDynamicSharedBytes(plan); };
  if (requested.blockK == 0 && sharedBytes() > sharedLimit)
    resolved.blockK = 32;
  if (requested.blockQ == 0 && sharedBytes() > sharedLimit)
    resolved.blockQ = warpRows;
  if (requested.blockQ == 0 && requested.warps == 0 &&
      sharedBytes() > sharedLimit && resolved.warps == 8) {
    resolved.warps = 4;
    resolved.blockQ = 64;
  }
  resolved.threadsPerRow = 1;
  // Online-softmax steps of `chunk` keys within a block (m16n8k16: a
  // multiple of 16 dividing block-k); the whole block by default.
  if (resolved.chunk == 0)
    resolved.chunk = resolved.blockK;
  if (resolved.chunk <= 0 || resolved.chunk % 16 != 0 ||
      resolved.blockK % resolved.chunk != 0)
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync takes a "
                               "chunk that is a multiple of 16 dividing "
                               "block-k, not "
                            << resolved.chunk;
  plan.threads = 32 * resolved.warps;
  if (sharedBytes() > sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync kernel needs "
           << sharedBytes()
           << " bytes of shared memory (K/V stages and Q), more than the "
           << sharedLimit << " a CTA can have on the target; lower stages, "
           << "block-k or block-q";
  // The mask is computed in i32 (key - row and Nk - key, emit()).
  if (plan.Nq + plan.Nk + resolved.blockQ + resolved.blockK >
      std::numeric_limits<int32_t>::max())
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync needs "
                               "Nq + Nk below 2^31";
  return success();
}
} // namespace

const KernelFamily &attnfuse::gpu_kernels::getMmaSyncFamily() {
  static const MmaSyncFamily family;
  return family;
}
