//===- SimtCombine.cpp - the split forward's combine kernel ---------------===//
//
// The ForwardCombine kind (KernelPlan.h), which every family's split forward
// (KernelPlan::kvSplits) takes from the simt family: per query row, the S
// partial (O_s, lse_s) pairs of the splits, each O_s normalized by its own
// row sum, merge into
//
//   lse = m + log(sum_s exp(lse_s - m)),  m = max_s lse_s
//   O   = sum_s exp(lse_s - lse) O_s
//
// (a split that sees no key has lse_s = -inf and weight 0; a row no split
// sees gets O = 0 and lse = -inf, as the unsplit forward writes). One warp
// per row: the lanes load the row's S lse_s (broadcast), then walk its Dv
// columns 32 apart (coalesced f32 loads of each O_s row).
//
//===----------------------------------------------------------------------===//
#include "SimtForward.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

LaunchShape
attnfuse::gpu_kernels::getSimtCombineLaunchShape(const KernelPlan &plan) {
  return {{static_cast<int64_t>(llvm::divideCeil(plan.B * plan.Hq * plan.Nq,
                                                 kCombineWarps)),
           1, 1},
          {32 * kCombineWarps, 1, 1}};
}

void attnfuse::gpu_kernels::emitSimtForwardCombine(KernelPlan &plan,
                                                   gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Location loc = plan.op.getLoc();
  KB k{b, loc};
  KernelArgs args(plan, func.getArguments());
  const int64_t S = plan.kvSplits;
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = k.add(k.mul(bid, k.idx(kCombineWarps)), k.divu(tid, 32));
  Value lane = k.remu(tid, 32);
  Value valid = k.ult(row, k.idx(plan.B * plan.Hq * plan.Nq));
  scf::IfOp::create(b, loc, valid, [&](OpBuilder &nb, Location nl) {
    KB e{nb, nl};
    Value bi = e.divu(row, plan.Hq * plan.Nq);
    Value hi = e.remu(e.divu(row, plan.Nq), plan.Hq);
    Value qi = e.remu(row, plan.Nq);
    // Split s's rows are at batch index s B + b of the partials.
    auto splitBatch = [&](KB &x, int64_t s) {
      return x.add(x.idx(s * plan.B), bi);
    };
    SmallVector<Value> lses;
    Value m = e.f32(kNegInf);
    for (int64_t s = 0; s < S; ++s) {
      lses.push_back(memref::LoadOp::create(
          nb, nl, args.lsePartial, ValueRange{splitBatch(e, s), hi, qi}));
      m = e.fmax(m, lses.back());
    }
    // exp(-inf - m'') = 0 for the splits that see no key; with none, the
    // sum is 0: lse = 0 + log(0) = -inf, and the weights 0 / 0 -> 0.
    Value safe = e.safeMax(m);
    SmallVector<Value> weights;
    Value sum = e.f32(0.0);
    for (Value l : lses) {
      weights.push_back(math::ExpOp::create(nb, nl, e.fsub(l, safe)));
      sum = e.fadd(sum, weights.back());
    }
    Value inv = attn::buildNormalize(nb, nl, e.f32(1.0), sum);
    for (Value &w : weights)
      w = e.fmul(w, inv);
    scf::ForOp::create(
        nb, nl, lane, e.idx(plan.Dv), e.idx(32), ValueRange{},
        [&](OpBuilder &lb, Location ll, Value c, ValueRange) {
          KB l{lb, ll};
          Value acc = l.f32(0.0);
          for (int64_t s = 0; s < S; ++s) {
            Value o = memref::LoadOp::create(
                lb, ll, args.outPartial, ValueRange{splitBatch(l, s), hi, qi, c});
            acc = l.fma(weights[s], o, acc);
          }
          if (plan.elementType != lb.getF32Type())
            acc = arith::TruncFOp::create(lb, ll, plan.elementType, acc);
          memref::StoreOp::create(lb, ll, acc, args.out,
                                  ValueRange{bi, hi, qi, c});
          scf::YieldOp::create(lb, ll);
        });
    Value first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, lane,
                                        e.idx(0));
    scf::IfOp::create(nb, nl, first, [&](OpBuilder &fb, Location fl) {
      KB f{fb, fl};
      Value lse = f.fadd(safe, math::LogOp::create(fb, fl, sum));
      memref::StoreOp::create(fb, fl, lse, args.lse, ValueRange{bi, hi, qi});
      scf::YieldOp::create(fb, fl);
    });
    scf::YieldOp::create(nb, nl);
  });
  gpu::ReturnOp::create(b, loc);
}
