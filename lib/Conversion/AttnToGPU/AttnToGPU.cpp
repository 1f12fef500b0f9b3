//===- AttnToGPU.cpp - fused CUDA attention kernels -----------------------===//
//
// Generates, for each attn.attention, one fused FlashAttention forward kernel
// (gpu.func) and its launch (gpu.launch_func). The algorithm is the one of
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
// Everything per element (structural mask, score_mod, bias, keep mask,
// dropout) is built by the shared ScoreUtils builders, so the kernel computes
// the function the reference lowering defines. The products are f32 FMAs on
// CUDA cores (the "simt" instruction family, KernelEmitter below); the
// tensor-core family (mma.sync) is MmaSyncKernel.cpp, chosen per op in
// convertAttentionToGPU.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

#include "KernelBuilder.h"

using namespace attnfuse::gpu_kernels;

namespace {
/// The alignment of four consecutive elements of a row of `buf`: rows have
/// a multiple of 4 elements and the groups start at multiples of 4, so this
/// holds for any allocation aligned to 16 bytes (CUDA's are to 256).
llvm::MaybeAlign align4(Value buf) {
  Type t = cast<MemRefType>(buf.getType()).getElementType();
  return llvm::MaybeAlign(4 * t.getIntOrFloatBitWidth() / 8);
}

/// The element of a thread's slice: element i of part p of a row of width w
/// split over T threads is (i/4)*4T + 4p + i%4.
Value sliceStart(KB &k, Value part, int64_t group, int64_t T) {
  return k.add(k.idx(group * 4 * T), k.mul(part, k.idx(4)));
}

/// The kernel body. `args` are the gpu.func arguments; `kBuf`, `vBuf` the
/// workgroup buffers.
class KernelEmitter : KernelArgs {
public:
  KernelEmitter(KernelPlan &plan, OpBuilder &b, Location loc,
                ArrayRef<BlockArgument> args, Value kBuf, Value vBuf)
      : KernelArgs(plan, args), plan(plan), b(b), loc(loc), kBuf(kBuf),
        vBuf(vBuf) {}

