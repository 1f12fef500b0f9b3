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
    KB &k, const KernelPlan &plan, Value q0, int64_t blockQ, int64_t blockK,
    Value kbBegin, Value kbEnd, ValueRange state, KeyBlockBody body) {
  const MaskWindow &w = plan.window;
  Value fullBegin = kbBegin, fullEnd = kbEnd;
  if (plan.leftBounded)
    fullBegin = k.min(
        kbEnd,
        k.max(kbBegin, k.floorDiv(k.add(q0, k.idx(blockQ - 1 + w.offset -
                                                  w.left + blockK - 1)),
                                  blockK)));
  if (plan.rightBounded)
    fullEnd = k.min(
        fullEnd,
        k.add(k.floorDiv(k.add(q0, k.idx(w.offset + w.right - (blockK - 1))),
                         blockK),
              k.idx(1)));
  bool tail = plan.Nk % blockK != 0;
  if (tail)
    fullEnd = k.min(fullEnd, k.idx(plan.numKB - 1));
  fullEnd = k.max(fullEnd, fullBegin);
  SmallVector<Value> cur(state.begin(), state.end());
  auto blockLoop = [&](Value begin, Value end, bool masked) {
    auto loop = scf::ForOp::create(
        k.b, k.loc, begin, end, k.idx(1), cur,
        [&](OpBuilder &lb, Location ll, Value kb, ValueRange iter) {
          body(masked, lb, ll, kb, iter);
        });
    cur.assign(loop.getResults().begin(), loop.getResults().end());
  };
  if (plan.leftBounded)
    blockLoop(kbBegin, fullBegin, /*masked=*/true);
  blockLoop(fullBegin, fullEnd, /*masked=*/false);
  if (plan.rightBounded || tail)
    blockLoop(fullEnd, kbEnd, /*masked=*/true);
  return cur;
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
