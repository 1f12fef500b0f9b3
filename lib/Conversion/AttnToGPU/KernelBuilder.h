//===- KernelBuilder.h - shared pieces of the AttnToGPU emitters -*- C++ -*-===//
//
// Index and f32 arithmetic at an insertion point (KB), shared by every
// family and kind of convert-attn-to-gpu (KernelFamily.h), with the
// kernel's plan and arguments (KernelPlan.h). Internal to
// lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H

#include "KernelPlan.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>
#include <utility>

namespace attnfuse::gpu_kernels {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
/// The lowest finite score the kernels distinguish (see KB::toLog2): its
/// log2-domain value, -1.44e38, is finite in f32.
constexpr double kLowestScore = -1e38;

/// Index and f32 arithmetic at one insertion point.
struct KB {
  /// (The value type of ScoreUtils.h's block-range templates.)
  using V = Value;
  OpBuilder &b;
  Location loc;
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// A size of attn::SizeValues (a constant or a value) as an index value.
  Value index(OpFoldResult v) {
    return getValueOrCreateConstantIndexOp(b, loc, v);
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value divu(Value x, int64_t d) {
    return arith::DivUIOp::create(b, loc, x, idx(d));
  }
  Value remu(Value x, int64_t d) {
    return arith::RemUIOp::create(b, loc, x, idx(d));
  }
  Value floorDiv(Value x, int64_t d) {
    return arith::FloorDivSIOp::create(b, loc, x, idx(d));
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value acc) {
    return math::FmaOp::create(b, loc, x, y, acc);
  }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value exp2(Value x) { return math::Exp2Op::create(b, loc, x); }
  /// f32 `v` (scalar or vector) in `type`'s element type (rounded or
  /// widened).
  Value fromF32(Value v, Type type) {
    Type elt = getElementTypeOrSelf(type), f32 = b.getF32Type();
    if (elt == f32)
      return v;
    Type to = elt;
    if (auto vt = dyn_cast<VectorType>(v.getType()))
      to = VectorType::get(vt.getShape(), elt);
    if (elt.getIntOrFloatBitWidth() > 32)
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  Value toF32(Value v) {
    Type f32 = b.getF32Type();
    if (auto vt = dyn_cast<VectorType>(v.getType())) {
      if (vt.getElementType() == f32)
        return v;
      return arith::ExtFOp::create(b, loc, VectorType::get(vt.getShape(), f32),
                                   v);
    }
    return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
  }
  /// t log2 e, the softmax's log2 domain, with a finite t kept finite: a
  /// large-negative mask term (finfo.min, as `transformers` writes masks)
  /// would overflow to -inf, the value of a hidden key, and a row that sees
  /// only such keys would become empty instead of uniform. Scores below
  /// kLowestScore are kLowestScore (docs/Semantics.md); -inf and NaN stay.
  Value toLog2(Value t) {
    Value scaled = fmul(fmax(t, f32(kLowestScore)), f32(kLog2e));
    Value hidden =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, t,
                              f32(kNegInf));
    return select(hidden, f32(kNegInf), scaled);
  }
  /// The row's log-sum-exp from its running max `m` (log2 domain) and sum
  /// `l`: m'' ln 2 + log(l).
  Value lse(Value m, Value l) {
    return fadd(fmul(safeMax(m), f32(kLn2)), math::LogOp::create(b, loc, l));
  }
  /// m'' = (m == -inf) ? 0 : m.
  Value safeMax(Value m) {
    Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                        f32(kNegInf));
    return select(isInf, f32(0.0), m);
  }
  /// The rescale of one online-softmax step of a row (FlashAttention-2, log2
  /// domain), every family's: from the row's running max `m`, its max after
  /// the step's scores `mNew` and its running sum `l`, with m'' =
  /// safe(mNew): -m'', alpha = 2^(m - m'') by `exp2` (math.exp2 on CUDA
  /// cores, ex2.approx.ftz on the tensor cores) and l alpha. The step then
  /// adds its probabilities 2^(t - m'') to l alpha and their P V to the
  /// accumulators times alpha.
  struct SoftmaxRescale {
    Value negM, alpha, lsum;
  };
  SoftmaxRescale rescaleRow(Value m, Value mNew, Value l,
                            function_ref<Value(KB &, Value)> exp2) {
    Value mSafe = safeMax(mNew);
    Value negM = arith::NegFOp::create(b, loc, mSafe);
    Value alpha = exp2(*this, fsub(m, mSafe));
    return {negM, alpha, fmul(l, alpha)};
  }
  /// The indices of element (b, h, q, k) of a side operand (bias, keep
  /// mask) broadcast along its size-1 dimensions; `bhqk` are in bounds.
  SmallVector<Value> broadcastIndices(Value side, ValueRange bhqk) {
    auto type = cast<MemRefType>(side.getType());
    SmallVector<Value> indices;
    for (int64_t i = 0, r = type.getRank(); i < r; ++i)
      indices.push_back(type.getDimSize(i) == 1 ? idx(0) : bhqk[4 - r + i]);
    return indices;
  }
  /// That element.
  Value loadBroadcast(Value side, ValueRange bhqk) {
    return memref::LoadOp::create(b, loc, side, broadcastIndices(side, bhqk));
  }
  /// Key blocks of `blockK` keys that the structural mask of `plan` can show
  /// to query rows [q0, q0 + bq): k >= q0 + off - left and
  /// k <= q0 + bq - 1 + off + right (packed grouped queries: to every
  /// position of the period, KernelPlan::queryPositions), and that hold a
  /// valid key of the tile (`sizes`: KernelArgs::sizesAt). Returns [begin,
  /// end).
  std::pair<Value, Value> keyBlockRange(const KernelPlan &plan, Value q0,
                                        Value bq, int64_t blockK,
                                        const attn::SizeValues &sizes) {
    if (plan.queryPeriod) {
      q0 = idx(0);
      bq = idx(plan.queryPeriod);
    }
    return attn::buildKeyBlockRange(b, loc, plan.window,
                                    plan.maskQueryLength(), plan.Nk, q0, bq,
                                    blockK, &sizes);
  }
};

/// Where row `row` (an index) of a [batch, head] sequence of a source lives:
/// the indices of the source's dims 0 and 2 (KernelArgs::keyRow: paged
/// K/V). Null: (batch, row).
using RowPlace = function_ref<std::pair<Value, Value>(KB &, Value row)>;
/// `place`'s indices of `row` of `batch`.
inline std::pair<Value, Value> placeRow(KB &e, RowPlace place, Value batch,
                                        Value row) {
  return place ? place(e, row) : std::make_pair(batch, row);
}

/// Emits `fn` under `cond` (an i1), at the insertion point of `e`.
inline void ifThen(KB &e, Value cond, function_ref<void(KB &)> fn) {
  scf::IfOp::create(e.b, e.loc, cond, [&](OpBuilder &nb, Location nl) {
    KB x{nb, nl};
    fn(x);
    scf::YieldOp::create(nb, nl);
  });
}

/// The alignment of four consecutive elements of a row of `buf` (the simt
/// family's vector loads and stores): rows have a multiple of 4 elements and
/// the groups start at multiples of 4, so this holds for any allocation
/// aligned to 16 bytes (CUDA's are to 256).
inline llvm::MaybeAlign align4(Value buf) {
  Type t = cast<MemRefType>(buf.getType()).getElementType();
  return llvm::MaybeAlign(4 * t.getIntOrFloatBitWidth() / 8);
}

/// Inline PTX (AT&T dialect) of `operands` under `constraints`, with side
/// effects unless `pure`; its result (null for a `result` type of none):
/// the instructions MLIR's NVVM dialect lacks (wgmma with a register A,
/// cp.async.bulk.tensor with 32-bit addresses, tanh.approx.f32).
inline Value inlinePtx(KB &e, Type result, ValueRange operands,
                       StringRef asmString, StringRef constraints,
                       bool pure = false) {
  auto op = LLVM::InlineAsmOp::create(
      e.b, e.loc, result ? TypeRange(result) : TypeRange(), operands, asmString,
      constraints, /*has_side_effects=*/!pure,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(e.b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return result ? op.getResult(0) : Value();
}

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
