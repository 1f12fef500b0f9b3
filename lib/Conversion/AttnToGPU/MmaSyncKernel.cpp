//===- MmaSyncKernel.cpp - the mma.sync instruction family ----------------===//
//
// The tensor-core (sm_80+ mma.sync m16n8k16) variant of the fused forward
// kernel, FlashAttention-2's structure:
//
//   CTA = 4 warps (128 threads); warp w owns query rows q0 + 16w .. +15
//   (BQ = 64); grid = (ceil(Nq / 64), B * Hq), x reversed.
//   Q: the warp's 16 x D tile loaded once into mma A fragments (registers).
//   K, V: blocks of BK = 64 keys, bf16/f16, in dynamic shared memory, two
//   stages (cp.async 16-byte copies of block j+1 overlap the compute of j),
//   rows padded by 8 elements so that ldmatrix's 8 row addresses hit distinct
//   banks.
//   S = Q K^T: mma m16n8k16 with f32 accumulators, K B-fragments by ldmatrix.
//   Online softmax on the accumulator fragments (log2 domain, scale * log2 e
//   applied to S in f32), row max over the quad by shuffle xor 1, 2; the row
//   sums l stay per-thread partial until the end.
//   P (bf16/f16, registers) is the A operand of O += P V, V B-fragments by
//   ldmatrix.trans. O and lse written once.
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
//   B of S (B[k][n] = K[n][k]): matrix i = K rows n0..n0+7, columns
//   32p + 8i: registers (0, 1) = k-step 2p, (2, 3) = k-step 2p+1.
//   B of PV (B[k][n] = V[k][n]), .trans: matrix i = V rows 16s + 8(i%2),
//   columns 16n + 8(i/2): registers (0, 1) = n-tile 2n, (2, 3) = 2n+1.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
constexpr int64_t kBQ = 64, kBK = 64, kWarps = 4, kThreads = 32 * kWarps,
                  kPad = 8,
                  kStages = 2;

int64_t rowStride(int64_t d) { return d + kPad; }

class MmaSyncEmitter {
public:
  MmaSyncEmitter(KernelPlan &plan, OpBuilder &b, Location loc,
                 ArrayRef<BlockArgument> args)
      : plan(plan), b(b), loc(loc), k{b, loc} {
    q = args[0];
    key = args[1];
    value = args[2];
    out = args[3];
    lse = args[4];
    elt = plan.elementType;
    isBF16 = elt.isBF16();
  }
  void emit();

private:
  /// Issues the cp.async copies of key block `kb` (rows clamped to Nk - 1)
  /// into stage `stage` of `buf`, and returns their tokens.
  void copyBlock(KB &e, Value src, Value buf, int64_t width, Value kb,
                 Value stage, SmallVector<Value> &tokens);
  /// A pair of bf16/f16 as an mma operand: i32 for bf16, vector<2xf16>.
  Value operand(KB &e, Value pair);
  /// Two f32 to an mma operand (rounded to the element type).
  Value pack(KB &e, Value x, Value y);
  /// c = a * b + c on one m16n8k16 tile; c has four f32.
  void mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
           MutableArrayRef<Value> c);
  /// ldmatrix x4 of `buf[stage, row, col]`, the four registers as operands.
  SmallVector<Value> ldmatrix(KB &e, Value buf, Value stage, Value row,
                              Value col, bool transpose);

  KernelPlan &plan;
  OpBuilder &b;
  Location loc;
  KB k;
  Value q, key, value, out, lse;
  Type elt;
  bool isBF16;
  Value bi, hi, kvh, tid;
};

Value MmaSyncEmitter::operand(KB &e, Value pair) {
  if (!isBF16)
    return pair;
  auto i32v = VectorType::get({1}, e.b.getI32Type());
  Value cast = vector::BitCastOp::create(e.b, e.loc, i32v, pair);
  return vector::ExtractOp::create(e.b, e.loc, cast, 0);
}

Value MmaSyncEmitter::pack(KB &e, Value x, Value y) {
  auto f2 = VectorType::get({2}, e.b.getF32Type());
  Value v = vector::FromElementsOp::create(e.b, e.loc, f2, ValueRange{x, y});
  v = arith::TruncFOp::create(e.b, e.loc, VectorType::get({2}, elt), v);
  return operand(e, v);
}

