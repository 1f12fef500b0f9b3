//===- TileScheduler.cpp - which CTA computes which tile ------------------===//
//
// See TileScheduler.h.
//
//===----------------------------------------------------------------------===//
#include "TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

std::pair<Value, Value>
attnfuse::gpu_kernels::gridCoordinates(KB &k, const KernelPlan &plan, Value bx,
                                       Value by) {
  if (plan.headsFastest)
    std::swap(bx, by);
  return {k.sub(k.idx(plan.numQB - 1), bx), by};
}

std::pair<Value, Value>
attnfuse::gpu_kernels::blockCoordinates(KB &k, const KernelPlan &plan) {
  return gridCoordinates(k, plan,
                         gpu::BlockIdOp::create(k.b, k.loc, gpu::Dimension::x),
                         gpu::BlockIdOp::create(k.b, k.loc, gpu::Dimension::y));
}

std::pair<Value, Value>
attnfuse::gpu_kernels::tileCoordinates(KB &k, const KernelPlan &plan,
                                       Value tile) {
  int64_t gridX = plan.headsFastest ? plan.B * plan.Hq : plan.numQB;
  return gridCoordinates(k, plan, k.remu(tile, gridX), k.divu(tile, gridX));
}

LaunchShape attnfuse::gpu_kernels::getTileGridShape(const KernelPlan &plan) {
  LaunchShape shape{{plan.numQB, plan.B * plan.Hq, plan.kvSplits},
                    {plan.threads, 1, 1}};
  if (plan.headsFastest)
    std::swap(shape.grid[0], shape.grid[1]);
  return shape;
}

/// CTAs per SM the automatic key splits aim for, and the key blocks each
/// split keeps at least (below, the partials and the combine cost more
/// than the parallelism gains).
constexpr int64_t kSplitCtasPerSm = 4;
constexpr int64_t kMinBlocksPerSplit = 4;

/// The automatic split count of `tiles` tiles over `numKB` key blocks.
static int64_t automaticKeySplits(int64_t tiles, int64_t numKB,
                                  int64_t multiprocessors) {
  int64_t target = kSplitCtasPerSm * multiprocessors;
  if (tiles >= target)
    return 1;
  int64_t wanted = llvm::divideCeil(target, tiles);
  return std::max<int64_t>(1, std::min(wanted, numKB / kMinBlocksPerSplit));
}

int64_t attnfuse::gpu_kernels::chooseKeySplits(const KernelPlan &plan,
                                               int64_t requested) {
  int64_t numKB = llvm::divideCeil(plan.Nk, plan.cfg.blockK);
  if (requested > 0)
    return std::min(requested, numKB);
  return automaticKeySplits(
      llvm::divideCeil(plan.Nq, plan.cfg.blockQ) * plan.B * plan.Hq, numKB,
      plan.multiprocessors);
}

std::pair<Value, Value>
attnfuse::gpu_kernels::splitKeyBlocks(KB &k, const KernelPlan &plan,
                                      Value split, Value kbBegin,
                                      Value kbEnd) {
  int64_t S = plan.kvSplits;
  Value n = k.max(k.sub(kbEnd, kbBegin), k.idx(0));
  Value share = k.divu(k.add(n, k.idx(S - 1)), S);
  Value begin = k.min(k.mul(split, share), n);
  Value end = k.min(k.add(begin, share), n);
  return {k.add(kbBegin, begin), k.add(kbBegin, end)};
}

Value Tile::hasBlocks(KB &e) const {
  return arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::slt, kbBegin,
                               kbEnd);
}

/// See TileScheduler::batchFastest.
static bool sharesBiasAcrossBatch(const KernelPlan &plan) {
  ShapedType type = plan.getFullRankBiasType();
  return type && plan.B > 1 && plan.G == 1 && type.getDimSize(0) == 1 &&
         type.getDimSize(1) == plan.Hq;
}

TileScheduler::TileScheduler(const KernelPlan &plan, const KernelArgs &args,
                             int64_t blockQ, int64_t blockK)
    : plan(plan), args(args), blockQ(blockQ), blockK(blockK),
      batchFastest(sharesBiasAcrossBatch(plan)) {}

LaunchShape TileScheduler::getLaunchShape(const KernelPlan &plan) {
  int64_t tiles = plan.numQB * plan.B * plan.Hq;
  int64_t ctas = plan.cfg.persistentCtas;
  return {{ctas > 0 ? std::min(tiles, ctas) : tiles, 1, 1},
          {plan.threads, 1, 1}};
}

bool TileScheduler::walksUnits() const {
  if (!plan.headsFastest || plan.numQB % 2 != 0)
    return false;
  if (plan.Nq <= 1024)
    return true;
  // Heads fastest, longest first (forEachTile's other walk) puts every
  // head's K/V in flight at once: at d = 64, 4k, causal the tiles read
  // them from DRAM at 54% of its bandwidth (ncu), and the H200, at its
  // 700 W limit, ran the SMs at 1.61 GHz against 1.78 with the units
  // (cuDNN 1.82). Timed alternately, the units: d = 64 4k +6.2%, d = 128
  // 4k / 16k +9.7% / +3.7%, d = 72 / 80 / 96 4k +1.3 / +3.3 / +9.1%, GQA
  // 8k +4.3%, d = 64 16k -1.6%; a softcap (computed scores, bound by
  // their arithmetic) -5.7%. At 1k they pay with every feature (+6.5 to
  // +13%).
  AttentionOpInterface op = plan.op;
  return !plan.seed && !op.hasScoreMod();
}

