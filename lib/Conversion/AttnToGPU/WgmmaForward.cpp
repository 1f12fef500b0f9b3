//===- WgmmaForward.cpp - the forward kernel of the wgmma family ----------===//
//
// The Hopper (sm_90a) fused forward kernel, FlashAttention-3's structure
// (flash_fwd_kernel_sm90.h), assembled from the family's building blocks
// (WgmmaBlocks.h: the mbarrier ring, TMA, swizzled tiles, the wgmma issue,
// named-barrier turns) and the tile scheduler (TileScheduler.h); the
// products are warpgroup-wide asynchronous MMAs (wgmma.mma_async).
// docs/GPU.md describes it; in short:
//
//   CTA = a producer warpgroup and W = warps / 4 consumer warpgroups (2 or
//   3) of 64 query rows each (BQ = 64 W), as the two branches of one if on
//   the (warp-uniform) warpgroup index, each starting with setmaxnreg
//   (RegisterSplit). The grid is persistent: each CTA walks tiles (query
//   block, batch * head) in the order of the other families' grid, so the
//   producer loads the next tile's Q and K/V while the consumers finish the
//   last (TileScheduler; the K/V ring and the Q barriers run on across
//   tiles).
//   The producer loads Q per tile, once the consumers freed it (Q empty
//   mbarrier), and the K and V blocks of BK keys into a ring of S stages, in
//   the swizzled layouts wgmma reads (TileLayout): by TMA, one thread
//   issuing a tile's boxes from the tensor maps the kernel takes (the full
//   mbarrier completes on the bytes), or, with tma=false and for head dims
//   that are not multiples of 8, by cp.async of the warpgroup, each copy
//   signalling the full mbarrier as it lands
//   (cp.async.mbarrier.arrive.noinc); it refills a stage's K (V) once every
//   consumer thread arrived on its K (V) empty mbarrier.
//   A consumer warpgroup, per key block j: waits for K_j (after cp.async
//   also fence.proxy.async: those copies are generic-proxy writes, wgmma
//   reads through the async proxy), issues S_j = Q K_j^T (nvvm.wgmma.mma_async,
//   both operands in shared memory, K-major) and O += P_{j-1} V_{j-1}
//   (register-A wgmma, inline PTX: MLIR 22 has none; V N-major), waits for
//   S_j alone, frees K_j, runs the softmax of block j while P V runs, waits
//   for it, frees V_{j-1} and rescales O. Its turn to issue products comes
//   on named barriers after the previous consumer's (ping-pong). The first
//   block's S and the last block's P V are peeled off.
//   Each warp's share of a wgmma m64nN accumulator is the m16n8 fragment
//   layout of mma.sync, so the per-element scores, masks, online softmax
//   (log2 domain, lazy rescale) and epilogue are Fragments.h's; the P of a
//   k-step is the A fragment of the register-A wgmma as of mma.sync.
//   wgmma.wait_group is inline PTX that takes and returns the accumulators
//   ("+f"), so that no read of them moves above the wait.
//
//   Head dims are padded to the k step of 16 with zeros in shared memory
//   (exact; padded O columns are not stored).
//
//===----------------------------------------------------------------------===//
#include "WgmmaForward.h"
#include "Fragments.h"
#include "Staging.h"
#include "TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

bool attnfuse::gpu_kernels::stagesBias(const KernelPlan &plan) {
  ShapedType type = plan.getFullRankBiasType();
  return type && loadsByTma(plan) && type.getDimSize(2) == plan.Nq &&
         type.getDimSize(3) == plan.Nk &&
         type.getElementType() == plan.elementType && plan.Nk % 8 == 0 &&
         plan.Nk % plan.cfg.blockK == 0;
}

bool attnfuse::gpu_kernels::storesByTma(const KernelPlan &plan) {
  return loadsByTma(plan) && plan.cfg.tmaStore;
}

WgmmaForwardLayout::WgmmaForwardLayout(const KernelPlan &plan)
    : q(16 * plan.cfg.warps, 2 * paddedHeadDim(plan.D)),
      k(plan.cfg.blockK, 2 * paddedHeadDim(plan.D)),
      v(plan.cfg.blockK, 2 * paddedHeadDim(plan.Dv)),
      o(16 * plan.cfg.warps, 2 * paddedHeadDim(plan.Dv)),
      bias(16 * plan.cfg.warps, 2 * plan.cfg.blockK),
      qBuffers(plan.cfg.qBuffers), stages(plan.cfg.stages),
      stagedBias(stagesBias(plan)), stagedOutput(storesByTma(plan)),
      outputInQ(stagedOutput && plan.cfg.persistentCtas < 0 &&
                o.panel == q.panel && o.lineBytes <= q.lineBytes) {
  if (stagedOutput && !outputInQ && total() > plan.sharedLimit) {
    outputSlot = true;
    o = TileLayout(64, o.lineBytes);
  }
}