  void emit();

private:
  /// Loads rows [k0, k0 + BK) of src[bi, kvh] (clamped to Nk) into `buf`
  /// (f32), four elements per access.
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
};

void KernelEmitter::forEachOwned(KB &k, Value buf, Value kk, int64_t width,
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

void KernelEmitter::loadBlock(KB &k, Value src, Value buf, int64_t width,
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
      Value kr = e.min(e.add(k0, row), e.idx(plan.Nk - 1));
      Value vec = vector::LoadOp::create(nb, nl, in4, src,
                                         ValueRange{bi, kvh, kr, col},
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

Value KernelEmitter::score(KB &k, ArrayRef<Value> qRegs, Value kk,
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
  SmallVector<Value> bhqk = {bi, hi, qClamped, kc};
  Value keepElem = keep ? k.loadBroadcast(keep, bhqk) : Value();
  Value t;
  if (plan.foldedScale) {
    // q already carries scale * log2 e.
    t = s;
    Value visible = buildStructuralMaskVisible(b, loc, plan.op, qClamped, kc);
    if (keepElem)
      visible =
          visible ? arith::AndIOp::create(b, loc, visible, keepElem) : keepElem;
    if (visible)
      t = k.select(visible, t, k.f32(kNegInf));
  } else {
    Value biasElem = bias ? k.loadBroadcast(bias, bhqk) : Value();
    t = buildMaskedScore(b, loc, plan.op, s, bhqk, biasElem, keepElem,
                         /*applyStructuralMask=*/true);
    t = k.fmul(t, k.f32(kLog2e));
  }
  // Keys past the end of the sequence (the tail of the last block).
  if (plan.Nk % plan.cfg.blockK != 0)
    t = k.select(k.ult(kGlobal, k.idx(plan.Nk)), t, k.f32(kNegInf));
  return t;
}

void KernelEmitter::emit() {
  KB k{b, loc};
  const AttentionKernelOptions &cfg = plan.cfg;
  int64_t T = cfg.threadsPerRow, BQ = cfg.blockQ, BK = cfg.blockK,
          C = cfg.chunk;
  int64_t eq = plan.D / T, ev = plan.Dv / T;
  Type f32 = b.getF32Type();

  // Coordinates: query block (walked backwards: the longest causal rows
  // start first) and (batch, head).
  auto [qb, by] = k.blockCoordinates(plan);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bi = k.divu(by, plan.Hq);
  hi = k.remu(by, plan.Hq);
  kvh = k.divu(hi, plan.G);
  part = k.remu(tid, T);
  Value q0 = k.mul(qb, k.idx(BQ));
  qRow = k.add(q0, k.divu(tid, T));
  qClamped = k.min(qRow, k.idx(plan.Nq - 1));

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

  // Key blocks that the structural mask can show to rows [q0, q0 + BQ).
  Value kbBegin, kbEnd;
  std::tie(kbBegin, kbEnd) = k.keyBlockRange(
      plan, q0, k.min(k.idx(BQ), k.sub(k.idx(plan.Nq), q0)), BK);

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
              Value mSafe = e.safeMax(mNew);
              Value alpha = e.exp2(e.fsub(m, mSafe));
              lsum = e.fmul(lsum, alpha);
              for (Value &a : acc)
                a = e.fmul(a, alpha);
              for (int64_t j = 0; j < C; ++j) {
                Value p = e.exp2(e.fsub(ts[j], mSafe));
                lsum = e.fadd(lsum, p);
                // Dropout acts on the normalized probabilities: on P, not l.
                if (plan.op.getSeed()) {
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
      Value rowLse = f.fadd(f.fmul(f.safeMax(m), f.f32(kLn2)),
                            math::LogOp::create(fb, fl, lsum));
      memref::StoreOp::create(fb, fl, rowLse, lse, ValueRange{bi, hi, qRow});
      scf::YieldOp::create(fb, fl);
    });
    scf::YieldOp::create(nb, nl);
  });
  gpu::ReturnOp::create(b, loc);
}

MemRefType memrefFor(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}
} // namespace

AttentionKernelOptions
attnfuse::resolveKernelConfig(int64_t headDimQK, int64_t headDimV,
                              AttentionKernelOptions options) {
  int64_t d = std::max(headDimQK, headDimV);
  if (options.threadsPerRow <= 0)
    options.threadsPerRow = std::clamp<int64_t>(d / 32, 1, 8);
  if (options.blockQ <= 0)
    options.blockQ = d <= 64 ? 128 : 64;
  if (options.blockK <= 0)
    options.blockK = d <= 64 ? 64 : 32;
  if (options.chunk <= 0)
    options.chunk = std::min<int64_t>(16, options.blockK);
  return options;
}

int64_t attnfuse::sharedMemoryLimitForChip(StringRef chip) {
  if (chip.starts_with("sm_80") || chip.starts_with("sm_87"))
    return 163 * 1024;
  if (chip.starts_with("sm_86") || chip.starts_with("sm_89"))
    return 99 * 1024;
  return 227 * 1024;
}

LogicalResult attnfuse::convertAttentionToGPU(
    AttentionOp op, Operation *gpuModuleOp, StringRef kernelName,
    const AttentionKernelOptions &options) {
  auto gpuModule = cast<gpu::GPUModuleOp>(gpuModuleOp);
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<ShapedType>(v.getType()); t && !t.hasStaticShape())
      return op.emitOpError("convert-attn-to-gpu needs static shapes");
  // The kernel's arguments are Q, K, V, bias, keep mask and seed; the region
  // is cloned into it, with its constants.
  if (op.hasScoreMod()) {
    llvm::SetVector<Value> captures = getScoreModCaptures(op.getScoreMod());
    if (!captures.empty()) {
      InFlightDiagnostic diag =
          op.emitOpError()
          << "convert-attn-to-gpu: the score_mod region uses "
          << captures.size()
          << " value(s) defined outside it that are not constants; the "
             "kernel cannot capture them";
      diag.attachNote(captures.front().getLoc()) << "the first is defined here";
      return diag;
    }
  }
  KernelPlan plan;
  plan.op = op;
  plan.B = op.getBatchSize();
  plan.Hq = op.getNumQueryHeads();
  plan.Hkv = op.getNumKeyValueHeads();
  plan.Nq = op.getQueryLength();
  plan.Nk = op.getKeyLength();
  plan.D = op.getHeadDimQK();
  plan.Dv = op.getHeadDimV();
  plan.G = op.getGroupSize();
  plan.elementType = op.getQueryType().getElementType();
  if (!plan.elementType.isF16() && !plan.elementType.isBF16() &&
      !plan.elementType.isF32())
    return op.emitOpError("convert-attn-to-gpu supports f16, bf16 and f32");
  plan.window = op.getMaskWindow();
  plan.leftBounded = isWindowSideBounded(plan.window.left, plan.Nq, plan.Nk);
  plan.rightBounded = isWindowSideBounded(plan.window.right, plan.Nq, plan.Nk);
  plan.headsFastest = plan.rightBounded && !plan.leftBounded;
  // The mma.sync family covers bf16/f16 with head dims that are multiples of
  // 16 up to 256, every feature; the rest falls back to the SIMT family
  // (never a wrong kernel).
  bool mmaSync = options.family == InstructionFamily::MmaSync;
  if (mmaSync) {
    std::string why = mmaSyncUnsupportedReason(op);
    if (!why.empty()) {
      op.emitRemark() << "convert-attn-to-gpu: mma=mma_sync falls back to "
                         "simt: "
                      << why;
      mmaSync = false;
    }
  }
  AttentionKernelOptions resolved = options;
  int64_t sharedLimit = options.sharedMemoryLimit > 0
                            ? options.sharedMemoryLimit
                            : sharedMemoryLimitForChip("sm_90");
  if (mmaSync) {
    // Defaults per head dim d = max(dqk, dv) and features, measured on the
    // H200 (docs/GPU.md) and chosen so that ptxas needs no spills under 255
    // registers. 2 stages (3 were 5-15% slower at d = 128). Rows per warp:
    // two m16 tiles up to d = 128; one above (O alone needs 2 M dv / 4 f32
    // registers per thread), with dropout (Philox per element) and with
    // per-element scores (bias, keep mask, score_mod) above d = 64. Warps:
    // 4, and 8 above d = 128 (128 rows share each K/V block: +7-9% at
    // d = 256). Keys per block: 64, but 32 with dropout and with two tiles
    // above d = 64 when some blocks take the per-element mask (causal/window
    // edges, a key tail): O (128) + S (64) f32 registers per thread and the
    // masked loop body spill there.
    int64_t d = std::max(plan.D, plan.Dv);
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
    auto sharedBytes = [&] {
      KernelPlan trial = plan;
      trial.cfg = resolved;
      return mmaSyncSharedBytes(trial);
    };
    if (options.blockK == 0 && sharedBytes() > sharedLimit)
      resolved.blockK = 32;
    if (options.blockQ == 0 && sharedBytes() > sharedLimit)
      resolved.blockQ = warpRows;
    if (options.blockQ == 0 && options.warps == 0 &&
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
  } else {
    resolved.family = InstructionFamily::Simt;
  }
  plan.cfg = resolveKernelConfig(plan.D, plan.Dv, resolved);
  const AttentionKernelOptions &cfg = plan.cfg;
  int64_t T = cfg.threadsPerRow;
  if (T > 32 || !llvm::isPowerOf2_64(T) || plan.D % (4 * T) != 0 ||
      plan.Dv % (4 * T) != 0)
    return op.emitOpError()
           << "convert-attn-to-gpu: threads-per-row (" << T
           << ") must be a power of two <= 32 dividing the head dimensions "
              "into groups of 4";
  if (cfg.blockK % cfg.chunk != 0 || (cfg.blockQ * T) % 32 != 0 ||
      cfg.blockQ * T > 1024)
    return op.emitOpError()
           << "convert-attn-to-gpu: block-k must be a multiple of chunk and "
              "block-q * threads-per-row a multiple of 32, at most 1024";
  if (!mmaSync && 4 * cfg.blockK * (plan.D + plan.Dv) > 48 * 1024)
    return op.emitOpError()
           << "convert-attn-to-gpu: the f32 K and V blocks ("
           << 4 * cfg.blockK * (plan.D + plan.Dv)
           << " bytes) exceed 48 KB of static shared memory; lower block-k";
  plan.threads = mmaSync ? 32 * cfg.warps : cfg.blockQ * T;
  if (mmaSync && mmaSyncSharedBytes(plan) > sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the mma_sync kernel needs "
           << mmaSyncSharedBytes(plan)
           << " bytes of shared memory (K/V stages and Q), more than the "
           << sharedLimit << " a CTA can have on the target; lower stages, "
           << "block-k or block-q";
  // The mask is computed in i32 (key - row and Nk - key, MmaSyncKernel.cpp).
  if (mmaSync && plan.Nq + plan.Nk + cfg.blockQ + cfg.blockK >
                     std::numeric_limits<int32_t>::max())
    return op.emitOpError() << "convert-attn-to-gpu: mma=mma_sync needs "
                               "Nq + Nk below 2^31";
  plan.numQB = llvm::divideCeil(plan.Nq, cfg.blockQ);
  plan.numKB = llvm::divideCeil(plan.Nk, cfg.blockK);
  // Grid x, y (see KernelPlan::headsFastest) within CUDA's limits.
  int64_t gridX = plan.headsFastest ? plan.B * plan.Hq : plan.numQB;
  int64_t gridY = plan.headsFastest ? plan.numQB : plan.B * plan.Hq;
  if (gridX > std::numeric_limits<int32_t>::max() || gridY > 65535)
    return op.emitOpError() << "convert-attn-to-gpu: the grid (" << gridX
                            << ", " << gridY
                            << ") exceeds CUDA's limits (2^31 - 1, 65535)";
  plan.foldedScale = !op.hasScoreMod() && !op.getBias();

  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  KB k{b, loc};

  // Host side: operands as buffers, results allocated, the launch.
  SmallVector<Value> operands;
  SmallVector<StringRef> names;
  auto addBuffer = [&](Value tensor, StringRef name) {
    Value buf = bufferization::ToBufferOp::create(b, loc, memrefFor(tensor),
                                                  tensor, /*readOnly=*/true);
    operands.push_back(buf);
    names.push_back(name);
  };
  addBuffer(op.getQuery(), "q");
  addBuffer(op.getKey(), "k");
  addBuffer(op.getValue(), "v");
  if (op.getBias())
    addBuffer(op.getBias(), "bias");
  if (op.getKeepMask())
    addBuffer(op.getKeepMask(), "keep");
  if (op.getSeed()) {
    operands.push_back(op.getSeed());
    names.push_back("seed");
  }
  auto outType = memrefFor(op.getOutput());
  auto lseType = MemRefType::get({plan.B, plan.Hq, plan.Nq}, b.getF32Type());
  Value outBuf = memref::AllocOp::create(b, loc, outType);
  Value lseBuf = memref::AllocOp::create(b, loc, lseType);
  operands.push_back(outBuf);
  names.push_back("o");
  operands.push_back(lseBuf);
  names.push_back("lse");

  // The kernel.
  SmallVector<Type> argTypes;
  for (Value v : operands)
    argTypes.push_back(v.getType());
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto kBufType = MemRefType::get({cfg.blockK, plan.D}, b.getF32Type(),
                                  MemRefLayoutAttrInterface(), workgroup);
  auto vBufType = MemRefType::get({cfg.blockK, plan.Dv}, b.getF32Type(),
                                  MemRefLayoutAttrInterface(), workgroup);
  OpBuilder kb = OpBuilder::atBlockEnd(gpuModule.getBody());
  SmallVector<Type> workgroupTypes;
  if (!mmaSync)
    workgroupTypes = {kBufType, vBufType};
  auto func = gpu::GPUFuncOp::create(kb, loc, kernelName,
                                     FunctionType::get(ctx, argTypes, {}),
                                     workgroupTypes);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {static_cast<int32_t>(plan.threads), 1, 1}));
  SmallVector<int64_t> grid = {plan.numQB, plan.B * plan.Hq, 1};
  if (plan.headsFastest)
    std::swap(grid[0], grid[1]);

