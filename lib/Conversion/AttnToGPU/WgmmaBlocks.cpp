//===- WgmmaBlocks.cpp - the sm_90a machinery of the wgmma family ---------===//
//
// See WgmmaBlocks.h.
//
//===----------------------------------------------------------------------===//
#include "WgmmaBlocks.h"
#include "Staging.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

bool attnfuse::gpu_kernels::loadsByTma(const KernelPlan &plan) {
  return plan.cfg.tma && plan.D % 8 == 0 && plan.Dv % 8 == 0 &&
         !plan.keyLengths && !plan.blockTable;
}

Value TileLayout::chunkOffset(KB &e, Value line, Value chunk) const {
  int64_t perPanel = panel / 16;
  Value lineBase = e.mul(line, e.idx(panel));
  Value swizzle = e.remu(e.divu(lineBase, 128), perPanel);
  Value inPanel =
      arith::XOrIOp::create(e.b, e.loc, e.remu(chunk, perPanel), swizzle);
  return e.add(
      e.add(e.mul(e.divu(chunk, perPanel), e.idx(panelStride())), lineBase),
      e.mul(inPanel, e.idx(16)));
}

Value TileLayout::elementOffset(KB &e, Value line, Value col) const {
  return e.add(chunkOffset(e, line, e.divu(col, 8)),
               e.mul(e.remu(col, 8), e.idx(2)));
}

//===----------------------------------------------------------------------===//
// Free functions
//===----------------------------------------------------------------------===//

Value attnfuse::gpu_kernels::isEqual(KB &e, Value x, int64_t c) {
  return arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::eq, x,
                               e.idx(c));
}

Value attnfuse::gpu_kernels::i32Constant(KB &e, int64_t v) {
  return arith::ConstantOp::create(e.b, e.loc, e.b.getI32IntegerAttr(v));
}

Value attnfuse::gpu_kernels::toI32(KB &e, Value v) {
  return arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI32Type(), v);
}

Value attnfuse::gpu_kernels::pointerAt(KB &e, Value address,
                                       unsigned space) {
  Value i64 = arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI64Type(),
                                           address);
  return LLVM::IntToPtrOp::create(
      e.b, e.loc, LLVM::LLVMPointerType::get(e.b.getContext(), space), i64);
}

void attnfuse::gpu_kernels::proxyFence(KB &e) {
  NVVM::FenceProxyOp::create(
      e.b, e.loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(e.b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

SmallVector<Value> attnfuse::gpu_kernels::unpack(KB &e, Value s, int64_t n) {
  SmallVector<Value> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(LLVM::ExtractValueOp::create(e.b, e.loc, s, i));
  return v;
}

Type attnfuse::gpu_kernels::f32Struct(MLIRContext *ctx, int64_t n) {
  return LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n, Float32Type::get(ctx)));
}

Value attnfuse::gpu_kernels::descriptor(KB &e, Value address, uint64_t bits) {
  Type i64 = e.b.getI64Type();
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(
        e.b, e.loc, e.b.getI64IntegerAttr(static_cast<int64_t>(v)));
  };
  Value a = arith::IndexCastUIOp::create(e.b, e.loc, i64, address);
  a = arith::AndIOp::create(
      e.b, e.loc, arith::ShRUIOp::create(e.b, e.loc, a, c(4)), c(0x3FFF));
  return arith::OrIOp::create(e.b, e.loc, a, c(bits));
}

Value attnfuse::gpu_kernels::advance(KB &e, Value desc, Value bytes) {
  Value units = arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI64Type(),
                                             e.divu(bytes, 16));
  return arith::AddIOp::create(e.b, e.loc, desc, units);
}

