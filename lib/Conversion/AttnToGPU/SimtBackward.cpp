//===- SimtBackward.cpp - the backward kernels of the SIMT family ---------===//
//
// attn.attention_backward on CUDA cores (f32 FMAs; f16, bf16 and f32
// operands), FlashAttention-2's backward with recomputation, as three kinds
// (KernelPlan.h) launched in order by the host (AttnToGPU.cpp):
//
//   pre-pass    one thread per query row (b, h, q):
//                 Di[b, h, q] = sum_e dO[b, h, q, e] O[b, h, q, e]   (f32)
//                 dQacc[b, h, q, :] = 0                              (f32)
//   backward    grid  = (ceil(Nk / BK), B * Hkv)
//               block = BK * T threads; T threads share one key row j of
//               the block, each owning Dqk / T elements of k_j and dK_j and
//               Dv / T of v_j and dV_j, in registers (element i of a thread:
//               (i/4)*4T + part*4 + i%4, as the forward's SimtForward.cpp)
//
//                 for each query head h of the KV head's group:
//                   for each query row i that the structural mask lets see
//                   a key of the block (row range: block skipping for
//                   causal and windows):
//                     q_i, dO_i: the thread's elements (broadcast loads)
//                     t    = mask(score_mod(scale q_i.k_j) + bias)
//                     P    = (lse_i == -inf) ? 0 : exp(t - lse_i)
//                     Z    = keep(seed, b, h, i, j) ? 1 / (1 - p) : 0
//                     dP   = (dO_i . v_j) Z
//                     dS   = P (dP - Di_i) score_mod'(scale S) scale
//                     dV_j += P Z dO_i      dK_j += dS q_i
//                     dQacc[i] += dS k_j    (summed over the warp's key rows
//                                            by shuffles, then f32 atomics)
//                 dK_j, dV_j -> dK, dV (their element type)
//   conversion  one thread per element: dQ = dQacc in dQ's element type
//               (where that is not f32: then dQacc is dQ itself)
//
// No N x N buffer: P and dS are recomputed per (i, j) from Q, K and lse.
// A hidden key (t = -inf) contributes exactly nothing to dQ, dK and dV
// (buildVisibleProduct). GQA/MQA: dK and dV of a KV head are summed over
// its group's query heads in the CTA's registers.
//
//===----------------------------------------------------------------------===//
#include "SimtBackward.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::gpu_kernels;