SmallVector<Value> TileScheduler::forEachTile(
    KB &e, ValueRange init,
    function_ref<SmallVector<Value>(KB &, const Tile &, ValueRange)> body)
    const {
  const int64_t tiles = plan.numQB * plan.B * plan.Hq;
  auto tileBody = [&](KB &x, Value qb, Value by, Value round, ValueRange iter) {
    Tile tl;
    if (batchFastest) {
      tl.bi = x.remu(by, plan.B);
      tl.hi = x.divu(by, plan.B);
    } else {
      tl.bi = x.divu(by, plan.Hq);
      tl.hi = x.remu(by, plan.Hq);
    }
    tl.kvh = x.divu(tl.hi, plan.G);
    tl.round = round;
    tl.q0 = x.mul(qb, x.idx(blockQ));
    tl.sizes = args.sizesAt(plan, x.b, x.loc, tl.bi);
    std::tie(tl.kbBegin, tl.kbEnd) = x.keyBlockRange(
        plan, tl.q0, x.min(x.idx(blockQ), x.sub(x.idx(plan.Nq), tl.q0)),
        blockK, tl.sizes);
    return body(x, tl, iter);
  };
  Value cta = gpu::BlockIdOp::create(e.b, e.loc, gpu::Dimension::x);
  // One tile per CTA: no loop (nothing carried across it for ptxas).
  if (plan.cfg.persistentCtas < 0) {
    auto [qb, by] = tileCoordinates(e, plan, cta);
    return tileBody(e, qb, by, e.idx(0), init);
  }
  Value grid = gpu::GridDimOp::create(e.b, e.loc, gpu::Dimension::x);
  // The loop over rounds: `tileOf` gives this CTA's tile of a round (an
  // index), `inRange` whether it has one, `coordinates` its query block and
  // batch * head (computed where it has one).
  auto loopOver = [&](Value rounds, function_ref<Value(KB &, Value)> tileOf,
                      function_ref<Value(KB &, Value)> inRange,
                      function_ref<std::pair<Value, Value>(KB &, Value, Value)>
                          coordinates) {
    return scf::ForOp::create(
               e.b, e.loc, e.idx(0), rounds, e.idx(1), init,
               [&](OpBuilder &lb, Location ll, Value round, ValueRange iter) {
                 KB x{lb, ll};
                 Value tile = tileOf(x, round);
                 auto inRangeIf = scf::IfOp::create(lb, ll, TypeRange(init),
                                                    inRange(x, tile),
                                                    /*withElseRegion=*/true);
                 OpBuilder tb = inRangeIf.getThenBodyBuilder();
                 KB y{tb, ll};
                 auto [qb, by] = coordinates(y, tile, round);
                 scf::YieldOp::create(tb, ll, tileBody(y, qb, by, round, iter));
                 OpBuilder eb = inRangeIf.getElseBodyBuilder();
                 scf::YieldOp::create(eb, ll, iter);
                 scf::YieldOp::create(lb, ll, inRangeIf.getResults());
               })
        .getResults();
  };
  if (walksUnits()) {
    // Causal-like masks, an even number of query blocks: unit u of
    // (batch * head) u / P, P = numQB / 2, is its query blocks numQB - 1 - j
    // and j (j = u mod P: numQB + 1 key blocks in all for a causal mask),
    // one after the other on one CTA (rounds 2m and 2m + 1 of CTA c: unit
    // m G + c). Every unit is the same work, and the CTAs running together
    // take a few heads' units, which share their K/V in L2 (walksUnits says
    // where it pays).
    const int64_t half = plan.numQB / 2, units = tiles / 2;
    Value rounds = e.mul(
        arith::DivUIOp::create(e.b, e.loc, e.add(e.idx(units - 1), grid), grid),
        e.idx(2));
    return loopOver(
        rounds,
        [&](KB &x, Value round) {
          return x.add(x.mul(x.divu(round, 2), grid), cta);
        },
        [&](KB &x, Value unit) { return x.ult(unit, x.idx(units)); },
        [&](KB &x, Value unit, Value round) {
          Value j = x.remu(unit, half);
          Value second = x.ult(x.idx(0), x.remu(round, 2));
          return std::make_pair(
              x.select(second, j, x.sub(x.idx(plan.numQB - 1), j)),
              x.divu(unit, half));
        });
  }
  // Round r takes tiles [r G, r G + G) (G CTAs), CTA c the c-th of them in
  // even rounds and the (G - 1 - c)-th in odd ones: the tiles come longest
  // first, and the snake evens out what round robin would give the low CTAs
  // in every round (-14% at d = 128, 16k, causal).
  Value rounds =
      arith::DivUIOp::create(e.b, e.loc, e.add(e.idx(tiles - 1), grid), grid);
  return loopOver(
      rounds,
      [&](KB &x, Value round) {
        Value odd = x.ult(x.idx(0), x.remu(round, 2));
        Value pos = x.select(odd, x.sub(x.sub(grid, x.idx(1)), cta), cta);
        return x.add(x.mul(round, grid), pos);
      },
      [&](KB &x, Value tile) { return x.ult(tile, x.idx(tiles)); },
      [&](KB &x, Value tile, Value) { return tileCoordinates(x, plan, tile); });
}