SmallVector<TensorMapSpec>
attnfuse::gpu_kernels::getWgmmaForwardTensorMaps(const KernelPlan &plan) {
  if (!loadsByTma(plan))
    return {};
  WgmmaForwardLayout layout(plan);
  auto map = [](unsigned source, const TileLayout &tile, int64_t lines) {
    return TensorMapSpec{
        source, {1, 1, lines, tile.panel / 2}, tile.panel, 256};
  };
  SmallVector<TensorMapSpec> maps = {
      map(getArgumentIndex(plan, ArgRole::Q), layout.q, layout.q.lines),
      map(getArgumentIndex(plan, ArgRole::K), layout.k, layout.k.lines),
      map(getArgumentIndex(plan, ArgRole::V), layout.v, layout.v.lines)};
  // The bias: a block's tile (before O, whose map is the last).
  if (layout.stagedBias)
    maps.push_back(map(getArgumentIndex(plan, ArgRole::Bias), layout.bias,
                       layout.bias.lines));
  // O: a consumer warpgroup's 64 rows per store.
  if (layout.stagedOutput)
    maps.push_back(map(getArgumentIndex(plan, ArgRole::O), layout.o, 64));
  return maps;
}

namespace {
/// The tensor maps of the forward kernel, by index (getWgmmaForwardTensorMaps).
enum ForwardMap : unsigned { kQMap, kKMap, kVMap, kBiasMap };

class WgmmaForwardKernel : KernelArgs, WgmmaBlocks {
public:
  WgmmaForwardKernel(KernelPlan &plan, OpBuilder &b, Location loc,
                     ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args),
        WgmmaBlocks(plan, /*tma=*/!plan.tensorMaps.empty(),
                    WgmmaForwardLayout(plan).barrierOffset()),
        b(b), loc(loc), k{b, loc}, layout(plan),
        scheduler(plan, *this, 16 * plan.cfg.warps, plan.cfg.blockK),
        kBK(plan.cfg.blockK), kStages(plan.cfg.stages),
        tail(plan.Nk % plan.cfg.blockK != 0) {}
  void emit();

private:
  /// The producer warpgroup's body (setmaxnreg to `registers`).
  void emitProducer(OpBuilder &pb, int64_t registers);
  /// The consumer warpgroups' body (setmaxnreg to `registers`) and the
  /// epilogue.
  void emitConsumers(OpBuilder &cb, Value wgAll, int64_t registers);
  /// A consumer thread's constants: its warpgroup (0-based), its lane's
  /// group g and thread t in the quad (t2 = 2t), its warp's first row in
  /// the tile, and the base descriptors of Q, K and V.
  struct ConsumerThread {
    Value wg, g, t, t2, warpRow0, qDesc, kDesc, vDesc;
  };
  /// One tile of the consumers: its products, online softmax and epilogue.
  /// `ring` is the number of K/V blocks the consumers went through before
  /// it; returns the number after it.
  Value emitConsumerTile(KB &c, const Tile &tl, Value ring,
                         const ConsumerThread &th);
  /// The epilogue through shared memory (WgmmaForwardLayout::stagedOutput):
  /// the warpgroup's O rows (storeOutputs' pairs; `state` and `rows` as
  /// there) into its rows of the staging tile (or the slot, in its turn),
  /// then one TMA store per panel by its first thread, which the next
  /// tile's epilogue waits for (read) before writing the rows again (with
  /// the slot: waited for at once, then the turn passes on).
  void storeStagedOutputs(KB &c, const Tile &tl, ArrayRef<Value> state,
                          ArrayRef<Value> rows, const ConsumerThread &th);
  /// The source of tensor map `map` (ForwardMap) and buffer `buffer`.
  TileSource source(unsigned map, Value buffer) const {
    return {tma ? tensorMapArgs[map] : Value(), buffer};
  }
  /// The consumer warpgroups' turns on named barriers (waitTurn,
  /// passTurn): the ping-pong's start at kPingPongBarrier, those of O's
  /// staging slot (WgmmaForwardLayout::outputSlot) at outputSlotBarrier();
  /// between them each warpgroup's own (1 + consumers + w).
  static constexpr int64_t kPingPongBarrier = 1;
  int64_t consumers() const { return plan.cfg.warps / 4; }
  int64_t outputSlotBarrier() const { return 1 + 2 * consumers(); }
  /// The ring position after the tile's key blocks, for a tile whose block
  /// kb sits at ring position kb - `kbBase`.
  Value ringAfter(KB &e, const Tile &tl, Value kbBase);
  /// The Q buffer of the CTA's tile `round` (round mod q-buffers), and how
  /// many tiles used that buffer before it (the phase of its barriers).
  Value qBuffer(KB &e, Value round);
  Value qUse(KB &e, Value round);

