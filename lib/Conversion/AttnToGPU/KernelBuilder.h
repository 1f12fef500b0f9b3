//===- KernelBuilder.h - shared pieces of the AttnToGPU emitters -*- C++ -*-===//
//
// The static facts of one kernel (KernelPlan), its arguments (KernelArgs) and
// index/f32 arithmetic at an insertion point (KB), shared by the instruction
// families of convert-attn-to-gpu (KernelFamily.h). Internal to
// lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H

#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <limits>
#include <utility>

namespace attnfuse::gpu_kernels {
using namespace mlir;
using attn::AttentionOp;
using attn::MaskWindow;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
/// The lowest finite score the kernels distinguish (see KB::toLog2): its
/// log2-domain value, -1.44e38, is finite in f32.
constexpr double kLowestScore = -1e38;

/// A tensor map a kernel takes: a TMA view of its argument `source` (a
/// contiguous [B, H, N, D] buffer: Q, K, V or O) in boxes of `box` elements
/// (outermost first), written to shared memory with the swizzle of `swizzle`
/// bytes (0, 32, 64 or 128), with L2 promotion of `l2Promotion` bytes (0,
/// 64, 128 or 256); out-of-bounds elements read as zeros.
struct TensorMapSpec {
  unsigned source;
  SmallVector<int64_t, 4> box;
  int64_t swizzle, l2Promotion;
};

/// The static facts of one kernel.
struct KernelPlan {
  AttentionOp op;
  AttentionKernelOptions cfg;
  int64_t B, Hq, Hkv, Nq, Nk, D, Dv, G, numQB, numKB, threads;
  /// Bytes of shared memory a CTA can have on the target (set before a
  /// family resolves its options).
  int64_t sharedLimit = 0;
  Type elementType;
  MaskWindow window;
  bool leftBounded, rightBounded;
  /// The grid's x walks (batch, head) and y the query blocks, backwards:
  /// with a causal-like mask (bounded on the right only) the last query
  /// blocks see the most keys, and this order dispatches every head's
  /// longest block before any shorter one (longest first over the whole
  /// grid; measured +7-9% at d = 128 causal on the H200). Otherwise x walks
  /// the query blocks, so that CTAs running together share K/V in L2.
  bool headsFastest;
  /// SIMT: scores need only `scale * q.k` and the masks (no score_mod, no
  /// bias), so the scale (times log2 e) is folded into q. (The mma_sync
  /// kernel folds it into exp2's FMA instead, when there are no per-element
  /// scores and the scale is positive.)
  bool foldedScale;
  /// The values the score_mod region uses from above (getScoreModCaptures:
  /// tensors it reads with tensor.extract, scalars), passed as kernel
  /// arguments.
  SmallVector<Value> captures;
  /// The tensor maps the kernel takes (KernelFamily::getTensorMaps), after
  /// its other arguments.
  SmallVector<TensorMapSpec> tensorMaps;
};

/// The kernel's arguments, in the order convert-attn-to-gpu passes them:
/// Q, K, V, [bias], [keep], [seed], [captures...], O, lse, [tensor maps...].
struct KernelArgs {
  Value q, key, value, bias, keep, seed, out, lse;
  SmallVector<Value> captureArgs;
  /// Pointers to the tensor maps of plan.tensorMaps (128-byte CUtensorMap
  /// objects in global memory).
  SmallVector<Value> tensorMapArgs;
  /// The score_mod region's captures mapped to the kernel's values
  /// (mapCaptures), for buildMaskedScore.
  IRMapping captureMap;
  /// The index of the bias among the kernel's arguments (after Q, K, V).
  static constexpr unsigned kBiasIndex = 3;
  /// The index of O among the kernel's arguments.
  static unsigned outIndex(const KernelPlan &plan) {
    AttentionOp op = plan.op;
    return 3 + (op.getBias() ? 1 : 0) + (op.getKeepMask() ? 1 : 0) +
           (op.getSeed() ? 1 : 0) + plan.captures.size();
  }
  KernelArgs(const KernelPlan &plan, ArrayRef<BlockArgument> args) {
    AttentionOp op = plan.op;
    unsigned next = 0;
    q = args[next++];
    key = args[next++];
    value = args[next++];
    assert(next == kBiasIndex && "kBiasIndex disagrees");
    if (op.getBias())
      bias = args[next++];
    if (op.getKeepMask())
      keep = args[next++];
    if (op.getSeed())
      seed = args[next++];
    for (size_t i = 0; i < plan.captures.size(); ++i)
      captureArgs.push_back(args[next++]);
    assert(next == outIndex(plan) && "outIndex disagrees");
    out = args[next++];
    lse = args[next++];
    for (size_t i = 0; i < plan.tensorMaps.size(); ++i)
      tensorMapArgs.push_back(args[next++]);
  }
  /// Maps each capture of `plan` to its kernel argument, a captured tensor
  /// to the tensor of its buffer (the region reads it with tensor.extract;
  /// bufferization turns the reads into loads). Emitted at the insertion
  /// point of `b`, once per kernel.
  void mapCaptures(const KernelPlan &plan, OpBuilder &b, Location loc) {
    for (auto [capture, arg] : llvm::zip(plan.captures, captureArgs)) {
      Value value = arg;
      if (auto type = dyn_cast<RankedTensorType>(capture.getType()))
        value = bufferization::ToTensorOp::create(b, loc, type, arg,
                                                  /*restrict=*/true);
      captureMap.map(capture, value);
    }
  }
  /// The mapping for buildMaskedScore (null without captures).
  const IRMapping *getCaptures() const {
    return captureArgs.empty() ? nullptr : &captureMap;
  }
};

/// Index and f32 arithmetic at one insertion point.
struct KB {
  OpBuilder &b;
  Location loc;
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
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
  /// The CTA's query block and (batch * head) index (see
  /// KernelPlan::headsFastest); query blocks are walked backwards.
  std::pair<Value, Value> blockCoordinates(const KernelPlan &plan) {
    return gridCoordinates(plan,
                           gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                           gpu::BlockIdOp::create(b, loc, gpu::Dimension::y));
  }
  /// The same for the tile `tile` of a persistent kernel: the CTAs of the
  /// one-CTA-per-tile grid, numbered x fastest.
  std::pair<Value, Value> tileCoordinates(const KernelPlan &plan, Value tile) {
    int64_t gridX = plan.headsFastest ? plan.B * plan.Hq : plan.numQB;
    return gridCoordinates(plan, remu(tile, gridX), divu(tile, gridX));
  }
  /// The query block and (batch * head) index of grid position (bx, by).
  std::pair<Value, Value> gridCoordinates(const KernelPlan &plan, Value bx,
                                          Value by) {
    if (plan.headsFastest)
      std::swap(bx, by);
    return {sub(idx(plan.numQB - 1), bx), by};
  }
  /// Key blocks of `blockK` keys that the structural mask of `plan` can show
  /// to query rows [q0, q0 + bq): k >= q0 + off - left and
  /// k <= q0 + bq - 1 + off + right. Returns [begin, end).
  std::pair<Value, Value> keyBlockRange(const KernelPlan &plan, Value q0,
                                        Value bq, int64_t blockK) {
    return attn::buildKeyBlockRange(b, loc, plan.window, plan.Nq, plan.Nk,
                                    q0, bq, blockK);
  }
};


} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
