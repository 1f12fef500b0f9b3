//===- SimtForward.cpp - the forward kernel of the SIMT family ------------===//
//
// The fused forward kernel on CUDA cores (f32 FMAs; f16, bf16 and f32
// operands, every feature of the op). The algorithm is the one of
// convert-attn-to-scf (FlashAttention-2's loop order), mapped onto a CTA:
//
//   grid  = (ceil(Nq / BQ), B * Hq)         query blocks backwards; causal:
//           (B * Hq, ceil(Nq / BQ))         longest query blocks first
//   block = BQ * T threads; T threads share one query row, each owning
//           Dqk / T elements of q and Dv / T of the f32 accumulator, in
//           registers (element i of a thread: (i/4)*4T + part*4 + i%4, so a
//           warp's float4 reads of a shared K/V row hit distinct banks)
//
//   q      = Q[b, h, row] * (scale * log2 e)        (registers; folded scale
//                                                    when no score_mod/bias)
//   m = -inf, l = 0, acc = 0                        (log2 domain)
//   for each key block that the structural mask can show (loop bounds):
//     K, V block -> shared memory (f32, one conversion per element)
//     for each chunk of C keys:
//       t_j   = mask(score_mod(scale * q.k_j) + bias) * log2 e  (shuffle-xor
//               reduction of the T partial dot products)
//       m'    = max(m, max_j t_j)      m'' = (m' == -inf) ? 0 : m'
//       alpha = exp2(m - m'')          p_j = exp2(t_j - m'')
//       l     = alpha * l + sum_j p_j
//       acc   = alpha * acc + sum_j (p_j * Z_j) v_j    (Z: dropout factor)
//   O = (l != 0) ? acc / l : 0         lse = m'' * ln 2 + log(l)
//
// Its thread owns whole rows of scores (after the shuffle reduction), so it
// runs the online softmax on scalars, not on the tensor-core families'
// accumulator fragments (Fragments.h); the rescale of a step is theirs
// (KB::rescaleRow).
//
//===----------------------------------------------------------------------===//
#include "SimtForward.h"
#include "Staging.h"
#include "TileScheduler.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;
using namespace attnfuse::gpu_kernels;

namespace {
/// The element of a thread's slice: element i of part p of a row of width w
/// split over T threads is (i/4)*4T + 4p + i%4.
Value sliceStart(KB &k, Value part, int64_t group, int64_t T) {
  return k.add(k.idx(group * 4 * T), k.mul(part, k.idx(4)));
}

/// The kernel body. `args` are the gpu.func arguments; `kBuf`, `vBuf` the
/// workgroup buffers.
class SimtForwardKernel : KernelArgs {
public:
  SimtForwardKernel(KernelPlan &plan, OpBuilder &b, Location loc,
                ArrayRef<BlockArgument> args, Value kBuf, Value vBuf)
      : KernelArgs(plan, args), plan(plan), b(b), loc(loc), kBuf(kBuf),
        vBuf(vBuf) {}

  void emit();

private:
  /// Loads rows [k0, k0 + BK) of src[bi, kvh] (clamped to Nk, or with key
  /// lengths to the batch's last valid key: lastKeyRow) into `buf` (f32),
  /// four elements per access.
  void loadBlock(KB &k, Value src, Value buf, int64_t width, Value k0);
  /// The masked score of key `kk` of the current block, in log2 units.
  Value score(KB &k, ArrayRef<Value> qRegs, Value kk, Value kGlobal);
  /// Loads the four-element groups of row `kk` of `buf` that this thread
  /// owns and calls `fn(i, element)` for each of its elements.
  void forEachOwned(KB &k, Value buf, Value kk, int64_t width,
                    function_ref<void(int64_t, Value)> fn);