  OpBuilder &b;
  Location loc;
  KB k;
  WgmmaForwardLayout layout;
  TileScheduler scheduler;
  /// Keys per block, K/V pipeline stages.
  const int64_t kBK, kStages;
  /// Whether the keys end in a partial block.
  const bool tail;
};

Value WgmmaForwardKernel::qBuffer(KB &e, Value round) {
  return layout.qBuffers == 1 ? e.idx(0) : e.remu(round, layout.qBuffers);
}

Value WgmmaForwardKernel::qUse(KB &e, Value round) {
  return layout.qBuffers == 1 ? round : e.divu(round, layout.qBuffers);
}

Value WgmmaForwardKernel::ringAfter(KB &e, const Tile &tl, Value kbBase) {
  return e.sub(e.select(tl.hasBlocks(e), tl.kbEnd, tl.kbBegin), kbBase);
}

// The producer warpgroup: Q, then K and V of each block into the stage
// ring: a stage's K (V) is refilled once every consumer thread arrived on
// its K (V) empty barrier; each copy signals its full barrier as it
// lands.
void WgmmaForwardKernel::emitProducer(OpBuilder &pb, int64_t registers) {
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  int64_t D = plan.D, Dv = plan.Dv;
  KB top{pb, loc};
  NVVM::SetMaxRegisterOp::create(pb, loc, registers,
                                 NVVM::SetMaxRegisterAction::decrease);
  // Carried: the K/V blocks loaded so far (the next block's place in the
  // ring).
  auto tiles = [&](KB &p) {
    scheduler.forEachTile(
        p, ValueRange{p.idx(0)},
        [&](KB &x, const Tile &tl, ValueRange iter) -> SmallVector<Value> {
          Value kbBase = x.sub(tl.kbBegin, iter[0]);
          // Q into its buffer once the consumers are done with the tile's
          // that was there (its S).
          Value qb = qBuffer(x, tl.round);
          ifThen(x, x.ult(x.idx(layout.qBuffers - 1), tl.round), [&](KB &y) {
            waitBarrier(y, y.add(y.idx(layout.qEmpty()), qb),
                        y.remu(y.sub(qUse(y, tl.round), y.idx(1)), 2));
          });
          loadTile(x, source(kQMap, q), tl.bi, tl.hi, tl.q0, x.idx(plan.Nq - 1),
                   D, qt, x.mul(qb, x.idx(layout.qStride())),
                   x.add(x.idx(layout.qFull()), qb));
          scf::ForOp::create(
              x.b, x.loc, tl.kbBegin, tl.kbEnd, x.idx(1), ValueRange{},
              [&](OpBuilder &lb, Location ll, Value kb, ValueRange) {
                KB e{lb, ll};
                Value i = e.sub(kb, kbBase);
                Value stage = e.remu(i, kStages), round = e.divu(i, kStages);
                auto waitEmpty = [&](int64_t first) {
                  ifThen(e, e.ult(e.idx(kStages - 1), i), [&](KB &y) {
                    waitBarrier(y, y.add(y.idx(first), stage),
                                y.remu(y.sub(round, y.idx(1)), 2));
                  });
                };
                Value k0 = e.mul(kb, e.idx(kBK));
                Value last = lastKeyRow(e, plan, tl.sizes, kBK);
                // Paged K/V: a key row from its page.
                auto keyPlace = [&](KB &x, Value row) {
                  return keyRow(plan, x.b, x.loc, tl.bi, row);
                };
                // Rows k0 .. of `src` into the stage of the tile at `offset`,
                // once its `empty` barrier allows; signals `full` as the
                // copies land.
                auto fill = [&](TileSource src, int64_t width,
                                const TileLayout &tile, int64_t offset,
                                int64_t stageBytes, int64_t full,
                                int64_t empty) {
                  waitEmpty(empty);
                  loadTile(
                      e, src, tl.bi, tl.kvh, k0, last, width, tile,
                      e.add(e.idx(offset), e.mul(stage, e.idx(stageBytes))),
                      e.add(e.idx(full), stage), Value(),
                      plan.blockTable ? RowPlace(keyPlace) : RowPlace());
                };
                fill(source(kKMap, key), D, kt, layout.kOffset(),
                     layout.kStage(), layout.kFull(), layout.kEmpty());
                fill(source(kVMap, value), Dv, vt, layout.vOffset(),
                     layout.vStage(), layout.vFull(), layout.vEmpty());
                // The block's bias tile with its V (the same full and empty
                // barriers: the consumers read it after S, and are done
                // with it once they freed V).
                if (layout.stagedBias) {
                  SmallVector<Value> at =
                      e.broadcastIndices(bias, {tl.bi, tl.hi, tl.q0, k0});
                  loadTile(e, source(kBiasMap, Value()), at[0], at[1], at[2],
                           Value(), 0, layout.bias,
                           e.add(e.idx(layout.biasOffset()),
                                 e.mul(stage, e.idx(layout.biasStage()))),
                           e.add(e.idx(layout.vFull()), stage), at[3]);
                }
                scf::YieldOp::create(lb, ll);
              });
          return {ringAfter(x, tl, kbBase)};
        });
  };
  if (!tma) {
    tiles(top);
    // No copy outlives the producer.
    NVVM::CpAsyncWaitGroupOp::create(pb, loc, 0);
    return;
  }
  // TMA: one thread issues every copy (the barriers complete on the bytes,
  // not on arrivals); the tensor maps are fetched ahead of the first.
  ifThen(top, isEqual(top, tid, 0), [&](KB &x) {
    for (Value map : tensorMapArgs)
      NVVM::PrefetchOp::create(x.b, x.loc, NVVM::PrefetchCacheLevelAttr(),
                               NVVM::CacheEvictionPriorityAttr(), map, Value(),
                               /*tensormap=*/true);
    tiles(x);
  });
}

// The consumer warpgroups (`wgAll`: the warpgroup index, 1 ..).
void WgmmaForwardKernel::emitConsumers(OpBuilder &ob, Value wgAll,
                                       int64_t registers) {
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  KB top{ob, loc};
  NVVM::SetMaxRegisterOp::create(ob, loc, registers,
                                 NVVM::SetMaxRegisterAction::increase);
  ConsumerThread th;
  th.wg = top.sub(wgAll, top.idx(1));
  Value warp = top.remu(top.divu(tid, 32), 4);
  Value lane = top.remu(tid, 32);
  th.g = top.divu(lane, 4);
  th.t = top.remu(lane, 4);
  th.t2 = top.mul(th.t, top.idx(2));
  th.warpRow0 =
      top.add(top.mul(th.wg, top.idx(64)), top.mul(warp, top.idx(16)));
  // Descriptors: Q of the warpgroup's 64 rows; K and V of stage 0.
  th.qDesc = descriptor(
      top, top.add(bufAddress, top.mul(th.wg, top.idx(64 * qt.panel))),
      qt.descriptorBits(/*nMajor=*/false));
  th.kDesc = descriptor(top, top.add(bufAddress, top.idx(layout.kOffset())),
                        kt.descriptorBits(/*nMajor=*/false));
  th.vDesc = descriptor(top, top.add(bufAddress, top.idx(layout.vOffset())),
                        vt.descriptorBits(/*nMajor=*/true));
  // The last warpgroup lets the first one take the first turn (ping-pong,
  // emitConsumerTile).
  ifThen(top, isEqual(top, th.wg, consumers() - 1), [&](KB &x) {
    giveFirstTurn(x, kPingPongBarrier);
    // And the staging slot's first turn to the first warpgroup.
    if (layout.outputSlot)
      giveFirstTurn(x, outputSlotBarrier());
  });
  // Carried across tiles: the K/V blocks consumed so far (the next block's
  // place in the ring).
  scheduler.forEachTile(
      top, ValueRange{top.idx(0)}, [&](KB &c, const Tile &tl, ValueRange iter) {
        return SmallVector<Value>{emitConsumerTile(c, tl, iter[0], th)};
      });
  // The last O stores complete before the CTA (its shared memory) ends.
  if (layout.stagedOutput)
    ifThen(top, isEqual(top, top.remu(tid, 128), 0), [&](KB &x) {
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, UnitAttr());
    });
}
Value WgmmaForwardKernel::emitConsumerTile(KB &c, const Tile &tl, Value ring,
                                           const ConsumerThread &th) {
  int64_t Dp = paddedHeadDim(plan.D), Dvp = paddedHeadDim(plan.Dv);
  const int64_t kBQ = 64 * consumers();
  const FragmentLayout sl{1, kBK / 8}, ol{1, Dvp / 8};
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  MLIRContext *ctx = b.getContext();
  Value wg = th.wg, g = th.g, t = th.t, t2 = th.t2, warpRow0 = th.warpRow0;
  Value kDesc = th.kDesc, vDesc = th.vDesc;
  // The tile's Q buffer.
  Value qBuf = qBuffer(c, tl.round);
  Value qDesc = advance(c, th.qDesc, c.mul(qBuf, c.idx(layout.qStride())));

  // Ping-pong between the consumer warpgroups (named barriers 1 ..
  // consumers): a warpgroup issues its products only after the previous one
  // (cyclically) issued its own, so that one's softmax runs while the
  // other's products do. Barrier 1 + w counts warpgroup w's 128 threads
  // (bar.sync) and its predecessor's (bar.arrive); the last warpgroup lets
  // the first one start (emitConsumers). Below: waitTurn and passTurn on
  // kPingPongBarrier around each block's products.

  // The thread's rows (g and g + 8 of its warp's m16 tile of its
  // warpgroup's 64 rows), Q once it landed, then the key blocks.
  OpBuilder &cb = c.b;
  Value q0 = tl.q0, kbBegin = tl.kbBegin, kbEnd = tl.kbEnd;
  Value kbBase = c.sub(kbBegin, ring);
  SmallVector<Value> rows, rowsC;
  for (int64_t r = 0; r < 2; ++r) {
    Value row = c.add(c.add(q0, warpRow0), c.add(g, c.idx(8 * r)));
    rows.push_back(row);
    rowsC.push_back(c.min(row, c.idx(plan.Nq - 1)));
  }
  waitLanded(c, c.add(c.idx(layout.qFull()), qBuf),
             c.remu(qUse(c, tl.round), 2));

  const ScoreScaling scaling(plan);
  const int64_t kP = kBK / 16;
  // Block kb's place in the ring.
  auto stageOf = [&](KB &e, Value kb) {
    return e.remu(e.sub(kb, kbBase), kStages);
  };
  auto parityOf = [&](KB &e, Value kb) {
    return e.remu(e.divu(e.sub(kb, kbBase), kStages), 2);
  };
  // Issues S = Q K^T of block kb once its K landed (not waited for).
  auto issueScores = [&](KB &e, Value kb) -> Value {
    Value stage = stageOf(e, kb);
    Value kStageDesc = advance(e, kDesc, e.mul(stage, e.idx(layout.kStage())));
    Value acc = LLVM::UndefOp::create(e.b, e.loc, f32Struct(ctx, kBK / 2));
    for (int64_t ks = 0; ks < Dp / 16; ++ks)
      acc = wgmmaShared(
          e, acc, advance(e, qDesc, e.idx(qt.kStepOffset(ks, false))),
          advance(e, kStageDesc, e.idx(kt.kStepOffset(ks, false))), kBK,
          /*first=*/ks == 0);
    NVVM::WgmmaGroupSyncAlignedOp::create(e.b, e.loc);
    return acc;
  };
  auto waitKeys = [&](KB &e, Value kb) {
    waitLanded(e, e.add(e.idx(layout.kFull()), stageOf(e, kb)),
               parityOf(e, kb));
  };
  // Issues O += P V of block kb once its V landed (not waited for).
  auto issueValues = [&](KB &e, Value kb, ArrayRef<Value> pRegs,
                         ArrayRef<Value> o) {
    Value stage = stageOf(e, kb);
    waitLanded(e, e.add(e.idx(layout.vFull()), stage), parityOf(e, kb));
    Value vStageDesc = advance(e, vDesc, e.mul(stage, e.idx(layout.vStage())));
    SmallVector<Value> acc(o);
    for (int64_t ks = 0; ks < kP; ++ks)
      acc = wgmmaRegisterA(
          e, acc, pRegs.slice(4 * ks, 4),
          advance(e, vStageDesc, e.idx(vt.kStepOffset(ks, true))));
    NVVM::WgmmaGroupSyncAlignedOp::create(e.b, e.loc);
    return acc;
  };
  // Frees block kb's K (first = kEmpty) or V (vEmpty) stage.
  auto release = [&](KB &e, int64_t first, Value kb) {
    arriveBarrier(e, e.add(e.idx(first), stageOf(e, kb)));
  };
  // Element (n, i) of block kb's S: row rows[i / 2], key kb BK + 8n + 2t
  // + i % 2; keys past a tail are clamped where they address bias/keep,
  // not where they only count (dropout).
  auto coordinates = [&](KB &e, Value kb, int64_t j, int64_t i, bool clamp) {
    Value kg = e.add(e.add(e.mul(kb, e.idx(kBK)), e.idx(8 * j + i % 2)), t2);
    if (tail && clamp)
      kg = e.min(kg, e.idx(plan.Nk - 1));
    return SmallVector<Value>{tl.bi, tl.hi, rowsC[i / 2], kg};
  };
  // Block kb's bias and keep values, loaded while its scores are
  // computed; a staged bias's pairs of keys 8n + 2t, + 1 of the thread's
  // rows from the block's stage, once it landed (with V).
  auto loadOperands = [&](KB &e, Value kb) {
    ElementOperands ops =
        loadElementOperands(e, plan, sl, layout.stagedBias ? Value() : bias,
                            keep, [&](int64_t, int64_t j, int64_t i) {
                              return coordinates(e, kb, j, i, true);
                            });
    if (!layout.stagedBias)
      return ops;
    Value stage = stageOf(e, kb);
    waitLanded(e, e.add(e.idx(layout.vFull()), stage), parityOf(e, kb));
    Value base = e.add(e.idx(layout.biasOffset()),
                       e.mul(stage, e.idx(layout.biasStage())));
    ops.bias.resize(sl.size());
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; i += 2) {
        Value row = e.add(e.add(warpRow0, g), e.idx(8 * (i / 2)));
        Value col = e.add(e.idx(8 * j), t2);
        Value bytes = e.add(base, layout.bias.elementOffset(e, row, col));
        Value pair =
            vector::LoadOp::create(e.b, e.loc, VectorType::get({2}, elt), buf,
                                   ValueRange{e.divu(bytes, 2)},
                                   /*nontemporal=*/false, llvm::MaybeAlign(4));
        ops.setBiasPair(e, sl.index(0, j, i), pair);
      }
    return ops;
  };
  // The online softmax of block kb's scores `s` (waited for): the row
  // maxima and the P operands of its k-steps (P V's A fragments).
  // Paged K/V: whether a key's page id is in range.
  auto pageValid = [&](KB &x, Value key) {
    return keyPageValid(plan, x.b, x.loc, tl.bi, key);
  };
  auto softmax = [&](KB &e, Value kb, bool masked, SmallVector<Value> &s,
                     const ElementOperands &operands, ArrayRef<Value> m,
                     ArrayRef<Value> l, SmallVector<Value> &pRegs) {
    scoreFragments(
        e, plan, scaling, sl, s, operands, getCaptures(),
        [&](int64_t, int64_t j, int64_t i) {
          return coordinates(e, kb, j, i, true);
        },
        masked, e.mul(kb, e.idx(kBK)), t2, rows[0], tl.sizes,
        plan.blockTable ? KeyValidity(pageValid) : KeyValidity());
    RowMaxima rowMax = updateRowMaxima(e, sl, s, m, l, scaling);
    DropoutDraws dropout(plan.op, seed, kBK % 32 == 0);
    for (int64_t ks = 0; ks < kP; ++ks)
      pRegs.append(probabilityOperands(e, plan, sl, s, 0, ks, rowMax, scaling,
                                       dropout, [&](int64_t j, int64_t i) {
                                         return coordinates(e, kb, j, i, false);
                                       }));
    return rowMax;
  };

  // Loop state: m (2 rows), l (2 rows, thread-partial), O accumulators,
  // then the P operands of the previous block (4 per k-step). The
  // products of one step are S of block kb and O += P V of block kb - 1,
  // issued together (FlashAttention-3's overlap within the warpgroup):
  // the softmax of block kb runs while P V of kb - 1 does. The first
  // block (its S alone) is peeled off, and so is the last P V.
  SmallVector<Value> zeros;
  for (int64_t i = 0; i < 2 + ol.size(); ++i)
    zeros.push_back(c.f32(0.0));
  Type pType =
      toOperand(c, elt,
                vector::BroadcastOp::create(
                    cb, loc, VectorType::get({2}, elt),
                    arith::ConstantOp::create(cb, loc, cb.getZeroAttr(elt))))
          .getType();
  SmallVector<Type> stateTypes(4 + ol.size(), cb.getF32Type());
  stateTypes.append(4 * kP, pType);
  Value any = tl.hasBlocks(c);
  auto first = scf::IfOp::create(cb, loc, stateTypes, any,
                                 /*withElseRegion=*/true);
  {
    OpBuilder fb = first.getThenBodyBuilder();
    KB e{fb, loc};
    waitKeys(e, kbBegin);
    waitTurn(e, kPingPongBarrier, wg);
    NVVM::WgmmaFenceAlignedOp::create(fb, loc);
    Value acc = issueScores(e, kbBegin);
    passTurn(e, kPingPongBarrier, consumers(), wg);
    ElementOperands operands = loadOperands(e, kbBegin);
    SmallVector<Value> s = waitGroup(e, unpack(e, acc, kBK / 2));
    release(e, layout.kEmpty(), kbBegin);
    SmallVector<Value> m{e.f32(kNegInf), e.f32(kNegInf)};
    SmallVector<Value> l{e.f32(0.0), e.f32(0.0)}, pRegs;
    RowMaxima rowMax =
        softmax(e, kbBegin, /*masked=*/true, s, operands, m, l, pRegs);
    SmallVector<Value> result = rowMax.mNew;
    result.append(rowMax.lsum);
    result.append(zeros.begin() + 2, zeros.end());
    result.append(pRegs);
    scf::YieldOp::create(fb, loc, result);
    // No block: nothing is read (the state only feeds the epilogue's
    // empty rows).
    OpBuilder eb = first.getElseBodyBuilder();
    KB x{eb, loc};
    SmallVector<Value> none{x.f32(kNegInf), x.f32(kNegInf)};
    none.append(zeros);
    Value zeroP =
        toOperand(x, elt,
                  vector::BroadcastOp::create(
                      eb, loc, VectorType::get({2}, elt),
                      arith::ConstantOp::create(eb, loc, eb.getZeroAttr(elt))));
    none.append(4 * kP, zeroP);
    scf::YieldOp::create(eb, loc, none);
  }

  auto blockBody = [&](bool masked, OpBuilder &lb, Location ll, Value kb,
                       ValueRange iter) {
    KB e{lb, ll};
    SmallVector<Value> cur(iter.begin(), iter.end());
    ArrayRef<Value> curRef(cur);
    Value prev = e.sub(kb, e.idx(1));
    waitKeys(e, kb);
    waitTurn(e, kPingPongBarrier, wg);
    NVVM::WgmmaFenceAlignedOp::create(e.b, e.loc);
    Value acc = issueScores(e, kb);
    SmallVector<Value> o = issueValues(
        e, prev, curRef.drop_front(4 + ol.size()), curRef.slice(4, ol.size()));
    passTurn(e, kPingPongBarrier, consumers(), wg);
    ElementOperands operands = loadOperands(e, kb);
    SmallVector<Value> s = waitGroup(e, unpack(e, acc, kBK / 2), 1);
    release(e, layout.kEmpty(), kb);
    SmallVector<Value> pRegs;
    RowMaxima rowMax = softmax(e, kb, masked, s, operands, curRef.take_front(2),
                               curRef.slice(2, 2), pRegs);
    o = waitGroup(e, o);
    release(e, layout.vEmpty(), prev);
    o = rescaleAccumulators(e, ol, rowMax, curRef.take_front(2), o,
                            plan.cfg.lazyRescale);
    SmallVector<Value> next = rowMax.mNew;
    next.append(rowMax.lsum);
    next.append(o);
    next.append(pRegs);
    scf::YieldOp::create(lb, ll, next);
  };
  SmallVector<Value> loopState =
      runKeyBlocks(c, plan, tl.sizes, q0, kBQ, kBK, c.add(kbBegin, c.idx(1)),
                   kbEnd,
                   first.getResults(), blockBody);
  // Every S of the tile was waited for: the producer may load another Q
  // into its buffer.
  arriveBarrier(c, c.add(c.idx(layout.qEmpty()), qBuf));
  // The last block's P V.
  auto last = scf::IfOp::create(
      cb, loc, TypeRange(ArrayRef<Type>(stateTypes).slice(4, ol.size())), any,
      /*withElseRegion=*/true);
  {
    ArrayRef<Value> st(loopState);
    OpBuilder lb = last.getThenBodyBuilder();
    KB e{lb, loc};
    NVVM::WgmmaFenceAlignedOp::create(lb, loc);
    Value lastBlock = e.sub(kbEnd, e.idx(1));
    SmallVector<Value> acc =
        waitGroup(e, issueValues(e, lastBlock, st.drop_front(4 + ol.size()),
                                 st.slice(4, ol.size())));
    // The ring runs on into the next tile: its V stage is free again.
    release(e, layout.vEmpty(), lastBlock);
    scf::YieldOp::create(lb, loc, acc);
    OpBuilder eb = last.getElseBodyBuilder();
    scf::YieldOp::create(eb, loc, st.slice(4, ol.size()));
  }
  SmallVector<Value> state(loopState.begin(), loopState.begin() + 4);
  state.append(last.getResults().begin(), last.getResults().end());
  if (layout.stagedOutput)
    storeStagedOutputs(c, tl, state, rows, th);
  else
    storeOutputs(c, plan, ol, state, rows, tl.bi, tl.hi, t, t2, out, lse);
  return ringAfter(c, tl, kbBase);
}