namespace {
/// The column of owned element `i` of thread `part` among T threads of a
/// row: (i/4)*4T + 4 part + i%4.
Value ownedColumn(KB &k, Value part, int64_t i, int64_t T) {
  return k.add(k.idx((i / 4) * 4 * T + i % 4), k.mul(part, k.idx(4)));
}

/// The global thread index of a one-dimensional grid.
Value globalThreadIndex(KB &k) {
  Value bid = gpu::BlockIdOp::create(k.b, k.loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(k.b, k.loc, gpu::Dimension::x);
  return k.add(k.mul(bid, k.idx(kSimtBackwardElementwiseThreads)), tid);
}

/// The grid of the pre-pass (its rows) and of the conversion (dQ's
/// elements), without grad_bias's blocks.
int64_t elementwiseBlocks(const KernelPlan &plan) {
  int64_t NT = kSimtBackwardElementwiseThreads;
  if (plan.kind == KernelKind::BackwardPre) {
    int64_t perRow = prePassInPieces(plan) ? kPrePassThreadsPerRow : 1;
    return llvm::divideCeil(plan.B * plan.Hq * plan.Nq * perRow, NT);
  }
  return llvm::divideCeil(plan.B * plan.Hq * plan.Nq * plan.D, NT);
}

/// grad_bias's elements a thread of the extra blocks takes (consecutive):
/// 4 where the bias's rows are multiples of 4, else 1.
int64_t biasGradientVector(const KernelPlan &plan) {
  auto type = cast<ShapedType>(plan.bias.getType());
  return type.getRank() > 0 && type.getShape().back() % 4 == 0 ? 4 : 1;
}

/// The blocks after elementwiseBlocks that walk grad_bias's elements: the
/// pre-pass zeroes what the backward writes (getBiasGradient), the
/// conversion rounds the accumulator into dBias (convertsBiasGradient).
int64_t biasGradientBlocks(const KernelPlan &plan) {
  if (getBiasGradient(plan) == BiasGradient::None ||
      (plan.kind == KernelKind::BackwardConvert && !convertsBiasGradient(plan)))
    return 0;
  int64_t elements = cast<ShapedType>(plan.bias.getType()).getNumElements();
  return llvm::divideCeil(elements, biasGradientVector(plan) *
                                        kSimtBackwardElementwiseThreads);
}

/// Emits `rows` for the first elementwiseBlocks blocks and, in the extra
/// blocks (biasGradientBlocks), `elements` at the indices of the thread's
/// first grad_bias element with their count (biasGradientVector).
void emitWithBiasGradientBlocks(
    const KernelPlan &plan, KB &k, function_ref<void(KB &)> rows,
    function_ref<void(KB &, ArrayRef<Value>, int64_t)> elements) {
  if (biasGradientBlocks(plan) == 0)
    return rows(k);
  int64_t first = elementwiseBlocks(plan);
  Value bid = gpu::BlockIdOp::create(k.b, k.loc, gpu::Dimension::x);
  auto split = scf::IfOp::create(k.b, k.loc, k.ult(bid, k.idx(first)),
                                 /*withElseRegion=*/true);
  OpBuilder tb = split.getThenBodyBuilder();
  KB t{tb, k.loc};
  rows(t);
  OpBuilder eb = split.getElseBodyBuilder();
  KB e{eb, k.loc};
  Value tid = gpu::ThreadIdOp::create(eb, k.loc, gpu::Dimension::x);
  Value thread = e.add(
      e.mul(e.sub(bid, e.idx(first)), e.idx(kSimtBackwardElementwiseThreads)),
      tid);
  int64_t vector = biasGradientVector(plan);
  Value linear = e.mul(thread, e.idx(vector));
  ArrayRef<int64_t> shape = cast<ShapedType>(plan.bias.getType()).getShape();
  ifThen(e, e.ult(linear, e.idx(ShapedType::getNumElements(shape))),
         [&](KB &x) {
           SmallVector<Value> indices;
           int64_t inner = 1;
           for (int64_t d = shape.size() - 1; d >= 0; --d) {
             indices.insert(indices.begin(),
                            x.remu(x.divu(linear, inner), shape[d]));
             inner *= shape[d];
           }
           elements(x, indices, vector);
         });
}

/// grad_bias's buffer of the pre-pass and the backward (getBiasGradient).
Value biasGradientTarget(const KernelArgs &args) {
  return args.dBias ? args.dBias : args.dBiasAccum;
}

/// The pre-pass in pieces (prePassInPieces): thread j of a row's 8 reads
/// the pieces j, j + 8, ... of its dO and O rows and zeroes those of its
/// accumulator row; Di is the shuffle-sum of the 8 partial sums (every
/// thread of the grid takes part, those past the rows with zeros).
void emitPrePassInPieces(const KernelPlan &plan, KernelArgs &args, KB &k) {
  const int64_t T = kPrePassThreadsPerRow, rows = plan.B * plan.Hq * plan.Nq;
  const int64_t piece = prePassPiece(plan);
  Value x = globalThreadIndex(k);
  Value r = k.divu(x, T), j = k.remu(x, T);
  Value inside = k.ult(r, k.idx(rows));
  Value rc = k.min(r, k.idx(rows - 1));
  Value bi = k.divu(rc, plan.Hq * plan.Nq);
  Value hi = k.remu(k.divu(rc, plan.Nq), plan.Hq);
  Value qi = k.remu(rc, plan.Nq);
  auto pieceType = VectorType::get({piece}, plan.elementType);
  Value sum = k.f32(0.0);
  for (int64_t c0 = 0; c0 < plan.Dv; c0 += T * piece) {
    Value col = k.add(k.idx(c0), k.mul(j, k.idx(piece)));
    Value valid = c0 + T * piece <= plan.Dv
                      ? inside
                      : arith::AndIOp::create(k.b, k.loc,
                                              k.ult(col, k.idx(plan.Dv)),
                                              inside);
    // Rows and pieces past the ends read the last ones (in bounds) and add
    // nothing.
    SmallVector<Value> at = {bi, hi, qi,
                             k.min(col, k.idx(plan.Dv - piece))};
    // (Rows of whole pieces: 16-byte aligned, as the buffers are.)
    Value dO = vector::LoadOp::create(k.b, k.loc, pieceType, args.gradOut, at,
                                      /*nontemporal=*/false,
                                      llvm::MaybeAlign(16));
    Value o = vector::LoadOp::create(k.b, k.loc, pieceType, args.out, at,
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(16));
    Value acc = k.f32(0.0);
    for (int64_t i = 0; i < piece; ++i)
      acc = k.fma(k.toF32(vector::ExtractOp::create(k.b, k.loc, dO, i)),
                  k.toF32(vector::ExtractOp::create(k.b, k.loc, o, i)), acc);
    sum = k.fadd(sum, k.select(valid, acc, k.f32(0.0)));
  }
  for (int64_t offset = T / 2; offset > 0; offset /= 2)
    sum = k.fadd(sum, gpu::ShuffleOp::create(k.b, k.loc, sum, offset, 32,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
  Value first = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq, j,
                                      k.idx(0));
  ifThen(k, arith::AndIOp::create(k.b, k.loc, inside, first), [&](KB &e) {
    memref::StoreOp::create(e.b, e.loc, sum, args.di, ValueRange{bi, hi, qi});
  });
  if (!args.dqAccum) // deterministic mode: the dQ kernel writes dQ
    return;
  auto zeros = VectorType::get({4}, k.b.getF32Type());
  Value zero = arith::ConstantOp::create(
      k.b, k.loc, DenseElementsAttr::get(zeros, k.b.getF32FloatAttr(0.0)));
  ifThen(k, inside, [&](KB &e) {
    for (int64_t c0 = 0; c0 < plan.D; c0 += T * 4) {
      Value col = e.add(e.idx(c0), e.mul(j, e.idx(4)));
      auto store = [&](KB &x) {
        vector::StoreOp::create(x.b, x.loc, zero, args.dqAccum,
                                ValueRange{bi, hi, qi, col},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      };
      if (c0 + T * 4 <= plan.D)
        store(e);
      else
        ifThen(e, e.ult(col, e.idx(plan.D)), store);
    }
  });
}

/// The pre-pass: Di and the zeroed dQ accumulator, one thread per row.
void emitPrePass(const KernelPlan &plan, KernelArgs &args, KB &k) {
  if (prePassInPieces(plan))
    return emitPrePassInPieces(plan, args, k);
  int64_t rows = plan.B * plan.Hq * plan.Nq;
  Value r = globalThreadIndex(k);
  ifThen(k, k.ult(r, k.idx(rows)), [&](KB &e) {
    Value bi = e.divu(r, plan.Hq * plan.Nq);
    Value hi = e.remu(e.divu(r, plan.Nq), plan.Hq);
    Value qi = e.remu(r, plan.Nq);
    auto sum = scf::ForOp::create(
        e.b, e.loc, e.idx(0), e.idx(plan.Dv), e.idx(1), ValueRange{e.f32(0.0)},
        [&](OpBuilder &lb, Location ll, Value c, ValueRange iter) {
          KB l{lb, ll};
          SmallVector<Value> at = {bi, hi, qi, c};
          Value dO = l.toF32(memref::LoadOp::create(lb, ll, args.gradOut, at));
          Value o = l.toF32(memref::LoadOp::create(lb, ll, args.out, at));
          scf::YieldOp::create(lb, ll, l.fma(dO, o, iter[0]));
        });
    memref::StoreOp::create(e.b, e.loc, sum.getResult(0), args.di,
                            ValueRange{bi, hi, qi});
    if (!args.dqAccum) // deterministic mode: the dQ kernel writes dQ
      return;
    scf::ForOp::create(
        e.b, e.loc, e.idx(0), e.idx(plan.D), e.idx(1), ValueRange{},
        [&](OpBuilder &lb, Location ll, Value c, ValueRange) {
          KB l{lb, ll};
          memref::StoreOp::create(lb, ll, l.f32(0.0), args.dqAccum,
                                  ValueRange{bi, hi, qi, c});
          scf::YieldOp::create(lb, ll);
        });
  });
}

/// The conversion: dQ = dQacc in dQ's element type, one thread per element.
void emitConversion(const KernelPlan &plan, KernelArgs &args, KB &k) {
  int64_t total = plan.B * plan.Hq * plan.Nq * plan.D;
  Value x = globalThreadIndex(k);
  ifThen(k, k.ult(x, k.idx(total)), [&](KB &e) {
    SmallVector<Value> at = {e.divu(x, plan.Hq * plan.Nq * plan.D),
                             e.remu(e.divu(x, plan.Nq * plan.D), plan.Hq),
                             e.remu(e.divu(x, plan.D), plan.Nq),
                             e.remu(x, plan.D)};
    Value v = memref::LoadOp::create(e.b, e.loc, args.dqAccum, at);
    // (f32: a copy, where dQ is a permuted view of [B, N, H, D].)
    Value out = plan.elementType == v.getType()
                    ? v
                    : arith::TruncFOp::create(e.b, e.loc, plan.elementType, v);
    memref::StoreOp::create(e.b, e.loc, out, args.dq, at);
  });
}

/// What the backward's kernels share: T threads per row (a key row of the
/// backward, a query row of the deterministic dQ kernel), each owning
/// Dqk / T and Dv / T elements of it (ownedColumn), and the gradient terms
/// of one (query row, key) pair. The helpers emit at the insertion point of
/// `b`: the body builders of scf.for and scf.if are that builder, moved
/// into the body.
class SimtBackwardRows : protected KernelArgs {
public:
  SimtBackwardRows(const KernelPlan &plan, OpBuilder &b, Location loc,
                   ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args), plan(plan), b(b), loc(loc) {}

protected:
  /// The thread's elements of row (bi, head, row) of `src` (`width`
  /// columns), as f32.
  SmallVector<Value> loadOwned(KB &k, Value src, Value head, Value row,
                               int64_t width);
  /// The dot product of two rows of which the thread holds `x` and `y`,
  /// summed over the T threads of the row (adjacent lanes).
  Value rowDot(KB &k, ArrayRef<Value> x, ArrayRef<Value> y);
  /// Stores the thread's elements `acc` of row (bi, head, row) of `dst`
  /// (`width` columns) in dst's element type.
  void storeOwned(KB &k, Value dst, Value head, Value row,
                  ArrayRef<Value> acc, int64_t width);

  /// The terms of query row `qi` of head `hi` and key `kj`, from the
  /// thread's elements of q_i, k_j, dO_i and v_j and the row's lse and Di:
  /// the forward's masked score t (hidden: -inf; also where `tailRow` is
  /// given and not below Nk), P Z (P with the dropout factor), dT =
  /// P (dP - Di) (not masked: P is 0 where hidden) and dS = dT dt/ds.
  struct PairTerms {
    Value t, pz, dt, ds;
  };
  PairTerms emitPairTerms(KB &k, ArrayRef<Value> qRegs, ArrayRef<Value> kRegs,
                          ArrayRef<Value> doRegs, ArrayRef<Value> vRegs,
                          Value hi, Value qi, Value kj, Value rowLse,
                          Value rowDi, Value tailRow);

  const KernelPlan &plan;
  OpBuilder &b;
  Location loc;
  Value bi, part;
};

SmallVector<Value> SimtBackwardRows::loadOwned(KB &k, Value src, Value head,
                                               Value row, int64_t width) {
  int64_t T = plan.cfg.threadsPerRow;
  auto type = cast<MemRefType>(src.getType());
  auto in4 = VectorType::get({4}, type.getElementType());
  SmallVector<Value> regs;
  for (int64_t i = 0; i < width / T; i += 4) {
    Value vec = k.toF32(vector::LoadOp::create(
        b, loc, in4, src, ValueRange{bi, head, row, ownedColumn(k, part, i, T)},
        /*nontemporal=*/false, align4(src)));
    for (int64_t r = 0; r < 4; ++r)
      regs.push_back(vector::ExtractOp::create(b, loc, vec, r));
  }
  return regs;
}

Value SimtBackwardRows::rowDot(KB &k, ArrayRef<Value> x, ArrayRef<Value> y) {
  Value s = k.f32(0.0);
  for (auto [xi, yi] : llvm::zip_equal(x, y))
    s = k.fma(xi, yi, s);
  for (int64_t off = 1; off < plan.cfg.threadsPerRow; off *= 2)
    s = k.fadd(s,
               gpu::ShuffleOp::create(b, loc, s, off, 32, gpu::ShuffleMode::XOR)
                   .getShuffleResult());
  return s;
}

void SimtBackwardRows::storeOwned(KB &k, Value dst, Value head, Value row,
                                  ArrayRef<Value> acc, int64_t width) {
  int64_t T = plan.cfg.threadsPerRow;
  Type f32 = b.getF32Type();
  auto v4 = VectorType::get({4}, f32);
  auto o4 = VectorType::get({4}, plan.elementType);
  for (int64_t i = 0; i < width / T; i += 4) {
    Value vec = vector::FromElementsOp::create(b, loc, v4, acc.slice(i, 4));
    if (plan.elementType != f32)
      vec = arith::TruncFOp::create(b, loc, o4, vec);
    vector::StoreOp::create(
        b, loc, vec, dst, ValueRange{bi, head, row, ownedColumn(k, part, i, T)},
        /*nontemporal=*/false, align4(dst));
  }
}

SimtBackwardRows::PairTerms
SimtBackwardRows::emitPairTerms(KB &k, ArrayRef<Value> qRegs,
                                ArrayRef<Value> kRegs, ArrayRef<Value> doRegs,
                                ArrayRef<Value> vRegs, Value hi, Value qi,
                                Value kj, Value rowLse, Value rowDi,
                                Value tailRow) {
  // The forward's masked score t and dt/ds, recomputed.
  Value s = rowDot(k, qRegs, kRegs);
  SmallVector<Value> bhqk = {bi, hi, qi, kj};
  Value keepElem = keep ? k.loadBroadcast(keep, bhqk) : Value();
  Value biasElem = bias ? k.loadBroadcast(bias, bhqk) : Value();
  Value derivative;
  Value t = buildMaskedScore(b, loc, plan.op, s, bhqk, biasElem, keepElem,
                             /*applyStructuralMask=*/true, &derivative);
  if (tailRow)
    t = k.select(k.ult(tailRow, k.idx(plan.Nk)), t, k.f32(kNegInf));
  // P = exp(t - lse), 0 in a row that sees no key (lse = -inf).
  Value emptyRow = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         rowLse, k.f32(kNegInf));
  Value p = k.select(emptyRow, k.f32(0.0),
                     math::ExpOp::create(b, loc, k.fsub(t, rowLse)));
  // dP = (dO_i . v_j) Z and P Z, with the forward's dropout mask.
  Value dp = rowDot(k, doRegs, vRegs);
  Value pz = p;
  if (seed) {
    AttentionOpInterface op = plan.op;
    double p0 = op.getDropoutProbability();
    Value kept = buildDropoutKeep(b, loc, plan.op, seed, bhqk);
    Value z = k.select(kept, k.f32(1.0 / (1.0 - p0)), k.f32(0.0));
    dp = k.fmul(dp, z);
    pz = k.fmul(p, z);
  }
  Value dt = k.fmul(p, k.fsub(dp, rowDi));
  return {t, pz, dt, k.fmul(dt, derivative)};
}

/// The backward kernel of one (key block, batch, KV head).
class SimtBackwardKernel : SimtBackwardRows {
public:
  using SimtBackwardRows::SimtBackwardRows;
  void emit();

private:
  /// The gradient terms of query row `qi` of head `hi` for the thread's key
  /// row: updates `dk` and `dv`, adds dS k_j to the dQ accumulator (none in
  /// deterministic mode).
  void emitRow(KB &k, Value hi, Value qi, MutableArrayRef<Value> dk,
               MutableArrayRef<Value> dv);

  // Per-thread coordinates and registers.
  Value kvh, lane, kRow, kClamped;
  SmallVector<Value> kRegs, vRegs;
};

void SimtBackwardKernel::emitRow(KB &k, Value hi, Value qi,
                                 MutableArrayRef<Value> dk,
                                 MutableArrayRef<Value> dv) {
  int64_t T = plan.cfg.threadsPerRow;
  SmallVector<Value> qRegs = loadOwned(k, q, hi, qi, plan.D);
  SmallVector<Value> doRegs = loadOwned(k, gradOut, hi, qi, plan.Dv);
  SmallVector<Value> rowAt = {bi, hi, qi};
  Value rowLse = memref::LoadOp::create(b, loc, lse, rowAt);
  Value rowDi = memref::LoadOp::create(b, loc, di, rowAt);
  // Keys past the end of the sequence (the tail of the last block) are
  // hidden.
  PairTerms terms =
      emitPairTerms(k, qRegs, kRegs, doRegs, vRegs, hi, qi, kClamped, rowLse,
                    rowDi, plan.Nk % plan.cfg.blockK != 0 ? kRow : Value());
  Value t = terms.t, ds = terms.ds;
  // grad_bias: by the row's first thread, keys before Nk.
  if (plan.biasGrad) {
    Value owner = k.ult(part, k.idx(1));
    if (plan.Nk % plan.cfg.blockK != 0)
      owner = arith::AndIOp::create(b, loc, owner,
                                    k.ult(kRow, k.idx(plan.Nk)));
    ifThen(k, owner, [&](KB &e) {
      Value hidden = arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ,
                                           t, e.f32(kNegInf));
      writeBiasGradient(e, plan, *this, {bi, hi, qi, kRow},
                        e.select(hidden, e.f32(0.0), terms.dt));
    });
  }

  for (auto [i, x] : llvm::enumerate(doRegs))
    dv[i] = k.fadd(dv[i], buildVisibleProduct(b, loc, t, terms.pz, x));
  for (auto [i, x] : llvm::enumerate(qRegs))
    dk[i] = k.fadd(dk[i], buildVisibleProduct(b, loc, t, ds, x));
  if (!dqAccum)
    return;
  // dQ_i += dS k_j: summed over the warp's key rows (lanes that differ in
  // the bits above part), then added by the warp's first row.
  SmallVector<Value> dq;
  for (Value x : kRegs) {
    Value term = buildVisibleProduct(b, loc, t, ds, x);
    for (int64_t off = T; off < 32; off *= 2)
      term = k.fadd(term, gpu::ShuffleOp::create(b, loc, term, off, 32,
                                                 gpu::ShuffleMode::XOR)
                              .getShuffleResult());
    dq.push_back(term);
  }
  ifThen(k, k.ult(lane, k.idx(T)), [&](KB &e) {
    for (auto [i, term] : llvm::enumerate(dq))
      memref::AtomicRMWOp::create(
          e.b, e.loc, arith::AtomicRMWKind::addf, term, dqAccum,
          ValueRange{bi, hi, qi, ownedColumn(e, part, i, T)});
  });
}

void SimtBackwardKernel::emit() {
  KB k{b, loc};
  const int64_t T = plan.cfg.threadsPerRow, BK = plan.cfg.blockK;
  const MaskWindow &w = plan.window;

  Value kb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hkv);
  kvh = k.remu(by, plan.Hkv);
  part = k.remu(tid, T);
  lane = k.remu(tid, 32);
  Value k0 = k.mul(kb, k.idx(BK));
  kRow = k.add(k0, k.divu(tid, T));
  kClamped = k.min(kRow, k.idx(plan.Nk - 1));
  kRegs = loadOwned(k, key, kvh, kClamped, plan.D);
  vRegs = loadOwned(k, value, kvh, kClamped, plan.Dv);

  // The query rows that can see a key of [k0, k0 + bk): -left <= k - (q +
  // off) <= right for some k of the block.
  Value rowBegin = k.idx(0), rowEnd = k.idx(plan.Nq);
  Value bk = k.min(k.idx(BK), k.sub(k.idx(plan.Nk), k0));
  if (plan.rightBounded)
    rowBegin = k.max(rowBegin, k.sub(k0, k.idx(w.offset + w.right)));
  if (plan.leftBounded)
    rowEnd = k.min(rowEnd, k.add(k.add(k0, bk), k.idx(w.left - w.offset)));

  SmallVector<Value> init(plan.D / T + plan.Dv / T, k.f32(0.0));
  auto groupLoop = scf::ForOp::create(
      b, loc, k.idx(0), k.idx(plan.G), k.idx(1), init,
      [&](OpBuilder &gb, Location gl, Value g, ValueRange groupIter) {
        KB gk{gb, gl};
        Value hi = gk.add(gk.mul(kvh, gk.idx(plan.G)), g);
        auto rowLoop = scf::ForOp::create(
            gb, gl, rowBegin, rowEnd, gk.idx(1), groupIter,
            [&](OpBuilder &lb, Location ll, Value qi, ValueRange iter) {
              KB l{lb, ll};
              SmallVector<Value> acc(iter.begin(), iter.end());
              MutableArrayRef<Value> all(acc);
              emitRow(l, hi, qi, all.take_front(plan.D / T),
                      all.drop_front(plan.D / T));
              scf::YieldOp::create(lb, ll, acc);
            });
        scf::YieldOp::create(gb, gl, rowLoop.getResults());
      });

  // dK_j, dV_j of the block's rows within Nk.
  SmallVector<Value> acc(groupLoop.getResults().begin(),
                         groupLoop.getResults().end());
  ifThen(k, k.ult(kRow, k.idx(plan.Nk)), [&](KB &e) {
    storeOwned(e, dk, kvh, kRow, ArrayRef<Value>(acc).take_front(plan.D / T),
               plan.D);
    storeOwned(e, dv, kvh, kRow, ArrayRef<Value>(acc).drop_front(plan.D / T),
               plan.Dv);
  });
  gpu::ReturnOp::create(b, loc);
}
/// The deterministic dQ kernel of one (query block, batch, head): T threads
/// per query row sum the row's terms dS k_j over the keys the block's rows
/// can see, in key order, in registers.
class SimtBackwardDQKernel : SimtBackwardRows {
public:
  using SimtBackwardRows::SimtBackwardRows;
  void emit();
};

void SimtBackwardDQKernel::emit() {
  KB k{b, loc};
  const int64_t T = plan.cfg.threadsPerRow, BQ = plan.cfg.blockQ;
  const MaskWindow &w = plan.window;

  Value qb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hq);
  Value hi = k.remu(by, plan.Hq);
  Value kvh = k.divu(hi, plan.G);
  part = k.remu(tid, T);
  Value q0 = k.mul(qb, k.idx(BQ));
  Value qRow = k.add(q0, k.divu(tid, T));
  Value qClamped = k.min(qRow, k.idx(plan.Nq - 1));
  SmallVector<Value> qRegs = loadOwned(k, q, hi, qClamped, plan.D);
  SmallVector<Value> doRegs = loadOwned(k, gradOut, hi, qClamped, plan.Dv);
  SmallVector<Value> rowAt = {bi, hi, qClamped};
  Value rowLse = memref::LoadOp::create(b, loc, lse, rowAt);
  Value rowDi = memref::LoadOp::create(b, loc, di, rowAt);