  KernelPlan &plan;
  OpBuilder &b;
  Location loc;
  Value kBuf, vBuf;
  // Per-thread coordinates.
  Value bi, hi, kvh, part, qRow, qClamped;
  // The row's query position in the op (packed grouped queries: qClamped
  // mod the period, KernelPlan::queryPeriod), for the scores.
  Value qPosition;
  // The sizes the CTA's batch sees (KernelArgs::sizesAt), and the last key
  // row its loads read with key lengths (null: Nk - 1).
  attn::SizeValues sizes;
  Value lastRow;
};

void SimtForwardKernel::forEachOwned(KB &k, Value buf, Value kk, int64_t width,
                                 function_ref<void(int64_t, Value)> fn) {
  int64_t T = plan.cfg.threadsPerRow;
  auto v4 = VectorType::get({4}, b.getF32Type());
  for (int64_t g = 0; g < width / (4 * T); ++g) {
    Value vec = vector::LoadOp::create(
        b, loc, v4, buf, ValueRange{kk, sliceStart(k, part, g, T)},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
    for (int64_t r = 0; r < 4; ++r)
      fn(g * 4 + r, vector::ExtractOp::create(b, loc, vec, r));
  }
}

void SimtForwardKernel::loadBlock(KB &k, Value src, Value buf, int64_t width,
                              Value k0) {
  int64_t BK = plan.cfg.blockK, NT = plan.threads;
  int64_t total = BK * width / 4;
  auto srcType = cast<MemRefType>(src.getType());
  auto in4 = VectorType::get({4}, srcType.getElementType());
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  for (int64_t it = 0, e = llvm::divideCeil(total, NT); it < e; ++it) {
    Value flat = k.add(tid, k.idx(it * NT));
    auto body = [&](OpBuilder &nb, Location nl) {
      KB e{nb, nl};
      Value row = e.divu(flat, width / 4);
      Value col = e.mul(e.remu(flat, width / 4), e.idx(4));
      Value kr = e.min(e.add(k0, row), lastRow ? lastRow : e.idx(plan.Nk - 1));
      auto [i0, i2] = keyRow(plan, nb, nl, bi, kr);
      Value vec = vector::LoadOp::create(nb, nl, in4, src,
                                         ValueRange{i0, kvh, i2, col},
                                         /*nontemporal=*/false, align4(src));
      vector::StoreOp::create(nb, nl, e.toF32(vec), buf, ValueRange{row, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    };
    if ((it + 1) * NT <= total) {
      body(b, loc);
    } else {
      auto inBounds = k.ult(flat, k.idx(total));
      scf::IfOp::create(b, loc, inBounds, [&](OpBuilder &nb, Location nl) {
        body(nb, nl);
        scf::YieldOp::create(nb, nl);
      });
    }
  }
}

Value SimtForwardKernel::score(KB &k, ArrayRef<Value> qRegs, Value kk,
                           Value kGlobal) {
  int64_t T = plan.cfg.threadsPerRow;
  // The partial dot product over this thread's elements ...
  Value s = k.f32(0.0);
  forEachOwned(k, kBuf, kk, plan.D,
               [&](int64_t i, Value x) { s = k.fma(qRegs[i], x, s); });
  // ... summed over the T threads of the row (adjacent lanes).
  for (int64_t off = 1; off < T; off *= 2)
    s = k.fadd(s, gpu::ShuffleOp::create(b, loc, s, off, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult());

  Value kc = k.min(kGlobal, k.idx(plan.Nk - 1));
  SmallVector<Value> bhqk = {bi, hi, qPosition, kc};
  Value keepElem = keep ? k.loadBroadcast(keep, bhqk) : Value();
  Value t;
  if (plan.foldedScale) {
    // q already carries scale * log2 e.
    t = s;
    Value visible =
        buildStructuralMaskVisible(b, loc, plan.op, qPosition, kc, &sizes);
    if (keepElem)
      visible =
          visible ? arith::AndIOp::create(b, loc, visible, keepElem) : keepElem;
    if (visible)
      t = k.select(visible, t, k.f32(kNegInf));
  } else {
    Value biasElem = bias ? k.loadBroadcast(bias, bhqk) : Value();
    t = buildMaskedScore(b, loc, plan.op, s, bhqk, biasElem, keepElem,
                         /*applyStructuralMask=*/true, /*derivative=*/nullptr,
                         getCaptures(), &sizes);
    t = k.toLog2(t);
  }
  // Keys of a page whose id is out of range (paged K/V).
  if (plan.blockTable)
    t = k.select(keyPageValid(plan, b, loc, bi, kc), t, k.f32(kNegInf));
  // Keys past the end of the sequence (the tail of the last block).
  if (plan.Nk % plan.cfg.blockK != 0)
    t = k.select(k.ult(kGlobal, k.idx(plan.Nk)), t, k.f32(kNegInf));
  return t;
}

void SimtForwardKernel::emit() {
  KB k{b, loc};
  const AttentionKernelOptions &cfg = plan.cfg;
  int64_t T = cfg.threadsPerRow, BQ = cfg.blockQ, BK = cfg.blockK,
          C = cfg.chunk;
  int64_t eq = plan.D / T, ev = plan.Dv / T;
  Type f32 = b.getF32Type();

  mapCaptures(plan, b, loc);
  // Coordinates: query block (walked backwards: the longest causal rows
  // start first) and (batch, head).
  auto [qb, by] = blockCoordinates(k, plan);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hq);
  hi = k.remu(by, plan.Hq);
  kvh = k.divu(hi, plan.G);
  part = k.remu(tid, T);
  Value q0 = k.mul(qb, k.idx(BQ));
  qRow = k.add(q0, k.divu(tid, T));
  qClamped = k.min(qRow, k.idx(plan.Nq - 1));
  qPosition = !plan.queryPeriod     ? qClamped
              : plan.queryPeriod == 1 ? k.idx(0)
                                      : k.remu(qClamped, plan.queryPeriod);

  // q in registers (f32), pre-scaled when the scale folds.
  SmallVector<Value> qRegs;
  {
    auto in4 = VectorType::get({4}, plan.elementType);
    Value factor = plan.foldedScale
                       ? k.f32(plan.op.getScaleOrDefault() * kLog2e)
                       : Value();
    for (int64_t g = 0; g < eq / 4; ++g) {
      Value vec = k.toF32(vector::LoadOp::create(
          b, loc, in4, q,
          ValueRange{bi, hi, qClamped, sliceStart(k, part, g, T)},
          /*nontemporal=*/false, align4(q)));
      for (int64_t r = 0; r < 4; ++r) {
        Value x = vector::ExtractOp::create(b, loc, vec, r);
        qRegs.push_back(factor ? k.fmul(x, factor) : x);
      }
    }
  }

  // Key blocks that the structural mask can show to rows [q0, q0 + BQ),
  // of the batch's keys.
  sizes = sizesAt(plan, b, loc, bi);
  if (sizes.validKeys)
    lastRow = lastKeyRow(k, plan, sizes, BK);
  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = k.keyBlockRange(
      plan, q0, k.min(k.idx(BQ), k.sub(k.idx(plan.Nq), q0)), BK, sizes);

  SmallVector<Value> init = {k.f32(kNegInf), k.f32(0.0)};
  for (int64_t i = 0; i < ev; ++i)
    init.push_back(k.f32(0.0));

  auto blockLoop = scf::ForOp::create(
      b, loc, kbBegin, kbEnd, k.idx(1), init,
      [&](OpBuilder &lb, Location ll, Value kb, ValueRange blockIter) {
        KB l{lb, ll};
        Value k0 = l.mul(kb, l.idx(BK));
        // The previous block's readers are done; fill this one.
        gpu::BarrierOp::create(lb, ll);
        loadBlock(l, key, kBuf, plan.D, k0);
        loadBlock(l, value, vBuf, plan.Dv, k0);
        gpu::BarrierOp::create(lb, ll);
        auto chunkLoop = scf::ForOp::create(
            lb, ll, l.idx(0), l.idx(BK / C), l.idx(1), blockIter,
            [&](OpBuilder &cb, Location cl, Value c, ValueRange iter) {
              KB e{cb, cl};
              Value m = iter[0], lsum = iter[1];
              SmallVector<Value> acc(iter.begin() + 2, iter.end());
              Value kk0 = e.mul(c, e.idx(C));
              SmallVector<Value> kks, ts;
              Value mNew = m;
              for (int64_t j = 0; j < C; ++j) {
                Value kk = e.add(kk0, e.idx(j));
                kks.push_back(kk);
                ts.push_back(score(e, qRegs, kk, e.add(k0, kk)));
                mNew = e.fmax(mNew, ts.back());
              }
              // m'' = safe(m'), alpha = exp2(m - m''), p = exp2(t - m'').
              KB::SoftmaxRescale rescale = e.rescaleRow(
                  m, mNew, lsum, [](KB &x, Value v) { return x.exp2(v); });
              lsum = rescale.lsum;
              for (Value &a : acc)
                a = e.fmul(a, rescale.alpha);
              for (int64_t j = 0; j < C; ++j) {
                Value p = e.exp2(e.fadd(ts[j], rescale.negM));
                lsum = e.fadd(lsum, p);
                // Dropout acts on the normalized probabilities: on P, not l.
                if (plan.seed) {
                  Value kc = e.min(e.add(k0, kks[j]), e.idx(plan.Nk - 1));
                  // keep ? p / (1 - dropout_p) : 0, with the kernel's seed.
                  Value kept = buildDropoutKeep(cb, cl, plan.op, seed,
                                                {bi, hi, qClamped, kc});
                  double p0 = plan.op.getDropoutProbability();
                  p = e.select(kept, e.fmul(p, e.f32(1.0 / (1.0 - p0))),
                               e.f32(0.0));
                }
                forEachOwned(e, vBuf, kks[j], plan.Dv,
                             [&](int64_t i, Value x) {
                               acc[i] = e.fma(p, x, acc[i]);
                             });
              }
              SmallVector<Value> yields = {mNew, lsum};
              yields.append(acc);
              scf::YieldOp::create(cb, cl, yields);
            });
        scf::YieldOp::create(lb, ll, chunkLoop.getResults());
      });

  // O = acc * ((l != 0) ? 1 / l : 0) (buildNormalize: 0 only for a row that
  // sees no key, NaN propagates), lse = m'' ln 2 + log(l); rows past Nq are
  // not stored.
  Value m = blockLoop.getResult(0), lsum = blockLoop.getResult(1);
  Value inv = buildNormalize(b, loc, k.f32(1.0), lsum);
  Value rowValid = k.ult(qRow, k.idx(plan.Nq));
  scf::IfOp::create(b, loc, rowValid, [&](OpBuilder &nb, Location nl) {
    KB e{nb, nl};
    auto v4 = VectorType::get({4}, f32);
    auto o4 = VectorType::get({4}, plan.elementType);
    for (int64_t g = 0; g < ev / 4; ++g) {
      SmallVector<Value> elems;
      for (int64_t r = 0; r < 4; ++r)
        elems.push_back(e.fmul(blockLoop.getResult(2 + g * 4 + r), inv));
      Value vec = vector::FromElementsOp::create(nb, nl, v4, elems);
      if (plan.elementType != f32)
        vec = arith::TruncFOp::create(nb, nl, o4, vec);
      vector::StoreOp::create(nb, nl, vec, out,
                              ValueRange{bi, hi, qRow,
                                         sliceStart(e, part, g, T)},
                              /*nontemporal=*/false, align4(out));
    }
    Value first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, part,
                                        e.idx(0));
    scf::IfOp::create(nb, nl, first, [&](OpBuilder &fb, Location fl) {
      KB f{fb, fl};
      memref::StoreOp::create(fb, fl, f.lse(m, lsum), lse,
                              ValueRange{bi, hi, qRow});
      scf::YieldOp::create(fb, fl);
    });
    scf::YieldOp::create(nb, nl);
  });
  gpu::ReturnOp::create(b, loc);
}

} // namespace

SmallVector<Type>
attnfuse::gpu_kernels::getSimtForwardWorkgroupBuffers(const KernelPlan &plan,
                                                      MLIRContext *ctx) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type f32 = Float32Type::get(ctx);
  return {MemRefType::get({plan.cfg.blockK, plan.D}, f32,
                          MemRefLayoutAttrInterface(), workgroup),
          MemRefType::get({plan.cfg.blockK, plan.Dv}, f32,
                          MemRefLayoutAttrInterface(), workgroup)};
}

void attnfuse::gpu_kernels::emitSimtForward(KernelPlan &plan,
                                            gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  SimtForwardKernel(plan, b, plan.op.getLoc(), func.getArguments(),
                    func.getWorkgroupAttributions()[0],
                    func.getWorkgroupAttributions()[1])
      .emit();
}