void WgmmaForwardKernel::storeStagedOutputs(KB &c, const Tile &tl,
                                            ArrayRef<Value> state,
                                            ArrayRef<Value> rows,
                                            const ConsumerThread &th) {
  const TileLayout &ot = layout.o;
  // The warpgroup's own named barrier (after the ping-pong ones).
  auto syncOwn = [&] {
    syncWarpgroup(c, c.add(th.wg, c.idx(1 + consumers())));
  };
  Value leader = isEqual(c, c.remu(tid, 128), 0);
  // The warpgroup's rows start at line `first` of the staging, whose line 0
  // is query row `row0`.
  Value first = c.mul(th.wg, c.idx(64)), row0 = tl.q0;
  if (layout.outputSlot) {
    // The slot is this warpgroup's once the previous one's store read it.
    waitTurn(c, outputSlotBarrier(), th.wg);
    row0 = c.add(row0, first);
    first = c.idx(0);
  } else {
    ifThen(c, leader, [&](KB &x) {
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, x.b.getUnitAttr());
    });
    syncOwn();
  }
  storeOutputs(
      c, plan, FragmentLayout{1, paddedHeadDim(plan.Dv) / 8}, state, rows,
      tl.bi, tl.hi, th.t, th.t2, out, lse,
      [&](KB &s, Value row, Value col, Value pair) {
        Value bytes = ot.elementOffset(s, s.sub(row, row0), col);
        vector::StoreOp::create(
            s.b, s.loc, pair, buf,
            ValueRange{s.divu(s.add(s.idx(layout.oOffset()), bytes), 2)},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
      });
  // The stores are generic-proxy writes, TMA reads through the async proxy.
  proxyFence(c);
  syncOwn();
  ifThen(c, leader, [&](KB &x) {
    Value row0 = x.add(tl.q0, x.mul(th.wg, x.idx(64)));
    storeTile(x, tensorMapArgs.back(), ot, layout.oOffset(), first, row0, tl.hi,
              tl.bi);
    if (layout.outputSlot)
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, x.b.getUnitAttr());
  });
  // The slot is read: the next warpgroup's turn.
  if (layout.outputSlot) {
    syncOwn();
    passTurn(c, outputSlotBarrier(), consumers(), th.wg);
  }
}