  SmallVector<int64_t> block = {plan.threads, 1, 1};
  // ptxas otherwise caps registers to fit several CTAs per SM and spills.
  if (cfg.minCtasPerSM > 0)
    func->setAttr("nvvm.minctasm", kb.getI32IntegerAttr(cfg.minCtasPerSM));
  func->setAttr("attn.grid", kb.getDenseI64ArrayAttr(grid));
  func->setAttr("attn.block", kb.getDenseI64ArrayAttr(block));
  func->setAttr("attn.args", kb.getStrArrayAttr(names));
  func->setAttr("attn.config",
                kb.getDenseI64ArrayAttr({cfg.blockQ, cfg.blockK,
                                         cfg.threadsPerRow, cfg.chunk}));
  int64_t dynamicShared = mmaSync ? mmaSyncSharedBytes(plan) : 0;
  func->setAttr("attn.family",
                kb.getStringAttr(mmaSync ? "mma_sync" : "simt"));
  func->setAttr("attn.dynamic_shared", kb.getI64IntegerAttr(dynamicShared));
  if (mmaSync) {
    OpBuilder fb = OpBuilder::atBlockBegin(&func.getBody().front());
    emitMmaSyncKernel(plan, fb, loc, func.getArguments());
  } else {
    OpBuilder fb = OpBuilder::atBlockBegin(&func.getBody().front());
    KernelEmitter emitter(plan, fb, loc, func.getArguments(),
                          func.getWorkgroupAttributions()[0],
                          func.getWorkgroupAttributions()[1]);
    emitter.emit();
  }