  // The keys that a row of [q0, q0 + bq) can see: -left <= k - (q + off)
  // <= right for some q of the block.
  Value colBegin = k.idx(0), colEnd = k.idx(plan.Nk);
  Value bq = k.min(k.idx(BQ), k.sub(k.idx(plan.Nq), q0));
  if (plan.leftBounded)
    colBegin = k.max(colBegin, k.add(q0, k.idx(w.offset - w.left)));
  if (plan.rightBounded)
    colEnd = k.min(colEnd, k.add(k.add(q0, bq), k.idx(w.offset + w.right)));

  SmallVector<Value> init(plan.D / T, k.f32(0.0));
  auto keyLoop = scf::ForOp::create(
      b, loc, colBegin, colEnd, k.idx(1), init,
      [&](OpBuilder &lb, Location ll, Value kj, ValueRange iter) {
        KB l{lb, ll};
        SmallVector<Value> kRegs = loadOwned(l, key, kvh, kj, plan.D);
        SmallVector<Value> vRegs = loadOwned(l, value, kvh, kj, plan.Dv);
        PairTerms terms = emitPairTerms(l, qRegs, kRegs, doRegs, vRegs, hi,
                                        qClamped, kj, rowLse, rowDi, Value());
        SmallVector<Value> acc(iter.begin(), iter.end());
        for (auto [i, x] : llvm::enumerate(kRegs))
          acc[i] = l.fadd(acc[i],
                          buildVisibleProduct(lb, ll, terms.t, terms.ds, x));
        scf::YieldOp::create(lb, ll, acc);
      });
  SmallVector<Value> acc(keyLoop.getResults().begin(),
                         keyLoop.getResults().end());
  ifThen(k, k.ult(qRow, k.idx(plan.Nq)),
         [&](KB &e) { storeOwned(e, dq, hi, qRow, acc, plan.D); });
  gpu::ReturnOp::create(b, loc);
}
} // namespace

