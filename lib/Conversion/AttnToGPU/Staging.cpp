//===- Staging.cpp - CTA-level staging of the tensor-core families --------===//
//
// See Staging.h.
//
//===----------------------------------------------------------------------===//
#include "Staging.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

void attnfuse::gpu_kernels::forEachItem(KB &k, Value tid, int64_t threads,
                                        int64_t total,
                                        function_ref<Value(KB &, int64_t)> fn,
                                        SmallVector<Value> *tokens) {
  for (int64_t it = 0, e = llvm::divideCeil(total, threads); it < e; ++it) {
    if ((it + 1) * threads <= total) {
      Value token = fn(k, it);
      if (tokens && token)
        tokens->push_back(token);
      continue;
    }
    Value item = k.add(tid, k.idx(it * threads));
    scf::IfOp::create(k.b, k.loc, k.ult(item, k.idx(total)),
                      [&](OpBuilder &nb, Location nl) {
                        KB x{nb, nl};
                        fn(x, it);
                        scf::YieldOp::create(nb, nl);
                      });
  }
}

SmallVector<Value> attnfuse::gpu_kernels::runKeyBlocks(
    KB &k, const KernelPlan &plan, const attn::SizeValues &sizes, Value q0,
    int64_t blockQ, int64_t blockK, Value kbBegin, Value kbEnd,
    ValueRange state, KeyBlockBody body) {
  const MaskWindow &w = plan.window;
  // Packed grouped queries: the rows hold every position of the period.
  if (plan.queryPeriod) {
    q0 = k.idx(0);
    blockQ = plan.queryPeriod;
  }
  // An offset that follows the tile's key lengths moves the rows by it.
  int64_t offset = w.offset;
  if (!w.hasStaticOffset()) {
    q0 = k.add(q0, k.index(sizes.maskOffset));
    offset = 0;
  }
  Value fullBegin = kbBegin, fullEnd = kbEnd;
  if (plan.leftBounded)
    fullBegin = k.min(
        kbEnd, k.max(kbBegin, k.floorDiv(k.add(q0, k.idx(blockQ - 1 + offset -
                                                         w.left + blockK - 1)),
                                         blockK)));
  if (plan.rightBounded)
    fullEnd = k.min(
        fullEnd,
        k.add(k.floorDiv(k.add(q0, k.idx(offset + w.right - (blockK - 1))),
                         blockK),
              k.idx(1)));
  bool tail = plan.Nk % blockK != 0;
  if (sizes.validKeys)
    fullEnd = k.min(fullEnd, k.divu(k.index(sizes.validKeys), blockK));
  else if (tail)
    fullEnd = k.min(fullEnd, k.idx(plan.numKB - 1));
  fullEnd = k.max(fullEnd, fullBegin);
  // Paged K/V: any block may hold keys of a page whose id is out of range.
  if (plan.blockTable)
    fullEnd = fullBegin;
  return runBlockLoops(k, kbBegin, fullBegin, fullEnd, kbEnd, plan.leftBounded,
                       plan.rightBounded || tail || sizes.validKeys ||
                           plan.blockTable,
                       state, body);
}

Value attnfuse::gpu_kernels::lastKeyRow(KB &k, const KernelPlan &plan,
                                        const attn::SizeValues &sizes,
                                        int64_t blockK) {
  if (sizes.validKeys)
    return k.sub(k.max(k.index(sizes.validKeys), k.idx(1)), k.idx(1));
  if (plan.Nk % blockK != 0)
    return k.idx(plan.Nk - 1);
  return Value();
}

SmallVector<Value> attnfuse::gpu_kernels::runBlockLoops(
    KB &k, Value begin, Value fullBegin, Value fullEnd, Value end,
    bool maskedBefore, bool maskedAfter, ValueRange state, KeyBlockBody body) {
  SmallVector<Value> cur(state.begin(), state.end());
  auto blockLoop = [&](Value from, Value to, bool masked) {
    auto loop = scf::ForOp::create(
        k.b, k.loc, from, to, k.idx(1), cur,
        [&](OpBuilder &lb, Location ll, Value kb, ValueRange iter) {
          body(masked, lb, ll, kb, iter);
        });
    cur.assign(loop.getResults().begin(), loop.getResults().end());
  };
  if (maskedBefore)
    blockLoop(begin, fullBegin, /*masked=*/true);
  blockLoop(fullBegin, fullEnd, /*masked=*/false);
  if (maskedAfter)
    blockLoop(fullEnd, end, /*masked=*/true);
  return cur;
}

std::pair<Value, Value> attnfuse::gpu_kernels::queryBlockRange(
    KB &k, const KernelPlan &plan, Value key0, int64_t blockK, int64_t blockQ) {
  return queryBlockRangeOf(k, plan.window, plan.Nq, plan.Nk, key0, blockK,
                           blockQ);
}

SmallVector<Value> attnfuse::gpu_kernels::runQueryBlocks(
    KB &k, const KernelPlan &plan, Value key0, Value lastKeyBlock,
    int64_t blockK, int64_t blockQ, Value qbBegin, Value qbEnd,
    ValueRange state, KeyBlockBody body) {
  const MaskWindow &w = plan.window;
  int64_t numQB = llvm::divideCeil(plan.Nq, blockQ);
  Value fullBegin = qbBegin, fullEnd = qbEnd;
  // Every (k, q) of the block pair visible: k0 + BK - 1 - q0 <= off + right
  // and k0 - (q0 + BQ - 1) >= off - left.
  if (plan.rightBounded)
    fullBegin =
        k.min(qbEnd, k.max(qbBegin,
                           k.floorDiv(k.add(key0, k.idx(blockK - 1 - w.offset -
                                                        w.right + blockQ - 1)),
                                      blockQ)));
  if (plan.leftBounded)
    fullEnd = k.min(
        fullEnd,
        k.add(k.floorDiv(k.add(key0, k.idx(w.left - w.offset - (blockQ - 1))),
                         blockQ),
              k.idx(1)));
  bool queryTail = plan.Nq % blockQ != 0, keyTail = plan.Nk % blockK != 0;
  if (queryTail)
    fullEnd = k.min(fullEnd, k.idx(numQB - 1));
  fullEnd = k.max(fullEnd, fullBegin);
  // The last key block's rows past Nk: every query block masked.
  if (keyTail)
    fullEnd = k.select(lastKeyBlock, fullBegin, fullEnd);
  return runBlockLoops(k, qbBegin, fullBegin, fullEnd, qbEnd, plan.rightBounded,
                       plan.leftBounded || queryTail || keyTail, state, body);
}

void attnfuse::gpu_kernels::forEachElement(KB &k, Value tid, int64_t threads,
                                           int64_t total,
                                           function_ref<void(KB &, Value)> fn) {
  scf::ForOp::create(
      k.b, k.loc, k.idx(0), k.idx(llvm::divideCeil(total, threads)), k.idx(1),
      ValueRange{}, [&](OpBuilder &lb, Location ll, Value it, ValueRange) {
        KB x{lb, ll};
        Value item = x.add(tid, x.mul(it, x.idx(threads)));
        scf::IfOp::create(lb, ll, x.ult(item, x.idx(total)),
                          [&](OpBuilder &nb, Location nl) {
                            KB y{nb, nl};
                            fn(y, item);
                            scf::YieldOp::create(nb, nl);
                          });
        scf::YieldOp::create(lb, ll);
      });
}