void MmaSyncEmitter::mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
                         MutableArrayRef<Value> c) {
  Type f32 = e.b.getF32Type();
  auto resType = LLVM::LLVMStructType::getLiteral(e.b.getContext(),
                                                  {f32, f32, f32, f32});
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
    regs.push_back(operand(e, vector::ExtractOp::create(e.b, e.loc, r, i)));
  return regs;
}

void MmaSyncEmitter::copyBlock(KB &e, Value src, Value buf, int64_t width,
                               Value kb, Value stage,
                               SmallVector<Value> &tokens) {
  // 16-byte pieces: row = flat / (width / 8), column = 8 (flat % (width / 8)).
  int64_t perRow = width / 8, total = kBK * perRow;
  Value k0 = e.mul(kb, e.idx(kBK));
  for (int64_t it = 0; it < total / kThreads; ++it) {
    Value flat = e.add(tid, e.idx(it * kThreads));
    Value row = e.divu(flat, perRow);
    Value col = e.mul(e.remu(flat, perRow), e.idx(8));
    Value kr = e.min(e.add(k0, row), e.idx(plan.Nk - 1));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        e.b, e.loc, nvgpu::DeviceAsyncTokenType::get(e.b.getContext()), buf,
        ValueRange{stage, row, col}, src, ValueRange{bi, kvh, kr, col},
        e.b.getIndexAttr(8), /*srcElements=*/Value(),
        /*bypassL1=*/e.b.getUnitAttr()));
  }
}