/// Inline PTX with the accumulators `acc` as "+f" operands (outputs tied
/// to inputs) followed by `extra` inputs of `extraConstraints`.
static SmallVector<Value> accumulatorAsm(KB &e, StringRef asmString,
                                         ArrayRef<Value> acc,
                                         ArrayRef<Value> extra,
                                         StringRef extraConstraints) {
  int64_t n = acc.size();
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    constraints += "=f,";
  for (int64_t i = 0; i < n; ++i)
    constraints += std::to_string(i) + ",";
  constraints += extraConstraints;
  if (!constraints.empty() && constraints.back() == ',')
    constraints.pop_back();
  SmallVector<Value> operands(acc);
  operands.append(extra.begin(), extra.end());
  return unpack(e,
                inlinePtx(e, f32Struct(e.b.getContext(), n), operands,
                          asmString, constraints),
                n);
}

SmallVector<Value> attnfuse::gpu_kernels::waitGroup(KB &e, ArrayRef<Value> acc,
                                                    int pending) {
  return accumulatorAsm(
      e, ("wgmma.wait_group.sync.aligned " + Twine(pending) + ";").str(), acc,
      {}, "");
}

void attnfuse::gpu_kernels::waitTurn(KB &c, int64_t first, Value wg) {
  syncNamedBarrier(c, c.add(wg, c.idx(first)), 256);
}

void attnfuse::gpu_kernels::passTurn(KB &c, int64_t first, int64_t count,
                                     Value wg) {
  Value next = c.remu(c.add(wg, c.idx(1)), count);
  arriveNamedBarrier(c, c.add(next, c.idx(first)), 256);
}

void attnfuse::gpu_kernels::giveFirstTurn(KB &c, int64_t first) {
  NVVM::BarrierArriveOp::create(c.b, c.loc, i32Constant(c, first),
                                i32Constant(c, 256));
}

void attnfuse::gpu_kernels::syncNamedBarrier(KB &c, Value id,
                                             int64_t threads) {
  NVVM::BarrierOp::create(c.b, c.loc, Type(), toI32(c, id),
                          i32Constant(c, threads),
                          NVVM::BarrierReductionAttr(), Value());
}

void attnfuse::gpu_kernels::arriveNamedBarrier(KB &c, Value id,
                                               int64_t threads) {
  NVVM::BarrierArriveOp::create(c.b, c.loc, toI32(c, id),
                                i32Constant(c, threads));
}

void attnfuse::gpu_kernels::syncWarpgroup(KB &c, Value id) {
  syncNamedBarrier(c, id, 128);
}

//===----------------------------------------------------------------------===//
// WgmmaBlocks
//===----------------------------------------------------------------------===//

WgmmaBlocks::WgmmaBlocks(const KernelPlan &plan, bool tma,
                         int64_t barrierOffset)
    : plan(plan), elt(plan.elementType), tma(tma),
      barrierOffset(barrierOffset) {}

void WgmmaBlocks::setUpSharedMemory(OpBuilder &b, Location loc,
                                    int64_t elements) {
  KB k{b, loc};
  MLIRContext *ctx = b.getContext();
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  Value start = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  Value shift = k.remu(k.sub(k.idx(1024), k.remu(start, 1024)), 1024);
  bufAddress = k.add(start, shift);
  buf = memref::ViewOp::create(
      b, loc,
      MemRefType::get({elements}, elt, MemRefLayoutAttrInterface(), workgroup),
      smem, shift, ValueRange{});
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
}

void WgmmaBlocks::splitRoles(OpBuilder &b, Location loc,
                             function_ref<void(OpBuilder &)> producer,
                             function_ref<void(OpBuilder &, Value)> consumers) {
  KB k{b, loc};
  Value wgAll = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      gpu::ShuffleOp::create(b, loc,
                             arith::IndexCastUIOp::create(
                                 b, loc, b.getI32Type(), k.divu(tid, 128)),
                             0, 32, gpu::ShuffleMode::IDX)
          .getShuffleResult());
  scf::IfOp roles = scf::IfOp::create(b, loc, isEqual(k, wgAll, 0),
                                      /*withElseRegion=*/true);
  OpBuilder pb = roles.getThenBodyBuilder();
  producer(pb);
  OpBuilder cb = roles.getElseBodyBuilder();
  consumers(cb, wgAll);
  b.setInsertionPointAfter(roles);
}

Value WgmmaBlocks::barrierAddress(KB &e, Value index) {
  return e.add(e.add(bufAddress, e.idx(barrierOffset)), e.mul(index, e.idx(8)));
}