void attnfuse::gpu_kernels::writeBiasGradient(KB &k, const KernelPlan &plan,
                                              const KernelArgs &args,
                                              ArrayRef<Value> bhqk, Value dt) {
  Value target = biasGradientTarget(args);
  SmallVector<Value> at = k.broadcastIndices(target, bhqk);
  if (getBiasGradient(plan) == BiasGradient::Store) {
    memref::StoreOp::create(
        k.b, k.loc,
        k.fromF32(dt, cast<MemRefType>(target.getType()).getElementType()),
        target, at);
    return;
  }
  // (A hidden or zero term adds nothing: no atomic.)
  Value nonzero = arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::UNE,
                                        dt, k.f32(0.0));
  ifThen(k, nonzero, [&](KB &x) {
    memref::AtomicRMWOp::create(x.b, x.loc, arith::AtomicRMWKind::addf, dt,
                                target, at);
  });
}

int64_t attnfuse::gpu_kernels::prePassPiece(const KernelPlan &plan) {
  return 16 / (plan.elementType.getIntOrFloatBitWidth() / 8);
}

bool attnfuse::gpu_kernels::prePassInPieces(const KernelPlan &plan) {
  return plan.Dv % prePassPiece(plan) == 0 && plan.D % 4 == 0;
}

LaunchShape
attnfuse::gpu_kernels::getSimtBackwardLaunchShape(const KernelPlan &plan) {
  int64_t NT = kSimtBackwardElementwiseThreads;
  switch (plan.kind) {
  case KernelKind::BackwardPre:
  case KernelKind::BackwardConvert:
    return {{elementwiseBlocks(plan) + biasGradientBlocks(plan), 1, 1},
            {NT, 1, 1}};
  case KernelKind::Backward:
    return {{plan.numKB, plan.B * plan.Hkv, 1}, {plan.threads, 1, 1}};
  case KernelKind::BackwardDQ:
    return {{static_cast<int64_t>(llvm::divideCeil(plan.Nq, plan.cfg.blockQ)),
             plan.B * plan.Hq, 1},
            {plan.threads, 1, 1}};
  case KernelKind::Forward:
  case KernelKind::ForwardCombine:
    break;
  }
  llvm_unreachable("not a backward kind");
}