void WgmmaForwardKernel::emit() {
  mapCaptures(plan, b, loc);
  int64_t D = plan.D, Dv = plan.Dv, Dp = paddedHeadDim(D),
          Dvp = paddedHeadDim(Dv);
  setUpSharedMemory(b, loc, layout.barrierOffset() / 2);

  // Set-up by the whole CTA: the mbarriers (the producer's 128 threads
  // arrive on the full ones as their copies land, every consumer thread on
  // the empty ones), zeros in the padding columns; then the roles.
  ifThen(k, isEqual(k, tid, 0), [&](KB &x) {
    // A full barrier takes the producer's 128 cp.async arrivals, or the
    // one arrive.expect_tx of its TMA thread.
    const int64_t loaders = tma ? 1 : kProducerThreads;
    for (int64_t qb = 0; qb < layout.qBuffers; ++qb)
      initBarrier(x, layout.qFull() + qb, loaders);
    for (int64_t st = 0; st < kStages; ++st) {
      initBarrier(x, layout.kFull() + st, loaders);
      // (V's and the bias's arrive.expect_tx with a staged bias.)
      initBarrier(x, layout.vFull() + st, layout.stagedBias ? 2 : loaders);
      initBarrier(x, layout.kEmpty() + st, 32 * plan.cfg.warps);
      initBarrier(x, layout.vEmpty() + st, 32 * plan.cfg.warps);
    }
    for (int64_t qb = 0; qb < layout.qBuffers; ++qb)
      initBarrier(x, layout.qEmpty() + qb, 32 * plan.cfg.warps);
    NVVM::FenceMbarrierInitOp::create(x.b, x.loc);
  });
  // (TMA reads the padding columns as zeros: they are past the operand's
  // head dim.)
  if (!tma && (Dp != D || Dvp != Dv)) {
    zeroPadding(k, layout.q, D, 0, layout.qBuffers, layout.qStride());
    zeroPadding(k, layout.k, D, layout.kOffset(), kStages, layout.kStage());
    zeroPadding(k, layout.v, Dv, layout.vOffset(), kStages, layout.vStage());
    proxyFence(k);
  }
  gpu::BarrierOp::create(b, loc);

  // Registers: the producer gives up what the consumers take (one branch
  // per role, as setmaxnreg needs; RegisterSplit).
  const RegisterSplit split = registerSplit(consumers());
  splitRoles(
      b, loc, [&](OpBuilder &pb) { emitProducer(pb, split.producer); },
      [&](OpBuilder &cb, Value wgAll) {
        emitConsumers(cb, wgAll, split.consumer);
      });
  gpu::ReturnOp::create(b, loc);
}
} // namespace

void attnfuse::gpu_kernels::emitWgmmaForward(KernelPlan &plan,
                                             gpu::GPUFuncOp func) {
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  WgmmaForwardKernel(plan, b, plan.op.getLoc(), func.getArguments()).emit();
}