Value WgmmaBlocks::barrier(KB &e, Value index) {
  return pointerAt(e, barrierAddress(e, index), 3);
}

void WgmmaBlocks::initBarrier(KB &e, int64_t index, int64_t count) {
  NVVM::MBarrierInitOp::create(e.b, e.loc, barrier(e, e.idx(index)),
                               i32Constant(e, count), Value());
}

void WgmmaBlocks::arriveBarrier(KB &e, Value index) {
  NVVM::MBarrierArriveOp::create(e.b, e.loc, Type(), barrier(e, index),
                                 Value());
}

void WgmmaBlocks::waitBarrier(KB &e, Value index, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(e.b, e.loc, barrier(e, index),
                                        toI32(e, parity),
                                        i32Constant(e, 10000000));
}

void WgmmaBlocks::waitLanded(KB &e, Value index, Value parity) {
  waitBarrier(e, index, parity);
  if (!tma)
    proxyFence(e);
}

void WgmmaBlocks::loadTile(KB &e, TileSource source, Value batch, Value h,
                           Value row0, Value lastRow, int64_t width,
                           const TileLayout &tile, Value offset, Value full,
                           Value col0, RowPlace place) {
  if (!tma) {
    assert(source.buffer && "a tile without a buffer is loaded by TMA only");
    copyRows(e, source.buffer, batch, h, row0, lastRow, width, tile,
             e.divu(offset, 2), place);
    signalFull(e, full, width);
    return;
  }
  // The barrier completes once the bytes of every box landed (the boxes'
  // out-of-bounds elements count).
  NVVM::MBarrierArriveExpectTxOp::create(
      e.b, e.loc, Type(), barrier(e, full), i32Constant(e, tile.bytes()),
      NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
  // A box is one panel of the tile (its tensor map's TensorMapSpec);
  // coordinates innermost first: column, row, head, batch. Inline PTX with
  // 32-bit shared-memory addresses: MLIR 22's
  // nvvm.cp.async.bulk.tensor.shared.cluster.global takes a 64-bit
  // shared::cluster pointer, and the producer thread, at 32 registers
  // (setmaxnreg), then spilled (8 bytes at d = 64, 3 consumer warpgroups).
  Value fullAddress = toI32(e, barrierAddress(e, full));
  for (int64_t p = 0; p < tile.lineBytes / tile.panel; ++p) {
    Value dst = toI32(
        e, e.add(bufAddress, e.add(offset, e.idx(p * tile.panelStride()))));
    Value col = col0 ? toI32(e, e.add(col0, e.idx(p * tile.panel / 2)))
                     : i32Constant(e, p * tile.panel / 2);
    inlinePtx(e, Type(),
              {dst, source.tensorMap, col, toI32(e, row0), toI32(e, h),
               toI32(e, batch), fullAddress},
              "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
              "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
              "r,l,r,r,r,r,r,~{memory}");
  }
}

void WgmmaBlocks::copyRows(KB &e, Value src, Value batch, Value h, Value row0,
                           Value lastRow, int64_t width, const TileLayout &tile,
                           Value base, RowPlace place) {
  // A line's `perRow` 16-byte chunks go to `slots` (a power of two)
  // threads, the ones past perRow idle: thread tid copies chunk tid % slots
  // of lines tid / slots + it * step. Its chunk is the same in every round,
  // and when step is a multiple of 8 lines (the swizzle's period) so is the
  // swizzle: its offset grows by step * panel. The rounds are a loop: the
  // producer runs with few registers.
  const int64_t threads = kProducerThreads;
  if (width % 8 != 0) {
    copyElements(e, src, batch, h, row0, lastRow, width, tile, base, place);
    return;
  }
  int64_t perRow = width / 8, slots = llvm::PowerOf2Ceil(perRow);
  int64_t step = threads / slots, fullRounds = tile.lines / step;
  Value chunk = e.remu(tid, slots), line0 = e.divu(tid, slots);
  Value offset0 = tile.chunkOffset(e, line0, chunk);
  auto copy = [&](KB &x, Value it) {
    Value lines = x.mul(it, x.idx(step));
    Value line = x.add(line0, lines);
    Value offset = step % 8 == 0
                       ? x.add(offset0, x.mul(lines, x.idx(tile.panel)))
                       : tile.chunkOffset(x, line, chunk);
    Value row = x.add(row0, line);
    if (lastRow)
      row = x.min(row, lastRow);
    auto [i0, i2] = placeRow(x, place, batch, row);
    nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, nvgpu::DeviceAsyncTokenType::get(x.b.getContext()), buf,
        ValueRange{x.add(base, x.divu(offset, 2))}, src,
        ValueRange{i0, h, i2, x.mul(chunk, x.idx(8))}, x.b.getIndexAttr(8),
        /*srcElements=*/Value(), /*bypassL1=*/x.b.getUnitAttr());
  };
  auto rounds = [&](KB &x) {
    if (fullRounds > 0)
      scf::ForOp::create(x.b, x.loc, x.idx(0), x.idx(fullRounds), x.idx(1),
                         ValueRange{},
                         [&](OpBuilder &lb, Location ll, Value it, ValueRange) {
                           KB y{lb, ll};
                           copy(y, it);
                           scf::YieldOp::create(lb, ll);
                         });
    if (tile.lines % step != 0)
      scf::IfOp::create(
          x.b, x.loc,
          x.ult(x.add(line0, x.idx(fullRounds * step)), x.idx(tile.lines)),
          [&](OpBuilder &nb, Location nl) {
            KB y{nb, nl};
            copy(y, y.idx(fullRounds));
            scf::YieldOp::create(nb, nl);
          });
  };
  if (slots == perRow) {
    rounds(e);
    return;
  }
  scf::IfOp::create(e.b, e.loc, e.ult(chunk, e.idx(perRow)),
                    [&](OpBuilder &nb, Location nl) {
                      KB y{nb, nl};
                      rounds(y);
                      scf::YieldOp::create(nb, nl);
                    });
}

