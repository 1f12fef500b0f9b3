//===- MmaSyncBlocks.cpp - the sm_80 machinery of the mma_sync family -----===//
//
// See MmaSyncBlocks.h.
//
//===----------------------------------------------------------------------===//
#include "MmaSyncBlocks.h"
#include "Fragments.h"
#include "Staging.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

MmaSyncBlocks::MmaSyncBlocks(const KernelPlan &plan)
    : plan(plan), elt(plan.elementType), isBF16(plan.elementType.isBF16()),
      kBK(plan.cfg.blockK), kWarps(plan.cfg.warps),
      kThreads(32 * plan.cfg.warps), kStages(plan.cfg.stages),
      tail(plan.Nk % plan.cfg.blockK != 0) {}

void MmaSyncBlocks::mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
                        MutableArrayRef<Value> c) {
  Type f32 = e.b.getF32Type();
  auto resType =
      LLVM::LLVMStructType::getLiteral(e.b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes t = isBF16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value r = NVVM::MmaOp::create(
      e.b, e.loc, resType, a, bOps, ValueRange(c), ArrayRef<int64_t>{16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{t, t},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    c[i] = LLVM::ExtractValueOp::create(e.b, e.loc, r, i);
}

SmallVector<Value> MmaSyncBlocks::ldmatrix(KB &e, Value buf, Value stage,
                                           Value row, Value col,
                                           bool transpose) {
  auto resType = VectorType::get({4, 2}, elt);
  Value r = nvgpu::LdMatrixOp::create(
      e.b, e.loc, resType, buf, ValueRange{stage, row, col},
      e.b.getBoolAttr(transpose), e.b.getI32IntegerAttr(4));
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i)
    regs.push_back(
        toOperand(e, elt, vector::ExtractOp::create(e.b, e.loc, r, i)));
  return regs;
}

void MmaSyncBlocks::copyRows(KB &e, Value src, Value batch, Value head,
                             Value buf, int64_t width, Value block,
                             int64_t rows, int64_t length, int64_t numBlocks,
                             Value stage, SmallVector<Value> &tokens,
                             Value lastRow, RowPlace place) {
  // 16-byte pieces (forEachItem): flat = tid + it * kThreads,
  // row = flat / perRow, column = 8 (flat % perRow) (perRow = width / 8).
  // When kThreads is a multiple of perRow, the column is the same for every
  // full round and the row grows by kThreads / perRow. Without a tail
  // only the block index is clamped (to the last block: prefetches past the
  // range re-read it), so that the pieces' global addresses are one pointer
  // plus constant offsets; with a tail each row is clamped to length - 1.
  const bool tail = length % rows != 0;
  Value k0 = e.mul(tail || lastRow ? block : e.min(block, e.idx(numBlocks - 1)),
                   e.idx(rows));
  auto clampRow = [&](KB &x, Value row) {
    if (lastRow)
      return x.min(row, lastRow);
    return tail ? x.min(row, x.idx(length - 1)) : row;
  };
  if (width % 8 != 0) {
    // Rows that are not 16-byte aligned: element by element, loads and
    // shared-memory stores (the barrier that publishes the block orders
    // them like the cp.async group).
    forEachElement(e, tid, kThreads, rows * width, [&](KB &x, Value flat) {
      Value row = x.divu(flat, width), col = x.remu(flat, width);
      Value kr = lastRow ? x.min(x.add(k0, row), lastRow)
                         : x.min(x.add(k0, row), x.idx(length - 1));
      auto [i0, i2] = placeRow(x, place, batch, kr);
      Value v = memref::LoadOp::create(x.b, x.loc, src,
                                       ValueRange{i0, head, i2, col});
      memref::StoreOp::create(x.b, x.loc, v, buf, ValueRange{stage, row, col});
    });
    return;
  }
  int64_t perRow = width / 8, total = rows * perRow;
  bool uniformColumn = kThreads % perRow == 0;
  Value row0, col0;
  if (uniformColumn) {
    row0 = e.divu(tid, perRow);
    col0 = e.mul(e.remu(tid, perRow), e.idx(8));
  }
  auto copy = [&](KB &x, Value row, Value col) {
    Value kr = clampRow(x, x.add(k0, row));
    auto [i0, i2] = placeRow(x, place, batch, kr);
    return nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, nvgpu::DeviceAsyncTokenType::get(x.b.getContext()), buf,
        ValueRange{stage, row, col}, src, ValueRange{i0, head, i2, col},
        x.b.getIndexAttr(8), /*srcElements=*/Value(),
        /*bypassL1=*/x.b.getUnitAttr());
  };
  forEachItem(
      e, tid, kThreads, total,
      [&](KB &x, int64_t it) -> Value {
        if (uniformColumn && (it + 1) * kThreads <= total)
          return copy(x, x.add(row0, x.idx(it * (kThreads / perRow))), col0);
        Value flat = x.add(tid, x.idx(it * kThreads));
        return copy(x, x.divu(flat, perRow),
                    x.mul(x.remu(flat, perRow), x.idx(8)));
      },
      &tokens);
}

void MmaSyncBlocks::copyRowValues(KB &e, Value src, Value batch, Value head,
                                  Value row0, int64_t count, int64_t length,
                                  Value buf, Value stage) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(e.b.getContext());
  forEachItem(e, tid, kThreads, count, [&](KB &x, int64_t it) -> Value {
    Value r = x.add(tid, x.idx(it * kThreads));
    Value qr = x.min(x.add(row0, r), x.idx(length - 1));
    return nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, tokenType, buf, ValueRange{stage, r}, src,
        ValueRange{batch, head, qr}, x.b.getIndexAttr(1),
        /*srcElements=*/Value(), /*bypassL1=*/UnitAttr());
  });
}

MmaSyncBlocks::LaneOffsets MmaSyncBlocks::laneOffsets(KB &k, Value lane) {
  Value lrow = k.remu(lane, 8);
  LaneOffsets o;
  o.arow = k.add(lrow, k.mul(k.remu(k.divu(lane, 8), 2), k.idx(8)));
  o.acol = k.mul(k.divu(lane, 16), k.idx(8));
  o.brow = k.add(lrow, k.mul(k.divu(lane, 16), k.idx(8)));
  o.bcol = k.mul(k.remu(k.divu(lane, 8), 2), k.idx(8));
  return o;
}

Value MmaSyncBlocks::commit(KB &e, SmallVector<Value> &tokens) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(e.b.getContext());
  Value group =
      nvgpu::DeviceAsyncCreateGroupOp::create(e.b, e.loc, tokenType, tokens);
  tokens.clear();
  return group;
}

void MmaSyncBlocks::waitOldest(KB &e, Value group) {
  nvgpu::DeviceAsyncWaitOp::create(e.b, e.loc, group,
                                   e.b.getI32IntegerAttr(kStages - 2));
  gpu::BarrierOp::create(e.b, e.loc);
}

void MmaSyncBlocks::zeroPadding(KB &k, Value buf, int64_t stages, int64_t rows,
                                int64_t from, int64_t to) {
  if (from == to)
    return;
  auto zeros = VectorType::get({to - from}, elt);
  Value zero = arith::ConstantOp::create(
      k.b, k.loc, DenseElementsAttr::get(zeros, k.b.getZeroAttr(elt)));
  forEachItem(k, tid, kThreads, stages * rows, [&](KB &x, int64_t it) -> Value {
    Value flat = x.add(tid, x.idx(it * kThreads));
    vector::StoreOp::create(
        x.b, x.loc, zero, buf,
        ValueRange{x.divu(flat, rows), x.remu(flat, rows), x.idx(from)},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
    return Value();
  });
}