void attnfuse::gpu_kernels::emitSimtBackward(KernelPlan &plan,
                                             gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Location loc = plan.op.getLoc();
  KB k{b, loc};
  switch (plan.kind) {
  case KernelKind::BackwardPre: {
    KernelArgs args(plan, func.getArguments());
    emitWithBiasGradientBlocks(
        plan, k, [&](KB &e) { emitPrePass(plan, args, e); },
        [&](KB &e, ArrayRef<Value> at, int64_t vector) {
          Value target = biasGradientTarget(args);
          Type elt = cast<MemRefType>(target.getType()).getElementType();
          auto type = VectorType::get({vector}, elt);
          Value zero = arith::ConstantOp::create(
              e.b, e.loc,
              DenseElementsAttr::get(type, e.b.getZeroAttr(elt)));
          vector::StoreOp::create(e.b, e.loc, zero, target, at);
        });
    gpu::ReturnOp::create(b, loc);
    return;
  }
  case KernelKind::Backward:
    SimtBackwardKernel(plan, b, loc, func.getArguments()).emit();
    return;
  case KernelKind::BackwardDQ:
    SimtBackwardDQKernel(plan, b, loc, func.getArguments()).emit();
    return;
  case KernelKind::BackwardConvert: {
    KernelArgs args(plan, func.getArguments());
    emitWithBiasGradientBlocks(
        plan, k, [&](KB &e) { emitConversion(plan, args, e); },
        [&](KB &e, ArrayRef<Value> at, int64_t vector) {
          auto f32s = VectorType::get({vector}, e.b.getF32Type());
          Value sum = vector::LoadOp::create(e.b, e.loc, f32s,
                                             args.dBiasAccum, at);
          vector::StoreOp::create(e.b, e.loc,
                                  e.fromF32(sum, args.dBias.getType()),
                                  args.dBias, at);
        });
    gpu::ReturnOp::create(b, loc);
    return;
  }
  case KernelKind::Forward:
  case KernelKind::ForwardCombine:
    break;
  }
  llvm_unreachable("not a backward kind");
}