void WgmmaBlocks::copyElements(KB &e, Value src, Value batch, Value h,
                               Value row0, Value lastRow, int64_t width,
                               const TileLayout &tile, Value base,
                               RowPlace place) {
  forEachElement(
      e, tid, kProducerThreads, tile.lines * width, [&](KB &y, Value flat) {
        Value line = y.divu(flat, width), col = y.remu(flat, width);
        Value row = y.add(row0, line);
        if (lastRow)
          row = y.min(row, lastRow);
        auto [i0, i2] = placeRow(y, place, batch, row);
        Value v = memref::LoadOp::create(y.b, y.loc, src,
                                         ValueRange{i0, h, i2, col});
        Value bytes = tile.elementOffset(y, line, col);
        memref::StoreOp::create(y.b, y.loc, v, buf,
                                ValueRange{y.add(base, y.divu(bytes, 2))});
      });
}

void WgmmaBlocks::signalFull(KB &e, Value index, int64_t width) {
  if (width % 8 == 0)
    NVVM::CpAsyncMBarrierArriveOp::create(e.b, e.loc, barrier(e, index),
                                          /*noinc=*/true);
  else
    NVVM::MBarrierArriveOp::create(e.b, e.loc, Type(), barrier(e, index),
                                   Value());
}

void WgmmaBlocks::zeroPadding(KB &k, const TileLayout &tile, int64_t width,
                              int64_t offset, int64_t count, int64_t stride) {
  // The chunks from the one that holds column `width` to the padded dim's
  // last (width itself when it is a multiple of 8); the copies write only
  // the columns below `width`.
  int64_t firstChunk = width / 8, chunks = tile.lineBytes / 16 - firstChunk;
  if (2 * width == tile.lineBytes)
    return;
  const int64_t threads = plan.threads;
  auto zeros = VectorType::get({8}, elt);
  Value zero = arith::ConstantOp::create(
      k.b, k.loc, DenseElementsAttr::get(zeros, k.b.getZeroAttr(elt)));
  forEachItem(k, tid, threads, count * tile.lines * chunks,
              [&](KB &x, int64_t it) -> Value {
                Value flat = x.add(tid, x.idx(it * threads));
                Value chunk = x.add(x.idx(firstChunk), x.remu(flat, chunks));
                Value n = x.divu(flat, tile.lines * chunks);
                Value line = x.remu(x.divu(flat, chunks), tile.lines);
                Value bytes =
                    x.add(x.add(x.idx(offset), x.mul(n, x.idx(stride))),
                          tile.chunkOffset(x, line, chunk));
                vector::StoreOp::create(
                    x.b, x.loc, zero, buf, ValueRange{x.divu(bytes, 2)},
                    /*nontemporal=*/false, llvm::MaybeAlign(16));
                return Value();
              });
}