  auto dim3 = [&](ArrayRef<int64_t> v) {
    return gpu::KernelDim3{k.idx(v[0]), k.idx(v[1]), k.idx(v[2])};
  };
  Value dynamicSharedSize;
  if (dynamicShared > 0)
    dynamicSharedSize = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(dynamicShared)));
  gpu::LaunchFuncOp::create(b, loc, func, dim3(grid), dim3(block),
                            dynamicSharedSize, operands);

  SmallVector<Value> results;
  auto toTensor = [&](Value buf, Type type) {
    return bufferization::ToTensorOp::create(b, loc, type, buf,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  };
  results.push_back(toTensor(outBuf, op.getOutput().getType()));
  if (op.getLse())
    results.push_back(toTensor(lseBuf, op.getLse().getType()));
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

namespace {
struct ConvertAttnToGPUPass
    : attnfuse::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using Base::Base;
  /// The kernels end in gpu-module-to-binary: make sure the translations to
  /// LLVM IR and the NVVM target are known to the context whatever tool runs
  /// this pass.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    MLIRContext *ctx = &getContext();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), moduleName);
    SymbolTable symbols(module);
    symbols.insert(gpuModule);
    AttentionKernelOptions options{blockQ, blockK, threadsPerRow, chunk,
                                   minCtasPerSM};
    options.lazyRescale = lazyRescale;
    options.warps = warps;
    options.stages = stages;
    options.sharedMemoryLimit = sharedMemoryLimit;
    if (mma == "mma_sync") {
      options.family = InstructionFamily::MmaSync;
    } else if (mma == "simt") {
      options.family = InstructionFamily::Simt;
    } else {
      module.emitError() << "convert-attn-to-gpu: unknown mma family '" << mma
                         << "' (simt, mma_sync)";
      return signalPassFailure();
    }
    unsigned n = 0;
    for (AttentionOp op : ops) {
      std::string name = (kernelPrefix + "_" + std::to_string(n++));
      if (failed(convertAttentionToGPU(op, gpuModule, name, options)))
        return signalPassFailure();
    }
  }
};
} // namespace