void MmaSyncEmitter::emit() {
  Type f32 = b.getF32Type();
  int64_t D = plan.D, Dv = plan.Dv;
  int64_t nS = kBK / 8;   // n-tiles of S per warp (8 keys each)
  int64_t nO = Dv / 8;    // n-tiles of O per warp
  int64_t kQ = D / 16;    // k-steps of S
  int64_t kP = kBK / 16;  // k-steps of P V

  // Shared memory: K stages then V stages, rows padded by kPad elements.
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  auto kType = MemRefType::get({kStages, kBK, rowStride(D)}, elt,
                               MemRefLayoutAttrInterface(), workgroup);
  auto vType = MemRefType::get({kStages, kBK, rowStride(Dv)}, elt,
                               MemRefLayoutAttrInterface(), workgroup);
  int64_t kBytes = kStages * kBK * rowStride(D) * 2;
  Value kBuf = memref::ViewOp::create(b, loc, kType, smem, k.idx(0), {});
  Value vBuf = memref::ViewOp::create(b, loc, vType, smem, k.idx(kBytes), {});

  Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value qb = k.sub(k.idx(plan.numQB - 1), bx);
  bi = k.divu(by, plan.Hq);
  hi = k.remu(by, plan.Hq);
  kvh = k.divu(hi, plan.G);
  Value warp = k.divu(tid, 32), lane = k.remu(tid, 32);
  Value g = k.divu(lane, 4), t = k.remu(lane, 4);
  Value t2 = k.mul(t, k.idx(2));
  Value q0 = k.mul(qb, k.idx(kBQ));
  // The thread's two rows: g and g + 8 of the warp's 16.
  Value rowA = k.add(k.add(q0, k.mul(warp, k.idx(16))), g);
  Value rowB = k.add(rowA, k.idx(8));
  Value rows[2] = {rowA, rowB};
  Value rowsC[2] = {k.min(rowA, k.idx(plan.Nq - 1)),
                    k.min(rowB, k.idx(plan.Nq - 1))};

  // Q A-fragments, k-step s: reg0 = Q[g][16s + 2t], reg1 = Q[g+8][16s + 2t],
  // reg2 = Q[g][16s + 8 + 2t], reg3 = Q[g+8][16s + 8 + 2t] (pairs).
  SmallVector<SmallVector<Value>> qFrag(kQ);
  {
    auto pairType = VectorType::get({2}, elt);
    for (int64_t s = 0; s < kQ; ++s)
      for (int64_t r = 0; r < 4; ++r) {
        Value col = k.add(k.idx(16 * s + 8 * (r / 2)), t2);
        Value v = vector::LoadOp::create(
            b, loc, pairType, q, ValueRange{bi, hi, rowsC[r % 2], col},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
        qFrag[s].push_back(operand(k, v));
      }
  }

  // Key blocks the structural mask can show (as in the SIMT kernel).
  const MaskWindow &w = plan.window;
  Value kbBegin = k.idx(0), kbEnd = k.idx(plan.numKB);
  {
    Value bq = k.min(k.idx(kBQ), k.sub(k.idx(plan.Nq), q0));
    if (plan.leftBounded)
      kbBegin = k.max(kbBegin, k.floorDiv(k.sub(k.add(q0, k.idx(w.offset)),
                                                k.idx(w.left)),
                                          kBK));
    if (plan.rightBounded)
      kbEnd = k.min(kbEnd,
                    k.add(k.floorDiv(k.add(k.add(q0, bq),
                                           k.idx(w.offset - 1 + w.right)),
                                     kBK),
                          k.idx(1)));
  }

  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  auto waitAll = [&](KB &e, SmallVector<Value> &tokens) {
    Value group =
        nvgpu::DeviceAsyncCreateGroupOp::create(e.b, e.loc, tokenType, tokens);
    nvgpu::DeviceAsyncWaitOp::create(e.b, e.loc, group,
                                     e.b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(e.b, e.loc);
  };
  // Prologue: block kbBegin into stage 0.
  {
    SmallVector<Value> tokens;
    copyBlock(k, key, kBuf, D, kbBegin, k.idx(0), tokens);
    copyBlock(k, value, vBuf, Dv, kbBegin, k.idx(0), tokens);
    waitAll(k, tokens);
  }

  // Loop state: m (2 rows), l (2 rows, thread-partial), O accumulators.
  SmallVector<Value> init = {k.f32(kNegInf), k.f32(kNegInf), k.f32(0.0),
                             k.f32(0.0)};
  for (int64_t i = 0; i < nO * 4; ++i)
    init.push_back(k.f32(0.0));
  double scaleLog2e = plan.op.getScaleOrDefault() * kLog2e;
  bool tail = plan.Nk % kBK != 0;

  auto loop = scf::ForOp::create(
      b, loc, kbBegin, kbEnd, k.idx(1), init,
      [&](OpBuilder &lb, Location ll, Value kb, ValueRange iter) {
        KB e{lb, ll};
        Value stage = e.remu(e.sub(kb, kbBegin), kStages);
        Value next = e.sub(e.idx(1), stage);
        // Block kb + 1 into the other stage while this one computes; its
        // readers finished before the barrier that ended the last iteration.
        SmallVector<Value> tokens;
        copyBlock(e, key, kBuf, D, e.add(kb, e.idx(1)), next, tokens);
        copyBlock(e, value, vBuf, Dv, e.add(kb, e.idx(1)), next, tokens);

        // S = Q K^T: per n-tile j (keys 8j ..), ldmatrix x4 covers two
        // k-steps: lane l addresses K row 8j + l % 8, column 32p + 8 (l / 8).
        Value lrow = e.remu(lane, 8), lcol = e.mul(e.divu(lane, 8), e.idx(8));
        SmallVector<Value> s(nS * 4);
        for (int64_t j = 0; j < nS; ++j) {
          MutableArrayRef<Value> c(s.data() + 4 * j, 4);
          for (Value &x : c)
            x = e.f32(0.0);
          for (int64_t p = 0; p < kQ / 2; ++p) {
            SmallVector<Value> bk =
                ldmatrix(e, kBuf, stage, e.add(e.idx(8 * j), lrow),
                         e.add(e.idx(32 * p), lcol), /*transpose=*/false);
            mma(e, qFrag[2 * p], {bk[0], bk[1]}, c);
            mma(e, qFrag[2 * p + 1], {bk[2], bk[3]}, c);
          }
        }
        for (Value &x : s)
          x = e.fmul(x, e.f32(scaleLog2e));

        // Element 4j + i of s: row rows[i / 2], key k0 + 8j + 2t + i % 2.
        // Blocks the mask or the key tail cut get the per-element mask.
        Value k0 = e.mul(kb, e.idx(kBK));
        Value needMask;
        auto orWith = [&](Value c) {
          needMask = needMask ? arith::OrIOp::create(lb, ll, needMask, c) : c;
        };
        auto slt = [&](Value x, Value y) {
          return arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::slt, x,
                                       y);
        };
        if (tail)
          orWith(slt(e.idx(plan.Nk), e.add(k0, e.idx(kBK))));
        // Visible for all rows [q0, q0 + BQ) and keys [k0, k0 + BK):
        // k0 >= q0 + BQ - 1 + off - left and k0 + BK - 1 <= q0 + off + right.
        if (plan.leftBounded)
          orWith(slt(k0, e.add(q0, e.idx(kBQ - 1 + w.offset - w.left))));
        if (plan.rightBounded)
          orWith(slt(e.add(q0, e.idx(w.offset + w.right - (kBK - 1))), k0));
        if (needMask) {
          auto ifOp = scf::IfOp::create(
              lb, ll, needMask,
              [&](OpBuilder &mb, Location ml) {
                KB m{mb, ml};
                SmallVector<Value> masked;
                for (int64_t j = 0; j < nS; ++j)
                  for (int64_t i = 0; i < 4; ++i) {
                    Value kg = m.add(m.add(k0, m.idx(8 * j + i % 2)), t2);
                    Value vis = buildStructuralMaskVisible(mb, ml, plan.op,
                                                           rows[i / 2], kg);
                    if (tail) {
                      Value in = m.ult(kg, m.idx(plan.Nk));
                      vis = vis ? arith::AndIOp::create(mb, ml, vis, in) : in;
                    }
                    Value x = s[4 * j + i];
                    masked.push_back(vis ? m.select(vis, x, m.f32(kNegInf))
                                         : x);
                  }
                scf::YieldOp::create(mb, ml, masked);
              },
              [&](OpBuilder &mb, Location ml) {
                scf::YieldOp::create(mb, ml, s);
              });
          for (size_t i = 0; i < s.size(); ++i)
            s[i] = ifOp.getResult(i);
        }

        // Online softmax per row r in {g, g + 8} (elements i / 2 == r).
        SmallVector<Value> mNew(2), mSafe(2), alpha(2), lsum(2);
        for (int64_t r = 0; r < 2; ++r) {
          Value mx = iter[r];
          for (int64_t j = 0; j < nS; ++j)
            for (int64_t i = 0; i < 2; ++i)
              mx = e.fmax(mx, s[4 * j + 2 * r + i]);
          for (int32_t off : {1, 2})
            mx = e.fmax(mx, gpu::ShuffleOp::create(lb, ll, mx, off, 32,
                                                   gpu::ShuffleMode::XOR)
                                .getShuffleResult());
          mNew[r] = mx;
          mSafe[r] = e.safeMax(mx);
          alpha[r] = e.exp2(e.fsub(iter[r], mSafe[r]));
          lsum[r] = e.fmul(iter[2 + r], alpha[r]);
        }
        for (int64_t j = 0; j < nS; ++j)
          for (int64_t i = 0; i < 4; ++i) {
            Value &x = s[4 * j + i];
            x = e.exp2(e.fsub(x, mSafe[i / 2]));
            lsum[i / 2] = e.fadd(lsum[i / 2], x);
          }
        SmallVector<Value> acc(iter.begin() + 4, iter.end());
        for (int64_t n = 0; n < nO; ++n)
          for (int64_t i = 0; i < 4; ++i)
            acc[4 * n + i] = e.fmul(acc[4 * n + i], alpha[i / 2]);

        // O += P V: A of k-step s from the C fragments of n-tiles 2s, 2s+1;
        // V by ldmatrix.trans, lane l addresses V row 16s + l % 8 +
        // 8 ((l / 8) % 2), column 16n + 8 (l / 16).
        Value vrow = e.add(lrow, e.mul(e.remu(e.divu(lane, 8), 2), e.idx(8)));
        Value vcol = e.mul(e.divu(lane, 16), e.idx(8));
        for (int64_t ks = 0; ks < kP; ++ks) {
          const Value *c0 = s.data() + 8 * ks, *c1 = c0 + 4;
          SmallVector<Value> pa = {pack(e, c0[0], c0[1]), pack(e, c0[2], c0[3]),
                                   pack(e, c1[0], c1[1]),
                                   pack(e, c1[2], c1[3])};
          for (int64_t n = 0; n < nO / 2; ++n) {
            SmallVector<Value> bv =
                ldmatrix(e, vBuf, stage, e.add(e.idx(16 * ks), vrow),
                         e.add(e.idx(16 * n), vcol), /*transpose=*/true);
            mma(e, pa, {bv[0], bv[1]},
                MutableArrayRef<Value>(acc.data() + 8 * n, 4));
            mma(e, pa, {bv[2], bv[3]},
                MutableArrayRef<Value>(acc.data() + 8 * n + 4, 4));
          }
        }
        // Block kb + 1 landed and every warp is done with stage `stage`.
        waitAll(e, tokens);
        SmallVector<Value> yields = {mNew[0], mNew[1], lsum[0], lsum[1]};
        yields.append(acc);
        scf::YieldOp::create(lb, ll, yields);
      });

  // l over the quad; O = (l > 0) ? acc / l : 0; lse = m'' ln 2 + log l.
  auto pairType = VectorType::get({2}, elt);
  auto f2 = VectorType::get({2}, f32);
  for (int64_t r = 0; r < 2; ++r) {
    Value m = loop.getResult(r), l = loop.getResult(2 + r);
    for (int32_t off : {1, 2})
      l = k.fadd(l, gpu::ShuffleOp::create(b, loc, l, off, 32,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult());
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l, k.f32(0));
    Value inv = k.select(positive, arith::DivFOp::create(b, loc, k.f32(1), l),
                         k.f32(0.0));
    Value valid = k.ult(rows[r], k.idx(plan.Nq));
    scf::IfOp::create(b, loc, valid, [&](OpBuilder &nb, Location nl) {
      KB e{nb, nl};
      for (int64_t n = 0; n < nO; ++n) {
        Value x = e.fmul(loop.getResult(4 + 4 * n + 2 * r), inv);
        Value y = e.fmul(loop.getResult(4 + 4 * n + 2 * r + 1), inv);
        Value v = vector::FromElementsOp::create(nb, nl, f2, ValueRange{x, y});
        v = arith::TruncFOp::create(nb, nl, pairType, v);
        vector::StoreOp::create(nb, nl, v, out,
                                ValueRange{bi, hi, rows[r],
                                           e.add(e.idx(8 * n), t2)},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
      }
      Value first =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, t, e.idx(0));
      scf::IfOp::create(nb, nl, first, [&](OpBuilder &fb, Location fl) {
        KB f{fb, fl};
        Value rowLse = f.fadd(f.fmul(f.safeMax(m), f.f32(kLn2)),
                              math::LogOp::create(fb, fl, l));
        memref::StoreOp::create(fb, fl, rowLse, lse,
                                ValueRange{bi, hi, rows[r]});
        scf::YieldOp::create(fb, fl);
      });
      scf::YieldOp::create(nb, nl);
    });
  }
  gpu::ReturnOp::create(b, loc);
}
} // namespace

std::string attnfuse::gpu_kernels::mmaSyncUnsupportedReason(AttentionOp op) {
  Type elt = op.getQueryType().getElementType();
  if (!elt.isBF16() && !elt.isF16())
    return "element type is not bf16/f16";
  if (op.getBias() || op.getKeepMask() || op.hasScoreMod() || op.getSeed())
    return "bias, keep mask, score_mod and dropout are SIMT-only";
  int64_t d = op.getHeadDimQK(), dv = op.getHeadDimV();
  if (d % 32 != 0 || dv % 16 != 0 || d > 128 || dv > 128)
    return "head dims must be multiples of 32 (QK) / 16 (V), at most 128";
  return "";
}

int64_t attnfuse::gpu_kernels::mmaSyncSharedBytes(const KernelPlan &plan) {
  return kStages * kBK * (rowStride(plan.D) + rowStride(plan.Dv)) * 2;
}

void attnfuse::gpu_kernels::emitMmaSyncKernel(KernelPlan &plan, OpBuilder &b,
                                              Location loc,
                                              ArrayRef<BlockArgument> args) {
  MmaSyncEmitter(plan, b, loc, args).emit();
}