void WgmmaBlocks::storeTile(KB &x, Value map, const TileLayout &tile,
                            int64_t tileOffset, Value firstLine, Value row0,
                            Value h, Value batch) {
  for (int64_t p = 0; p < tile.lineBytes / tile.panel; ++p) {
    Value src =
        x.add(x.add(bufAddress, x.idx(tileOffset + p * tile.panelStride())),
              x.mul(firstLine, x.idx(tile.panel)));
    inlinePtx(x, Type(),
              {map, i32Constant(x, p * tile.panel / 2), toI32(x, row0),
               toI32(x, h), toI32(x, batch), toI32(x, src)},
              "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
              "[$0, {$1, $2, $3, $4}], [$5];",
              "l,r,r,r,r,r,~{memory}");
  }
  NVVM::CpAsyncBulkCommitGroupOp::create(x.b, x.loc);
}

Value WgmmaBlocks::wgmmaShared(KB &e, Value acc, Value descA, Value descB,
                               int64_t n, bool first, bool mMajorA,
                               bool nMajorB) {
  MLIRContext *ctx = e.b.getContext();
  auto t = elt.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  return NVVM::WgmmaMmaAsyncOp::create(
      e.b, e.loc, acc.getType(), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
      NVVM::WGMMATypesAttr::get(ctx, t), NVVM::WGMMATypesAttr::get(ctx, t),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, first ? NVVM::WGMMAScaleOut::zero
                                              : NVVM::WGMMAScaleOut::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      // (NVVM's layouts: A row = K-major, col = M-major; B col = K-major,
      // row = N-major.)
      NVVM::MMALayoutAttr::get(ctx, mMajorA ? NVVM::MMALayout::col
                                            : NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, nMajorB ? NVVM::MMALayout::row
                                            : NVVM::MMALayout::col),
      /*satfinite=*/NVVM::MMAIntOverflowAttr());
}

SmallVector<Value> WgmmaBlocks::wgmmaRegisterA(KB &e, ArrayRef<Value> acc,
                                               ArrayRef<Value> a, Value descB) {
  int64_t n = acc.size();
  std::string d;
  for (int64_t i = 0; i < n; ++i)
    d += (i ? ", $" : "$") + std::to_string(i);
  // Operands: accumulators 0 .. n-1 (tied n .. 2n-1), A 2n .. 2n+3, B 2n+4;
  // scale-d is a predicate (true: accumulate), B is N-major (imm-trans-b).
  std::string asmString = llvm::formatv(
      "{{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{1}.{1} {{{2}}, "
      "{{${3}, ${4}, ${5}, ${6}}, ${7}, p, 1, 1, 1;\n}\n",
      2 * n, elt.isBF16() ? "bf16" : "f16", d, 2 * n, 2 * n + 1, 2 * n + 2,
      2 * n + 3, 2 * n + 4);
  SmallVector<Value> extra;
  Type i32 = e.b.getI32Type();
  for (Value reg : a) {
    if (reg.getType() != i32) {
      auto one = VectorType::get({1}, i32);
      reg = vector::ExtractOp::create(
          e.b, e.loc, vector::BitCastOp::create(e.b, e.loc, one, reg), 0);
    }
    extra.push_back(reg);
  }
  extra.push_back(descB);
  return accumulatorAsm(e, asmString, acc, extra, "r,r,r,r,l");
}
